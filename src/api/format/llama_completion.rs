//! llama-server's `/completion`: structured output as `json_schema`; no tools, no calls.

use super::{ArgumentKeys, Descriptor, ErrorShape, Routes, StreamCalls, Tools};
use crate::api::raw::RawObject;
use crate::api::{Format, Site};
use crate::schema::Context;

pub const FORMAT: Descriptor = Descriptor {
    format: Format::LlamaCompletion,
    name: "llama-completion",
    tools: Tools::NONE,
    tool_sites: None,
    output_sites: Some(output_sites),
    outputs: &["json_schema"],
    shape: &["prompt"],
    convert: &[],
    declared: &[],
    mentioned: &[],
    calls: &[],
    stream: StreamCalls::None,
    envelope: None,
    error: ErrorShape::OpenAi,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes { paths: &["/completion", "/completions", "/v1/completions"], ..Routes::NONE },
};

pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    for s in top.all("json_schema") {
        if s.get().starts_with('{') {
            sites.push(Site::new(s, "json_schema".into(), Context::Output));
        }
    }
}
