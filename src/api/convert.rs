//! `toolfit convert`: an MCP `tools/list` result as one API's tool list, every schema rewritten by that
//! API's profile through the same path a request takes (so strict switches, limits and records are the
//! filter's). The input is never changed; every tool comes out, in order.

use super::{rewrite_body, Format};
use crate::schema::profile::{self, Profile};
use crate::schema::{Options, Report};
use serde_json::{json, Map, Value};

/// The tool lists `convert` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    OpenAi,
    OpenAiResponses,
    Anthropic,
    Gemini,
    GeminiJson,
    Cohere,
    Ollama,
    Mcp,
}

impl To {
    pub const NAMES: &'static [&'static str] = &["openai", "openai-responses", "anthropic", "gemini", "gemini-json", "cohere", "ollama", "mcp"];

    pub fn by_name(name: &str) -> Option<To> {
        Some(match name {
            "openai" => To::OpenAi,
            "openai-responses" => To::OpenAiResponses,
            "anthropic" => To::Anthropic,
            "gemini" => To::Gemini,
            "gemini-json" => To::GeminiJson,
            "cohere" => To::Cohere,
            "ollama" => To::Ollama,
            "mcp" => To::Mcp,
            _ => return None,
        })
    }

    /// The profile and request format, `strict`: every tool strict where it can be.
    fn route(self, strict: bool) -> (&'static Profile, Format) {
        match self {
            To::OpenAi if strict => (&profile::OPENAI_STRICT, Format::OpenAiChat),
            To::OpenAi => (&profile::OPENAI, Format::OpenAiChat),
            To::OpenAiResponses if strict => (&profile::OPENAI_STRICT, Format::OpenAiResponses),
            To::OpenAiResponses => (&profile::OPENAI, Format::OpenAiResponses),
            To::Anthropic if strict => (&profile::ANTHROPIC_STRICT, Format::Anthropic),
            To::Anthropic => (&profile::ANTHROPIC, Format::Anthropic),
            To::Gemini | To::GeminiJson => (&profile::GEMINI, Format::Gemini),
            To::Cohere => (&profile::COHERE, Format::Cohere),
            To::Ollama => (&profile::OLLAMA, Format::Ollama),
            To::Mcp => (&profile::MCP, Format::McpTools),
        }
    }

    /// One MCP tool in this API's shape, before its schema is rewritten.
    fn tool(self, name: &str, description: Option<&Value>, params: Value, output: Option<&Value>) -> Value {
        let mut f = Map::new();
        f.insert("name".into(), json!(name));
        if let Some(d) = description {
            f.insert("description".into(), d.clone());
        }
        match self {
            To::OpenAi | To::Cohere | To::Ollama => {
                f.insert("parameters".into(), params);
                json!({"type": "function", "function": f})
            }
            To::OpenAiResponses => {
                f.insert("parameters".into(), params);
                // the Responses API reads a tool without `strict` as strict: the profile states it
                let mut t = Map::new();
                t.insert("type".into(), json!("function"));
                t.extend(f);
                t.insert("strict".into(), json!(false));
                Value::Object(t)
            }
            To::Anthropic => {
                f.insert("input_schema".into(), params);
                Value::Object(f)
            }
            To::Gemini => {
                f.insert("parameters".into(), params);
                Value::Object(f)
            }
            To::GeminiJson => {
                f.insert("parametersJsonSchema".into(), params);
                Value::Object(f)
            }
            To::Mcp => {
                f.insert("inputSchema".into(), params);
                if let Some(o) = output {
                    f.insert("outputSchema".into(), o.clone());
                }
                Value::Object(f)
            }
        }
    }
}

/// The tools of an MCP `tools/list` result (`{"tools": [...]}`, a JSON-RPC response, or a bare array).
fn mcp_tools(input: &Value) -> Option<&Vec<Value>> {
    input.as_array().or_else(|| input.get("tools").and_then(Value::as_array)).or_else(|| input.pointer("/result/tools").and_then(Value::as_array))
}

/// The converted tool list (JSON) and the report, or why the input is not a tools/list result.
pub fn convert(input: &[u8], to: To, strict: bool, opts: &Options) -> Result<(Vec<u8>, Report), String> {
    let v: Value = serde_json::from_slice(input).map_err(|e| format!("input is not JSON: {e}"))?;
    let tools = mcp_tools(&v).ok_or("input is not an MCP tools/list result (no tools array)")?;
    let mut out = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        let name = t.get("name").and_then(Value::as_str).ok_or(format!("tool {i} has no name"))?;
        // a tool without parameters takes an empty object, as MCP means it
        let params = t.get("inputSchema").filter(|s| s.is_object() || s.is_boolean()).cloned().unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        out.push(to.tool(name, t.get("description"), params, t.get("outputSchema")));
    }
    let (profile, format) = to.route(strict);
    let body = match to {
        To::Gemini | To::GeminiJson => json!({"tools": [{"functionDeclarations": out}]}),
        _ => json!({ "tools": out }),
    };
    let text = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
    let done = rewrite_body(&text, format, profile, opts).map_err(|e| format!("{e:?}"))?;
    let rewritten: Value = serde_json::from_slice(done.body.as_deref().unwrap_or(&text)).map_err(|e| e.to_string())?;
    let list = rewritten.get("tools").cloned().unwrap_or(Value::Array(Vec::new()));
    let mut bytes = serde_json::to_vec_pretty(&list).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    Ok((bytes, done.report))
}
