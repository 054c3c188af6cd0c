//! One descriptor per API format: everything a request or response of that format means to toolfit,
//! in one module per format (the way jsonschema-rs keeps one keyword per module). The rest of the
//! code asks the descriptor ([`crate::api::Format::descriptor`]) instead of matching on the format:
//! where its schemas sit, where it declares and names functions, where a response carries calls and
//! how a stream carries them, the error shape, and the routes it is served on by default.
//!
//! Adding a format is a module here, a [`Format`] variant and a line in [`ALL`].

/// A format's `convert` lists: what `toolfit convert` writes. The Wasm filter never converts, and
/// leaves them (and the tool writers they point to, 5.6 KB) out of the module: the branch a constant
/// does not take is not linked.
macro_rules! converts {
    ($list:expr) => {
        if cfg!(target_family = "wasm") {
            &[]
        } else {
            $list
        }
    };
}

pub mod anthropic;
pub mod bedrock_converse;
pub mod bedrock_invoke;
pub mod cohere;
pub mod gemini;
pub mod llama_completion;
pub mod mcp;
pub mod mcp_tools;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;
#[cfg(test)]
pub mod probe;

use super::raw::{self, RawObject, RawTool, Step};
use super::{Format, Member, Missing, Site, Unset};
use crate::api::raw::Raw;
use crate::schema::Profile;
use serde_json::{json, Map, Value};

/// What an API format means to toolfit.
pub struct Descriptor {
    pub format: Format,
    /// The name the configuration and the CLI use.
    pub name: &'static str,
    /// Where the request's lists of tools are.
    pub tools: Tools,
    /// The schema sites in one tool of those lists (and function tools without a description, where
    /// the format has `function.description`).
    pub tool_sites: Option<ToolSites>,
    /// The schema sites outside the tool lists: structured output.
    pub output_sites: Option<OutputSites>,
    /// The top-level members [`Descriptor::output_sites`] reads: with the first keys of the tool
    /// lists, the members a warm cache answers a body from (so a schema anywhere else would be missed:
    /// a test holds every format's sites inside them).
    pub outputs: &'static [&'static str],
    /// Other top-level members a body of this format has (a request without tools is still one of
    /// its requests, not a body of unknown shape).
    pub shape: &'static [&'static str],
    /// The tool lists `toolfit convert --to NAME` writes in this format.
    pub convert: &'static [Convert],
    /// Where the request declares function names.
    pub declared: &'static [&'static [Step]],
    /// Where the request names a declared function again (tool choice, earlier calls).
    pub mentioned: &'static [&'static [Step]],
    /// Where a whole response body carries tool calls.
    pub calls: &'static [CallPath],
    /// How a streamed response carries them.
    pub stream: StreamCalls,
    /// The member of a streamed event's JSON that holds the real event, base64-encoded (Bedrock
    /// InvokeModel's `{"bytes": ...}` around Anthropic's events); `None`: the event is the JSON itself.
    pub envelope: Option<&'static str>,
    /// The shape of the error a rejected response answers with.
    pub error: ErrorShape,
    /// Whose argument keys a call of its tools carries: whether a profile may rename property names.
    pub argument_keys: ArgumentKeys,
    /// Keywords of a tool's schema that the client reads, not the model's API: kept under every
    /// profile (MCP's `x-mcp-header`, from which a client builds a call's `Mcp-Param-*` headers).
    pub client_keywords: &'static [&'static str],
    /// The routes it is served on when the configuration lists none.
    pub routes: Routes,
}

/// The keys a call's arguments arrive with, which decides whether a tool's property names may be
/// renamed for a profile (Gemini's API refuses `issue-key`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ArgumentKeys {
    /// The model's calls come back through toolfit's response path, which gives renamed keys back.
    Restored,
    /// The client calls the tool with the keys it read from the list, straight to the server (MCP): no
    /// state joins a list to its calls, so property names stay as the server wrote them.
    AsListed,
}

