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

mod apart;
mod list;
pub mod names;
pub mod prefix;
mod session;
pub mod stdio;

use super::body;
use super::config::{Config, Models, Patterns, Route, Settings, Unfit};
use super::headers::is_json;
use super::host::{Env, Headed, Headers, Next, RequestHost, ResponseHost, RouteMeta};
use super::log::{clip, Line};
use super::memory::Held;
use super::response::stream::{event_json, Framer};
use super::response::Events;
use super::stats::{self, label, Metrics, Scope, Series, Stat};
use crate::api::raw::{self, Raw};
use crate::api::{splice, Edit};
use crate::schema::{self, Profile};

pub use super::host::{NAME_HEADER, PROFILE_HEADER, SESSION_HEADER};
pub use apart::{Apart, Listed};
pub use list::widens;
use list::*;
pub use session::DEFAULT_CLIENTS;
use session::*;

/// One MCP exchange as the core keeps it between callbacks.
pub struct State {
    leg: Leg,
    /// The request body is being read.
    reading: bool,
    /// The request's headers went on with its `Content-Length`: its body must go as it came.
    fixed: bool,
    flow: Flow,
    /// What this exchange holds of the memory of the requests in flight.
    pub(crate) held: Held,
    /// The most bytes of the answer toolfit may hold from now on, when the memory of the requests in
    /// flight is short (else `max_body_bytes`).
    cap: Option<usize>,
    /// The message's first bytes (up to [`PREFIX`]): what it calls, should it prove too large to read.
    prefix: Vec<u8>,
    /// toolfit answered the request itself (a call too large to give its server name back).
    answered: bool,
}

/// How much of a message's start is kept for [`prefix::read`]: every client writes `params.name` well
/// within it.
const PREFIX: usize = 64 << 10;

/// What the request said, as far as the MCP leg cares.
#[derive(Debug, Clone)]
struct Leg {
    route: String,
    profile: &'static Profile,
    /// The profile the route alone gives (its own, or its metadata's): a list rewritten for another
    /// was tailored to its client.
    routed: &'static Profile,
    client: String,
    /// The profile came from the request header: `initialize` does not change it.
    by_header: bool,
    clients: Models,
    /// The clients whose lists declare 2020-12.
    declare: Patterns,
    unfit: Unfit,
    /// The route's settings over the plugin's.
    settings: Settings,
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
    ids: std::collections::HashSet<String>,
}

impl Leg {
    /// The client a request names (`clientInfo.name`): its label, and its profile unless the request
    /// header chose one.
    fn learn(&mut self, name: &str) {
        let (client, profile) = client_of(&self.clients, name);
        self.client = client;
        if let (Some(p), false) = (profile, self.by_header) {
            self.profile = p;
        }
    }

    /// One message from the client: the client it names (`initialize`'s `clientInfo`, or the
    /// stateless protocol's `_meta`), the id of a `tools/list`, and the edit that gives a `tools/call`
    /// its original name.
    fn read(&mut self, env: &mut Env, text: &str, m: &raw::RawObject<'_>) -> Option<Edit> {
        // the stateless protocol (2026-07-28, what Claude Code speaks where the server answers
        // `server/discover`) has no `initialize`: every request names its client in `_meta`
        if let Some(name) = meta_client(m) {
            self.learn(&name);
        }
        match m.str("method").as_deref() {
            Some("initialize") => {
                self.initialize = true;
                let name = m
                    .get("params")
                    .and_then(|p| raw::object(p.get()))
                    .and_then(|p| p.get("clientInfo"))
                    .and_then(|c| raw::object(c.get()))
                    .and_then(|c| c.str("name"));
                self.learn(name.as_deref().unwrap_or(""));
                None
            }
            Some("tools/list") => {
                self.lists = true;
                self.ids.insert(id_text(m.get("id")));
                None
            }
            Some("tools/call") => self.call(env, text, m),
            _ => None,
        }
    }

