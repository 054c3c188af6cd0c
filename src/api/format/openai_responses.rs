//! OpenAI Responses: tools flat as `tools[].parameters` (strict unless the tool says otherwise), and
//! inside namespaces (`{"type": "namespace", "name", "tools": [...]}`, how Codex sends MCP tools; a
//! namespace holds function and custom tools, never another namespace, and its calls come back as
//! `name` beside `namespace`),
//! structured output as `text.format.schema`; calls as `output[]` items of type `function_call`,
//! streamed as `response.function_call_arguments.*` events and said again whole at the end.

use super::{index, path, Args, ArgumentKeys, CallPath, Convert, Descriptor, ErrorShape, Frag, Frags, McpTool, Nested, Routes, StreamCalls, Summary, Tools};
use crate::api::raw::{self, RawObject, RawTool, Step};
use crate::api::{Format, Missing, Site, Unset};
use crate::schema::profile;
use crate::schema::Context;
use serde_json::{json, Value};

use Step::{Each, Key};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::OpenAiResponses,
    name: "openai-responses",
    tools: Tools { lists: Tools::TOP, split: None, nested: Some(Nested { kind: "namespace", key: "tools" }), bare: false },
    tool_sites: Some(tool_sites),
    output_sites: Some(output_sites),
    outputs: &["text"],
    shape: &["input", "model"],
    convert: CONVERT,
    // a namespace's tools are declared inside it (Codex sends its MCP tools so)
    declared: &[&[Key("tools"), Each, Key("name")], &[Key("tools"), Each, Key("tools"), Each, Key("name")]],
    mentioned: &[&[Key("tool_choice"), Key("name")], &[Key("input"), Each, Key("name")]],
    calls: &[path(&[Key("output"), Each], Some("function_call"), "name", "arguments", Args::Text)],
    stream: StreamCalls::Parts { frags, summary: Some(Summary { is: summary, calls: DONE }) },
    envelope: None,
    error: ErrorShape::OpenAi,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes { paths: &["/v1/responses", "/openai/v1/responses"], ..Routes::NONE },
};

/// `convert --to openai-responses`: flat function tools; the Responses API reads a tool without
/// `strict` as strict, so the profile states it.
const CONVERT: &[Convert] =
    converts!(&[Convert { name: "openai-responses", profile: &profile::OPENAI, strict: Some(&profile::OPENAI_STRICT), tool, list: Convert::array }]);

fn tool(t: &McpTool) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("type".into(), json!("function"));
    o.extend(t.head());
    o.insert("parameters".into(), t.input.clone());
    o.insert("strict".into(), json!(false));
    Value::Object(o)
}

/// The closing `response.completed` event says every call again, whole.
const DONE: &[CallPath] = &[path(&[Key("response"), Key("output"), Each], Some("function_call"), "name", "arguments", Args::Text)];

pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, _: &mut Vec<Missing<'a>>) {
    if t.has_function {
        return;
    }
    // the Responses API reads a function tool without `strict` as strict
    for p in t.members.all("parameters") {
        sites.push(Site::new(p, t.members.str("name").unwrap_or_default(), Context::Tool).switch(&t.members, Unset::Strict));
    }
}

pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    for tx in top.all("text") {
        let Some(o) = raw::object(tx.get()) else { continue };
        for f in o.all("format") {
            if let Some(fo) = raw::object(f.get()) {
                let name = fo.str("name").unwrap_or_else(|| "text.format".into());
                for s in fo.all("schema") {
                    sites.push(Site::new(s, name.clone(), Context::Output).switch(&fo, Unset::Loose));
                }
            }
        }
    }
}

/// Whether an event is the closing summary (`response.completed` and its kin), read by its `type`.
fn summary(json: &str) -> bool {
    json.contains("\"response.")
        && raw::object(json).and_then(|o| o.str("type")).is_some_and(|t| matches!(t.as_str(), "response.completed" | "response.incomplete" | "response.failed"))
}

fn frags(json: &str) -> Vec<Frag> {
    let mut f = Frags::new(json);
    let Some(top) = raw::object(json) else { return f.out };
    let kind = top.str("type").unwrap_or_default();
    let key = (0, index(&top, "output_index", 0));
    let item = top.get("item").and_then(|i| raw::object(i.get())).filter(|i| i.str("type").as_deref() == Some("function_call"));
    match kind.as_str() {
        "response.output_item.added" => {
            if let Some(i) = item {
                f.name_part(key, i.get("name"));
                f.args_part(key, i.get("arguments"));
            }
        }
        "response.function_call_arguments.delta" => f.args_part(key, top.get("delta")),
        "response.function_call_arguments.done" => {
            f.name_whole(key, top.get("name"));
            f.args_whole(key, top.get("arguments"));
        }
        "response.output_item.done" => {
            if let Some(i) = item {
                f.name_whole(key, i.get("name"));
                f.args_whole(key, i.get("arguments"));
                f.out.push(Frag::Close(key));
            }
        }
        "response.completed" | "response.incomplete" | "response.failed" => f.out.push(Frag::CloseAll),
        _ => {}
    }
    f.out
}
