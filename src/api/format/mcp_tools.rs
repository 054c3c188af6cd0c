//! An MCP `tools/list` result (`{"tools": [...]}`, a JSON-RPC response, or a bare array of tools):
//! `inputSchema` (tool context) and `outputSchema` (structured output). Not a request toolfit sees on
//! a route by default; the CLI and `convert` read it.

use super::{Descriptor, ErrorShape, Routes, StreamCalls};
use crate::api::raw::Raw;
use crate::api::raw::{self, RawObject, RawTool};
use crate::api::{Format, NoDescription, Site};
use crate::schema::Context;

pub const FORMAT: Descriptor = Descriptor {
    format: Format::McpTools,
    name: "mcp-tools",
    tool_sites: Some(tool_sites),
    output_sites: Some(output_sites),
    declared: &[],
    mentioned: &[],
    calls: &[],
    stream: StreamCalls::None,
    error: ErrorShape::OpenAi,
    routes: Routes::NONE,
};

pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, _: &mut Vec<NoDescription<'a>>) {
    tool_in(&t.members, sites);
}

/// A JSON-RPC response's `result.tools`.
pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    if let Some(r) = top.get("result").and_then(|r| raw::object(r.get())) {
        for tools in r.all("tools") {
            for t in raw::tools(tools.get()).unwrap_or_default() {
                tool_in(&t.members, sites);
            }
        }
    }
}

/// One element of a bare array of tools.
pub fn tool<'a>(t: Raw<'a>, sites: &mut Vec<Site<'a>>) {
    if let Some(o) = raw::object(t.get()) {
        tool_in(&o, sites);
    }
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
