//! OpenAI Chat Completions (also vLLM's and llama-server's `/v1/chat/completions`): tools as
//! `tools[].function.parameters`, structured output as `response_format.json_schema.schema` (and
//! llama-server's `response_format.schema`); calls in `choices[].message.tool_calls`, streamed as
//! `choices[].delta.tool_calls` parts.

use super::{function_tools, index, path, Args, ArgumentKeys, CallPath, Convert, Descriptor, ErrorShape, Frag, Frags, McpTool, Routes, StreamCalls, Tools};
use crate::api::raw::{self, RawObject, RawTool, Step};
use crate::api::{Format, Missing, Site, Unset};
use crate::schema::profile;
use crate::schema::Context;
use serde_json::{json, Value};

use Step::{Each, Key};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::OpenAiChat,
    name: "openai-chat",
    tools: Tools { lists: Tools::TOP, split: Some("function"), nested: None, bare: false },
    tool_sites: Some(tool_sites),
    output_sites: Some(output_sites),
    outputs: &["response_format"],
    shape: &["messages", "model"],
    convert: CONVERT,
    declared: DECLARED,
    mentioned: MENTIONED,
    calls: CALLS,
    stream: StreamCalls::Parts { frags, summary: None },
    envelope: None,
    error: ErrorShape::OpenAi,
    // Groq's and Azure OpenAI's v1 API under `/openai/v1/`, DeepSeek's beta features (strict mode)
    // under `/beta/`; Azure's deployments API names the deployment in the path
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes {
        paths: &["/v1/chat/completions", "/chat/completions", "/openai/v1/chat/completions", "/beta/chat/completions"],
        prefixes: &["/openai/deployments/"],
        prefix_ends: Some(&["/chat/completions"]),
        ..Routes::NONE
    },
};

/// `convert --to openai`: chat function tools, strict with `--strict-tools`.
const CONVERT: &[Convert] =
    converts!(&[Convert { name: "openai", profile: &profile::OPENAI, strict: Some(&profile::OPENAI_STRICT), tool: function_tool, list: Convert::array }]);

/// An MCP tool as a chat function tool (OpenAI, Ollama and Cohere declare tools so).
pub fn function_tool(t: &McpTool) -> Value {
    let mut f = t.head();
    f.insert("parameters".into(), t.input.clone());
    json!({"type": "function", "function": f})
}

/// Where function names are declared: the same for Ollama and Cohere.
pub const DECLARED: &[&[Step]] = &[&[Key("tools"), Each, Key("function"), Key("name")]];
/// Where they are named again: the same for Ollama and Cohere.
pub const MENTIONED: &[&[Step]] =
    &[&[Key("tool_choice"), Key("function"), Key("name")], &[Key("messages"), Each, Key("tool_calls"), Each, Key("function"), Key("name")]];

const CALLS: &[CallPath] = &[path(&[Key("choices"), Each, Key("message"), Key("tool_calls"), Each, Key("function")], None, "name", "arguments", Args::Text)];

pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, undescribed: &mut Vec<Missing<'a>>) {
    function_tools(t, sites, undescribed);
}

pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    for rf in top.all("response_format") {
        let Some(o) = raw::object(rf.get()) else { continue };
        for js in o.all("json_schema") {
            if let Some(j) = raw::object(js.get()) {
                let name = j.str("name").unwrap_or_else(|| "response_format".into());
                for s in j.all("schema") {
                    sites.push(Site::new(s, name.clone(), Context::Output).switch(&j, Unset::Loose));
                }
            }
        }
        for s in o.all("schema") {
            sites.push(Site::new(s, "response_format".into(), Context::Output));
        }
    }
}

fn frags(json: &str) -> Vec<Frag> {
    let mut f = Frags::new(json);
    let Some(top) = raw::object(json) else { return f.out };
    let choices = top.get("choices").and_then(|c| raw::array(c.get())).map(|a| a.0).unwrap_or_default();
    let mut finished = false;
    for (n, c) in choices.iter().enumerate() {
        let Some(c) = raw::object(c.get()) else { continue };
        let ci = index(&c, "index", n as u64);
        if let Some(d) = c.get("delta").and_then(|d| raw::object(d.get())) {
            for (m, tc) in d.get("tool_calls").and_then(|t| raw::array(t.get())).map(|a| a.0).unwrap_or_default().iter().enumerate() {
                let Some(tc) = raw::object(tc.get()) else { continue };
                let key = (ci, index(&tc, "index", m as u64));
                if let Some(func) = tc.get("function").and_then(|x| raw::object(x.get())) {
                    f.name_part(key, func.get("name"));
                    f.args_part(key, func.get("arguments"));
                }
            }
        }
        finished |= c.get("finish_reason").is_some_and(|r| r.get() != "null");
    }
    if finished {
        f.out.push(Frag::CloseAll);
    }
    f.out
}
