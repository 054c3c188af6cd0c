//! The MCP leg: toolfit in front of an MCP server (a route of `format: mcp`), rewriting every
//! `tools/list` result for the profile of the client that asked, and giving `tools/call` requests the
//! names the server listed.
//!
//! - **Which client.** The profile comes from the request header `x-toolfit-profile` (a client sets it
//!   in its MCP configuration), else from the session, else the route's profile (`mcp` unless set).
//!   A session's client is learned from `initialize` (`clientInfo.name` through the route's
//!   `clients` map, [`DEFAULT_CLIENTS`] unless set) and carried in the `Mcp-Session-Id` toolfit hands
//!   the client: `<server's id>.tf.<profile>.<client>` (or `tf.<profile>.<client>` when the server
//!   gave none). Every request of the session brings it back, so whichever worker or replica gets it
//!   knows the client without any state of its own; the tag is removed before the server sees the
//!   header.
//! - **Schemas.** `inputSchema`s are rewritten as the client's profile says (the inference leg's
//!   engine); an `outputSchema` only where every change keeps or widens what it accepts
//!   ([`widens`]): clients validate the server's `structuredContent` with it. A tool whose rewrite
//!   loses meaning goes as the route's `unfit` says (rewritten, as it came, dropped, or a JSON-RPC error).
//! - **Names.** A name the profile refuses (`.` or `/` for OpenAI and Anthropic) is listed under a
//!   readable name that carries its own way back ([`names`]), so a `tools/call` naming it reaches the
//!   server under the original on any replica.
//! - Every other message, and every byte of a rewritten message outside what changed, goes as it came.

use super::config::{Config, Framing, Mode, Models, Route, Unfit};
use super::exchange::{Env, Headed};
use super::headers::is_json;
use super::log::Line;
use super::request::{Headers, RequestHost, RouteMeta};
use super::response::stream::{event_end, event_json};
use super::response::{Events, Next, ResponseHost};
use super::stats::{client_metric, label, metric_name, Metrics, Stat};
use crate::api::raw::{self, Raw};
use crate::api::{self, Format};
use crate::api::{splice, Edit};
use crate::schema::{self, Context, Kind, Profile, Record, Report};

/// The clients a route knows when it lists none: `clientInfo.name` pattern and profile.
pub const DEFAULT_CLIENTS: &[(&str, &str)] = &[("claude-code", "anthropic"), ("codex-mcp-client", "openai"), ("gemini-cli-mcp-client", "gemini-json")];

/// The request header a client sets to choose its profile (it wins over the session's).
pub const PROFILE_HEADER: &str = "x-toolfit-profile";
/// The MCP session header (streamable HTTP).
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The tool a `tools/call` names, as a header (the stateless protocol, 2026-07-28).
pub const NAME_HEADER: &str = "mcp-name";
/// The client label of a client no pattern names.
const OTHER: &str = "other";

/// One MCP exchange as the core keeps it between callbacks.
pub struct State {
    leg: Leg,
    /// The request body is being read.
    reading: bool,
    flow: Flow,
}

/// What the request said, as far as the MCP leg cares.
#[derive(Debug, Clone)]
struct Leg {
    route: String,
    profile: &'static Profile,
    client: String,
    /// The profile came from the request header: `initialize` does not change it.
    by_header: bool,
    clients: Models,
    unfit: Unfit,
    observe: bool,
    promote_to_description: Option<bool>,
    open_objects: Option<bool>,
    /// Where the server is (authority and path), for the error that names it.
    server: String,
    /// The request is an `initialize`: the answer's session id gets the tag.
    initialize: bool,
    /// The request came with toolfit's tag: a session id in the answer gets it too (servers send the
    /// id on every answer, and clients take the latest: the TypeScript SDK's transport does).
    tagged: bool,
    /// The answer may carry a `tools/list` result (a `tools/list` request, or a GET stream).
    lists: bool,
    /// The ids of the `tools/list` requests of a POST (as JSON text): only answers under them are
    /// read. A GET stream's answers are to requests posted elsewhere: read by their shape.
    ids: Vec<String>,
}

impl Leg {
    fn count(&self, m: &mut dyn Metrics, s: Stat, n: u64) {
        if n > 0 {
            m.add(&metric_name(&self.route, self.profile.name, s.name()), n);
        }
    }
    fn count_client(&self, m: &mut dyn Metrics, s: Stat, n: u64) {
        if n > 0 {
            m.add(&client_metric(&self.route, self.profile.name, &self.client, s), n);
        }
    }
}

/// How the response body is read.
enum Flow {
    Off,
    /// A JSON body, held whole (it may change).
    Json(Vec<u8>),
    /// SSE: complete events go on as they come (rewritten where one is a `tools/list` result); the
    /// bytes of an incomplete one are kept.
    Sse {
        pending: Vec<u8>,
        given_up: bool,
    },
}

/// The client label and profile `name` maps to on a route (`None`: no pattern names it).
fn client_of(clients: &Models, name: &str) -> (String, Option<&'static Profile>) {
    match clients.matched(name) {
        Some((pattern, p)) => (label(pattern), Some(p)),
        None => (OTHER.to_string(), None),
    }
}

/// The route's clients map.
fn clients_of(route: &Route) -> Models {
    route.clients.clone().unwrap_or_else(default_clients)
}

/// [`DEFAULT_CLIENTS`] as a map, made once (not on every request of a route that sets none).
fn default_clients() -> Models {
    static DEFAULT: std::sync::OnceLock<Models> = std::sync::OnceLock::new();
    DEFAULT.get_or_init(|| Models::of(DEFAULT_CLIENTS)).clone()
}

/// A session id with toolfit's tag: the server's id (if any) and what the tag says.
struct Tagged<'a> {
    server: Option<&'a str>,
    profile: &'static Profile,
    client: &'a str,
}

/// Reads toolfit's tag off a session id (`None`: no tag, or one naming no profile).
fn untag(sid: &str) -> Option<Tagged<'_>> {
    let (server, rest) = match sid.rfind(".tf.") {
        Some(i) => (sid.get(..i), sid.get(i + 4..)?),
        None => (None, sid.strip_prefix("tf.")?),
    };
    let (profile, client) = rest.split_once('.')?;
    let ok = !client.is_empty() && client.len() <= 64 && client.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    Some(Tagged { server, profile: Profile::by_name(profile).filter(|_| ok)?, client })
}

/// The session id the client gets: the server's (if it gave one) with the tag.
fn tag(server: Option<&str>, profile: &Profile, client: &str) -> String {
    match server {
        Some(s) if !s.is_empty() => format!("{s}.tf.{}.{client}", profile.name),
        _ => format!("tf.{}.{client}", profile.name),
    }
}

