//! Where each format's tool calls sit in a complete JSON document.

use crate::api::raw::Step;
use crate::api::Format;

use Step::{Each, Key};

/// Where a tool call sits in a complete JSON document of a format.
pub(super) struct CallPath {
    pub(super) at: &'static [Step],
    /// The `type` the object must have, where the container holds other things too.
    pub(super) kind: Option<&'static str>,
    pub(super) name: &'static str,
    pub(super) args: &'static str,
    /// Whether the arguments are a JSON string holding JSON (else a JSON object).
    pub(super) text: bool,
}

pub(super) const fn path(at: &'static [Step], kind: Option<&'static str>, name: &'static str, args: &'static str, text: bool) -> CallPath {
    CallPath { at, kind, name, args, text }
}

/// The tool calls of a whole response body (and of each event of a format whose events carry whole
/// calls: Gemini, Ollama's lines).
pub(super) fn plain_paths(format: Format) -> &'static [CallPath] {
    const CHAT: &[CallPath] = &[path(&[Key("choices"), Each, Key("message"), Key("tool_calls"), Each, Key("function")], None, "name", "arguments", true)];
    const RESPONSES: &[CallPath] = &[path(&[Key("output"), Each], Some("function_call"), "name", "arguments", true)];
    const ANTHROPIC: &[CallPath] = &[path(&[Key("content"), Each], Some("tool_use"), "name", "input", false)];
    const GEMINI: &[CallPath] = &[
        path(&[Key("candidates"), Each, Key("content"), Key("parts"), Each, Key("functionCall")], None, "name", "args", false),
        path(&[Key("candidates"), Each, Key("content"), Key("parts"), Each, Key("function_call")], None, "name", "args", false),
    ];
    const COHERE: &[CallPath] = &[path(&[Key("message"), Key("tool_calls"), Each, Key("function")], None, "name", "arguments", true)];
    const OLLAMA: &[CallPath] = &[path(&[Key("message"), Key("tool_calls"), Each, Key("function")], None, "name", "arguments", false)];
    match format {
        Format::OpenAiChat => CHAT,
        Format::OpenAiResponses => RESPONSES,
        Format::Anthropic => ANTHROPIC,
        Format::Gemini => GEMINI,
        Format::Cohere => COHERE,
        Format::Ollama => OLLAMA,
        Format::LlamaCompletion | Format::McpTools | Format::Auto => &[],
    }
}

/// Responses' closing `response.completed` event says every call again, whole.
pub(super) const RESPONSES_DONE: &[CallPath] = &[path(&[Key("response"), Key("output"), Each], Some("function_call"), "name", "arguments", true)];
