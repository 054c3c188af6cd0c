//! Gemini `generateContent` and `streamGenerateContent` (Developer API and Vertex):
//! `tools[].functionDeclarations[].parameters` and `parametersJsonSchema` (and `response`,
//! `responseJsonSchema`), `generationConfig.responseSchema` and `responseJsonSchema`, each also in
//! snake_case; calls as `functionCall` parts, every streamed event carrying whole calls. The model is
//! in the path; its prefixes always get the `gemini` profile.

use super::{path, Args, ArgumentKeys, Convert, Descriptor, ErrorShape, McpTool, Routes, StreamCalls, Tools};
use crate::api::raw::{self, RawObject, RawTool, Step};
use crate::api::{Format, Missing, Site};
use crate::schema::Context;
use serde_json::{json, Value};

use Step::{Each, Key};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::Gemini,
    name: "gemini",
    tools: Tools { lists: Tools::TOP, ..Tools::NONE },
    tool_sites: Some(tool_sites),
    output_sites: Some(output_sites),
    outputs: &["generationConfig", "generation_config"],
    shape: &["contents"],
    convert: CONVERT,
    declared: &[&[Key("tools"), Each, Key("functionDeclarations"), Each, Key("name")], &[Key("tools"), Each, Key("function_declarations"), Each, Key("name")]],
    mentioned: &[
        &[Key("toolConfig"), Key("functionCallingConfig"), Key("allowedFunctionNames"), Each],
        &[Key("tool_config"), Key("function_calling_config"), Key("allowed_function_names"), Each],
        &[Key("contents"), Each, Key("parts"), Each, Key("functionCall"), Key("name")],
        &[Key("contents"), Each, Key("parts"), Each, Key("functionResponse"), Key("name")],
        &[Key("contents"), Each, Key("parts"), Each, Key("function_call"), Key("name")],
        &[Key("contents"), Each, Key("parts"), Each, Key("function_response"), Key("name")],
    ],
    calls: &[
        path(&[Key("candidates"), Each, Key("content"), Key("parts"), Each, Key("functionCall")], None, "name", "args", Args::Object),
        path(&[Key("candidates"), Each, Key("content"), Key("parts"), Each, Key("function_call")], None, "name", "args", Args::Object),
    ],
    stream: StreamCalls::Whole,
    envelope: None,
    error: ErrorShape::Google,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes {
        paths: &[],
        prefixes: &["/v1beta/models/", "/v1/models/", "/v1/projects/", "/v1beta1/projects/"],
        prefix_ends: Some(&[":generateContent", ":streamGenerateContent"]),
        profile: Some(&crate::schema::profile::GEMINI),
        models: &[],
        model_in_path: Some(model_in_path),
    },
};

/// `convert --to gemini` (`parameters`) and `gemini-json` (`parametersJsonSchema`): the declarations in
/// one `functionDeclarations` entry.
const CONVERT: &[Convert] = converts!(&[
    Convert { name: "gemini", profile: &crate::schema::profile::GEMINI, strict: None, tool: |t| declaration(t, "parameters"), list: declarations },
    Convert {
        name: "gemini-json",
        profile: &crate::schema::profile::GEMINI,
        strict: None,
        tool: |t| declaration(t, "parametersJsonSchema"),
        list: declarations,
    },
]);

fn declaration(t: &McpTool, key: &str) -> Value {
    let mut f = t.head();
    f.insert(key.into(), t.input.clone());
    Value::Object(f)
}

fn declarations(tools: Vec<Value>) -> Value {
    json!([{ "functionDeclarations": tools }])
}

pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, _: &mut Vec<Missing<'a>>) {
    for key in ["functionDeclarations", "function_declarations"] {
        for decls in t.members.all(key) {
            for d in raw::array(decls.get()).map(|a| a.0).unwrap_or_default() {
                let Some(d) = raw::object(d.get()) else { continue };
                let name = d.str("name").unwrap_or_default();
                for (k, json_field, context) in [
                    ("parameters", false, Context::Tool),
                    ("parametersJsonSchema", true, Context::Tool),
                    ("parameters_json_schema", true, Context::Tool),
                    ("response", false, Context::Output),
                    ("responseJsonSchema", true, Context::Output),
                    ("response_json_schema", true, Context::Output),
                ] {
                    for p in d.all(k) {
                        sites.push(Site { json_field, ..Site::new(p, name.clone(), context) });
                    }
                }
            }
        }
    }
}

pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    for key in ["generationConfig", "generation_config"] {
        for g in top.all(key) {
            let Some(g) = raw::object(g.get()) else { continue };
            for (k, json_field) in [("responseSchema", false), ("response_schema", false), ("responseJsonSchema", true), ("response_json_schema", true)] {
                for s in g.all(k) {
                    sites.push(Site { json_field, ..Site::new(s, k.into(), Context::Output) });
                }
            }
        }
    }
}

/// The model a Gemini path names (`/v1beta/models/{model}:generateContent`, Vertex's
/// `.../publishers/google/models/{model}:streamGenerateContent`), for the model map.
pub fn model_in_path(path: &str) -> Option<String> {
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let (_, rest) = path.rsplit_once("/models/")?;
    let model = rest.split(':').next()?;
    (!model.is_empty() && !model.contains('/')).then(|| model.to_string())
}