/// The request's headers on an MCP route: the tag taken off the session header, the profile chosen,
/// and whether the body and the answer are read.
pub fn start(env: &mut Env, route: &Route, h: &Headers, route_name: Option<&str>, meta: &RouteMeta, host: &mut dyn RequestHost) -> (Option<State>, Headed) {
    let cfg: &Config = env.config;
    let clients = clients_of(route);
    let mut profile = route.profile.unwrap_or(&schema::profile::MCP);
    if let Some(p) = meta.profile.as_deref().and_then(Profile::by_name) {
        profile = p;
    }
    let mut client = OTHER.to_string();
    let mut changed = false;
    if let Some(t) = h.session.and_then(untag) {
        // the tag's client label is kept only if the route's map could have given it: bounded labels
        let known = clients.patterns().any(|p| label(p) == t.client);
        client = if known { t.client.to_string() } else { OTHER.to_string() };
        profile = t.profile;
        changed = true;
        let ok = match t.server {
            Some(s) => host.set_header(SESSION_HEADER, s),
            None => host.remove_header(SESSION_HEADER),
        };
        if !ok {
            let route_label = label(route_name.unwrap_or("none"));
            env.metrics.add(&metric_name(&route_label, profile.name, Stat::InternalErrors.name()), 1);
        }
    }
    // the stateless protocol names the called tool in a header too, which the server holds to the
    // body's: it gets the original here, before the body is read (the name alone says it)
    if let Some(original) = h.mcp_name.and_then(names::decode) {
        changed = true;
        if !host.set_header(NAME_HEADER, &original) {
            let route_label = label(route_name.unwrap_or("none"));
            env.metrics.add(&metric_name(&route_label, profile.name, Stat::InternalErrors.name()), 1);
        }
    }
    let mut by_header = false;
    if let Some(name) = h.profile {
        match Profile::by_name(name.trim()) {
            Some(p) => {
                profile = p;
                by_header = true;
            }
            None => (env.log)(
                super::exchange::Level::Warn,
                &format!("route {:?}: {PROFILE_HEADER} names unknown profile {name:?}; using {}", route_name.unwrap_or(""), profile.name),
            ),
        }
    }
    let observe = route.mode.unwrap_or(cfg.mode) == Mode::Observe;
    let post = h.method.eq_ignore_ascii_case("POST") && !h.end_of_stream && h.content_type.is_none_or(is_json);
    let get = h.method.eq_ignore_ascii_case("GET");
    let leg = Leg {
        route: label(route_name.unwrap_or("none")),
        profile,
        client,
        by_header,
        clients,
        unfit: route.unfit.unwrap_or_default(),
        observe,
        promote_to_description: route.promote_to_description,
        open_objects: route.open_objects,
        server: format!("{}{}", h.authority.unwrap_or(""), h.path.split('?').next().unwrap_or("")),
        initialize: false,
        tagged: changed && h.session.is_some_and(|s| untag(s).is_some()),
        lists: get,
        ids: Vec::new(),
    };
    if !post && !get {
        // DELETE and the rest: only the session header's tag comes off (and goes back on the answer's)
        let keep = leg.tagged;
        return (keep.then_some(State { leg, reading: false, flow: Flow::Off }), if changed { Headed::Continue } else { Headed::Ignore });
    }
    env.metrics.prepare(&leg.route, leg.profile.name);
    leg.count(env.metrics, Stat::RequestsSeen, 1);
    if !observe && !host.set_header("accept-encoding", "identity") {
        // an answer in another coding goes on unread
        leg.count(env.metrics, Stat::InternalErrors, 1);
    }
    if get {
        return (Some(State { leg, reading: false, flow: Flow::Off }), Headed::Continue);
    }
    // the body may change (a `tools/call` name): its length goes, or the headers wait for it
    let next = match (observe, cfg.framing) {
        (true, _) => Headed::Continue,
        (false, Framing::Chunked) => {
            if !host.remove_header("content-length") {
                leg.count(env.metrics, Stat::InternalErrors, 1);
                return (None, Headed::Continue);
            }
            Headed::Continue
        }
        (false, Framing::Exact) => Headed::Pause,
    };
    (Some(State { leg, reading: true, flow: Flow::Off }), next)
}

impl State {
    pub fn reading(&self) -> bool {
        self.reading
    }

    /// Whether to keep reading the request body at `total` bytes.
    pub fn keep_reading(&mut self, env: &mut Env, total: usize) -> bool {
        if total > env.config.max_body_bytes {
            self.leg.count(env.metrics, Stat::SkippedTooLarge, 1);
            self.reading = false;
        }
        self.reading
    }

    /// The whole request body: the client learned from `initialize`, `tools/call` names given back.
    pub fn request_end(&mut self, env: &mut Env, body: Option<&[u8]>, size: usize, host: &mut dyn RequestHost) -> Next {
        self.reading = false;
        let Some(text) = body.and_then(|b| std::str::from_utf8(b).ok()) else {
            self.leg.count(env.metrics, if body.is_some() { Stat::SkippedNotJson } else { Stat::InternalErrors }, 1);
            return Next::Continue;
        };
        let mut edits = Vec::new();
        let messages = messages(text);
        if messages.is_empty() {
            self.leg.count(env.metrics, Stat::SkippedNotJson, 1);
        }
        for m in &messages {
            // the stateless protocol (2026-07-28, what Claude Code speaks where the server answers
            // `server/discover`) has no `initialize`: every request names its client in `_meta`
            if let Some(name) = meta_client(m) {
                let (client, profile) = client_of(&self.leg.clients, &name);
                self.leg.client = client;
                if let (Some(p), false) = (profile, self.leg.by_header) {
                    self.leg.profile = p;
                }
            }
            match m.str("method").as_deref() {
                Some("initialize") => {
                    self.leg.initialize = true;
                    let name = m
                        .get("params")
                        .and_then(|p| raw::object(p.get()))
                        .and_then(|p| p.get("clientInfo"))
                        .and_then(|c| raw::object(c.get()))
                        .and_then(|c| c.str("name"));
                    let (client, profile) = client_of(&self.leg.clients, name.as_deref().unwrap_or(""));
                    self.leg.client = client;
                    if let (Some(p), false) = (profile, self.leg.by_header) {
                        self.leg.profile = p;
                    }
                }
                Some("tools/list") => {
                    self.leg.lists = true;
                    self.leg.ids.push(id_text(m.get("id")));
                }
                Some("tools/call") => {
                    let Some(n) = m.get("params").and_then(|p| raw::object(p.get())).and_then(|p| p.get("name")) else { continue };
                    let Ok(sent) = serde_json::from_str::<String>(n.get()) else { continue };
                    match names::decode(&sent) {
                        Some(original) => {
                            if let Some(at) = raw::offset(text, n.get()) {
                                edits.push(Edit::new(at, at + n.get().len(), serde_json::Value::String(original).to_string()));
                            }
                        }
                        None if names::unlisted(&sent, self.leg.profile) => {
                            self.leg.count_client(env.metrics, Stat::McpCallsUnmapped, 1);
                            let line = format!(
                                "route={} profile={} client={} tools/call names {sent:?}, a tool toolfit never listed: forwarded as it came",
                                self.leg.route, self.leg.profile.name, self.leg.client
                            );
                            env.say(&self.leg.route, Line { warn: true, text: line });
                        }
                        None => {}
                    }
                }
                _ => {}
            }
        }
        if edits.is_empty() {
            return Next::Continue;
        }
        self.leg.count(env.metrics, Stat::NamesRestored, edits.len() as u64);
        if self.leg.observe {
            return Next::Continue;
        }
        let new = splice(text, edits);
        if env.config.framing == Framing::Exact && !host.set_header("content-length", &new.len().to_string()) {
            self.leg.count(env.metrics, Stat::InternalErrors, 1);
            return Next::Continue;
        }
        if !host.set_body(size, new.as_bytes()) {
            self.leg.count(env.metrics, Stat::InternalErrors, 1);
            if env.config.framing == Framing::Exact {
                let _ = host.set_header("content-length", &size.to_string());
            }
        }
        Next::Continue
    }

    /// Whether the answer is read at all.
    pub fn awaits_response(&self) -> bool {
        self.leg.initialize || self.leg.tagged || self.leg.lists
    }

    pub fn reading_response(&self) -> bool {
        !matches!(self.flow, Flow::Off)
    }