impl ArgumentKeys {
    pub fn renamable(self) -> bool {
        self == ArgumentKeys::Restored
    }
}

/// Where a format's lists of tools are.
pub struct Tools {
    /// Each list, as the keys from the body's top level to the array (`tools`; Bedrock's
    /// `toolConfig.tools`).
    pub lists: &'static [&'static [&'static str]],
    /// The member of a tool whose members are split out in the same scan as the list (OpenAI chat's
    /// `function`: its members hold the schema).
    pub split: Option<&'static str>,
    /// A tool that holds a list of tools itself (the Responses API's namespaces, which Codex sends).
    pub nested: Option<Nested>,
    /// Whether the body may be a list of tools itself (an MCP `tools/list` result written as an array).
    pub bare: bool,
}

impl Tools {
    pub const TOP: &'static [&'static [&'static str]] = &[&["tools"]];
    pub const NONE: Tools = Tools { lists: &[], split: None, nested: None, bare: false };
}

/// A tool of `kind` whose member `key` is a list of tools, read as the format's lists are.
#[derive(Clone, Copy)]
pub struct Nested {
    pub kind: &'static str,
    pub key: &'static str,
}

/// One tool of an MCP `tools/list` result.
pub struct McpTool<'v> {
    pub name: &'v str,
    pub description: Option<&'v Value>,
    /// Its `inputSchema` (an empty object schema when it has none, as MCP means it).
    pub input: Value,
    pub output: Option<&'v Value>,
}

impl McpTool<'_> {
    /// `name` and `description`: how every API's function declaration starts.
    pub fn head(&self) -> Map<String, Value> {
        let mut f = Map::new();
        f.insert("name".into(), json!(self.name));
        if let Some(d) = self.description {
            f.insert("description".into(), d.clone());
        }
        f
    }
}

/// One tool list `toolfit convert` writes: an MCP `tools/list` result's tools in a format's shape,
/// put where the format's first list is and rewritten as a request of that format would be.
pub struct Convert {
    /// The name `--to` takes.
    pub name: &'static str,
    /// The profile the list is rewritten by, and by with `--strict-tools` where the API has a strict
    /// mode (`None`: the same).
    pub profile: &'static Profile,
    pub strict: Option<&'static Profile>,
    /// One MCP tool in this shape, before its schema is rewritten.
    pub tool: fn(&McpTool) -> Value,
    /// The list's value made of the tools (Gemini's go in one `functionDeclarations` entry).
    pub list: fn(Vec<Value>) -> Value,
}

impl Convert {
    /// A list that is the array of the tools.
    pub fn array(tools: Vec<Value>) -> Value {
        Value::Array(tools)
    }
}

/// Reads one element of `tools`: its schema sites, and function tools without a description or without
/// `parameters` (members some servers read unconditionally).
pub type ToolSites = for<'a> fn(&RawTool<'a>, &mut Vec<Site<'a>>, &mut Vec<Missing<'a>>);
/// Reads the top level of a body for the schema sites outside `tools`.
pub type OutputSites = for<'a> fn(&RawObject<'a>, &mut Vec<Site<'a>>);

/// Where a tool call sits in a complete JSON document of a format.
pub struct CallPath {
    pub at: &'static [Step],
    /// The `type` the object must have, where the container holds other things too.
    pub kind: Option<&'static str>,
    pub name: &'static str,
    pub args: &'static str,
    /// How the arguments are spelled.
    pub spelled: Args,
}

/// How a format spells a call's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Args {
    /// A JSON string holding JSON (OpenAI, Cohere).
    Text,
    /// A JSON object (Anthropic, Gemini, Ollama).
    Object,
}

pub const fn path(at: &'static [Step], kind: Option<&'static str>, name: &'static str, args: &'static str, spelled: Args) -> CallPath {
    CallPath { at, kind, name, args, spelled }
}