    /// A `tools/call` message: the edit that gives a listed name back its original; a name toolfit
    /// never listed but would have had to is counted and said, and goes on as it came.
    fn call(&self, env: &mut Env, text: &str, m: &raw::RawObject<'_>) -> Option<Edit> {
        let n = m.get("params").and_then(|p| raw::object(p.get())).and_then(|p| p.get("name"))?;
        let sent = serde_json::from_str::<String>(n.get()).ok()?;
        match names::decode(&sent) {
            Some(original) => {
                let at = raw::offset(text, n.get())?;
                Some(Edit::new(at, at + n.get().len(), serde_json::Value::String(original).to_string()))
            }
            None if names::unlisted(&sent, self.profile) => {
                self.count_client(env.metrics, Stat::McpCallsUnmapped, 1);
                let line = format!(
                    "route={} profile={} client={} tools/call names \"{}\", a tool toolfit never listed: forwarded as it came",
                    self.route,
                    self.profile.name,
                    self.client,
                    clip(&sent)
                );
                env.say(&self.route, Line { warn: true, text: line });
                None
            }
            None => None,
        }
    }

    /// The engine options its lists are rewritten with: the route's, with property names renamed only
    /// where the mcp format's calls allow it (they do not: a call's argument keys could not be given
    /// back, no state joins a list to its calls), and the keywords the client reads kept.
    fn options(&self, config: &Config) -> schema::Options {
        let mcp = &crate::api::format::mcp::FORMAT;
        schema::Options {
            rename_properties: mcp.argument_keys.renamable(),
            keep_keywords: mcp.client_keywords,
            declare_2020_12: self.declare.matches(&self.client),
            ..config.options_with(self.profile, &self.settings)
        }
    }

