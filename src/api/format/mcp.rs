//! An MCP route (`format: mcp`): JSON-RPC between MCP clients and an MCP server, read by
//! `crate::filter::mcp`. The schemas toolfit rewrites here are the `inputSchema`s of a `tools/list`
//! result (`result.tools` of a JSON-RPC answer, or `tools` of a result handed over alone, as
//! agentgateway's MCP hook does), for the profile of the client that asked; `outputSchema`s are rewritten
//! apart, only where that keeps or widens what they accept (the client validates the server's
//! `structuredContent` against them), and names are mapped by the MCP leg's own reversible rule.

use super::{ArgumentKeys, Descriptor, ErrorShape, Routes, StreamCalls, Tools};
use crate::api::raw::RawTool;
use crate::api::{Format, Missing, Site};
use crate::schema::Context;

pub const FORMAT: Descriptor = Descriptor {
    format: Format::Mcp,
    name: "mcp",
    tools: Tools { lists: &[&["result", "tools"], &["tools"]], split: None, nested: None, bare: false },
    tool_sites: Some(tool_sites),
    output_sites: None,
    outputs: &[],
    shape: &["jsonrpc"],
    convert: &[],
    declared: &[],
    mentioned: &[],
    calls: &[],
    stream: StreamCalls::None,
    envelope: None,
    // never used: an MCP route answers with JSON-RPC errors of its own (`crate::filter::mcp`)
    error: ErrorShape::OpenAi,
    argument_keys: ArgumentKeys::AsListed,
    client_keywords: &["x-mcp-header"],
    routes: Routes::NONE,
};

/// The `inputSchema` of one listed tool (tool context).
pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, _: &mut Vec<Missing<'a>>) {
    let name = t.members.str("name").unwrap_or_default();
    for s in t.members.all("inputSchema") {
        sites.push(Site::new(s, name.clone(), Context::Tool));
    }
}
