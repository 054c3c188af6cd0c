//! A format for tests only, shaped unlike any real one: its tools sit under `toolbox.items` as
//! `{"title", "args"}`, a namespace-like `{"type": "group", "members": [...]}` holds more of them, and
//! structured output is `answer.shape`. What the rest of the code reads of a format comes from here
//! alone, so a test that rewrites it cold and warm shows that adding a format is its module and its
//! [`Format`] variant.

use super::{ArgumentKeys, Convert, Descriptor, ErrorShape, McpTool, Nested, Routes, StreamCalls, Tools};
use crate::api::raw::{self, RawObject, RawTool, Step};
use crate::api::{Format, Missing, Site};
use crate::schema::Context;
use serde_json::Value;

use Step::{Each, Key};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::Probe,
    name: "probe",
    tools: Tools { lists: &[&["toolbox", "items"]], split: None, nested: Some(Nested { kind: "group", key: "members" }), bare: false },
    tool_sites: Some(tool_sites),
    output_sites: Some(output_sites),
    outputs: &["answer"],
    shape: &["query"],
    convert: &[Convert { name: "probe", profile: &crate::schema::profile::LLAMA_CPP, strict: None, tool, list: Convert::array }],
    declared: &[&[Key("toolbox"), Key("items"), Each, Key("title")]],
    mentioned: &[],
    calls: &[],
    stream: StreamCalls::None,
    envelope: None,
    error: ErrorShape::OpenAi,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes::NONE,
};

fn tool(t: &McpTool) -> Value {
    serde_json::json!({"title": t.name, "args": t.input})
}

pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, _: &mut Vec<Missing<'a>>) {
    for p in t.members.all("args") {
        sites.push(Site::new(p, t.members.str("title").unwrap_or_default(), Context::Tool));
    }
}

pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    for a in top.all("answer") {
        let Some(o) = raw::object(a.get()) else { continue };
        for s in o.all("shape") {
            sites.push(Site::new(s, "answer".into(), Context::Output));
        }
    }
}
