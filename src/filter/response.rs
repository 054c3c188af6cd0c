//! The response path, without any host: puts back what the request's rewrite changed in the model's
//! tool calls, and checks every call against the schema the client sent.
//!
//! Two rewrites change what the model answers: a tool sent under another name (the API refuses the
//! MCP name) and OpenAI strict's optional properties made required-and-nullable (the model writes
//! `"x": null` where the caller meant "absent", which MCP servers often refuse). The [`Reply`] built
//! from the request carries the name map, each tool's original schema and whether its rewrite made
//! nulls; nothing is kept across requests.
//!
//! Plain JSON responses are repaired whole ([`Reply::repair_json`]). Streams ([`Stream`]) are cut into
//! events (SSE) or lines (NDJSON) as they come; an event that carries part of a tool call is held
//! only while that call is being assembled and only when something in it may need repair (a name
//! split over deltas cannot be mapped before it is whole, a null cannot be removed from half an
//! argument string), then sent on with the call's first fragment carrying the repaired whole and
//! the later fragments empty. Everything else goes on as it came, byte for byte. A response to a
//! request that needs no repair is never held: its calls are only read, for the validity counters.

use super::encoding::{Coding, Decoder};
use super::request::{is_json, Line};
use super::stats::{label, metric_name, Metrics, Stat};
use crate::api::names::NameMap;
use crate::api::raw::{self, Step};
use crate::api::{self, Format};
use crate::schema::passes::property_names;
use crate::schema::validate::{self, Violation};
use crate::schema::{Context, Kind, Report};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

use Step::{Each, Key};

/// What to do with a tool call whose arguments the client's schema refuses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnInvalid {
    /// Count it and log it; the client gets the call.
    #[default]
    Count,
    /// Answer the client with an error naming the tool and the place instead of the call (plain
    /// JSON responses; a stream is counted only, its headers are long gone).
    Reject,
}

/// A tool as the client declared it.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The name the model saw.
    pub sent: String,
    /// The client's name.
    pub name: String,
    /// The client's schema, as it came.
    pub schema: String,
    /// Whether the rewrite made optional properties required-and-nullable.
    pub nulls: bool,
    /// Schema paths of the lossy changes made to it.
    pub lossy: Vec<String>,
    /// Property names sent in place of ones the API refuses: (sent, original), unique in the tool.
    pub keys: Vec<(String, String)>,
}

/// Everything the response needs from its request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub format: Format,
    pub validate: bool,
    pub on_invalid: OnInvalid,
    /// The most bytes held at once (a stream event, a plain body); past it the rest goes on unrepaired.
    pub max_bytes: usize,
    /// Route label and profile of the request's counters.
    pub route: String,
    pub profile: &'static str,
    /// Whether the request's rewrite mapped a name or made a null the response must undo.
    repairs: bool,
    /// The declared tools, read from `source` when a response first carries a call: most responses
    /// carry none, and the request path does not pay for reading them.
    tools: std::cell::OnceCell<Vec<Tool>>,
    source: Option<Source>,
}

/// What the tools are read from.
#[derive(Debug, Clone)]
struct Source {
    /// The request's tool lists, as the client sent them (`{"tools": [...]}`).
    lists: String,
    names: NameMap,
    /// The tools whose rewrite made nulls (`None`: all may have, the report lost count).
    nullable: Option<HashSet<String>>,
    lossy: HashMap<String, Vec<String>>,
    keys: HashMap<String, Vec<(String, String)>>,
}

impl Source {
    fn read(&self, format: Format) -> Vec<Tool> {
        let sent: HashMap<&str, &str> = self.names.0.iter().map(|(s, o)| (o.as_str(), s.as_str())).collect();
        let sites = api::locate(&self.lists, format).unwrap_or_default();
        sites
            .iter()
            .filter(|s| s.context == Context::Tool)
            .map(|s| Tool {
                sent: sent.get(s.tool.as_str()).copied().unwrap_or(&s.tool).to_string(),
                name: s.tool.clone(),
                schema: s.raw.get().to_string(),
                nulls: self.nullable.as_ref().is_none_or(|n| n.contains(&s.tool)),
                lossy: self.lossy.get(&s.tool).cloned().unwrap_or_default(),
                keys: self.keys.get(&s.tool).cloned().unwrap_or_default(),
            })
            .collect()
    }
}

/// One tool call, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The client's tool name (or the name the model used, for a tool nobody declared).
    pub tool: String,
    pub violation: Option<Violation>,
    /// Whether the violation falls where toolfit made a lossy change.
    pub lossy: bool,
}

/// What a response's repair did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    pub names_restored: u64,
    pub nulls_removed: u64,
    pub properties_restored: u64,
    /// Responses (or parts of streams) that needed repair and went on as they came.
    pub unrepaired: u64,
    /// Responses replaced by an error (`on_invalid_tool_call: reject`).
    pub rejected: u64,
    pub calls: Vec<Call>,
}

/// A call's repaired name and arguments (`None`: as the model wrote them).
#[derive(Debug, Clone, Default)]
struct Fixed {
    name: Option<String>,
    args: Option<String>,
}

/// Where a tool call sits in a complete JSON document of a format.
struct CallPath {
    at: &'static [Step],
    /// The `type` the object must have, where the container holds other things too.
    kind: Option<&'static str>,
    name: &'static str,
    args: &'static str,
    /// Whether the arguments are a JSON string holding JSON (else a JSON object).
    text: bool,
}

const fn path(at: &'static [Step], kind: Option<&'static str>, name: &'static str, args: &'static str, text: bool) -> CallPath {
    CallPath { at, kind, name, args, text }
}

/// The tool calls of a whole response body (and of each event of a format whose events carry whole
/// calls: Gemini, Ollama's lines).
fn plain_paths(format: Format) -> &'static [CallPath] {
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

/// Gives every object key in `v` that is a sent property name its original back (the names are
/// unique in the tool and never a valid original, so any depth is safe); returns how many.
fn restore_keys(v: &mut Value, keys: &[(String, String)]) -> usize {
    let mut n = 0;
    match v {
        Value::Object(m) => {
            if m.keys().any(|k| keys.iter().any(|(s, _)| s == k)) {
                let old = std::mem::take(m);
                for (k, val) in old {
                    match keys.iter().find(|(s, _)| *s == k) {
                        Some((_, original)) => {
                            n += 1;
                            m.insert(original.clone(), val);
                        }
                        None => {
                            m.insert(k, val);
                        }
                    }
                }
            }
            for val in m.values_mut() {
                n += restore_keys(val, keys);
            }
        }
        Value::Array(a) => {
            for val in a {
                n += restore_keys(val, keys);
            }
        }
        _ => {}
    }
    n
}

