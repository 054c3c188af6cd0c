//! Cohere v2 chat: tools as OpenAI chat declares them, structured output as
//! `response_format.json_schema` (the schema itself); calls in `message.tool_calls`, streamed as
//! `tool-call-*` events. Its path always gets the `cohere` profile.

use super::{index, path, Args, ArgumentKeys, Convert, Descriptor, ErrorShape, Frag, Frags, Routes, StreamCalls, Tools};
use crate::api::raw::{self, RawObject, Step};
use crate::api::{Format, Site};
use crate::schema::Context;

use Step::{Each, Key};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::Cohere,
    name: "cohere",
    tools: Tools { lists: Tools::TOP, split: Some("function"), nested: None, bare: false },
    tool_sites: Some(super::function_tools),
    output_sites: Some(output_sites),
    outputs: &["response_format"],
    shape: &["messages", "model"],
    convert: CONVERT,
    declared: super::openai_chat::DECLARED,
    mentioned: super::openai_chat::MENTIONED,
    calls: &[path(&[Key("message"), Key("tool_calls"), Each, Key("function")], None, "name", "arguments", Args::Text)],
    stream: StreamCalls::Parts { frags, summary: None },
    envelope: None,
    error: ErrorShape::Cohere,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes { paths: &["/v2/chat"], profile: Some(&crate::schema::profile::COHERE), ..Routes::NONE },
};

/// `convert --to cohere`: chat function tools.
const CONVERT: &[Convert] = converts!(&[Convert {
    name: "cohere",
    profile: &crate::schema::profile::COHERE,
    strict: None,
    tool: super::openai_chat::function_tool,
    list: Convert::array
}]);

pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    for rf in top.all("response_format") {
        let Some(o) = raw::object(rf.get()) else { continue };
        for key in ["json_schema", "schema"] {
            for s in o.all(key) {
                sites.push(Site::new(s, "response_format".into(), Context::Output));
            }
        }
    }
}

fn frags(json: &str) -> Vec<Frag> {
    let mut fr = Frags::new(json);
    let Some(top) = raw::object(json) else { return fr.out };
    let key = (0, index(&top, "index", 0));
    let tc = top
        .get("delta")
        .and_then(|d| raw::object(d.get()))
        .and_then(|d| d.get("message"))
        .and_then(|m| raw::object(m.get()))
        .and_then(|m| m.get("tool_calls"))
        .and_then(|t| raw::object(t.get()));
    let f = tc.as_ref().and_then(|t| t.get("function")).and_then(|f| raw::object(f.get()));
    match (top.str("type").unwrap_or_default().as_str(), f) {
        ("tool-call-start", Some(f)) => {
            fr.name_part(key, f.get("name"));
            fr.args_part(key, f.get("arguments"));
        }
        ("tool-call-delta", Some(f)) => fr.args_part(key, f.get("arguments")),
        ("tool-call-end", _) => fr.out.push(Frag::Close(key)),
        ("message-end", _) => fr.out.push(Frag::CloseAll),
        _ => {}
    }
    fr.out
}
