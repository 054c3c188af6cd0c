//! Anthropic Messages: tools as `tools[].input_schema`; calls as `content[]` blocks of type
//! `tool_use`, streamed as `content_block_*` events with `input_json_delta` parts.

use super::{index, path, Args, ArgumentKeys, Convert, Descriptor, ErrorShape, Frag, Frags, McpTool, Routes, StreamCalls, Tools};
use crate::api::raw::{self, RawTool, Step};
use crate::api::{Format, Missing, Site, Unset};
use crate::schema::profile;
use crate::schema::Context;
use serde_json::Value;

use Step::{Each, Key};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::Anthropic,
    name: "anthropic",
    tools: Tools { lists: Tools::TOP, ..Tools::NONE },
    tool_sites: Some(tool_sites),
    output_sites: None,
    outputs: &[],
    shape: &["messages", "model"],
    convert: CONVERT,
    declared: &[&[Key("tools"), Each, Key("name")]],
    mentioned: &[&[Key("tool_choice"), Key("name")], &[Key("messages"), Each, Key("content"), Each, Key("name")]],
    calls: &[path(&[Key("content"), Each], Some("tool_use"), "name", "input", Args::Object)],
    stream: StreamCalls::Parts { frags, summary: None },
    envelope: None,
    error: ErrorShape::Anthropic,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes { paths: &["/v1/messages"], ..Routes::NONE },
};

/// `convert --to anthropic`: `input_schema`, strict with `--strict-tools`.
const CONVERT: &[Convert] =
    converts!(&[Convert { name: "anthropic", profile: &profile::ANTHROPIC, strict: Some(&profile::ANTHROPIC_STRICT), tool, list: Convert::array }]);

fn tool(t: &McpTool) -> Value {
    let mut f = t.head();
    f.insert("input_schema".into(), t.input.clone());
    Value::Object(f)
}

pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, _: &mut Vec<Missing<'a>>) {
    for p in t.members.all("input_schema") {
        sites.push(Site::new(p, t.members.str("name").unwrap_or_default(), Context::Tool).switch(&t.members, Unset::Loose));
    }
}

fn frags(json: &str) -> Vec<Frag> {
    let mut f = Frags::new(json);
    let Some(top) = raw::object(json) else { return f.out };
    let key = (0, index(&top, "index", 0));
    match top.str("type").unwrap_or_default().as_str() {
        "content_block_start" => {
            if let Some(b) = top.get("content_block").and_then(|b| raw::object(b.get())).filter(|b| b.str("type").as_deref() == Some("tool_use")) {
                f.name_part(key, b.get("name"));
            }
        }
        "content_block_delta" => {
            if let Some(d) = top.get("delta").and_then(|d| raw::object(d.get())).filter(|d| d.str("type").as_deref() == Some("input_json_delta")) {
                f.args_part(key, d.get("partial_json"));
            }
        }
        "content_block_stop" => f.out.push(Frag::Close(key)),
        "message_delta" | "message_stop" => f.out.push(Frag::CloseAll),
        _ => {}
    }
    f.out
}
