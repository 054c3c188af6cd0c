//! Ollama's `/api/chat` and `/api/generate`: tools as OpenAI chat declares them, structured output as
//! `format` (a schema object); calls in `message.tool_calls` with arguments as an object, streamed
//! as NDJSON lines that each carry whole calls. Its paths always get the `ollama` profile.

use super::{path, Args, ArgumentKeys, Convert, Descriptor, ErrorShape, Routes, StreamCalls, Tools};
use crate::api::raw::{RawObject, Step};
use crate::api::{Format, Site};
use crate::schema::Context;

use Step::{Each, Key};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::Ollama,
    name: "ollama",
    tools: Tools { lists: Tools::TOP, split: Some("function"), nested: None, bare: false },
    tool_sites: Some(super::function_tools),
    output_sites: Some(output_sites),
    outputs: &["format"],
    shape: &["messages", "model", "prompt"],
    convert: CONVERT,
    declared: super::openai_chat::DECLARED,
    mentioned: super::openai_chat::MENTIONED,
    calls: &[path(&[Key("message"), Key("tool_calls"), Each, Key("function")], None, "name", "arguments", Args::Object)],
    stream: StreamCalls::Whole,
    envelope: None,
    error: ErrorShape::Ollama,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes { paths: &["/api/chat", "/api/generate"], profile: Some(&crate::schema::profile::OLLAMA), ..Routes::NONE },
};

/// `convert --to ollama`: chat function tools.
const CONVERT: &[Convert] = converts!(&[Convert {
    name: "ollama",
    profile: &crate::schema::profile::OLLAMA,
    strict: None,
    tool: super::openai_chat::function_tool,
    list: Convert::array
}]);

pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    for f in top.all("format") {
        if f.get().starts_with('{') {
            sites.push(Site::new(f, "format".into(), Context::Output));
        }
    }
}
