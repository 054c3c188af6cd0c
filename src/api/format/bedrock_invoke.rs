//! Bedrock InvokeModel (`POST /model/{modelId}/invoke`, `/invoke-with-response-stream`) with Anthropic's
//! Messages body (`anthropic_version: bedrock-2023-05-31`, what Claude Code and the Anthropic SDK's
//! Bedrock client send): tools, calls and stream events as Anthropic's own API has them, the stream's
//! events base64-encoded as `{"bytes": ...}` in event-stream messages. Its paths get
//! `bedrock-anthropic` (the body is Claude's); another model family's InvokeModel body is of no shape
//! toolfit knows and goes on as it came.

use super::{anthropic, bedrock_converse, ArgumentKeys, Descriptor, ErrorShape, Routes, Tools};
use crate::api::Format;
use crate::schema::profile;

pub const FORMAT: Descriptor = Descriptor {
    format: Format::BedrockInvoke,
    name: "bedrock-invoke",
    tools: Tools { lists: Tools::TOP, ..Tools::NONE },
    tool_sites: Some(anthropic::tool_sites),
    output_sites: None,
    outputs: &[],
    shape: &["messages", "anthropic_version"],
    convert: &[],
    declared: anthropic::FORMAT.declared,
    mentioned: anthropic::FORMAT.mentioned,
    calls: anthropic::FORMAT.calls,
    stream: anthropic::FORMAT.stream,
    envelope: Some("bytes"),
    error: ErrorShape::Aws,
    argument_keys: ArgumentKeys::Restored,
    client_keywords: &[],
    routes: Routes {
        paths: &[],
        prefixes: &["/model/"],
        prefix_ends: Some(&["/invoke", "/invoke-with-response-stream"]),
        profile: Some(&profile::BEDROCK_ANTHROPIC),
        models: &[],
        model_in_path: Some(bedrock_converse::model_in_path),
    },
};