/// A JSON string's value.
fn text_of(v: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(v.get()).ok()
}

fn quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Whether a schema path lies at or under one of `lossy`.
fn under(path: &str, lossy: &[String]) -> bool {
    lossy.iter().any(|p| p.is_empty() || p == "/" || path == p || path.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with('/')))
}

impl Reply {
    /// The reply for a request: its tool lists as the client sent them (see
    /// [`api::BodyOutcome::tool_lists_of`]), the names the rewrite changed and its report.
    pub fn of(lists: String, format: Format, names: NameMap, report: &Report, validate: bool, on_invalid: OnInvalid, max_bytes: usize) -> Reply {
        // a report past its record cap may not name every tool made nullable: then every tool is taken
        // as one (only nulls the client's schema refuses for an optional property are removed, and
        // those the MCP server would refuse anyway)
        let made = report.counters.contains_key(&Kind::OptionalNullable);
        let mut nullable = HashSet::new();
        let mut lossy: HashMap<String, Vec<String>> = HashMap::new();
        let mut keys: HashMap<String, Vec<(String, String)>> = HashMap::new();
        for r in &report.records {
            if r.kind == Kind::OptionalNullable {
                nullable.insert(r.tool.clone());
            }
            if let Some(pair) = (r.kind == Kind::PropertyMapped).then(|| property_names::mapping(&r.detail)).flatten() {
                keys.entry(r.tool.clone()).or_default().push(pair);
            }
            if r.kind.lossy() {
                lossy.entry(r.tool.clone()).or_default().push(r.path.clone());
            }
        }
        let nullable = (!made || report.dropped_records == 0).then_some(nullable);
        let repairs = made || !names.is_empty() || !keys.is_empty();
        let source = Source { lists, names, nullable, lossy, keys };
        Reply { format, validate, on_invalid, max_bytes, route: String::new(), profile: "", repairs, tools: Default::default(), source: Some(source) }
    }

    /// A reply for tools known already (tests, benchmarks).
    pub fn with_tools(format: Format, tools: Vec<Tool>, validate: bool, on_invalid: OnInvalid, max_bytes: usize) -> Reply {
        let repairs = tools.iter().any(|t| t.sent != t.name || t.nulls || !t.keys.is_empty());
        Reply { format, validate, on_invalid, max_bytes, route: String::new(), profile: "", repairs, tools: tools.into(), source: None }
    }

    /// The tools the request declared.
    pub fn tools(&self) -> &[Tool] {
        self.tools.get_or_init(|| self.source.as_ref().map(|s| s.read(self.format)).unwrap_or_default())
    }

    /// Whether a response may need changing (else it is only read).
    pub fn repairs(&self) -> bool {
        self.repairs
    }

    /// Whether the response is worth reading at all.
    pub fn wanted(&self) -> bool {
        self.validate || self.repairs()
    }

    fn tool(&self, sent: &str) -> Option<&Tool> {
        self.tools().iter().find(|t| t.sent == sent)
    }

    /// Repairs and checks one call: `name` as the model wrote it, `args` the arguments' JSON text.
    fn fix(&self, name: &str, args: &str, count: bool, tally: &mut Tally) -> Fixed {
        let mut out = Fixed::default();
        let Some(tool) = self.tool(name) else {
            if count && self.validate {
                let v =
                    Violation { instance: "/".into(), schema: String::new(), reason: format!("the model called {name:?}, which the request does not declare") };
                tally.calls.push(Call { tool: name.to_string(), violation: Some(v), lossy: false });
            }
            return out;
        };
        if tool.sent != tool.name {
            out.name = Some(tool.name.clone());
            tally.names_restored += 1;
        }
        let args = if args.trim().is_empty() { "{}" } else { args };
        let mut value = serde_json::from_str::<Value>(args).ok();
        let schema = serde_json::from_str::<Value>(&tool.schema).ok();
        if let (Some(v), false) = (value.as_mut(), tool.keys.is_empty()) {
            let n = restore_keys(v, &tool.keys);
            if n > 0 {
                tally.properties_restored += n as u64;
                out.args = Some(v.to_string());
            }
        }
        if let (Some(v), Some(s), true) = (value.as_mut(), schema.as_ref(), tool.nulls) {
            let n = validate::strip_injected_nulls(s, v);
            if n > 0 {
                tally.nulls_removed += n as u64;
                out.args = Some(v.to_string());
            }
        }
        if count && self.validate {
            let violation = match (&value, &schema) {
                (None, _) => Some(Violation { instance: "/".into(), schema: String::new(), reason: "the arguments are not JSON".into() }),
                (Some(v), Some(s)) => validate::validate(s, v).err(),
                (Some(_), None) => None,
            };
            let lossy = violation.as_ref().is_some_and(|v| under(&v.schema, &tool.lossy));
            tally.calls.push(Call { tool: tool.name.clone(), violation, lossy });
        }
        out
    }

    /// The calls of a complete JSON document at `paths`, repaired: the new text if anything changed.
    fn repair_doc(&self, text: &str, paths: &[CallPath], count: bool, tally: &mut Tally) -> Option<String> {
        let top: &RawValue = serde_json::from_str(text).ok()?;
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        for p in paths {
            let mut found = Vec::new();
            raw::walk(top, p.at, &mut found);
            for c in found {
                let Some(o) = raw::object(c.get()) else { continue };
                if p.kind.is_some_and(|k| o.str("type").as_deref() != Some(k)) {
                    continue;
                }
                let (Some(name_v), Some(name)) = (o.get(p.name), o.str(p.name)) else { continue };
                let args_v = o.get(p.args);
                let args = match (args_v, p.text) {
                    (Some(a), true) => text_of(a).unwrap_or_else(|| a.get().to_string()),
                    (Some(a), false) => a.get().to_string(),
                    (None, _) => "{}".to_string(),
                };
                let fixed = self.fix(&name, &args, count, tally);
                if let (Some(new), Some(at)) = (fixed.name, raw::offset(text, name_v.get())) {
                    edits.push((at, at + name_v.get().len(), quoted(&new)));
                }
                if let (Some(new), Some(a)) = (fixed.args, args_v) {
                    if let Some(at) = raw::offset(text, a.get()) {
                        edits.push((at, at + a.get().len(), if p.text { quoted(&new) } else { new }));
                    }
                }
            }
        }
        (!edits.is_empty()).then(|| api::splice(text, edits.iter().map(|(a, b, s)| (*a, *b, s.as_str())).collect()))
    }