    pub fn kept(&self) -> usize {
        match &self.flow {
            Flow::Off => 0,
            Flow::Json(b) => b.len(),
            Flow::Sse { pending, .. } => pending.len(),
        }
    }

    /// The answer's headers: the session id tagged (an `initialize`), and whether the body is read.
    pub fn response_headers(
        &mut self,
        env: &mut Env,
        status: u16,
        end_of_stream: bool,
        content_type: Option<&str>,
        session: Option<&str>,
        host: &mut dyn ResponseHost,
    ) -> Next {
        let ok = (200..300).contains(&status);
        // the session id of an answer, whichever request it answers, leaves with the tag: a client
        // keeps the latest it was given
        let retag = (self.leg.initialize || (self.leg.tagged && session.is_some())) && session.and_then(untag).is_none();
        if retag && ok && !self.leg.observe {
            let sid = tag(session, self.leg.profile, &self.leg.client);
            if !host.set_header(SESSION_HEADER, &sid) {
                self.leg.count(env.metrics, Stat::InternalErrors, 1);
            } else if self.leg.initialize {
                self.leg.count_client(env.metrics, Stat::McpSessions, 1);
            }
        }
        if !self.leg.lists || !ok || end_of_stream {
            return Next::Continue;
        }
        let ct = content_type.unwrap_or("").to_ascii_lowercase();
        let flow = if ct.starts_with("text/event-stream") {
            Flow::Sse { pending: Vec::new(), given_up: false }
        } else if is_json(&ct) {
            Flow::Json(Vec::new())
        } else {
            return Next::Continue;
        };
        if !self.leg.observe && !host.remove_header("content-length") {
            self.leg.count(env.metrics, Stat::InternalErrors, 1);
            return Next::Continue;
        }
        self.flow = flow;
        Next::Continue
    }

    /// A piece of the answer's body.
    pub fn response_body(&mut self, env: &mut Env, host: &mut dyn ResponseHost, size: usize, end: bool) -> Next {
        let Some(chunk) = host.chunk(size) else {
            self.release(env, host, size);
            return Next::Continue;
        };
        let max = env.config.max_body_bytes;
        match &mut self.flow {
            Flow::Off => {}
            Flow::Json(copy) => {
                copy.extend_from_slice(&chunk);
                if copy.len() > max {
                    // too large to hold: what was taken goes back out, unread
                    let all = std::mem::take(copy);
                    self.flow = Flow::Off;
                    self.leg.count(env.metrics, Stat::SkippedTooLarge, 1);
                    if !host.set_chunk(size, &all) {
                        self.leg.count(env.metrics, Stat::InternalErrors, 1);
                    }
                } else if end {
                    let all = std::mem::take(copy);
                    self.flow = Flow::Off;
                    let out = self.rewrite_document(env, &all);
                    if !host.set_chunk(size, out.as_deref().unwrap_or(&all)) {
                        self.leg.count(env.metrics, Stat::InternalErrors, 1);
                    }
                } else if !host.set_chunk(size, &[]) {
                    // the chunk stays where it is: what was taken before it cannot come back in order
                    self.leg.count(env.metrics, Stat::InternalErrors, 1);
                    self.flow = Flow::Off;
                }
            }
            Flow::Sse { .. } => {
                let out = self.feed_sse(env, &chunk, end, max);
                if out != chunk && !host.set_chunk(size, &out) {
                    self.leg.count(env.metrics, Stat::InternalErrors, 1);
                }
            }
        }
        Next::Continue
    }

    /// The body ended in trailers: what is held goes out now.
    pub fn response_trailers(&mut self, env: &mut Env, host: &mut dyn ResponseHost) -> Next {
        let out = match std::mem::replace(&mut self.flow, Flow::Off) {
            Flow::Off => return Next::Continue,
            Flow::Json(all) => self.rewrite_document(env, &all).unwrap_or(all),
            Flow::Sse { pending, .. } => pending,
        };
        if !out.is_empty() && !host.set_chunk(0, &out) {
            self.leg.count(env.metrics, Stat::InternalErrors, 1);
        }
        Next::Continue
    }

    /// The host will not show the rest: nothing was taken from it yet.
    pub fn unseen(&mut self) {
        self.flow = Flow::Off;
    }

    /// Bytes toolfit held when a chunk could not be read go back in front of it.
    fn release(&mut self, env: &mut Env, host: &mut dyn ResponseHost, size: usize) {
        let held = match std::mem::replace(&mut self.flow, Flow::Off) {
            Flow::Json(b) => b,
            Flow::Sse { pending, .. } => pending,
            Flow::Off => return,
        };
        let mut out = held;
        out.extend_from_slice(&host.chunk(size).unwrap_or_default());
        if !out.is_empty() && !host.set_chunk(size, &out) {
            self.leg.count(env.metrics, Stat::InternalErrors, 1);
        }
    }

    /// The SSE bytes that go on for `chunk`: every complete event (a `tools/list` result rewritten).
    fn feed_sse(&mut self, env: &mut Env, chunk: &[u8], end: bool, max: usize) -> Vec<u8> {
        let Flow::Sse { pending, given_up } = &mut self.flow else { return chunk.to_vec() };
        if *given_up {
            return chunk.to_vec();
        }
        let from = pending.len().saturating_sub(3);
        pending.extend_from_slice(chunk);
        let mut buf = std::mem::take(pending);
        let mut out = Vec::with_capacity(buf.len());
        let mut at = 0;
        let mut look = from;
        while let Some(e) = event_end(&buf, look, Events::Sse) {
            let event = buf.get(at..e).unwrap_or_default();
            match self.rewrite_event(env, event) {
                Some(new) => out.extend_from_slice(&new),
                None => out.extend_from_slice(event),
            }
            at = e;
            look = e;
        }
        let rest = buf.split_off(at.min(buf.len()));
        let Flow::Sse { pending, given_up } = &mut self.flow else { return out };
        if end || rest.len() > max {
            // the body ends (or an event outgrew the limit): what is left goes as it came
            *given_up = rest.len() > max;
            out.extend_from_slice(&rest);
        } else {
            *pending = rest;
        }
        out
    }

    /// One SSE event, rewritten if its data is a `tools/list` result.
    fn rewrite_event(&mut self, env: &mut Env, event: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(event).ok()?;
        let (at, json) = event_json(text, Events::Sse)?;
        let new = self.rewrite_message(env, json)?;
        let end = at + json.len();
        Some([text.get(..at)?, &new, text.get(end..)?].concat().into_bytes())
    }

    /// A JSON answer (one message or a batch), rewritten where it holds a `tools/list` result.
    fn rewrite_document(&mut self, env: &mut Env, body: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(body).ok()?;
        let trimmed = text.trim_start();
        if trimmed.starts_with('[') {
            let list = raw::array(text)?;
            let mut edits = Vec::new();
            for m in list.0 {
                if let (Some(new), Some(at)) = (self.rewrite_message(env, m.get()), raw::offset(text, m.get())) {
                    edits.push(Edit::new(at, at + m.get().len(), new));
                }
            }
            return (!edits.is_empty()).then(|| splice(text, edits).into_bytes());
        }
        self.rewrite_message(env, text).map(String::into_bytes)
    }

    /// One JSON-RPC message: `None` unless it is a `tools/list` result toolfit changed.
    fn rewrite_message(&mut self, env: &mut Env, text: &str) -> Option<String> {
        if !text.contains("\"tools\"") {
            return None;
        }
        let top = raw::object(text)?;
        if !self.leg.ids.is_empty() && !self.leg.ids.contains(&id_text(top.get("id"))) {
            return None; // an answer to another request (or under a wrong id): as it came
        }
        if !top.get("result").is_some_and(|r| r.get().starts_with('{')) {
            return None;
        }
        let listed = List::rewrite(env, &self.leg, text)?;
        settle(env, &self.leg, listed, top.get("id").map_or("null", |r| r.get()))
    }
}

