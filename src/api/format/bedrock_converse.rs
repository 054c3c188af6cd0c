//! Bedrock Converse (`POST /model/{modelId}/converse`, `/converse-stream`): tools as
//! `toolConfig.tools[].toolSpec.inputSchema.json`; structured output as
//! `outputConfig.textFormat.structure.jsonSchema.schema`, a string holding the schema's JSON (botocore's
//! service model types it `String`): read decoded, written back encoded; calls as
//! `output.message.content[].toolUse`. The model is in the path: its prefix always gets the `bedrock`
//! profile, Claude models (`anthropic.claude-*`, and inference profiles `us.anthropic.claude-*`)
//! `bedrock-anthropic` by the route's own model map. An empty `description` is a 400 (its shape is
//! `NonEmptyString`): the member is removed. ConverseStream answers in event-stream messages
//! (`crate::filter::response::frames`) whose JSON payloads say a call in parts: `contentBlockStart`
//! its name, `contentBlockDelta` pieces of its input, `contentBlockStop` its end. The event's type is in
//! the message's headers; the payloads tell themselves apart by their members.

use super::{index, path, Args, ArgumentKeys, Convert, Descriptor, ErrorShape, Frag, Frags, McpTool, Routes, StreamCalls, Tools};
use crate::api::raw::values_at;
use crate::api::raw::{self, RawObject, RawTool, Step};
use crate::api::{Format, Member, Missing, Site, Unset};
use crate::schema::{profile, Context};
use serde_json::{json, Value};

use Step::{Each, Key};

pub const FORMAT: Descriptor = Descriptor {
    format: Format::BedrockConverse,
    name: "bedrock-converse",
    tools: Tools { lists: &[&["toolConfig", "tools"]], split: Some("toolSpec"), nested: None, bare: false },
    tool_sites: Some(tool_sites),
    output_sites: Some(output_sites),
    outputs: &["outputConfig"],
    shape: &["messages", "system", "inferenceConfig"],
    convert: CONVERT,
    declared: &[&[Key("toolConfig"), Key("tools"), Each, Key("toolSpec"), Key("name")]],
    mentioned: &[
        &[Key("toolConfig"), Key("toolChoice"), Key("tool"), Key("name")],
        &[Key("messages"), Each, Key("content"), Each, Key("toolUse"), Key("name")],
    ],
    calls: &[path(&[Key("output"), Key("message"), Key("content"), Each, Key("toolUse")], None, "name", "input", Args::Object)],
    stream: StreamCalls::Parts { frags, summary: None },
    envelope: None,
    error: ErrorShape::Aws,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes {
        paths: &[],
        prefixes: &["/model/"],
        prefix_ends: Some(&["/converse", "/converse-stream"]),
        profile: Some(&profile::BEDROCK),
        models: &[("anthropic.claude-*", "bedrock-anthropic"), ("*.anthropic.claude-*", "bedrock-anthropic")],
        model_in_path: Some(model_in_path),
    },
};

/// `convert --to bedrock-converse`: `toolSpec`s, strict with `--strict-tools`.
const CONVERT: &[Convert] =
    converts!(&[Convert { name: "bedrock-converse", profile: &profile::BEDROCK, strict: Some(&profile::BEDROCK_STRICT), tool, list: Convert::array }]);

fn tool(t: &McpTool) -> Value {
    let mut f = t.head();
    f.insert("inputSchema".into(), json!({ "json": t.input }));
    json!({ "toolSpec": Value::Object(f) })
}

pub fn tool_sites<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, undescribed: &mut Vec<Missing<'a>>) {
    for spec in &t.functions {
        let name = spec.str("name").unwrap_or_default();
        if let Some(d) = spec.get("description").filter(|d| d.get() == "\"\"") {
            undescribed.push(Missing { anchor: d, null: false, empty: true, tool: name.clone(), member: Member::Description });
        }
        for schema in spec.all("inputSchema") {
            for p in raw::object(schema.get()).map(|s| s.all("json").collect::<Vec<_>>()).unwrap_or_default() {
                sites.push(Site::new(p, name.clone(), Context::Tool).switch(spec, Unset::Loose));
            }
        }
    }
}

/// The structured-output schema: a JSON string, always constrained (the profile's structured-output
/// rules, [`crate::schema::Profile::json_fields`]).
pub fn output_sites<'a>(top: &RawObject<'a>, sites: &mut Vec<Site<'a>>) {
    for s in values_at(top, &["outputConfig", "textFormat", "structure", "jsonSchema", "schema"]) {
        sites.push(Site { json_field: true, encoded: true, ..Site::new(s, "outputConfig".into(), Context::Output) });
    }
}

/// One ConverseStream event's payload: `{"contentBlockIndex", "start": {"toolUse": {"name"}}}`,
/// `{"contentBlockIndex", "delta": {"toolUse": {"input": "<a piece of JSON>"}}}`,
/// `{"contentBlockIndex"}` (the block's stop), `{"stopReason"}` (the message's).
fn frags(json: &str) -> Vec<Frag> {
    let mut f = Frags::new(json);
    let Some(top) = raw::object(json) else { return f.out };
    let key = (0, index(&top, "contentBlockIndex", 0));
    let tool_use = |k: &str| top.get(k).and_then(|s| raw::object(s.get())).and_then(|s| s.get("toolUse")).and_then(|t| raw::object(t.get()));
    if let Some(t) = tool_use("start") {
        f.name_part(key, t.get("name"));
    } else if let Some(t) = tool_use("delta") {
        f.args_part(key, t.get("input"));
    } else if top.get("stopReason").is_some() {
        f.out.push(Frag::CloseAll);
    } else if top.get("contentBlockIndex").is_some() && top.get("start").is_none() && top.get("delta").is_none() {
        f.out.push(Frag::Close(key));
    }
    f.out
}

/// The model a Bedrock path names (`/model/{modelId}/converse`; the id may be percent-encoded, and an
/// inference profile's ARN ends in its id: `arn:aws:bedrock:..:inference-profile/us.anthropic.claude-..`).
pub fn model_in_path(path: &str) -> Option<String> {
    let rest = path.split(['?', '#']).next().unwrap_or(path).strip_prefix("/model/")?;
    let (id, _) = rest.split_once('/')?;
    let id = percent_decoded(id)?;
    let model = id.rsplit('/').next().unwrap_or(&id);
    (!model.is_empty()).then(|| model.to_string())
}

/// `%XX` escapes decoded (`None`: a broken escape or bytes that are not UTF-8).
fn percent_decoded(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_read_from_the_path() {
        assert_eq!(model_in_path("/model/anthropic.claude-sonnet-4-5-20250929-v1:0/converse").as_deref(), Some("anthropic.claude-sonnet-4-5-20250929-v1:0"));
        assert_eq!(
            model_in_path(
                "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
            )
            .as_deref(),
            Some("us.anthropic.claude-3-5-haiku-20241022-v1:0")
        );
        assert_eq!(model_in_path("/model/meta.llama3-70b-instruct-v1%3A0/converse?x=1").as_deref(), Some("meta.llama3-70b-instruct-v1:0"));
        // the controls: no id, a broken escape, another API's path
        assert_eq!(model_in_path("/model//converse"), None);
        assert_eq!(model_in_path("/model/a%4/converse"), None);
        assert_eq!(model_in_path("/v1/models/gemini-2.5-pro:generateContent"), None);
    }
}