/// How a streamed response of the format carries tool calls.
#[derive(Clone, Copy)]
pub enum StreamCalls {
    /// It has no streamed calls toolfit reads.
    None,
    /// Each event carries whole calls, at [`Descriptor::calls`] (Gemini's events, Ollama's lines).
    Whole,
    /// Calls come in parts over several events: the parser gives each event's fragments; `summary`,
    /// where the format closes with an event that says every call again, whole (Responses'
    /// `response.completed`).
    Parts { frags: fn(&str) -> Vec<Frag>, summary: Option<Summary> },
}

/// A closing event that says every call again, whole.
#[derive(Clone, Copy)]
pub struct Summary {
    /// Whether an event's JSON is that event.
    pub is: fn(&str) -> bool,
    /// Where its calls are.
    pub calls: &'static [CallPath],
}

/// A call assembled over a stream, by (choice or block, index).
pub type CallKey = (u64, u64);

/// What one stream event says about the calls being assembled.
#[derive(Debug, Clone)]
pub enum Frag {
    /// Part of a call's name (a JSON string at this byte range of the event's JSON).
    NamePart(CallKey, usize, usize),
    /// Part of a call's argument text.
    ArgsPart(CallKey, usize, usize),
    /// The call's whole name or arguments, said again (Responses' `.done` events).
    NameWhole(CallKey, usize, usize),
    ArgsWhole(CallKey, usize, usize),
    /// The call is complete.
    Close(CallKey),
    /// Every call so far is complete.
    CloseAll,
}

/// Collects the fragments of one event's JSON (what every stream parser shares).
pub struct Frags<'j> {
    pub json: &'j str,
    pub out: Vec<Frag>,
}

impl<'j> Frags<'j> {
    pub fn new(json: &'j str) -> Self {
        Frags { json, out: Vec::new() }
    }

    /// Part of a call's name, found at `v`.
    pub fn name_part(&mut self, key: CallKey, v: Option<Raw<'_>>) {
        self.push(v, |a, b| Frag::NamePart(key, a, b));
    }

    /// Part of a call's argument text, found at `v`.
    pub fn args_part(&mut self, key: CallKey, v: Option<Raw<'_>>) {
        self.push(v, |a, b| Frag::ArgsPart(key, a, b));
    }

    /// A call's whole name, said again, found at `v`.
    pub fn name_whole(&mut self, key: CallKey, v: Option<Raw<'_>>) {
        self.push(v, |a, b| Frag::NameWhole(key, a, b));
    }

    /// A call's whole argument text, said again, found at `v`.
    pub fn args_whole(&mut self, key: CallKey, v: Option<Raw<'_>>) {
        self.push(v, |a, b| Frag::ArgsWhole(key, a, b));
    }

    /// The fragment `make` gives for the byte range `v` takes in the event's JSON.
    fn push(&mut self, v: Option<Raw<'_>>, make: impl FnOnce(usize, usize) -> Frag) {
        let Some((a, b)) = v.and_then(|v| raw::offset(self.json, v.get()).map(|at| (at, at + v.get().len()))) else { return };
        self.out.push(make(a, b));
    }
}

/// A numeric member used as an index, `default` when absent.
pub fn index(o: &RawObject, key: &str, default: u64) -> u64 {
    o.get(key).and_then(|v| v.get().parse().ok()).unwrap_or(default)
}

/// The shape of the format's error body: what the API's own clients read when toolfit answers in its
/// place (a strict 400, a rejected call's 502). Every shape names toolfit's error `kind`, the tool and
/// the JSON pointer besides the message, where the shape has room for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorShape {
    /// `{"error": {"type", "message", ...}}`: OpenAI, and the servers that answer as it does (vLLM,
    /// llama-server).
    OpenAi,
    /// `{"type": "error", "error": {"type", "message", ...}}`: Anthropic.
    Anthropic,
    /// `{"error": {"code", "message", "status", "details": [ErrorInfo]}}`: Google APIs (Gemini); the
    /// tool and the pointer ride in the `google.rpc.ErrorInfo`'s metadata.
    Google,
    /// `{"error": "message", ...}`: Ollama (its client reads `error` as the message).
    Ollama,
    /// `{"message": "message", ...}`: Cohere.
    Cohere,
    /// `{"message": "message", "__type": ...}`: AWS's JSON protocols (Bedrock Runtime); botocore reads the
    /// error's code from `__type` and its message from `message`.
    Aws,
}