/// Counts and logs what a list's rewrite did; the message the client gets (`None`: as it came).
fn settle(env: &mut Env, leg: &Leg, listed: List, id: &str) -> Option<String> {
    let m = &mut *env.metrics;
    leg.count(m, Stat::ToolsSeen, listed.tools as u64);
    leg.count(m, Stat::SchemasUnparsed, listed.unparsed as u64);
    leg.count_client(m, Stat::McpToolsListed, listed.tools.saturating_sub(listed.dropped) as u64);
    leg.count_client(m, Stat::McpToolsDropped, listed.dropped as u64);
    leg.count_client(m, Stat::McpOutputsKept, listed.outputs_kept as u64);
    for (kind, n) in &listed.report.counters {
        leg.count(m, Stat::LossyTotal, if kind.lossy() { *n } else { 0 });
        m.add(&metric_name(&leg.route, leg.profile.name, kind.name()), *n);
    }
    if let Some(line) = listed.line(leg) {
        env.say(&leg.route, line);
    }
    if let Some(err) = &listed.refused {
        leg.count_client(env.metrics, Stat::McpListsRefused, 1);
        if !leg.observe {
            return Some(refusal(id, err, leg));
        }
    }
    if leg.observe {
        return None;
    }
    listed.text
}

/// An MCP message handed to toolfit apart from its HTTP exchange (agentgateway's `extMcp` hook gives a
/// `tools/list` result and a `tools/call`'s params, with values its configuration computed): the route
/// label for the counters, and the profile or the client's name, where the hook was given them.
pub struct Apart<'a> {
    pub route: &'a str,
    pub profile: Option<&'a str>,
    pub client: Option<&'a str>,
}

/// What becomes of a `tools/list` result handed apart.
#[derive(Debug, PartialEq)]
pub enum Listed {
    /// As it came.
    Keep,
    /// This `result` (JSON text) in its place.
    Replace(String),
    /// A JSON-RPC `error` object (JSON text) in its place (`unfit: error`).
    Refuse(String),
}

impl Apart<'_> {
    /// The leg of the configuration's first MCP route (its `clients`, `unfit`, profile) for this hook.
    fn leg(&self, env: &mut Env) -> Leg {
        let route = env.config.routes.iter().find(|r| r.format == Format::Mcp);
        let clients = route.map_or_else(default_clients, clients_of);
        let (client, by_client) = self.client.map_or((OTHER.to_string(), None), |c| client_of(&clients, c));
        let chosen = self.profile.and_then(|p| Profile::by_name(p.trim()));
        let profile = chosen.or(by_client).or(route.and_then(|r| r.profile)).unwrap_or(&schema::profile::MCP);
        let leg = Leg {
            route: label(self.route),
            profile,
            client,
            by_header: chosen.is_some(),
            clients,
            unfit: route.and_then(|r| r.unfit).unwrap_or_default(),
            observe: route.and_then(|r| r.mode).unwrap_or(env.config.mode) == Mode::Observe,
            promote_to_description: route.and_then(|r| r.promote_to_description),
            open_objects: route.and_then(|r| r.open_objects),
            server: self.route.to_string(),
            initialize: false,
            tagged: false,
            lists: true,
            ids: Vec::new(),
        };
        env.metrics.prepare(&leg.route, leg.profile.name);
        leg
    }

    /// A `tools/list` result (its JSON text), rewritten for the client as on an MCP route.
    pub fn list(&self, env: &mut Env, result: &str) -> Listed {
        let leg = self.leg(env);
        let message = format!(r#"{{"jsonrpc":"2.0","id":0,"result":{result}}}"#);
        let Some(listed) = List::rewrite(env, &leg, &message) else { return Listed::Keep };
        let Some(out) = settle(env, &leg, listed, "0") else { return Listed::Keep };
        let Some(top) = raw::object(&out) else { return Listed::Keep };
        match (top.get("result"), top.get("error")) {
            (Some(r), _) => Listed::Replace(r.get().to_string()),
            (None, Some(e)) => Listed::Refuse(e.get().to_string()),
            _ => Listed::Keep,
        }
    }

    /// The server's name for a tool a `tools/call` names (`None`: the name is the server's already, or
    /// one toolfit never listed, which is counted).
    pub fn call(&self, env: &mut Env, name: &str) -> Option<String> {
        let leg = self.leg(env);
        match names::decode(name) {
            Some(original) => {
                leg.count(env.metrics, Stat::NamesRestored, 1);
                Some(original)
            }
            None => {
                if names::unlisted(name, leg.profile) {
                    leg.count_client(env.metrics, Stat::McpCallsUnmapped, 1);
                }
                None
            }
        }
    }
}

/// The client a request names in `params._meta["io.modelcontextprotocol/clientInfo"]` (the stateless
/// protocol's per-request `clientInfo`).
fn meta_client(m: &raw::RawObject<'_>) -> Option<String> {
    let params = raw::object(m.get("params")?.get())?;
    let meta = raw::object(params.get("_meta")?.get())?;
    raw::object(meta.get("io.modelcontextprotocol/clientInfo")?.get())?.str("name")
}

/// A JSON-RPC id as compact JSON text (`1`, `"a"`), whatever its spacing.
fn id_text(id: Option<Raw<'_>>) -> String {
    id.and_then(|r| serde_json::from_str::<serde_json::Value>(r.get()).ok()).map_or_else(|| "null".into(), |v| v.to_string())
}

/// The messages of a JSON-RPC body: one object, or a batch's objects.
fn messages(text: &str) -> Vec<raw::RawObject<'_>> {
    if text.trim_start().starts_with('[') {
        return raw::array(text).map(|a| a.0.into_iter().filter_map(|m| raw::object(m.get())).collect()).unwrap_or_default();
    }
    raw::object(text).into_iter().collect()
}

/// Why a tool cannot be listed as its client needs it (`unfit: error`).
struct Unfitting {
    tool: String,
    path: String,
    why: String,
}

/// The JSON-RPC error that answers a `tools/list` in place of its result.
fn refusal(id: &str, u: &Unfitting, leg: &Leg) -> String {
    let path = if u.path.is_empty() { "/" } else { &u.path };
    let message = format!(
        "toolfit: tool {:?} of MCP server {} cannot be listed for {} (profile {}): its inputSchema at {path} {}",
        u.tool, leg.server, leg.client, leg.profile.name, u.why
    );
    // written out rather than built as a `Value`: the id goes back as the request wrote it (its text,
    // checked to be JSON), every string escaped by serde_json
    let q = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    let id = if serde_json::from_str::<serde_json::Value>(id).is_ok() { id } else { "null" };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":{},"data":{{"tool":{},"server":{},"path":{},"profile":{},"client":{},"reason":{}}}}}}}"#,
        q(&message),
        q(&u.tool),
        q(&leg.server),
        q(path),
        q(leg.profile.name),
        q(&leg.client),
        q(&u.why)
    )
}