    /// Repairs a whole JSON response body. `None`: forward it as it is.
    pub fn repair_json(&self, body: &[u8], tally: &mut Tally) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(body).ok()?;
        let out = self.repair_doc(text, plain_paths(self.format), true, tally);
        out.map(String::into_bytes)
    }

    /// The error a rejected response answers with: the format's error shape where it has one.
    pub fn rejection(&self, call: &Call) -> Vec<u8> {
        let (path, why) = call.violation.as_ref().map(|v| (v.instance.as_str(), v.reason.as_str())).unwrap_or(("/", ""));
        let message = format!("the model's call to tool {:?} does not match the tool's schema at {path}: {why}", call.tool);
        let v = if self.format == Format::Anthropic {
            serde_json::json!({"type": "error", "error": {"type": "toolfit_invalid_tool_call", "message": message, "tool": call.tool, "path": path}})
        } else {
            serde_json::json!({"error": {"type": "toolfit_invalid_tool_call", "message": message, "tool": call.tool, "path": path}})
        };
        v.to_string().into_bytes()
    }
}

impl Tally {
    /// The first invalid call, if any.
    pub fn first_invalid(&self) -> Option<&Call> {
        self.calls.iter().find(|c| c.violation.is_some())
    }

    /// Adds what a response's repair did to the route's counters (and each tool's), and says the
    /// first invalid call and any unrepaired response in one log line.
    pub fn count(&self, reply: &Reply, m: &mut dyn Metrics) -> Option<Line> {
        let metric = |c: &str| metric_name(&reply.route, reply.profile, c);
        let mut add = |c: &str, n: u64| {
            if n > 0 {
                m.add(&metric(c), n);
            }
        };
        add(Stat::NamesRestored.name(), self.names_restored);
        add(Stat::PropertiesRestored.name(), self.properties_restored);
        add(Stat::NullsRemoved.name(), self.nulls_removed);
        add(Stat::ResponsesUnrepaired.name(), self.unrepaired);
        add(Stat::ToolCallsRejected.name(), self.rejected);
        let invalid: Vec<&Call> = self.calls.iter().filter(|c| c.violation.is_some()).collect();
        add(Stat::ToolCallsSeen.name(), self.calls.len() as u64);
        add(Stat::ToolCallsInvalid.name(), invalid.len() as u64);
        add(Stat::ToolCallsInvalidLossy.name(), invalid.iter().filter(|c| c.lossy).count() as u64);
        for c in &self.calls {
            let tool = format!("tool.{}", label(&c.tool));
            add(&format!("{tool}.calls_seen"), 1);
            if c.violation.is_some() {
                add(&format!("{tool}.calls_invalid"), 1);
                add(&format!("{tool}.calls_invalid_lossy"), u64::from(c.lossy));
            }
        }
        let mut text = String::new();
        if let Some(c) = invalid.first() {
            let v = c.violation.as_ref();
            text = format!(
                "route={} profile={} invalid tool call: tool {:?} at {}: {}{}",
                reply.route,
                reply.profile,
                c.tool,
                v.map_or("/", |v| v.instance.as_str()),
                v.map_or("", |v| v.reason.as_str()),
                if c.lossy { " (where toolfit's rewrite was lossy)" } else { "" }
            );
            if invalid.len() > 1 {
                text.push_str(&format!(" (+{} more invalid calls)", invalid.len() - 1));
            }
        }
        if self.unrepaired > 0 {
            if text.is_empty() {
                text = format!("route={} profile={}", reply.route, reply.profile);
            }
            text.push_str(" response forwarded unrepaired (an encoding toolfit cannot read, a body that does not decode, or a call held past max_body_bytes)");
        }
        (!text.is_empty()).then_some(Line { warn: true, text })
    }
}

/// How to read a response, from its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// Leave it alone: not a success, no body, or not a format that carries calls.
    Skip,
    /// In a coding toolfit cannot read (`br`, `zstd`, stacked codings; the request asked only for
    /// readable ones, so an upstream sent it unasked): forwarded as it is (`responses_unrepaired`
    /// when a repair was due).
    Encoded,
    /// A JSON body. `hold`: toolfit keeps it until the end (it may change); else it is only read.
    /// `wait`: the headers wait for it too (`on_invalid_tool_call: reject` may answer 502).
    /// `coding`: how the upstream compressed it (decoded as it comes).
    Json { hold: bool, wait: bool, coding: Coding },
    /// SSE or NDJSON, read (and repaired, if `reply.repairs()`) event by event.
    Stream(Framing, Coding),
}

impl Begin {
    /// Whether the body may change length, so `Content-Length` must go.
    pub fn changes(self, reply: &Reply) -> bool {
        match self {
            Begin::Json { hold, .. } => hold,
            Begin::Stream(..) => reply.repairs(),
            Begin::Skip | Begin::Encoded => false,
        }
    }

    /// Whether the body goes on decoded, so `Content-Encoding` must go too. A body that is only read
    /// goes on compressed, byte for byte; one that may change goes on as identity (Envoy's
    /// compressor, placed after toolfit on the response path, compresses it again for the client).
    pub fn decodes(self, reply: &Reply) -> bool {
        let coding = match self {
            Begin::Json { coding, .. } | Begin::Stream(_, coding) => coding,
            Begin::Skip | Begin::Encoded => return false,
        };
        coding != Coding::Identity && self.changes(reply)
    }
}

/// How to read the response to `reply`'s request, from its status and headers.
pub fn begin(reply: &Reply, status: u16, end_of_stream: bool, content_type: Option<&str>, content_encoding: Option<&str>) -> Begin {
    if end_of_stream || !(200..300).contains(&status) {
        return Begin::Skip;
    }
    let ct = content_type.unwrap_or("").to_ascii_lowercase();
    let kind = if ct.starts_with("text/event-stream") {
        Begin::Stream(Framing::Sse, Coding::Identity)
    } else if ct.contains("ndjson") {
        Begin::Stream(Framing::Lines, Coding::Identity)
    } else if is_json(&ct) {
        let reject = reply.on_invalid == OnInvalid::Reject;
        Begin::Json { hold: reply.repairs() || reject, wait: reject, coding: Coding::Identity }
    } else {
        return Begin::Skip;
    };
    let coding = Coding::of(content_encoding);
    match kind {
        _ if !coding.readable() => Begin::Encoded,
        Begin::Json { hold, wait, .. } => Begin::Json { hold, wait, coding },
        Begin::Stream(f, _) => Begin::Stream(f, coding),
        other => other,
    }
}

/// The most one compressed chunk may decode to: the body limit, and never less than 1 MiB (a
/// chunk of a long stream is small, but compresses well).
pub fn decode_limit(reply: &Reply) -> usize {
    reply.max_bytes.max(1 << 20)
}

