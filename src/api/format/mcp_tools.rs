//! An MCP `tools/list` result (`{"tools": [...]}`, a JSON-RPC response's `result.tools`, or a bare
//! array of tools):
//! `inputSchema` (tool context) and `outputSchema` (structured output). Not a request toolfit sees on
//! a route by default; the CLI and `convert` read it.

use super::{ArgumentKeys, Convert, Descriptor, ErrorShape, McpTool, Routes, StreamCalls, Tools};
use crate::api::raw::{RawObject, RawTool};
use crate::api::{Format, Missing, Site};
use crate::schema::Context;
use serde_json::{json, Value};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::McpTools,
    name: "mcp-tools",
    tools: Tools { lists: &[&["tools"], &["result", "tools"]], split: None, nested: None, bare: true },
    tool_sites: Some(tool_sites),
    output_sites: None,
    outputs: &[],
    shape: &[],
    convert: CONVERT,
    declared: &[],
    mentioned: &[],
    calls: &[],
    stream: StreamCalls::None,
    envelope: None,
    error: ErrorShape::OpenAi,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes::NONE,
};

/// `convert --to mcp`: the tools as an MCP server would list them, rewritten by the `mcp` profile.
const CONVERT: &[Convert] = converts!(&[Convert { name: "mcp", profile: &crate::schema::profile::MCP, strict: None, tool, list: Convert::array }]);

fn tool(t: &McpTool) -> Value {
    let mut o = t.head();
    o.insert("inputSchema".into(), t.input.clone());
    if let Some(out) = t.output {
        o.insert("outputSchema".into(), out.clone());
    }
    json!(o)
}

pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, _: &mut Vec<Missing<'a>>) {
    tool_in(&t.members, sites);
}

fn tool_in<'a>(o: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    let name = o.str("name").unwrap_or_default();
    for s in o.all("inputSchema") {
        sites.push(Site::new(s, name.clone(), Context::Tool));
    }
    for s in o.all("outputSchema") {
        sites.push(Site::new(s, name.clone(), Context::Output));
    }
}