/// Changes that keep or widen what a schema accepts: the only ones an `outputSchema` gets.
pub fn widens(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::RefsInlined
            | Kind::RefsRetargeted
            | Kind::RefsListed
            | Kind::DefinitionRenamed
            | Kind::RefWrapped
            | Kind::RefSiblingsDropped
            | Kind::AllofMerged
            | Kind::AnyofDistributed
            | Kind::OneofAsAnyof
            | Kind::OneofDisjoint
            | Kind::NeverDropped
            | Kind::NotDropped
            | Kind::KeywordRemoved
            | Kind::DialectNormalized
            | Kind::BooleanSchema
            | Kind::PatternRewritten
            | Kind::PatternRemoved
            | Kind::ObjectOpened
            | Kind::AnnotationMoved
            | Kind::DescriptionAdded
            | Kind::ParametersAdded
    )
}

/// A `tools/list` result as it goes to the client.
struct List {
    /// The message rewritten (`None`: nothing changed).
    text: Option<String>,
    tools: usize,
    dropped: usize,
    unparsed: usize,
    outputs_kept: usize,
    report: Report,
    /// Lossy or unreadable tools, for the line.
    unfit: Vec<(String, String, String)>,
    refused: Option<Unfitting>,
}

impl List {
    /// Rewrites the message `text`, if its `result.tools` is a list of tools.
    fn rewrite(env: &mut Env, leg: &Leg, text: &str) -> Option<List> {
        let opts = env.config.options_on(leg.profile, leg.promote_to_description, leg.open_objects);
        // the input schemas, by the engine, as an inference request's tools
        let outcome = api::rewrite_body_cached(text.as_bytes(), Format::Mcp, leg.profile, &opts, env.cache.as_deref_mut()).ok()?;
        // no list of tools there (an empty one has nothing to rewrite either)
        let n = outcome.tools;
        if n == 0 {
            return None;
        }
        let rewritten: std::borrow::Cow<'_, str> = match &outcome.body {
            Some(b) => std::borrow::Cow::Owned(String::from_utf8(b.clone()).ok()?),
            None => std::borrow::Cow::Borrowed(text),
        };
        let mut unfit: Vec<(String, String, String)> =
            outcome.unparsed.iter().map(|u| (u.tool.clone(), String::new(), format!("could not be parsed: {}", u.reason))).collect();
        for r in outcome.report.records.iter().filter(|r| r.lossy()) {
            if !unfit.iter().any(|(t, _, _)| *t == r.tool) {
                unfit.push((r.tool.clone(), r.path.clone(), format!("{}: {}", r.kind.name(), r.detail)));
            }
        }
        let mut list =
            List { text: None, tools: n, dropped: 0, unparsed: outcome.unparsed.len(), outputs_kept: 0, report: outcome.report, unfit, refused: None };
        if leg.unfit == Unfit::Error {
            if let Some((tool, path, why)) = list.unfit.first() {
                list.refused = Some(Unfitting { tool: tool.clone(), path: path.clone(), why: why.clone() });
                return Some(list);
            }
        }
        // each element: its output schema and name seen to, as edits of the rewritten text; where a
        // tool goes as it came (unfit: pass) or not at all (unfit: drop), the list is made anew
        let (elems, range) = elements_at(&rewritten)?;
        let objs: Vec<raw::RawObject<'_>> = elems.iter().map(|e| raw::object(e)).collect::<Option<_>>()?;
        let names: Vec<String> = objs.iter().map(|o| o.str("name").unwrap_or_default()).collect();
        let whole = matches!(leg.unfit, Unfit::Pass | Unfit::Drop) && !list.unfit.is_empty();
        let old = if whole { elements(text)? } else { Vec::new() };
        if whole && old.len() != elems.len() {
            return None;
        }
        let taken: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut mapped: Vec<String> = Vec::new();
        let mut edits: Vec<Edit> = Vec::new();
        let mut kept: Vec<String> = Vec::new();
        let mut changed = outcome.body.is_some();
        for (i, ((element, o), name)) in elems.iter().zip(objs.iter()).zip(names.iter()).enumerate() {
            let lossy = whole && list.unfit.iter().any(|(t, _, _)| t == name);
            if lossy && leg.unfit == Unfit::Drop {
                list.dropped += 1;
                changed = true;
                continue;
            }
            if lossy {
                // unfit: pass: as the server wrote it, nothing more
                let before = old.get(i).copied().unwrap_or(element);
                changed |= before != *element;
                kept.push(before.to_string());
                continue;
            }
            // edits within this element
            let mut own: Vec<Edit> = Vec::new();
            if let Some(out) = o.get("outputSchema") {
                if let (Some(new), Some(at)) = (output(env, leg, out.get(), name, &mut list), raw::offset(element, out.get())) {
                    own.push(Edit::new(at, at + out.get().len(), new));
                }
            }
            if let (Some(rule), Some(v)) = (leg.profile.target.names, o.get("name")) {
                if let Some(sent) = names::encode(name, &rule).filter(|s| !taken.contains(&s.as_str()) && !mapped.contains(s)) {
                    if let Some(at) = raw::offset(element, v.get()) {
                        list.report.push(Record {
                            tool: name.clone(),
                            path: String::new(),
                            kind: Kind::NameMapped,
                            detail: format!("listed as {sent:?}: the client's profile refuses the name"),
                        });
                        own.push(Edit::new(at, at + v.get().len(), serde_json::Value::String(sent.clone()).to_string()));
                        mapped.push(sent);
                    }
                }
            }
            changed |= !own.is_empty();
            if whole {
                kept.push(if own.is_empty() { element.to_string() } else { splice(element, own) });
            } else if let Some(base) = raw::offset(&rewritten, element) {
                edits.extend(own.into_iter().map(|e| Edit::new(base + e.at, base + e.end, e.text)));
            }
        }
        if !changed {
            return Some(list);
        }
        list.text = Some(if whole {
            splice(&rewritten, vec![Edit::new(range.0, range.1, format!("[{}]", kept.join(",")))])
        } else if edits.is_empty() {
            rewritten.into_owned()
        } else {
            splice(&rewritten, edits)
        });
        Some(list)
    }

    /// The line for the log: what changed, with each lossy tool and pointer.
    fn line(&self, leg: &Leg) -> Option<Line> {
        if self.report.is_empty() && self.unfit.is_empty() && self.outputs_kept == 0 {
            return None;
        }
        let mut text = format!("route={} profile={} client={} tools/list tools={}", leg.route, leg.profile.name, leg.client, self.tools);
        for (k, n) in &self.report.counters {
            text.push_str(&format!(" {}={n}", k.name()));
        }
        if self.outputs_kept > 0 {
            text.push_str(&format!(" outputs_kept={}", self.outputs_kept));
        }
        let unfit: Vec<String> = self.unfit.iter().take(5).map(|(t, p, w)| format!("{t}:{}:{w}", if p.is_empty() { "/" } else { p })).collect();
        if !unfit.is_empty() {
            let what = match leg.unfit {
                Unfit::Rewrite => "rewritten with loss",
                Unfit::Pass => "listed as the server wrote them",
                Unfit::Drop => "left out",
                Unfit::Error => "list refused",
            };
            text.push_str(&format!(" unfit ({what})=[{}]", unfit.join(" ")));
        }
        Some(Line { warn: !unfit.is_empty(), text })
    }
}

/// The element texts of `result.tools` in a message.
fn elements(text: &str) -> Option<Vec<&str>> {
    elements_at(text).map(|(e, _)| e)
}

/// The element texts of `result.tools`, and the array's byte range in `text`.
fn elements_at(text: &str) -> Option<(Vec<&str>, (usize, usize))> {
    let top = raw::object(text)?;
    let result = raw::object(top.get("result")?.get())?;
    let tools: Raw<'_> = result.get("tools")?;
    let at = raw::offset(text, tools.get())?;
    let list = raw::array(tools.get())?;
    Some((list.0.iter().map(|r| r.get()).collect(), (at, at + tools.get().len())))
}