/// The kind of streamed body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `text/event-stream`: events end with a blank line.
    Sse,
    /// `application/x-ndjson` (Ollama): one JSON document per line.
    Lines,
}

/// A call assembled over a stream, by (choice or block, index).
type CallKey = (u64, u64);

/// What one stream event says about the calls being assembled.
#[derive(Debug, Clone)]
enum Frag {
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

struct Open {
    key: CallKey,
    name: String,
    args: String,
}

struct Held {
    /// The event's bytes.
    text: String,
    /// Where its JSON starts in `text`.
    json_at: usize,
    frags: Vec<Frag>,
}

/// One streamed response being read.
pub struct Stream {
    reply: Reply,
    framing: Framing,
    /// Bytes of an event not yet complete.
    pending: Vec<u8>,
    held: Vec<Held>,
    open: Vec<Open>,
    done: Vec<(CallKey, Fixed)>,
    /// Set after a limit was hit: the rest goes on as it comes.
    given_up: bool,
    /// The upstream's coding, read as it comes (`None`: identity, or given up on).
    decoder: Option<Decoder>,
    pub tally: Tally,
}

/// Where one event ends in `b` (just past its blank line), if it is complete.
fn event_end(b: &[u8], framing: Framing) -> Option<usize> {
    match framing {
        Framing::Lines => b.iter().position(|c| *c == b'\n').map(|i| i + 1),
        Framing::Sse => {
            let lf = b.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
            let crlf = b.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
            match (lf, crlf) {
                (Some(a), Some(c)) => Some(a.min(c)),
                (a, c) => a.or(c),
            }
        }
    }
}

/// The JSON of an event and where it starts: the one `data:` line of an SSE event, or an NDJSON line.
fn event_json(text: &str, framing: Framing) -> Option<(usize, &str)> {
    if framing == Framing::Lines {
        let t = text.trim_end();
        return (!t.trim().is_empty()).then_some((0, t));
    }
    let mut found = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some(d) = body.strip_prefix("data:") {
            if found.is_some() {
                return None; // several data lines make one document: not taken apart
            }
            let d0 = d.strip_prefix(' ').unwrap_or(d);
            found = Some((at + (body.len() - d0.len()), d0));
        }
        at += line.len();
    }
    found
}

fn span(event: &str, v: &RawValue) -> Option<(usize, usize)> {
    let at = raw::offset(event, v.get())?;
    Some((at, at + v.get().len()))
}

fn index(o: &raw::RawObject, key: &str, default: u64) -> u64 {
    o.get(key).and_then(|v| v.get().parse().ok()).unwrap_or(default)
}

/// The call fragments in one event's JSON, for the formats that stream calls in parts.
fn frags(format: Format, json: &str) -> Vec<Frag> {
    let mut out = Vec::new();
    let Some(top) = raw::object(json) else { return out };
    let kind = top.str("type").unwrap_or_default();
    let mut push_part = |key: CallKey, v: Option<&RawValue>, name: bool, whole: bool| {
        if let Some((a, b)) = v.and_then(|v| span(json, v)) {
            out.push(match (name, whole) {
                (true, false) => Frag::NamePart(key, a, b),
                (false, false) => Frag::ArgsPart(key, a, b),
                (true, true) => Frag::NameWhole(key, a, b),
                (false, true) => Frag::ArgsWhole(key, a, b),
            });
        }
    };
    match format {
        Format::OpenAiChat => {
            let choices = top.get("choices").and_then(|c| raw::array(c.get())).map(|a| a.0).unwrap_or_default();
            let mut finished = false;
            for (n, c) in choices.iter().enumerate() {
                let Some(c) = raw::object(c.get()) else { continue };
                let ci = index(&c, "index", n as u64);
                if let Some(d) = c.get("delta").and_then(|d| raw::object(d.get())) {
                    for (m, tc) in d.get("tool_calls").and_then(|t| raw::array(t.get())).map(|a| a.0).unwrap_or_default().iter().enumerate() {
                        let Some(tc) = raw::object(tc.get()) else { continue };
                        let key = (ci, index(&tc, "index", m as u64));
                        if let Some(f) = tc.get("function").and_then(|f| raw::object(f.get())) {
                            push_part(key, f.get("name"), true, false);
                            push_part(key, f.get("arguments"), false, false);
                        }
                    }
                }
                finished |= c.get("finish_reason").is_some_and(|f| f.get() != "null");
            }
            if finished {
                out.push(Frag::CloseAll);
            }
        }
        Format::Anthropic => {
            let key = (0, index(&top, "index", 0));
            match kind.as_str() {
                "content_block_start" => {
                    if let Some(b) = top.get("content_block").and_then(|b| raw::object(b.get())).filter(|b| b.str("type").as_deref() == Some("tool_use")) {
                        push_part(key, b.get("name"), true, false);
                    }
                }
                "content_block_delta" => {
                    if let Some(d) = top.get("delta").and_then(|d| raw::object(d.get())).filter(|d| d.str("type").as_deref() == Some("input_json_delta")) {
                        push_part(key, d.get("partial_json"), false, false);
                    }
                }
                "content_block_stop" => out.push(Frag::Close(key)),
                "message_delta" | "message_stop" => out.push(Frag::CloseAll),
                _ => {}
            }
        }
        Format::OpenAiResponses => {
            let key = (0, index(&top, "output_index", 0));
            let item = top.get("item").and_then(|i| raw::object(i.get())).filter(|i| i.str("type").as_deref() == Some("function_call"));
            match kind.as_str() {
                "response.output_item.added" => {
                    if let Some(i) = item {
                        push_part(key, i.get("name"), true, false);
                        push_part(key, i.get("arguments"), false, false);
                    }
                }
                "response.function_call_arguments.delta" => push_part(key, top.get("delta"), false, false),
                "response.function_call_arguments.done" => {
                    push_part(key, top.get("name"), true, true);
                    push_part(key, top.get("arguments"), false, true);
                }
                "response.output_item.done" => {
                    if let Some(i) = item {
                        push_part(key, i.get("name"), true, true);
                        push_part(key, i.get("arguments"), false, true);
                        out.push(Frag::Close(key));
                    }
                }
                "response.completed" | "response.incomplete" | "response.failed" => out.push(Frag::CloseAll),
                _ => {}
            }
        }
        Format::Cohere => {
            let key = (0, index(&top, "index", 0));
            let tc = top
                .get("delta")
                .and_then(|d| raw::object(d.get()))
                .and_then(|d| d.get("message"))
                .and_then(|m| raw::object(m.get()))
                .and_then(|m| m.get("tool_calls"))
                .and_then(|t| raw::object(t.get()));
            let f = tc.as_ref().and_then(|t| t.get("function")).and_then(|f| raw::object(f.get()));
            match (kind.as_str(), f) {
                ("tool-call-start", Some(f)) => {
                    push_part(key, f.get("name"), true, false);
                    push_part(key, f.get("arguments"), false, false);
                }
                ("tool-call-delta", Some(f)) => push_part(key, f.get("arguments"), false, false),
                ("tool-call-end", _) => out.push(Frag::Close(key)),
                ("message-end", _) => out.push(Frag::CloseAll),
                _ => {}
            }
        }
        _ => {}
    }
    out
}

