//! Where a format's schemas are in a body: the sites, found by the format's descriptor, each a slice
//! of the body's text (so its offset is known and the bytes around it are never re-serialised).

use super::format;
use super::raw::{self, values_at};
use super::site::{Missing, Site};
use super::Format;
use crate::schema::Context;

/// A body's top level, scanned once: its members stay unparsed slices.
pub(super) enum Top<'a> {
    /// A bare array of tools (an MCP `tools/list` result written as an array).
    Array(Vec<raw::RawTool<'a>>),
    Object(raw::RawObject<'a>),
}

/// How much of a body's top level one scan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Read {
    /// Its members alone (a warm cache answers most bodies from them whole).
    Members,
    /// Its members and the first list of tools, split into tools (every schema will be read).
    WithLists,
}

/// The top level; with [`Read::WithLists`], also the format's first top-level list of tools split into tools in
/// the same scan (for a body whose schemas are all read: without a rewrite cache). With a cache, most
/// requests are answered from their members whole, and splitting the lists first would only cost (a
/// third of the warm path).
pub(super) fn top(text: &str, format: Format, read: Read) -> (Option<Top<'_>>, raw::ToolLists<'_>) {
    if text.trim_start().starts_with('[') {
        let bare = format::bare(format).and_then(|b| raw::tools(text, b.split)).map(Top::Array);
        return (bare, Vec::new());
    }
    match format::presplit(format) {
        Some(list) if read == Read::WithLists => raw::object_and_tools(text, list).map_or((None, Vec::new()), |(o, lists)| (Some(Top::Object(o)), lists)),
        _ => (raw::object(text).map(Top::Object), Vec::new()),
    }
}

/// The tool sites of `format` in its lists of tools in `text` (a request, or the object
/// [`BodyOutcome::tool_lists_of`] makes of its lists: the same sites either way).
pub fn locate_tools(text: &str, format: Format) -> Vec<Site<'_>> {
    let Some(o) = raw::object(text) else { return Vec::new() };
    let mut sites = Vec::new();
    tool_sites(&o, &[], format, &mut Vec::new(), &mut sites);
    sites.retain(|s| s.context == Context::Tool);
    sites
}

/// Finds every schema site of `format` in `text`. `None` when the text is not JSON of a known shape.
pub fn locate(text: &str, format: Format) -> Option<Vec<Site<'_>>> {
    let (top, lists) = top(text, format, Read::WithLists);
    locate_in(&top?, &lists, format, &mut Vec::new())
}

/// [`locate`], from the top level and the list of tools read with it (a list not there is read here),
/// also listing in `undescribed` the function tools without a description.
pub(super) fn locate_in<'a>(
    top: &Top<'a>,
    lists: &[(&'a str, Vec<raw::RawTool<'a>>)],
    format: Format,
    undescribed: &mut Vec<Missing<'a>>,
) -> Option<Vec<Site<'a>>> {
    let mut sites = Vec::new();
    let top = match top {
        Top::Array(tools) => {
            let read = format::bare(format)?;
            read_tools(tools, &read, undescribed, &mut sites);
            return Some(sites);
        }
        Top::Object(o) => o,
    };
    if !top.0.iter().any(|(k, _)| format::known(k)) {
        return None;
    }
    tool_sites(top, lists, format, undescribed, &mut sites);
    output_sites(top, format, &mut sites);
    Some(sites)
}

/// The schemas of the request's lists of tools (and the function tools without a description).
pub(super) fn tool_sites<'a>(
    top: &raw::RawObject<'a>,
    lists: &[(&'a str, Vec<raw::RawTool<'a>>)],
    format: Format,
    undescribed: &mut Vec<Missing<'a>>,
    sites: &mut Vec<Site<'a>>,
) {
    for read in format::list_reads(format) {
        if read.readers.is_empty() {
            continue;
        }
        for list in values_at(top, read.at) {
            // read with the body where it was (the same text), else here
            let here;
            let tools = match lists.iter().find(|(at, _)| std::ptr::eq(*at, list.get())) {
                Some((_, tools)) => tools,
                None => match raw::tools(list.get(), read.split) {
                    Some(tools) => {
                        here = tools;
                        &here
                    }
                    None => continue,
                },
            };
            read_tools(tools, &read, undescribed, sites);
        }
    }
}

/// Each tool of a list by each reader, and the tools of a nested list (a namespace) after the tool
/// that holds it.
pub(super) fn read_tools<'a>(tools: &[raw::RawTool<'a>], read: &format::ListRead, undescribed: &mut Vec<Missing<'a>>, sites: &mut Vec<Site<'a>>) {
    for t in tools {
        for reader in &read.readers {
            reader(t, sites, undescribed);
        }
        let Some(nested) = read.nested else { continue };
        if t.members.str("type").as_deref() != Some(nested.kind) {
            continue;
        }
        for inner in t.members.all(nested.key) {
            for t in raw::tools(inner.get(), read.split).unwrap_or_default() {
                for reader in &read.readers {
                    reader(&t, sites, undescribed);
                }
            }
        }
    }
}

/// The structured-output schemas.
pub(super) fn output_sites<'a>(top: &raw::RawObject<'a>, format: Format, sites: &mut Vec<Site<'a>>) {
    // `auto` has no descriptor: it reads with every distinct reader
    let readers = format.descriptor().map_or(format::AUTO_OUTPUTS, |d| d.output_sites.as_slice());
    for read in readers {
        read(top, sites);
    }
}

/// Where one list of tools was in a request: its byte range, and the keys from the top level to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolList {
    pub at: usize,
    pub end: usize,
    pub path: &'static [&'static str],
}

/// The lists of tools `format`'s descriptor says `text` holds, where each stands.
pub fn tool_lists_in(text: &str, format: Format) -> Vec<ToolList> {
    raw::object(text).map(|o| tool_lists(text, &o, format)).unwrap_or_default()
}

/// The lists of tools of `format` at the top level `o` of `text`.
pub(super) fn tool_lists(text: &str, o: &raw::RawObject, format: Format) -> Vec<ToolList> {
    let mut out = Vec::new();
    for read in format::list_reads(format) {
        for v in values_at(o, read.at) {
            if let Some(at) = raw::offset(text, v.get()) {
                out.push(ToolList { at, end: at + v.get().len(), path: read.at });
            }
        }
    }
    out
}