impl ErrorShape {
    /// The body of an answer with HTTP `status`: toolfit's error `kind`, a `message`, and the `tool`
    /// and JSON pointer `path` it is about.
    pub fn body(self, status: u16, kind: &str, message: &str, tool: &str, path: &str) -> Vec<u8> {
        // written out rather than built as a `Value` (the map code cost the module 3 KB)
        let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        let (kind, message, tool, path) = (q(kind), q(message), q(tool), q(path));
        let inner = format!(r#"{{"type":{kind},"message":{message},"tool":{tool},"path":{path}}}"#);
        let v = match self {
            ErrorShape::OpenAi => format!(r#"{{"error":{inner}}}"#),
            ErrorShape::Anthropic => format!(r#"{{"type":"error","error":{inner}}}"#),
            ErrorShape::Google => {
                let state = if status == 400 { "INVALID_ARGUMENT" } else { "INTERNAL" };
                let info = format!(
                    r#"{{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":{kind},"domain":"toolfit","metadata":{{"tool":{tool},"path":{path}}}}}"#
                );
                format!(r#"{{"error":{{"code":{status},"message":{message},"status":"{state}","details":[{info}]}}}}"#)
            }
            ErrorShape::Ollama => format!(r#"{{"error":{message},"type":{kind},"tool":{tool},"path":{path}}}"#),
            ErrorShape::Cohere => format!(r#"{{"message":{message},"type":{kind},"tool":{tool},"path":{path}}}"#),
            ErrorShape::Aws => {
                let code = if status == 400 { "ValidationException" } else { "ModelErrorException" };
                format!(r#"{{"message":{message},"__type":"{code}","type":{kind},"tool":{tool},"path":{path}}}"#)
            }
        };
        v.into_bytes()
    }

    /// The shape of `format`'s errors (`auto` answers as OpenAI does).
    pub fn of(format: Format) -> ErrorShape {
        format.descriptor().map_or(ErrorShape::OpenAi, |d| d.error)
    }
}

/// The routes a format is served on by default.
pub struct Routes {
    /// Exact paths.
    pub paths: &'static [&'static str],
    /// Path prefixes (an API that puts the model in the path).
    pub prefixes: &'static [&'static str],
    /// Under a prefix, only paths ending so carry schemas (`None`: all of them).
    pub prefix_ends: Option<&'static [&'static str]>,
    /// The profile these paths always get, whatever the plugin's profile or model map: a path that is
    /// only ever this API (`None`: the plugin's).
    pub profile: Option<&'static Profile>,
    /// With `profile`: the route's own model map (pattern, profile name), where the API serves models
    /// whose rules differ (Claude on Bedrock); the plugin's map is not read there.
    pub models: &'static [(&'static str, &'static str)],
    /// The model a path of this API names, where the API puts it there (Gemini, Bedrock).
    pub model_in_path: Option<fn(&str) -> Option<String>>,
}

impl Routes {
    pub const NONE: Routes = Routes { paths: &[], prefixes: &[], prefix_ends: None, profile: None, models: &[], model_in_path: None };
}

/// The model a request's path names, for the model map (APIs that put it in the path).
pub fn model_in_path(path: &str) -> Option<String> {
    ALL.iter().filter_map(|d| d.routes.model_in_path).find_map(|f| f(path))
}

/// Every format, in the order the default routes list them.
pub const ALL: &[&Descriptor] = &[
    &openai_chat::FORMAT,
    &openai_responses::FORMAT,
    &anthropic::FORMAT,
    &ollama::FORMAT,
    &llama_completion::FORMAT,
    &gemini::FORMAT,
    &cohere::FORMAT,
    &bedrock_converse::FORMAT,
    &bedrock_invoke::FORMAT,
    &mcp_tools::FORMAT,
    &mcp::FORMAT,
    #[cfg(test)]
    &probe::FORMAT,
];

/// The descriptors a body of `format` is read by: its own, or every one for `auto`.
pub fn read_by(format: Format) -> &'static [&'static Descriptor] {
    match ALL.iter().position(|d| d.format == format) {
        Some(i) => ALL.get(i..=i).unwrap_or_default(),
        None => ALL,
    }
}

/// Whether a top-level member holds schemas in some format: a warm cache answers a body from these
/// members whole.
pub fn holds_schemas(key: &str) -> bool {
    ALL.iter().any(|d| d.outputs.contains(&key) || d.tools.lists.iter().any(|l| l.first() == Some(&key)))
}

/// Whether a top-level member shows that a body is some format's (else it is of unknown shape).
pub fn known(key: &str) -> bool {
    holds_schemas(key) || ALL.iter().any(|d| d.shape.contains(&key))
}

/// One distinct list of tools a format has, and how its tools are read.
pub struct ListRead {
    /// The keys from the top level to the list.
    pub at: &'static [&'static str],
    pub split: Option<&'static str>,
    pub nested: Option<Nested>,
    /// The tool readers, in order (`auto`: of each format with this list, every distinct shape once).
    pub readers: Vec<ToolSites>,
}

/// The lists of tools `format` has, each once (`auto`: every format's).
pub fn list_reads(format: Format) -> Vec<ListRead> {
    let by: &[&Descriptor] = match format {
        Format::Auto => AUTO_TOOLS,
        _ => read_by(format),
    };
    let mut out: Vec<ListRead> = Vec::new();
    for d in by {
        for at in d.tools.lists {
            let read = match out.iter_mut().position(|r| r.at == *at) {
                Some(i) => out.get_mut(i),
                None => {
                    out.push(ListRead { at, split: None, nested: None, readers: Vec::new() });
                    out.last_mut()
                }
            };
            let Some(read) = read else { continue };
            read.split = read.split.or(d.tools.split);
            read.nested = read.nested.or(d.tools.nested);
            read.readers.extend(d.tool_sites);
        }
    }
    out
}

/// The member `split` of a tool, for the list read first in the body's scan: the first single-key list
/// of `format` (`tools`), if it has one.
pub fn presplit(format: Format) -> Option<(&'static str, Option<&'static str>)> {
    list_reads(format).into_iter().find_map(|r| match r.at {
        [key] => Some((*key, r.split)),
        _ => None,
    })
}

/// How a body of `format` that is a bare list of tools is read (`None`: it cannot be one).
pub fn bare(format: Format) -> Option<ListRead> {
    let mut read = ListRead { at: &[], split: None, nested: None, readers: Vec::new() };
    let mut any = false;
    for d in read_by(format).iter().filter(|d| d.tools.bare) {
        any = true;
        read.split = read.split.or(d.tools.split);
        read.nested = read.nested.or(d.tools.nested);
        read.readers.extend(d.tool_sites);
    }
    any.then_some(read)
}

/// Whose tool readers `auto` reads each tool with, in this order: every distinct tool shape once (Ollama
/// and Cohere declare tools as OpenAI chat does), each on the lists its format has.
pub const AUTO_TOOLS: &[&Descriptor] =
    &[&openai_chat::FORMAT, &openai_responses::FORMAT, &anthropic::FORMAT, &mcp_tools::FORMAT, &gemini::FORMAT, &bedrock_converse::FORMAT];

/// What `auto` reads outside `tools`, in this order. Cohere's `response_format` is left out: it holds
/// the schema itself where OpenAI's holds it under `json_schema.schema`.
pub const AUTO_OUTPUTS: &[OutputSites] = &[
    openai_chat::output_sites,
    openai_responses::output_sites,
    gemini::output_sites,
    ollama::output_sites,
    llama_completion::output_sites,
    bedrock_converse::output_sites,
];

/// An element of `tools` whose `function` objects declare tools (OpenAI chat, Ollama, Cohere).
pub fn function_tools<'a>(t: &RawTool<'a>, sites: &mut Vec<Site<'a>>, undescribed: &mut Vec<Missing<'a>>) {
    for fo in &t.functions {
        let name = fo.str("name").unwrap_or_default();
        match (fo.get("description"), fo.get("name")) {
            (Some(d), _) if d.get() == "null" => {
                undescribed.push(Missing { anchor: d, null: true, empty: false, tool: name.clone(), member: Member::Description })
            }
            (None, Some(n)) => undescribed.push(Missing { anchor: n, null: false, empty: false, tool: name.clone(), member: Member::Description }),
            _ => {}
        }
        // a function without arguments may leave `parameters` out (the OpenAI API allows it)
        if let (None, Some(n)) = (fo.get("parameters"), fo.get("name")) {
            undescribed.push(Missing { anchor: n, null: false, empty: false, tool: name.clone(), member: Member::Parameters });
        }
        for p in fo.all("parameters") {
            sites.push(Site::new(p, name.clone(), crate::schema::Context::Tool).switch(fo, Unset::Loose));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value;

    /// Where each API's clients find the message (what openai, anthropic, google-genai, cohere and
    /// ollama read; `tests/envoy/clients.py` has the SDKs themselves read a strict 400), and the
    /// shape each format answers in.
    #[test]
    fn each_shape_puts_the_message_where_its_clients_read_it() {
        let of = |shape: ErrorShape, status| serde_json::from_slice::<Value>(&shape.body(status, "k", "m", "t", "/p")).unwrap_or_default();
        let o = of(ErrorShape::OpenAi, 400);
        assert_eq!(
            (o["error"]["message"].as_str(), o["error"]["type"].as_str(), o["error"]["tool"].as_str(), o["error"]["path"].as_str()),
            (Some("m"), Some("k"), Some("t"), Some("/p"))
        );
        let a = of(ErrorShape::Anthropic, 400);
        assert_eq!((a["type"].as_str(), a["error"]["type"].as_str(), a["error"]["message"].as_str()), (Some("error"), Some("k"), Some("m")));
        let g = of(ErrorShape::Google, 400);
        assert_eq!(
            (g["error"]["code"].as_u64(), g["error"]["status"].as_str(), g["error"]["message"].as_str()),
            (Some(400), Some("INVALID_ARGUMENT"), Some("m"))
        );
        assert_eq!((g["error"]["details"][0]["reason"].as_str(), g["error"]["details"][0]["metadata"]["tool"].as_str()), (Some("k"), Some("t")));
        assert_eq!(of(ErrorShape::Google, 502)["error"]["status"].as_str(), Some("INTERNAL"));
        let l = of(ErrorShape::Ollama, 400);
        assert_eq!((l["error"].as_str(), l["tool"].as_str()), (Some("m"), Some("t")));
        let w = of(ErrorShape::Aws, 400);
        assert_eq!((w["message"].as_str(), w["__type"].as_str(), w["tool"].as_str()), (Some("m"), Some("ValidationException"), Some("t")));
        let c = of(ErrorShape::Cohere, 400);
        assert_eq!((c["message"].as_str(), c["path"].as_str()), (Some("m"), Some("/p")));
        let shapes: Vec<(&str, ErrorShape)> = ALL.iter().map(|d| (d.name, d.error)).collect();
        for (name, want) in [
            ("anthropic", ErrorShape::Anthropic),
            ("gemini", ErrorShape::Google),
            ("ollama", ErrorShape::Ollama),
            ("cohere", ErrorShape::Cohere),
            ("bedrock-converse", ErrorShape::Aws),
            ("bedrock-invoke", ErrorShape::Aws),
            ("openai-chat", ErrorShape::OpenAi),
        ] {
            assert!(shapes.contains(&(name, want)), "{name}: {shapes:?}");
        }
        assert_eq!(ErrorShape::of(Format::Auto), ErrorShape::OpenAi);
    }
}