impl Stream {
    pub fn new(reply: Reply, framing: Framing, coding: Coding) -> Stream {
        let decoder = Decoder::new(coding, decode_limit(&reply));
        Stream { reply, framing, pending: Vec::new(), held: Vec::new(), open: Vec::new(), done: Vec::new(), given_up: false, decoder, tally: Tally::default() }
    }

    pub fn reply(&self) -> &Reply {
        &self.reply
    }

    /// Whether events are held (or an event is incomplete) that the body's end has not let out.
    pub fn holding(&self) -> bool {
        !self.held.is_empty() || (!self.pending.is_empty() && self.reply.repairs())
    }

    /// Whether the event is the Responses API's closing summary (`response.completed` and its kin),
    /// which says every call again, whole. Read only on that format, by its `type`.
    fn summary(&self, json: &str) -> bool {
        self.reply.format == Format::OpenAiResponses
            && json.contains("\"response.")
            && raw::object(json)
                .and_then(|o| o.str("type"))
                .is_some_and(|t| matches!(t.as_str(), "response.completed" | "response.incomplete" | "response.failed"))
    }

    /// Whether events of this format carry whole calls (each is repaired on its own).
    fn whole_calls(&self) -> bool {
        matches!(self.reply.format, Format::Gemini | Format::Ollama)
    }

    fn held_bytes(&self) -> usize {
        self.pending.len() + self.held.iter().map(|h| h.text.len()).sum::<usize>()
    }

    /// Takes the next bytes of the body; returns the bytes to send on now (maybe none). At the end
    /// of the body everything held goes out. A compressed stream is read decoded; it goes on as it
    /// came when nothing in it may change, else decoded (`Begin::decodes`).
    pub fn feed(&mut self, chunk: &[u8], end: bool) -> Vec<u8> {
        let Some(decoder) = &mut self.decoder else { return self.feed_plain(chunk, end) };
        match decoder.feed(chunk, end) {
            Ok(plain) => {
                let out = self.feed_plain(&plain, end);
                if self.reply.repairs() {
                    out
                } else {
                    chunk.to_vec()
                }
            }
            Err(_) => {
                // not readable after all (corrupt, or a bomb): what is held goes on, then the rest as
                // it comes; the client meets the same fault it would have met without toolfit
                self.decoder = None;
                let mut out = Vec::new();
                if self.reply.repairs() {
                    self.give_up(&mut out);
                } else {
                    self.given_up = true;
                }
                out.extend_from_slice(chunk);
                out
            }
        }
    }

    /// Sends on whatever is held and reads no further: the rest of the body goes on as it comes.
    fn give_up(&mut self, out: &mut Vec<u8>) {
        self.tally.unrepaired += 1;
        self.given_up = true;
        for h in std::mem::take(&mut self.held) {
            out.extend_from_slice(h.text.as_bytes());
        }
        out.append(&mut self.pending);
    }

    fn feed_plain(&mut self, chunk: &[u8], end: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(chunk.len());
        if self.given_up {
            out.extend_from_slice(chunk);
            return out;
        }
        self.pending.extend_from_slice(chunk);
        while let Some(n) = event_end(&self.pending, self.framing) {
            let event: Vec<u8> = self.pending.drain(..n).collect();
            self.event(event, &mut out);
        }
        if end && !self.pending.is_empty() {
            let event = std::mem::take(&mut self.pending);
            self.event(event, &mut out);
        }
        if end {
            self.close(None);
            self.release(&mut out);
        }
        if self.held_bytes() > self.reply.max_bytes {
            // a call longer than anything worth holding: send it on as it came
            self.give_up(&mut out);
        }
        out
    }

    fn event(&mut self, event: Vec<u8>, out: &mut Vec<u8>) {
        let text = match String::from_utf8(event) {
            Ok(t) => t,
            Err(e) => {
                self.pass(e.into_bytes(), out);
                return;
            }
        };
        let Some((json_at, json)) = event_json(&text, self.framing) else {
            self.pass(text.into_bytes(), out);
            return;
        };
        if self.whole_calls() || self.summary(json) {
            // whole calls in one event: repaired (and, but for Responses' closing summary, counted) here
            let count = self.whole_calls();
            let paths: &[CallPath] = if count { plain_paths(self.reply.format) } else { RESPONSES_DONE };
            if !count {
                self.close(None);
            }
            let fixed = self.reply.repair_doc(json, paths, count, &mut self.tally);
            let text = match fixed {
                Some(new) => format!("{}{new}{}", text.get(..json_at).unwrap_or(""), text.get(json_at + json.len()..).unwrap_or("")),
                None => text,
            };
            self.pass(text.into_bytes(), out);
            self.release(out);
            return;
        }
        let fr = frags(self.reply.format, json);
        for f in &fr {
            let (key, part, name) = match f {
                Frag::NamePart(k, a, b) => (*k, json.get(*a..*b), true),
                Frag::ArgsPart(k, a, b) => (*k, json.get(*a..*b), false),
                _ => continue,
            };
            let part = part.and_then(|p| serde_json::from_str::<String>(p).ok()).unwrap_or_default();
            let open = match self.open.iter_mut().position(|o| o.key == key) {
                Some(i) => self.open.get_mut(i),
                None => {
                    self.open.push(Open { key, name: String::new(), args: String::new() });
                    self.open.last_mut()
                }
            };
            if let Some(o) = open {
                if name {
                    o.name.push_str(&part);
                } else {
                    o.args.push_str(&part);
                }
            }
        }
        let hold = self.reply.repairs() && (!self.held.is_empty() || !self.open.is_empty());
        let closes: Vec<Option<CallKey>> = fr
            .iter()
            .filter_map(|f| match f {
                Frag::Close(k) => Some(Some(*k)),
                Frag::CloseAll => Some(None),
                _ => None,
            })
            .collect();
        if hold {
            self.held.push(Held { text, json_at, frags: fr });
        } else {
            self.pass(text.into_bytes(), out);
        }
        for c in closes {
            self.close(c);
        }
        if self.open.is_empty() {
            self.release(out);
        }
    }

