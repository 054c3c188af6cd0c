//! `toolfit convert`: an MCP `tools/list` result as one API's tool list, every schema rewritten by that
//! API's profile through the same path a request takes (so strict switches, limits and records are the
//! filter's). The input is never changed; every tool comes out, in order. What each API's list looks
//! like is its descriptor's ([`super::format::Descriptor::convert`]).

use super::format::{self, Convert, Descriptor, McpTool};
use super::rewrite_body;
use crate::schema::{Options, Report};
use serde_json::{json, Map, Value};

/// A tool list `convert` writes: a format and one of its shapes.
#[derive(Clone, Copy)]
pub struct To {
    pub format: &'static Descriptor,
    pub shape: &'static Convert,
}

impl To {
    /// Every list `convert` writes, in the order of [`format::ALL`].
    pub fn all() -> impl Iterator<Item = To> {
        format::ALL.iter().flat_map(|d| d.convert.iter().map(move |c| To { format: d, shape: c }))
    }

    /// The names `--to` takes.
    pub fn names() -> Vec<&'static str> {
        To::all().map(|t| t.shape.name).collect()
    }

    pub fn by_name(name: &str) -> Option<To> {
        To::all().find(|t| t.shape.name == name)
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
        let input = t.get("inputSchema").filter(|s| s.is_object() || s.is_boolean()).cloned().unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        out.push((to.shape.tool)(&McpTool { name, description: t.get("description"), input, output: t.get("outputSchema") }));
    }
    let profile = if strict { to.shape.strict.unwrap_or(to.shape.profile) } else { to.shape.profile };
    // the list where the format's first list is, as a request of that format carries it
    let at: &[&str] = to.format.tools.lists.first().copied().unwrap_or(&["tools"]);
    let mut body = (to.shape.list)(out);
    for key in at.iter().rev() {
        let mut o = Map::new();
        o.insert((*key).to_string(), body);
        body = Value::Object(o);
    }
    let text = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
    let done = rewrite_body(&text, to.format.format, profile, opts).map_err(|e| format!("{e:?}"))?;
    let rewritten: Value = serde_json::from_slice(done.body.as_deref().unwrap_or(&text)).map_err(|e| e.to_string())?;
    let list = at.iter().try_fold(&rewritten, |v, k| v.get(*k)).cloned().unwrap_or(Value::Array(Vec::new()));
    let mut bytes = serde_json::to_vec_pretty(&list).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    Ok((bytes, done.report))
}