/// An `outputSchema` (its text) rewritten, where every change keeps or widens what it accepts.
fn output(env: &mut Env, leg: &Leg, text: &str, tool: &str, list: &mut List) -> Option<String> {
    let opts = env.config.options_on(leg.profile, leg.promote_to_description, leg.open_objects);
    let mut report = Report::default();
    let mut v = schema::parse(text, &opts, Context::Output, tool, &mut report).ok()?;
    report.extend(schema::normalize(&mut v, leg.profile, &opts, Context::Output, tool).report);
    if report.is_empty() {
        return None;
    }
    if !report.counters.keys().all(|k| widens(*k)) {
        list.outputs_kept += 1;
        return None;
    }
    list.report.extend(report);
    Some(v.to_string())
}

/// Tool names on the MCP leg: a name the client's profile refuses is listed under a readable name
/// that says how to get the original back, so no replica needs to have seen the list.
///
/// Each character outside `[A-Za-z0-9_-]` becomes `_`, and `__` then four lower-case hex digits
/// per such character (its position, then its code) are appended: `github.create_issue` is listed as
/// `github_create_issue__062e`. A name is read back only if it is exactly what its original would be
/// listed as, so a server's own name that merely looks like one is left alone. Names with other
/// than ASCII, or whose listed form would be past the profile's length, are listed as they are (the
/// clients prefix and cut names for their model themselves; a cut here could not be undone).
pub mod names {
    use crate::schema::target::Names;
    use crate::schema::Profile;

    fn plain(c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_' || c == '-'
    }

    /// The name listed for `name` under `rule` (`None`: listed as it is).
    pub fn encode(name: &str, rule: &Names) -> Option<String> {
        if rule.allows(name) {
            return None;
        }
        let sent = spell(name)?;
        rule.allows(&sent).then_some(sent)
    }

    /// The rule-free spelling: `None` when nothing needs it or it cannot be spelled.
    fn spell(name: &str) -> Option<String> {
        if !name.is_ascii() || name.len() > 255 || name.chars().all(plain) {
            return None;
        }
        let mut head = String::with_capacity(name.len());
        let mut tail = String::from("__");
        for (i, c) in name.char_indices() {
            if plain(c) {
                head.push(c);
            } else {
                head.push('_');
                tail.push_str(&format!("{i:02x}{:02x}", c as u32));
            }
        }
        Some(head + &tail)
    }