    /// An event that goes on as it is: after whatever is held, to keep the order.
    fn pass(&mut self, bytes: Vec<u8>, out: &mut Vec<u8>) {
        if self.held.is_empty() {
            out.extend_from_slice(&bytes);
        } else {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if text.len() == bytes.len() {
                self.held.push(Held { text, json_at: 0, frags: Vec::new() });
            } else {
                // not UTF-8 after all: nothing held can be repaired in order with it
                self.tally.unrepaired += 1;
                for h in std::mem::take(&mut self.held) {
                    out.extend_from_slice(h.text.as_bytes());
                }
                out.extend_from_slice(&bytes);
            }
        }
    }

    /// Completes a call (`None`: every open call): repaired and counted now.
    fn close(&mut self, key: Option<CallKey>) {
        let (closing, open): (Vec<Open>, Vec<Open>) = std::mem::take(&mut self.open).into_iter().partition(|o| key.is_none_or(|k| k == o.key));
        self.open = open;
        for o in closing {
            let fixed = self.reply.fix(&o.name, &o.args, true, &mut self.tally);
            self.done.push((o.key, fixed));
        }
    }

    /// Sends on the held events, with every completed call's first fragment carrying its repaired
    /// name and arguments and later fragments empty.
    fn release(&mut self, out: &mut Vec<u8>) {
        if !self.open.is_empty() {
            return;
        }
        let done = std::mem::take(&mut self.done);
        let mut seen_name: Vec<CallKey> = Vec::new();
        let mut seen_args: Vec<CallKey> = Vec::new();
        for h in std::mem::take(&mut self.held) {
            let mut edits: Vec<(usize, usize, String)> = Vec::new();
            for f in &h.frags {
                let (key, a, b, name, whole) = match f {
                    Frag::NamePart(k, a, b) => (*k, *a, *b, true, false),
                    Frag::ArgsPart(k, a, b) => (*k, *a, *b, false, false),
                    Frag::NameWhole(k, a, b) => (*k, *a, *b, true, true),
                    Frag::ArgsWhole(k, a, b) => (*k, *a, *b, false, true),
                    _ => continue,
                };
                // an empty fragment (`"arguments": ""` beside a name, Responses' added item) stays
                // empty: the repaired whole goes in the first fragment that carried something, where
                // clients that read only the deltas find it
                if !whole && h.text.get(h.json_at + a..h.json_at + b) == Some("\"\"") {
                    continue;
                }
                let Some((_, fixed)) = done.iter().find(|(k, _)| *k == key) else { continue };
                let Some(new) = (if name { fixed.name.as_ref() } else { fixed.args.as_ref() }) else { continue };
                let seen = if name { &mut seen_name } else { &mut seen_args };
                let first = whole || !seen.contains(&key);
                if !whole {
                    seen.push(key);
                }
                edits.push((h.json_at + a, h.json_at + b, if first { quoted(new) } else { "\"\"".into() }));
            }
            if edits.is_empty() {
                out.extend_from_slice(h.text.as_bytes());
            } else {
                out.extend_from_slice(api::splice(&h.text, edits.iter().map(|(a, b, s)| (*a, *b, s.as_str())).collect()).as_bytes());
            }
        }
    }
}