    /// A JSON answer (one message or a batch), rewritten where it holds a `tools/list` result.
    pub(super) fn rewrite_document(&self, env: &mut Env, body: &[u8]) -> Option<Vec<u8>> {
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
    pub(super) fn rewrite_message(&self, env: &mut Env, text: &str) -> Option<String> {
        if !text.contains("\"tools\"") {
            return None;
        }
        if let Some(answer) = recall(env, self, text) {
            return answer;
        }
        let top = raw::object(text)?;
        if !self.ids.is_empty() && !self.ids.contains(&id_text(top.get("id"))) {
            return None; // an answer to another request (or under a wrong id): as it came
        }
        let result = top.get("result").filter(|r| r.get().starts_with('{'))?;
        let (listed, new) = List::cached(env, self, text, result.get())?;
        settle(env, self, &listed, new, top.get("id").map_or("null", |r| r.get()))
    }

    /// The list goes to this client alone: its profile is not the route's.
    fn tailored(&self) -> bool {
        self.profile.name != self.routed.name
    }

    fn count(&self, m: &mut dyn Metrics, s: Stat, n: u64) {
        stats::count(m, &self.route, self.profile.name, s, n);
    }
    fn count_client(&self, m: &mut dyn Metrics, s: Stat, n: u64) {
        if n > 0 {
            let client = label(&self.client);
            m.add(&Series { route: &self.route, profile: self.profile.name, scope: Scope::Client(&client), counter: s.name() }, n);
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
        framer: Framer,
        given_up: bool,
    },
}

/// Who a request on an MCP route is from, as its headers, its session's tag and the route say.
struct Who {
    profile: &'static Profile,
    routed: &'static Profile,
    client: String,
    /// The profile came from the request header.
    by_header: bool,
    /// A header was changed (the tag taken off the session id, a listed name put back).
    changed: bool,
}

/// The profile and client of a request: the route's profile, over it the route metadata's, the
/// session tag's, then the request header's. The tag comes off the session header and a listed name
/// in the `Mcp-Name` header goes back to the original, through `host`.
fn who(env: &mut Env, route: &Route, clients: &Models, h: &Headers, route_label: &str, meta: &RouteMeta, host: &mut dyn RequestHost) -> Who {
    let routed = meta.profile.as_deref().and_then(Profile::by_name).or(route.profile).unwrap_or(&schema::profile::MCP);
    let mut w = Who { profile: routed, routed, client: OTHER.to_string(), by_header: false, changed: false };
    if let Some(t) = h.session.and_then(untag) {
        // the tag's client label is kept only if the route's map could have given it: bounded labels
        let known = clients.patterns().any(|p| label(p) == t.client);
        w.client = if known { t.client.to_string() } else { OTHER.to_string() };
        w.profile = t.profile;
        w.changed = true;
        let ok = match t.server {
            Some(s) => host.set_header(SESSION_HEADER, s),
            None => host.remove_header(SESSION_HEADER),
        };
        if !ok {
            stats::count(env.metrics, route_label, w.profile.name, Stat::InternalErrors, 1);
        }
    }
    // the stateless protocol names the called tool in a header too, which the server holds to the
    // body's: it gets the original here, before the body is read (the name alone says it)
    if let Some(original) = h.mcp_name.and_then(names::decode) {
        w.changed = true;
        if !host.set_header(NAME_HEADER, &original) {
            stats::count(env.metrics, route_label, w.profile.name, Stat::InternalErrors, 1);
        }
    }
    if let Some(name) = h.profile {
        // the header is toolfit's: the server never sees it
        w.changed = true;
        if !host.remove_header(PROFILE_HEADER) {
            stats::count(env.metrics, route_label, w.profile.name, Stat::InternalErrors, 1);
        }
        match Profile::by_name(name.trim()) {
            Some(p) => {
                w.profile = p;
                w.by_header = true;
            }
            // any client can send the header: the line goes through the route's rate limit
            None => {
                let text = format!("route {route_label:?}: {PROFILE_HEADER} names unknown profile \"{}\"; using {}", clip(name), w.profile.name);
                env.say(route_label, Line { warn: true, text });
            }
        }
    }
    w
}

/// The request's headers on an MCP route: the tag taken off the session header, the profile chosen,
/// and whether the body and the answer are read.
pub fn start(env: &mut Env, route: &Route, h: &Headers, route_name: Option<&str>, meta: &RouteMeta, host: &mut dyn RequestHost) -> (Option<State>, Headed) {
    let cfg: &Config = env.config;
    let route_label = label(route_name.unwrap_or("none"));
    let clients = clients_of(route);
    let Who { profile, routed, client, by_header, changed } = who(env, route, &clients, h, &route_label, meta, host);
    let settings = cfg.settings(Some(route));
    let observe = settings.observe();
    let post = h.method.eq_ignore_ascii_case("POST") && !h.end_of_stream && h.content_type.is_none_or(is_json);
    let get = h.method.eq_ignore_ascii_case("GET");
    let leg = Leg {
        route: route_label,
        profile,
        routed,
        client,
        by_header,
        clients,
        declare: declare_of(Some(route)),
        unfit: route.mcp().and_then(|m| m.unfit).unwrap_or_default(),
        settings,
        server: format!("{}{}", h.authority.unwrap_or(""), h.path.split('?').next().unwrap_or("")),
        initialize: false,
        tagged: changed && h.session.is_some_and(|s| untag(s).is_some()),
        lists: get,
        ids: Default::default(),
    };
    if !post && !get {
        // DELETE and the rest: only the session header's tag comes off (and goes back on the answer's)
        let keep = leg.tagged;
        return (keep.then_some(State::new(leg, false, false)), if changed { Headed::Continue } else { Headed::Ignore });
    }
    env.metrics.prepare(&leg.route, leg.profile.name);
    leg.count(env.metrics, Stat::RequestsSeen, 1);
    if !observe && !host.set_header("accept-encoding", "identity") {
        // an answer in another coding goes on unread
        leg.count(env.metrics, Stat::InternalErrors, 1);
    }
    if get {
        return (Some(State::new(leg, false, false)), Headed::Continue);
    }
    // the body may change (a `tools/call` name): its length goes, or the headers wait for it. The
    // stateless protocol says the method in a header, which the server holds to the body's: a message
    // that is no call, or a call whose name toolfit never listed, cannot change, and goes on with its
    // `Content-Length` at once whatever the framing
    let fixed = h.mcp_method.is_some_and(|m| m != "tools/call" || h.mcp_name.is_some_and(|n| names::decode(n).is_none()));
    let next = if observe || fixed { Some(Next::Continue) } else { body::frame(cfg, host) };
    let next = match next {
        Some(Next::Pause) => Headed::Pause,
        Some(Next::Continue) => Headed::Continue,
        None => {
            leg.count(env.metrics, Stat::InternalErrors, 1);
            return (None, Headed::Continue);
        }
    };
    (Some(State::new(leg, true, fixed)), next)
}

impl State {
    fn new(leg: Leg, reading: bool, fixed: bool) -> State {
        State { leg, reading, fixed, flow: Flow::Off, held: Held::default(), cap: None, prefix: Vec::new(), answered: false }
    }

    /// A piece of the request body, handed over by `read`: kept while the message's start is short of
    /// [`PREFIX`] (a message that names no call in a header of its own).
    pub(crate) fn absorb<B: AsRef<[u8]>>(&mut self, read: impl FnOnce() -> Option<B>) {
        if self.reading && !self.fixed && self.prefix.len() < PREFIX {
            if let Some(piece) = read() {
                let piece = piece.as_ref();
                self.prefix.extend_from_slice(piece.get(..PREFIX - self.prefix.len()).unwrap_or(piece));
            }
        }
    }

    /// The message went past `max_body_bytes` at `total` bytes (it goes on unread): a `tools/call` its
    /// first bytes show naming a tool toolfit listed under another name would reach another tool, or
    /// none, at the server; it is refused through `host` with a JSON-RPC error under its id, counted
    /// `mcp_calls_unmapped` and said (observe mode: only counted and said).
    pub(crate) fn past_limit(&mut self, env: &mut Env, total: usize, host: &mut dyn RequestHost) {
        let start = prefix::read(&std::mem::take(&mut self.prefix));
        let Some((sent, _, original)) = start.listed_call() else { return };
        self.leg.count_client(env.metrics, Stat::McpCallsUnmapped, 1);
        let observe = self.leg.settings.observe();
        let max = env.config.max_body_bytes;
        let text = format!(
            "route={} profile={} client={} a tools/call past max_body_bytes {max} ({total} bytes so far) names \"{}\", listed for \"{}\": {}",
            self.leg.route,
            self.leg.profile.name,
            self.leg.client,
            clip(sent),
            clip(&original),
            if observe { "forwarded as it came (observe)" } else { "refused with a JSON-RPC error (raise max_body_bytes)" }
        );
        env.say(&self.leg.route, Line { warn: true, text });
        if observe {
            return;
        }
        // an id the client could not match is no better than none
        let id = start.id.filter(|i| i.len() <= 256 && serde_json::from_str::<serde_json::Value>(i).is_ok()).unwrap_or_else(|| "null".to_string());
        let message = format!("toolfit: this tools/call is larger than max_body_bytes ({max}), so the tool it names ({original}) cannot be given its server's name; it was not sent");
        let body = serde_json::json!({"jsonrpc": "2.0", "id": "ID", "error": {"code": -32600, "message": message}}).to_string().replacen("\"ID\"", &id, 1);
        if host.reject(200, body.as_bytes()) {
            self.answered = true;
        } else {
            self.leg.count(env.metrics, Stat::InternalErrors, 1);
        }
    }

    /// Whether toolfit answered the request itself.
    pub fn answered(&self) -> bool {
        self.answered
    }

    pub fn reading(&self) -> bool {
        self.reading
    }

    /// The request body goes on unread (the memory of the requests in flight is short): counted; the
    /// route's label, for the line that says so.
    pub(crate) fn over_budget(&mut self, env: &mut Env) -> String {
        self.reading = false;
        self.leg.count(env.metrics, Stat::SkippedOverBudget, 1);
        self.leg.route.clone()
    }

    /// The memory of the requests in flight is short: the answer holds no more than it has now (past
    /// that, what was taken goes back out unread, counted as `skipped_over_budget`).
    pub(crate) fn squeeze(&mut self) {
        self.cap = Some(self.kept());
    }

    /// Whether to keep reading the request body at `total` bytes.
    pub fn keep_reading(&mut self, env: &mut Env, total: usize) -> bool {
        if !body::within_limit(env.config, total) {
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
            edits.extend(self.leg.read(env, text, m));
        }
        if edits.is_empty() {
            return Next::Continue;
        }
        if self.fixed {
            // the headers said no call toolfit listed, the body names one: the server holds the two
            // to each other and refuses the message, which goes on as it came (its length went on before)
            let text = format!("route={} a message whose Mcp-Method and Mcp-Name headers disagree with its body: forwarded as it came", self.leg.route);
            env.say(&self.leg.route, Line { warn: true, text });
            return Next::Continue;
        }
        self.leg.count(env.metrics, Stat::NamesRestored, edits.len() as u64);
        if self.leg.settings.observe() {
            return Next::Continue;
        }
        let new = splice(text, edits);
        if !body::replace(env.config, host, 0, size, new.as_bytes()) {
            self.leg.count(env.metrics, Stat::InternalErrors, 1);
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
            Flow::Sse { framer, .. } => framer.pending(),
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
        if retag && ok && !self.leg.settings.observe() {
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
            Flow::Sse { framer: Framer::new(Events::Sse), given_up: false }
        } else if is_json(&ct) {
            Flow::Json(Vec::new())
        } else {
            return Next::Continue;
        };
        if !self.leg.settings.observe() && !host.remove_header("content-length") {
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
        // past max_body_bytes, or what the memory of the requests in flight leaves
        let (max, past) = match self.cap {
            Some(cap) if cap < env.config.max_body_bytes => (cap, Stat::SkippedOverBudget),
            _ => (env.config.max_body_bytes, Stat::SkippedTooLarge),
        };
        match &mut self.flow {
            Flow::Off => {}
            Flow::Json(copy) => {
                copy.extend_from_slice(&chunk);
                if copy.len() > max {
                    // too large to hold: what was taken goes back out, unread
                    let all = std::mem::take(copy);
                    self.flow = Flow::Off;
                    self.leg.count(env.metrics, past, 1);
                    if !host.set_chunk(size, &all) {
                        self.leg.count(env.metrics, Stat::InternalErrors, 1);
                    }
                } else if end {
                    let all = std::mem::take(copy);
                    self.flow = Flow::Off;
                    let out = self.leg.rewrite_document(env, &all);
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
                let out = self.feed_sse(env, &chunk, end, (max, past));
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
            Flow::Json(all) => self.leg.rewrite_document(env, &all).unwrap_or(all),
            Flow::Sse { mut framer, .. } => framer.take(),
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
            Flow::Sse { mut framer, .. } => framer.take(),
            Flow::Off => return,
        };
        let mut out = held;
        out.extend_from_slice(&host.chunk(size).unwrap_or_default());
        if !out.is_empty() && !host.set_chunk(size, &out) {
            self.leg.count(env.metrics, Stat::InternalErrors, 1);
        }
    }

    /// The SSE bytes that go on for `chunk`: every complete event (a `tools/list` result rewritten).
    /// `max`: the most bytes of one event held, and the counter of an event past it (the rest of the
    /// stream then goes on unread).
    fn feed_sse(&mut self, env: &mut Env, chunk: &[u8], end: bool, (max, past): (usize, Stat)) -> Vec<u8> {
        let Flow::Sse { framer, given_up } = &mut self.flow else { return chunk.to_vec() };
        if *given_up {
            return chunk.to_vec();
        }
        let mut framer = std::mem::take(framer);
        let mut out = Vec::with_capacity(chunk.len());
        framer.split(chunk, |event| match self.rewrite_event(env, event) {
            Some(new) => out.extend_from_slice(&new),
            None => out.extend_from_slice(event),
        });
        let over = framer.pending() > max;
        if over {
            self.leg.count(env.metrics, past, 1);
        }
        if end || over {
            // the body ends (or an event outgrew the limit): what is left goes as it came
            out.append(&mut framer.take());
        }
        if let Flow::Sse { framer: kept, given_up } = &mut self.flow {
            *kept = framer;
            *given_up = over;
        }
        out
    }

    /// One SSE event, rewritten if its data is a `tools/list` result.
    fn rewrite_event(&mut self, env: &mut Env, event: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(event).ok()?;
        let (at, json) = event_json(text, Events::Sse)?;
        let new = self.leg.rewrite_message(env, json)?;
        let end = at + json.len();
        Some([text.get(..at)?, &new, text.get(end..)?].concat().into_bytes())
    }
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

#[cfg(test)]
mod tests;