    /// The original of a listed name, if it is one.
    pub fn decode(sent: &str) -> Option<String> {
        let cut = sent.rfind("__")?;
        let (head, tail) = (sent.get(..cut)?, sent.get(cut + 2..)?);
        if tail.is_empty() || tail.len() % 4 != 0 || !tail.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return None;
        }
        let mut bytes = head.as_bytes().to_vec();
        for k in 0..tail.len() / 4 {
            let pos = usize::from_str_radix(tail.get(k * 4..k * 4 + 2)?, 16).ok()?;
            let code = u8::from_str_radix(tail.get(k * 4 + 2..k * 4 + 4)?, 16).ok()?;
            *bytes.get_mut(pos)? = code;
        }
        let original = String::from_utf8(bytes).ok()?;
        (spell(&original).as_deref() == Some(sent)).then_some(original)
    }

    /// Whether a called name is one toolfit never listed under `profile`: one its rule refuses that
    /// toolfit would have listed under another name.
    pub fn unlisted(sent: &str, profile: &Profile) -> bool {
        profile.target.names.is_some_and(|rule| encode(sent, &rule).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::exchange::{Env, Exchange, Headed, Level};
    use crate::filter::log::LogLimiter;
    use crate::filter::stats::testing::Counts;
    use crate::schema::target::Names;

    #[test]
    fn listed_names_come_back_and_nothing_else_does() {
        for (name, sent) in [("github.create_issue", "github_create_issue__062e"), ("a/b.c", "a_b_c__012f032e"), ("ns:tool x", "ns_tool_x__023a0720")] {
            assert_eq!(names::encode(name, &Names::OPENAI).as_deref(), Some(sent));
            assert_eq!(names::decode(sent).as_deref(), Some(name));
        }
        // allowed names are listed as they are, and a name that only looks encoded is not read back
        assert_eq!(names::encode("get_weather", &Names::OPENAI), None);
        assert_eq!(names::encode("get.weather", &Names::GEMINI), None, "Gemini takes dots");
        for n in ["get_weather", "x__062e", "a_b__0x2e", "github_create_issue__0630", "__", "a__", "é.x__012e"] {
            assert_eq!(names::decode(n), None, "{n}");
        }
        // past the length, or not ASCII: as it is
        assert_eq!(names::encode(&format!("{}.x", "a".repeat(60)), &Names::OPENAI), None);
        assert_eq!(names::encode("ünï.x", &Names::OPENAI), None);
    }

    #[test]
    fn session_tags_round_trip_and_bad_ones_are_ignored() {
        let p = Profile::by_name("openai").unwrap_or(&schema::profile::MCP);
        for server in [Some("abc-123"), None, Some("a.tf.b")] {
            let sid = tag(server, p, "codex-mcp-client");
            let t = untag(&sid).unwrap_or_else(|| panic!("{sid}"));
            assert_eq!((t.server, t.profile.name, t.client), (server, "openai", "codex-mcp-client"));
        }
        for bad in ["abc", "abc.tf.nope.x", "tf.openai.", "tf.openai.a b", "tf.openai"] {
            assert!(untag(bad).is_none(), "{bad}");
        }
    }

    /// A host that does what it is told and writes it down.
    #[derive(Default)]
    struct Host {
        set: Vec<(String, String)>,
        removed: Vec<String>,
        body: Option<Vec<u8>>,
        chunk: Vec<u8>,
    }
    impl RequestHost for Host {
        fn set_header(&mut self, name: &str, value: &str) -> bool {
            self.set.push((name.into(), value.into()));
            true
        }
        fn remove_header(&mut self, name: &str) -> bool {
            self.removed.push(name.into());
            true
        }
        fn set_body(&mut self, _: usize, bytes: &[u8]) -> bool {
            self.body = Some(bytes.to_vec());
            true
        }
        fn reject(&mut self, _: u16, _: &[u8]) -> bool {
            false
        }
    }
    impl ResponseHost for Host {
        fn chunk(&mut self, _: usize) -> Option<Vec<u8>> {
            Some(self.chunk.clone())
        }
        fn set_chunk(&mut self, _: usize, bytes: &[u8]) -> bool {
            self.chunk = bytes.to_vec();
            true
        }
        fn set_header(&mut self, name: &str, value: &str) -> bool {
            RequestHost::set_header(self, name, value)
        }
        fn remove_header(&mut self, name: &str) -> bool {
            RequestHost::remove_header(self, name)
        }
    }

    fn now() -> u64 {
        1
    }

    const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"get.weather","inputSchema":{"type":"object","properties":{"city":{"type":"string","pattern":"^\\p{Lu}"}},"$schema":"https://json-schema.org/draft/2020-12/schema"},"outputSchema":{"type":"object","properties":{"t":{"type":"number","format":"float"}},"required":["t"]}},{"name":"plain","inputSchema":{"type":"object"}}]}}"#;

    /// One exchange on an MCP route: the request's headers and body, then the answer's.
    fn exchange(config: &Config, m: &mut Counts, h: &Headers, body: &str, session: Option<&str>, answer: (&str, &str)) -> (Host, Host) {
        let mut logs = LogLimiter::default();
        let mut log = |_: Level, _: &str| {};
        let mut env = Env { config, metrics: m, logs: &mut logs, cache: None, now_us: now, log: &mut log };
        let mut x = Exchange::default();
        let mut req = Host::default();
        let headed = x.request_headers(&mut env, h, Some("mcp"), &RouteMeta::default(), &mut req);
        assert_ne!(headed, Headed::Ignore);
        if x.reading() {
            let _ = x.request_end(&mut env, Some(body.as_bytes()), body.len(), &mut req);
        }
        let mut res = Host::default();
        let _ = x.response_headers_with(&mut env, 200, false, Some(answer.0), None, session, &mut res);
        res.chunk = answer.1.as_bytes().to_vec();
        let _ = x.response_body(&mut env, &mut res, answer.1.len(), true);
        x.done(&mut env);
        (req, res)
    }

    fn config(route: &str) -> Config {
        Config::parse(format!(r#"{{"routes": [{{"path": "/mcp", "format": "mcp"{route}}}]}}"#).as_bytes()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn post<'a>(session: Option<&'a str>) -> Headers<'a> {
        Headers { method: "POST", path: "/mcp", content_type: Some("application/json"), session, authority: Some("mcp.local"), ..Headers::default() }
    }

    #[test]
    fn a_session_learns_its_client_and_its_lists_are_rewritten_for_it() {
        let cfg = config("");
        let mut m = Counts::default();
        // initialize: codex -> openai, the server's session id tagged
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"codex-mcp-client","version":"0.169.0"}}}"#;
        let (_, res) = exchange(&cfg, &mut m, &post(None), init, Some("s1"), ("application/json", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        let sid = res.set.iter().find(|(k, _)| k == SESSION_HEADER).map(|(_, v)| v.clone()).unwrap_or_default();
        assert_eq!(sid, "s1.tf.openai.codex-mcp-client");
        // tools/list on another exchange (any replica): the tag comes off, the list is rewritten
        let (req, res) = exchange(&cfg, &mut m, &post(Some(&sid)), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", LIST));
        assert!(req.set.contains(&(SESSION_HEADER.into(), "s1".into())), "{:?}", req.set);
        let out = String::from_utf8(res.chunk).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["result"]["tools"][0]["name"], "get_weather__032e", "{out}");
        assert!(v["result"]["tools"][0]["inputSchema"]["properties"]["city"].get("pattern").is_none(), "Python's re has no \\p: {out}");
        assert_eq!(v["result"]["tools"][1], serde_json::json!({"name":"plain","inputSchema":{"type":"object","properties":{}}}), "{out}");
        // the output schema lost `format` (widening), never gained `additionalProperties: false`
        assert!(v["result"]["tools"][0]["outputSchema"].get("additionalProperties").is_none(), "{out}");
        // a server that sends its session id on every answer: it leaves tagged every time
        let (_, res) =
            exchange(&cfg, &mut m, &post(Some(&sid)), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, Some("s1"), ("application/json", ""));
        assert!(res.set.contains(&(SESSION_HEADER.into(), sid.clone())), "{:?}", res.set);
        // a call by the listed name reaches the server under the original
        let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather__032e","arguments":{"city":"X"}}}"#;
        let (req, _) = exchange(&cfg, &mut m, &post(Some(&sid)), call, None, ("application/json", "{}"));
        assert_eq!(String::from_utf8(req.body.unwrap_or_default()).unwrap_or_default(), call.replace("get_weather__032e", "get.weather"));
        // a call naming what toolfit never listed: counted, forwarded as it came
        let call = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get.weather","arguments":{}}}"#;
        let (req, _) = exchange(&cfg, &mut m, &post(Some(&sid)), call, None, ("application/json", "{}"));
        assert!(req.body.is_none());
        let client = |s: Stat| m.0.get(&client_metric("mcp", "openai", "codex-mcp-client", s)).copied().unwrap_or(0);
        assert_eq!((client(Stat::McpSessions), client(Stat::McpToolsListed), client(Stat::McpCallsUnmapped)), (1, 2, 1));
    }

    #[test]
    fn a_stateless_request_names_its_client_in_meta() {
        let cfg = config("");
        let mut m = Counts::default();
        let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.328"}}}}"#;
        let (_, res) = exchange(&cfg, &mut m, &post(None), list, None, ("application/json", LIST));
        let out = String::from_utf8(res.chunk).unwrap_or_default();
        assert!(out.contains("get_weather__032e"), "anthropic refuses the dot: {out}");
        assert_eq!(m.0.get(&client_metric("mcp", "anthropic", "claude-code", Stat::McpToolsListed)).copied(), Some(2));
        // its call names the tool in the Mcp-Name header too: the original goes in both
        let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather__032e","arguments":{}}}"#;
        let h = Headers { mcp_name: Some("get_weather__032e"), ..post(None) };
        let (req, _) = exchange(&cfg, &mut m, &h, call, None, ("application/json", "{}"));
        assert!(req.set.contains(&(NAME_HEADER.into(), "get.weather".into())), "{:?}", req.set);
        assert!(String::from_utf8(req.body.unwrap_or_default()).unwrap_or_default().contains(r#""name":"get.weather""#));
        // without the _meta, the route's profile (mcp) lists the name as it is
        let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", LIST));
        assert!(String::from_utf8(res.chunk).unwrap_or_default().contains("\"get.weather\""));
    }

    #[test]
    fn a_list_and_a_call_handed_apart() {
        let cfg = config(r#", "unfit": "error", "clients": {"codex*": "openai"}"#);
        let mut m = Counts::default();
        let mut logs = LogLimiter::default();
        let mut log = |_: Level, _: &str| {};
        let mut env = Env { config: &cfg, metrics: &mut m, logs: &mut logs, cache: None, now_us: now, log: &mut log };
        let result = r#"{"tools":[{"name":"get.weather","inputSchema":{"type":"object"}}]}"#;
        let a = Apart { route: "agw", profile: None, client: Some("codex-mcp-client") };
        let Listed::Replace(out) = a.list(&mut env, result) else { panic!("not replaced") };
        assert!(out.starts_with(r#"{"tools":[{"name":"get_weather__032e""#), "{out}");
        assert_eq!(a.call(&mut env, "get_weather__032e").as_deref(), Some("get.weather"));
        assert_eq!(a.call(&mut env, "get.weather"), None);
        // the route's profile (mcp) takes the name as it is: nothing to change
        assert_eq!(Apart { route: "agw", profile: None, client: None }.list(&mut env, result), Listed::Keep);
        // a lossy tool under unfit: error is refused with a JSON-RPC error object
        let lossy = r#"{"tools":[{"name":"t","inputSchema":{"type":"object","not":{"required":["a"]}}}]}"#;
        let Listed::Refuse(err) = (Apart { route: "agw", profile: Some("llama-cpp"), client: None }).list(&mut env, lossy) else { panic!("not refused") };
        assert!(err.contains(r#""code":-32603"#) && err.contains(r#""tool":"t""#), "{err}");
        let got = |s: Stat| m.0.get(&client_metric("agw", "openai", "codex_", s)).copied().unwrap_or(0); // the pattern `codex*` as a label
        assert_eq!((got(Stat::McpToolsListed), got(Stat::McpCallsUnmapped)), (1, 1));
    }

    #[test]
    fn answers_under_other_ids_and_batches() {
        let cfg = config("");
        let mut m = Counts::default();
        let other = LIST.replace(r#""id":2"#, r#""id":"x""#);
        let (_, res) =
            exchange(&cfg, &mut m, &post(Some("s.tf.openai.other")), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", &other));
        assert_eq!(String::from_utf8(res.chunk).unwrap_or_default(), other, "an answer under another id goes as it came");
        let batch = format!("[{},{LIST}]", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let req = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#;
        let (_, res) = exchange(&cfg, &mut m, &post(Some("s.tf.openai.other")), req, None, ("application/json", &batch));
        let out = String::from_utf8(res.chunk).unwrap_or_default();
        assert!(out.starts_with(r#"[{"jsonrpc":"2.0","id":1,"result":{}},"#) && out.contains("get_weather__032e"), "{out}");
    }

    #[test]
    fn the_header_wins_and_unknown_clients_get_the_route_profile() {
        let cfg = config(r#", "profile": "gemini-json""#);
        let mut m = Counts::default();
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"some-agent"}}}"#;
        let (_, res) = exchange(&cfg, &mut m, &post(None), init, None, ("application/json", "{}"));
        assert!(res.set.contains(&(SESSION_HEADER.into(), "tf.gemini-json.other".into())), "{:?}", res.set);
        let h = Headers { profile: Some("anthropic"), ..post(None) };
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"codex-mcp-client"}}}"#;
        let (_, res) = exchange(&cfg, &mut m, &h, init, None, ("application/json", "{}"));
        assert!(res.set.contains(&(SESSION_HEADER.into(), "tf.anthropic.codex-mcp-client".into())), "{:?}", res.set);
        // a session toolfit made itself: the header goes before the server sees it
        let (req, _) =
            exchange(&cfg, &mut m, &post(Some("tf.anthropic.other")), r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#, None, ("application/json", "{}"));
        assert!(req.removed.contains(&SESSION_HEADER.to_string()));
    }

    #[test]
    fn sse_answers_are_rewritten_event_by_event_in_any_pieces() {
        let cfg = config("");
        let note = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
        let stream = format!("{note}event: message\ndata: {LIST}\n\n");
        let whole = {
            let mut m = Counts::default();
            let (_, res) = exchange(
                &cfg,
                &mut m,
                &post(Some("s.tf.openai.other")),
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
                None,
                ("text/event-stream", &stream),
            );
            String::from_utf8(res.chunk).unwrap_or_default()
        };
        assert!(whole.starts_with(note) && whole.contains("get_weather__032e") && !whole.contains("\"pattern\""), "{whole}");
        // the same in pieces of every size: the same bytes out
        for step in [1, 7, 64] {
            let mut m = Counts::default();
            let mut logs = LogLimiter::default();
            let mut log = |_: Level, _: &str| {};
            let mut env = Env { config: &cfg, metrics: &mut m, logs: &mut logs, cache: None, now_us: now, log: &mut log };
            let mut x = Exchange::default();
            let mut h = Host::default();
            let _ = x.request_headers(&mut env, &post(Some("s.tf.openai.other")), Some("mcp"), &RouteMeta::default(), &mut h);
            let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
            let _ = x.request_end(&mut env, Some(body.as_bytes()), body.len(), &mut h);
            let _ = x.response_headers_with(&mut env, 200, false, Some("text/event-stream"), None, None, &mut h);
            let mut out = Vec::new();
            let bytes = stream.as_bytes();
            for (i, piece) in bytes.chunks(step).enumerate() {
                h.chunk = piece.to_vec();
                let _ = x.response_body(&mut env, &mut h, piece.len(), (i + 1) * step >= bytes.len());
                out.extend_from_slice(&h.chunk);
            }
            assert_eq!(String::from_utf8(out).unwrap_or_default(), whole, "step {step}");
        }
    }

    #[test]
    fn unfit_tools_pass_drop_or_refuse_the_list() {
        // strict OpenAI cannot keep `\p{Lu}`... take a schema every profile loses: a recursion cut is
        // lossy for llama-cpp, so use it as the client profile
        let lossy = r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"deep","inputSchema":{"type":"object","properties":{"n":{"type":"integer","multipleOf":0.5,"minimum":1.5}},"not":{"required":["n"]}}},{"name":"ok","inputSchema":{"type":"object"}}]}}"#;
        let run = |unfit: &str| {
            let cfg = config(&format!(r#", "profile": "llama-cpp", "unfit": "{unfit}""#));
            let mut m = Counts::default();
            let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#, None, ("application/json", lossy));
            (String::from_utf8(res.chunk).unwrap_or_default(), m)
        };
        let (rewritten, _) = run("rewrite");
        assert!(rewritten.contains("\"deep\"") && !rewritten.contains("\"not\""), "{rewritten}");
        let (passed, _) = run("pass");
        assert!(passed.contains(r#""not":{"required":["n"]}"#), "{passed}");
        let (dropped, m) = run("drop");
        assert!(!dropped.contains("\"deep\"") && dropped.contains("\"ok\""), "{dropped}");
        assert_eq!(m.0.get(&client_metric("mcp", "llama-cpp", OTHER, Stat::McpToolsDropped)).copied(), Some(1));
        let (refused, _) = run("error");
        let v: serde_json::Value = serde_json::from_str(&refused).unwrap_or_default();
        assert_eq!(
            (v["id"].clone(), v["error"]["data"]["tool"].clone(), v["error"]["data"]["server"].clone()),
            (serde_json::json!(7), serde_json::json!("deep"), serde_json::json!("mcp.local/mcp")),
            "{refused}"
        );
        assert!(v["error"]["message"].as_str().is_some_and(|s| s.contains("deep") && s.contains("mcp.local/mcp")), "{refused}");
    }

    #[test]
    fn output_schemas_only_widen() {
        // openai-strict would close the object and make every property required: kept as it came
        let strict = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}]}}"#;
        let cfg = config(r#", "profile": "openai-strict""#);
        let mut m = Counts::default();
        let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, None, ("application/json", strict));
        let out = String::from_utf8(res.chunk).unwrap_or_default();
        assert!(out.contains(r#""outputSchema":{"type":"object","properties":{"a":{"type":"string"}}}"#), "{out}");
        assert_eq!(m.0.get(&client_metric("mcp", "openai-strict", OTHER, Stat::McpOutputsKept)).copied(), Some(1));
        assert!(Kind::ALL.iter().any(|k| !widens(*k)) && Kind::ALL.iter().any(|k| widens(*k)));
    }

    #[test]
    fn other_messages_and_methods_pass_byte_for_byte() {
        let cfg = config("");
        let mut m = Counts::default();
        let odd = r#"{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"\"tools\""}]}}"#;
        let (req, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#, None, ("application/json", odd));
        assert_eq!((req.body, String::from_utf8(res.chunk).unwrap_or_default()), (None, odd.to_string()));
        // a DELETE with no tag is not toolfit's at all
        let mut logs = LogLimiter::default();
        let mut log = |_: Level, _: &str| {};
        let mut env = Env { config: &cfg, metrics: &mut m, logs: &mut logs, cache: None, now_us: now, log: &mut log };
        let del = Headers { method: "DELETE", path: "/mcp", session: Some("abc"), ..Headers::default() };
        assert_eq!(Exchange::default().request_headers(&mut env, &del, Some("mcp"), &RouteMeta::default(), &mut Host::default()), Headed::Ignore);
        let del = Headers { session: Some("abc.tf.openai.other"), ..del };
        let mut h = Host::default();
        assert_eq!(Exchange::default().request_headers(&mut env, &del, Some("mcp"), &RouteMeta::default(), &mut h), Headed::Continue);
        assert_eq!(h.set, vec![(SESSION_HEADER.to_string(), "abc".to_string())]);
    }
}