/// Responses' closing `response.completed` event says every call again, whole.
const RESPONSES_DONE: &[CallPath] = &[path(&[Key("response"), Key("output"), Each], Some("function_call"), "name", "arguments", true)];

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(format: Format, names: &[(&str, &str)], nulls: bool) -> Reply {
        let schema = r#"{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}"#;
        let tools = names
            .iter()
            .map(|(sent, name)| Tool { sent: sent.to_string(), name: name.to_string(), schema: schema.into(), nulls, lossy: Vec::new(), keys: Vec::new() })
            .collect();
        let mut r = Reply::with_tools(format, tools, true, OnInvalid::Count, 1 << 20);
        r.route = "r".into();
        r.profile = "p";
        r
    }

    #[test]
    fn plain_chat_gets_names_back_and_injected_nulls_out() {
        let r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
        let body = r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"gh_search","arguments":"{\"q\":\"a\",\"n\":null}"}}]}}]}"#;
        let mut t = Tally::default();
        let out = String::from_utf8(r.repair_json(body.as_bytes(), &mut t).unwrap()).unwrap();
        assert_eq!(out, body.replace("gh_search", "gh.search").replace(r#",\"n\":null"#, ""));
        assert_eq!((t.names_restored, t.nulls_removed, t.calls.len()), (1, 1, 1));
        assert!(t.calls[0].violation.is_none());
    }

    #[test]
    fn invalid_calls_are_counted_with_their_place() {
        let r = reply(Format::Anthropic, &[("s", "s")], false);
        let body = r#"{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"s","input":{"n":"x"}},{"type":"tool_use","id":"u","name":"nope","input":{}}]}"#;
        let mut t = Tally::default();
        assert!(r.repair_json(body.as_bytes(), &mut t).is_none(), "nothing to repair");
        assert_eq!(t.calls.len(), 2);
        let v = t.calls[0].violation.as_ref().unwrap();
        assert_eq!((v.instance.as_str(), v.schema.as_str()), ("/", "/required"));
        assert!(t.calls[1].violation.as_ref().unwrap().reason.contains("does not declare"));
    }

    /// Every way of cutting `body` in two gives the same output as the whole.
    fn every_split(r: &Reply, framing: Framing, body: &str) -> (String, Tally) {
        let mut whole = Stream::new(r.clone(), framing, Coding::Identity);
        let expect = whole.feed(body.as_bytes(), true);
        for at in 0..=body.len() {
            let mut s = Stream::new(r.clone(), framing, Coding::Identity);
            let (a, b) = body.as_bytes().split_at(at);
            let mut got = s.feed(a, false);
            got.extend(s.feed(b, true));
            assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&expect), "split at {at}");
            assert_eq!(s.tally, whole.tally, "split at {at}");
        }
        (String::from_utf8(expect).unwrap(), whole.tally)
    }

    #[test]
    fn chat_stream_split_anywhere() {
        let r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
        let ev = |j: &str| format!("data: {j}\n\n");
        let body = [
            ev(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}"#),
            ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"gh_","arguments":""}}]},"finish_reason":null}]}"#),
            ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"search","arguments":"{\"q\":\"a\","}}]},"finish_reason":null}]}"#),
            ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"n\":null}"}}]},"finish_reason":null}]}"#),
            ev(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        let (out, t) = every_split(&r, Framing::Sse, &body);
        assert_eq!((t.names_restored, t.nulls_removed, t.calls.len()), (1, 1, 1));
        // what a client assembles: the concatenated fragments
        let (mut name, mut args) = (String::new(), String::new());
        for line in out.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|l| *l != "[DONE]") {
            let v: Value = serde_json::from_str(line).unwrap();
            if let Some(f) = v.pointer("/choices/0/delta/tool_calls/0/function") {
                name += f.get("name").and_then(Value::as_str).unwrap_or("");
                args += f.get("arguments").and_then(Value::as_str).unwrap_or("");
            }
        }
        assert_eq!((name.as_str(), args.as_str()), ("gh.search", r#"{"q":"a"}"#));
        assert!(
            out.starts_with(&ev(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}"#)),
            "untouched events as they came"
        );
    }

    #[test]
    fn a_stream_needing_no_repair_is_never_held() {
        let r = reply(Format::OpenAiChat, &[("s", "s")], false);
        let e1 =
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"s\",\"arguments\":\"{\\\"n\\\":\"}}]}}]}\n\n";
        let mut s = Stream::new(r, Framing::Sse, Coding::Identity);
        assert_eq!(s.feed(e1.as_bytes(), false), e1.as_bytes());
        let e2: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n";
        assert_eq!(s.feed(e2, true), e2);
        assert_eq!(s.tally.calls.len(), 1);
        assert_eq!(s.tally.calls[0].violation.as_ref().unwrap().schema, "/required", "q is missing");
    }

    #[test]
    fn anthropic_and_responses_streams() {
        let r = reply(Format::Anthropic, &[("gh_search", "gh.search")], false);
        let body = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"gh_search\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\": \\\"x\\\"}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let (out, t) = every_split(&r, Framing::Sse, body);
        assert_eq!(out, body.replace("\"gh_search\"", "\"gh.search\""));
        assert_eq!((t.names_restored, t.calls.len()), (1, 1));

        let r = reply(Format::OpenAiResponses, &[("gh_search", "gh.search")], true);
        let body = concat!(
            "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"\"}}\n\n",
            "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"{\\\"q\\\":\\\"a\\\",\\\"n\\\":null}\"}\n\n",
            "event: response.function_call_arguments.done\ndata: {\"type\":\"response.function_call_arguments.done\",\"output_index\":0,\"arguments\":\"{\\\"q\\\":\\\"a\\\",\\\"n\\\":null}\"}\n\n",
            "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"{\\\"q\\\":\\\"a\\\",\\\"n\\\":null}\"}}\n\n",
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"{\\\"q\\\":\\\"a\\\",\\\"n\\\":null}\"}]}}\n\n",
        );
        let (out, t) = every_split(&r, Framing::Sse, body);
        assert!(!out.contains("gh_search") && !out.contains("null"), "{out}");
        assert!(out.contains(r#""delta":"{\"q\":\"a\"}""#), "the first delta carries the repaired arguments: {out}");
        assert_eq!(t.calls.len(), 1, "the closing summary is not counted again");
    }

    #[test]
    fn gemini_and_ollama_events_carry_whole_calls() {
        let r = reply(Format::Gemini, &[("_9lives", "9lives")], false);
        let body = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"_9lives\",\"args\":{\"q\":\"a\"}}}]}}]}\r\n\r\n";
        let (out, t) = every_split(&r, Framing::Sse, body);
        assert_eq!(out, body.replace("_9lives", "9lives"));
        assert_eq!(t.calls.len(), 1);
        let r = reply(Format::Ollama, &[("s", "s")], false);
        let body = "{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"s\",\"arguments\":{\"q\":1}}}]},\"done\":false}\n{\"done\":true}\n";
        let (out, t) = every_split(&r, Framing::Lines, body);
        assert_eq!(out, body);
        assert_eq!(t.calls[0].violation.as_ref().unwrap().instance, "/q");
    }

    #[test]
    fn reply_reads_the_request_as_sent() {
        let body = br#"{"messages":[{"role":"user","content":"long"}],"tools":[{"type":"function","function":{"name":"a.b","parameters":{"type":"object"}}}]}"#;
        let out = api::rewrite_body(body, Format::OpenAiChat, &crate::schema::profile::OPENAI, &Default::default()).unwrap();
        let lists = out.tool_lists_of(body);
        assert!(!lists.contains("messages"), "only the tool lists are kept: {lists}");
        let r = Reply::of(lists, Format::OpenAiChat, out.names, &out.report, true, OnInvalid::Count, 100);
        assert!(r.repairs(), "a name was mapped");
        assert_eq!((r.tools()[0].sent.as_str(), r.tools()[0].name.as_str(), r.tools()[0].schema.as_str()), ("a_b", "a.b", r#"{"type":"object"}"#));
        let r = Reply::of(r#"{"messages":[]}"#.into(), Format::OpenAiChat, NameMap::default(), &Report::default(), true, OnInvalid::Count, 100);
        assert!(r.tools().is_empty() && !r.repairs());
    }

    #[derive(Default)]
    struct Counts(std::collections::HashMap<String, u64>);
    impl Metrics for Counts {
        fn add(&mut self, name: &str, n: u64) {
            *self.0.entry(name.to_string()).or_default() += n;
        }
        fn record(&mut self, _: &str, _: u64) {}
    }

    #[test]
    fn counts_go_to_the_route_and_each_tool() {
        let mut r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], false);
        let mut tools = r.tools().to_vec();
        tools[0].lossy = vec!["/properties/n".into()];
        r = Reply { route: r.route.clone(), ..Reply::with_tools(r.format, tools, true, OnInvalid::Count, r.max_bytes) };
        r.profile = "p";
        let body = r#"{"choices":[{"message":{"tool_calls":[{"function":{"name":"gh_search","arguments":"{\"q\":\"a\",\"n\":\"x\"}"}},{"function":{"name":"gh_search","arguments":"{\"q\":\"a\"}"}}]}}]}"#;
        let mut t = Tally::default();
        assert!(r.repair_json(body.as_bytes(), &mut t).is_some());
        let mut m = Counts::default();
        let line = t.count(&r, &mut m).unwrap();
        let get = |c: &str| m.0.get(&metric_name("r", "p", c)).copied().unwrap_or(0);
        assert_eq!((get("tool_calls_seen"), get("tool_calls_invalid"), get("tool_calls_invalid_lossy"), get("names_restored")), (2, 1, 1, 2));
        assert_eq!((get("tool.gh_search.calls_seen"), get("tool.gh_search.calls_invalid"), get("tool.gh_search.calls_invalid_lossy")), (2, 1, 1));
        assert!(line.text.contains(r#"tool "gh.search" at /n: expected "integer""#) && line.text.contains("lossy"), "{}", line.text);
    }

    #[test]
    fn a_chat_event_that_mentions_the_responses_summary_is_only_chat() {
        let r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], false);
        let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"gh_\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"response.completed\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"search\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        );
        let (out, t) = every_split(&r, Framing::Sse, body);
        assert_eq!((t.calls.len(), t.names_restored), (1, 1), "{out}");
        assert!(out.contains("gh.search"), "{out}");
    }

    fn gzip(b: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    fn chat_call_stream() -> String {
        let ev = |j: &str| format!("data: {j}\n\n");
        [
            ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"gh_search","arguments":"{\"q\":"}}]},"finish_reason":null}]}"#),
            ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\",\"n\":null}"}}]},"finish_reason":null}]}"#),
            ev(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat()
    }

    #[test]
    fn gzip_streams_are_repaired_decoded_or_passed_compressed() {
        let body = chat_call_stream();
        let z = gzip(body.as_bytes());
        let mapped = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
        for cut in [1, 10, z.len() / 2, z.len() - 1] {
            // repairs due: what goes on is the decoded stream, repaired
            let mut s = Stream::new(mapped.clone(), Framing::Sse, Coding::Gzip);
            let mut out = s.feed(&z[..cut], false);
            out.extend(s.feed(&z[cut..], true));
            let out = String::from_utf8(out).unwrap();
            assert!(out.contains("gh.search") && !out.contains(r#"\"n\""#) && out.ends_with("data: [DONE]\n\n"), "{out}");
            assert_eq!((s.tally.names_restored, s.tally.nulls_removed, s.tally.unrepaired), (1, 1, 0));
            // only read (nothing to repair): the compressed bytes go on as they came, still counted
            let read_only = reply(Format::OpenAiChat, &[("gh_search", "gh_search")], false);
            let mut s = Stream::new(read_only, Framing::Sse, Coding::Gzip);
            let mut out = s.feed(&z[..cut], false);
            out.extend(s.feed(&z[cut..], true));
            assert_eq!(out, z);
            assert_eq!(s.tally.calls.len(), 1);
        }
    }

    #[test]
    fn gemini_argument_keys_get_their_original_names_back() {
        let schema = r#"{"type":"object","properties":{"issue-key":{"type":"string"},"page":{"type":"object","properties":{"per.page":{"type":"integer"}}}},"required":["issue-key"]}"#;
        let keys = vec![("issue_key".to_string(), "issue-key".to_string()), ("per_page".to_string(), "per.page".to_string())];
        let tool = Tool { sent: "jira".into(), name: "jira".into(), schema: schema.into(), nulls: false, lossy: Vec::new(), keys };
        let r = Reply::with_tools(Format::Gemini, vec![tool], true, OnInvalid::Count, 1 << 20);
        assert!(r.repairs());
        let body = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"jira","args":{"issue_key":"AB-1","page":{"per_page":5}}}}]}}]}"#;
        let mut t = Tally::default();
        let out = String::from_utf8(r.repair_json(body.as_bytes(), &mut t).unwrap()).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v.pointer("/candidates/0/content/parts/0/functionCall/args").unwrap(), &serde_json::json!({"issue-key": "AB-1", "page": {"per.page": 5}}));
        assert_eq!((t.properties_restored, t.calls.len(), t.calls[0].violation.is_none()), (2, 1, true), "valid against the client's schema once restored");
        // streamed: each event carries whole calls
        let (out, t) = every_split(&r, Framing::Sse, &format!("data: {body}\n\n"));
        assert!(out.contains(r#""issue-key":"AB-1""#) && t.properties_restored == 2, "{out}");
    }

    #[test]
    fn a_stream_that_does_not_decode_goes_on_as_it_came() {
        let mapped = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
        let mut s = Stream::new(mapped, Framing::Sse, Coding::Gzip);
        let junk = b"this is not gzip at all, but the upstream said so".to_vec();
        let mut out = s.feed(&junk[..10], false);
        out.extend(s.feed(&junk[10..], true));
        assert_eq!(out, junk);
        assert_eq!(s.tally.unrepaired, 1);
    }

    #[test]
    fn begin_reads_status_type_and_encoding() {
        let plain = reply(Format::OpenAiChat, &[("s", "s")], false);
        let mapped = reply(Format::OpenAiChat, &[("a_b", "a.b")], false);
        let json = Some("application/json; charset=utf-8");
        assert_eq!(begin(&plain, 200, false, json, None), Begin::Json { hold: false, wait: false, coding: Coding::Identity });
        assert_eq!(begin(&mapped, 200, false, json, None), Begin::Json { hold: true, wait: false, coding: Coding::Identity });
        assert_eq!(begin(&mapped, 500, false, json, None), Begin::Skip);
        assert_eq!(begin(&mapped, 200, true, json, None), Begin::Skip);
        assert_eq!(begin(&mapped, 200, false, Some("text/html"), None), Begin::Skip);
        assert_eq!(begin(&mapped, 200, false, json, Some("gzip")), Begin::Json { hold: true, wait: false, coding: Coding::Gzip });
        assert_eq!(begin(&mapped, 200, false, json, Some("br")), Begin::Encoded);
        assert_eq!(begin(&plain, 200, false, Some("text/event-stream"), Some("zstd")), Begin::Encoded);
        // decoded on the way out only when the body may change
        assert!(begin(&mapped, 200, false, json, Some("gzip")).decodes(&mapped));
        assert!(!begin(&plain, 200, false, json, Some("gzip")).decodes(&plain));
        assert!(!begin(&mapped, 200, false, json, None).decodes(&mapped));
        assert!(Begin::Stream(Framing::Sse, Coding::Deflate).decodes(&mapped) && !Begin::Stream(Framing::Sse, Coding::Deflate).decodes(&plain));
        assert_eq!(begin(&mapped, 200, false, Some("text/event-stream"), Some("identity")), Begin::Stream(Framing::Sse, Coding::Identity));
        assert_eq!(begin(&plain, 200, false, Some("application/x-ndjson"), None), Begin::Stream(Framing::Lines, Coding::Identity));
        assert!(!Begin::Stream(Framing::Sse, Coding::Identity).changes(&plain) && Begin::Stream(Framing::Sse, Coding::Identity).changes(&mapped));
        let mut rejecting = plain.clone();
        rejecting.on_invalid = OnInvalid::Reject;
        assert_eq!(begin(&rejecting, 200, false, json, None), Begin::Json { hold: true, wait: true, coding: Coding::Identity });
    }

    #[test]
    fn a_held_call_past_the_limit_goes_on_as_it_came() {
        let mut r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], false);
        r.max_bytes = 50;
        let e = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"gh_search\",\"arguments\":\"\"}}]}}]}\n\n";
        let mut s = Stream::new(r, Framing::Sse, Coding::Identity);
        assert_eq!(s.feed(e.as_bytes(), false), e.as_bytes());
        assert_eq!(s.tally.unrepaired, 1);
    }
}
