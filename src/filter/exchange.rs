//! One request and its response through the filter, whichever host carries them: the state the core
//! keeps between callbacks (the request's plan while its body is read, what the response needs, how
//! the response is read) and every decision of every step. A host (`src/wasm.rs`, `extproc/`) reads
//! what its proxy says, hands it here with an [`Env`] (the configuration in force, what requests
//! share, a clock and a log), and carries out what comes back: body and header changes go through
//! [`RequestHost`] and [`ResponseHost`], the rest is a [`Next`] or a [`Headed`].

use super::config::Config;
use super::log::{Line, LogLimiter};
use super::mcp;
use super::request::{self, Headers, Plan, RequestHost, RouteMeta, Start};
use super::response::{Flow, Reply, ResponseHost, Sink};
use super::stats::{Metrics, Stat};
use super::Next;
use crate::api::cache::SiteCache;
use crate::api::Format;
use std::borrow::Cow;

/// How important a log line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
}

/// What a host lends the core for one callback.
pub struct Env<'a> {
    /// The configuration the request started under.
    pub config: &'a Config,
    pub metrics: &'a mut dyn Metrics,
    /// The per-route rate limit on log lines, shared by the plugin's requests.
    pub logs: &'a mut LogLimiter,
    /// The rewrite cache, where the host keeps one.
    pub cache: Option<&'a mut SiteCache>,
    /// Now, in microseconds.
    pub now_us: fn() -> u64,
    /// Writes a line the rate limit let through (the host adds its prefix and level).
    pub log: &'a mut dyn FnMut(Level, &str),
}

impl Env<'_> {
    /// Writes `line` for `route` if the rate limit lets it through.
    pub(crate) fn say(&mut self, route: &str, line: Line) {
        let now_s = (self.now_us)() / 1_000_000;
        if let Some(text) = self.logs.admit(route, now_s, self.config.log_lines_per_second, line.text) {
            (self.log)(if line.warn { Level::Warn } else { Level::Info }, &text);
        }
    }

    /// Runs `f` with the response path's view of these: counters, the rate limit, warnings.
    fn sink<R>(&mut self, f: impl FnOnce(&mut Sink) -> R) -> R {
        let now_s = (self.now_us)() / 1_000_000;
        let log = &mut *self.log;
        let mut warn = |text: &str| log(Level::Warn, text);
        let mut sink = Sink { metrics: &mut *self.metrics, logs: &mut *self.logs, now_s, lines_per_second: self.config.log_lines_per_second, warn: &mut warn };
        f(&mut sink)
    }
}

/// What the host does once the request's headers are seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Headed {
    /// toolfit reads neither this request's body nor its response: let both pass (a host that can
    /// stop being sent them, as ext_proc can, should).
    Ignore,
    /// The headers go on now; the body is read.
    Continue,
    /// The headers wait for the body (its new length goes with them).
    Pause,
}

/// Where the request is.
enum Request {
    /// Not read (not an inference request, passed, or done).
    Idle,
    /// Its body is being read.
    Reading(Plan),
}

/// One request and its response, as the core keeps them between a host's callbacks.
pub struct Exchange {
    request: Request,
    /// What the response path needs from the request, until the response's headers.
    reply: Option<Reply>,
    /// How the response body is read.
    response: Flow,
    /// An exchange on an MCP route, which the MCP leg carries instead (`super::mcp`).
    mcp: Option<Box<mcp::State>>,
}

impl Default for Exchange {
    fn default() -> Self {
        Exchange { request: Request::Idle, reply: None, response: Flow::Off, mcp: None }
    }
}

impl Exchange {
    /// The request's headers: whether toolfit reads it, and what its headers need first (through
    /// `host`, before they go upstream).
    pub fn request_headers(&mut self, env: &mut Env, h: &Headers, route: Option<&str>, meta: &RouteMeta, host: &mut dyn RequestHost) -> Headed {
        if let Some(r) = env.config.route_for(h.path).filter(|r| r.format == Format::Mcp && !meta.disabled) {
            let (state, headed) = mcp::start(env, r, h, route, meta, host);
            self.mcp = state.map(Box::new);
            return headed;
        }
        let log = &mut *env.log;
        let start = request::start(env.config, h, route, meta, env.metrics, &mut |w| log(Level::Warn, &w));
        let Start::Buffer(plan) = start else { return Headed::Ignore };
        // every counter of the route and profile, defined once: zeros rather than missing series
        env.metrics.prepare(&plan.route, plan.profile.name);
        let Some(next) = request::hold_headers(env.config, &plan, host, env.metrics) else { return Headed::Ignore };
        self.request = Request::Reading(plan);
        match next {
            Next::Continue => Headed::Continue,
            Next::Pause => Headed::Pause,
        }
    }

    /// Whether the request's body is being read.
    pub fn reading(&self) -> bool {
        match &self.mcp {
            Some(m) => m.reading(),
            None => matches!(self.request, Request::Reading(_)),
        }
    }

    /// `total` body bytes have arrived: whether to keep reading (past `max_body_bytes` the body goes
    /// on as it came, counted, and is read no further).
    pub fn keep_reading(&mut self, env: &mut Env, total: usize) -> bool {
        if let Some(m) = &mut self.mcp {
            return m.keep_reading(env, total);
        }
        let Request::Reading(plan) = &self.request else { return false };
        if request::keep_buffering(env.config, plan, total, env.metrics) {
            return true;
        }
        self.request = Request::Idle;
        false
    }

    /// The whole request body (`None`: the host could not read it, which is counted and leaves the
    /// request as it came) of `size` bytes as the host holds it: rewritten, logged, and carried out
    /// through `host`. `Pause`: toolfit answered the request itself.
    pub fn request_end<'b>(&mut self, env: &mut Env, body: Option<impl Into<Cow<'b, [u8]>>>, size: usize, host: &mut dyn RequestHost) -> Next {
        if let Some(m) = &mut self.mcp {
            if !m.reading() {
                return Next::Continue;
            }
            let body: Option<Cow<'b, [u8]>> = body.map(Into::into);
            return m.request_end(env, body.as_deref(), size, host);
        }
        let Request::Reading(plan) = std::mem::replace(&mut self.request, Request::Idle) else { return Next::Continue };
        let Some(body) = body else {
            plan.count(env.metrics, Stat::InternalErrors, 1);
            return Next::Continue;
        };
        let mut clock = env.now_us;
        let (verdict, line, reply) = request::finish(env.config, &plan, body, env.metrics, &mut clock, env.cache.as_deref_mut());
        self.reply = reply;
        if let Some(line) = line {
            env.say(&plan.route, line);
        }
        request::apply(env.config, &plan, verdict, size, host, env.metrics)
    }

    /// The response's headers. `None`: the response is not read (nothing to repair or check); else
    /// what the headers do, their changes made through `host`.
    pub fn response_headers(
        &mut self,
        env: &mut Env,
        status: u16,
        end_of_stream: bool,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
        host: &mut dyn ResponseHost,
    ) -> Option<Next> {
        self.response_headers_with(env, status, end_of_stream, content_type, content_encoding, None, host)
    }

    /// [`Exchange::response_headers`] with the answer's `Mcp-Session-Id` (what an MCP route reads).
    #[allow(clippy::too_many_arguments)] // the headers a host reads, each a plain value
    pub fn response_headers_with(
        &mut self,
        env: &mut Env,
        status: u16,
        end_of_stream: bool,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
        session: Option<&str>,
        host: &mut dyn ResponseHost,
    ) -> Option<Next> {
        if let Some(m) = &mut self.mcp {
            if !m.awaits_response() {
                return None;
            }
            let _ = content_encoding; // MCP requests ask for identity
            return Some(m.response_headers(env, status, end_of_stream, content_type, session, host));
        }
        let reply = self.reply.take()?;
        let (flow, next) = env.sink(|sink| Flow::start(reply, status, end_of_stream, content_type, content_encoding, host, sink));
        self.response = flow;
        Some(next)
    }

    /// Whether the response will be read: the request left something to repair or check (a host
    /// need not even read the response's headers otherwise).
    pub fn awaits_response(&self) -> bool {
        match &self.mcp {
            Some(m) => m.awaits_response(),
            None => self.reply.is_some(),
        }
    }

    /// Whether the response body is read (or repaired) at all.
    pub fn reading_response(&self) -> bool {
        match &self.mcp {
            Some(m) => m.reading_response(),
            None => !matches!(self.response, Flow::Off),
        }
    }

    /// A piece of the response body of `size` bytes, read and changed through `host`.
    pub fn response_body(&mut self, env: &mut Env, host: &mut dyn ResponseHost, size: usize, end_of_stream: bool) -> Next {
        if let Some(m) = &mut self.mcp {
            return m.response_body(env, host, size, end_of_stream);
        }
        let mut flow = std::mem::replace(&mut self.response, Flow::Off);
        let next = env.sink(|sink| flow.body(host, sink, size, end_of_stream));
        self.response = flow;
        next
    }

    /// The response ends in trailers. `body_allowed`: the host can still send body bytes with them
    /// (bytes toolfit held that cannot go out any more are toolfit's failure, counted).
    pub fn response_trailers(&mut self, env: &mut Env, host: &mut dyn ResponseHost, body_allowed: bool) -> Next {
        if let Some(m) = &mut self.mcp {
            let _ = body_allowed;
            return m.response_trailers(env, host);
        }
        let mut flow = std::mem::replace(&mut self.response, Flow::Off);
        let reply = flow.reply().cloned();
        let mut noted = Noted { host, wrote: false };
        env.sink(|sink| {
            let next = flow.trailers(&mut noted, sink);
            if noted.wrote && !body_allowed {
                if let Some(r) = &reply {
                    sink.internal_error(r);
                }
            }
            next
        })
    }

    /// The rest of the response body will not come here (a proxy's buffer limit sent it on): it goes
    /// on as it came, counted.
    pub fn response_unseen(&mut self, env: &mut Env) {
        if let Some(m) = &mut self.mcp {
            m.unseen();
            return;
        }
        let mut flow = std::mem::replace(&mut self.response, Flow::Off);
        env.sink(|sink| flow.unseen(sink));
    }

    /// The exchange is over (the response complete, cut, or the client gone): the response's
    /// counters, once.
    pub fn done(&mut self, env: &mut Env) {
        let mut flow = std::mem::replace(&mut self.response, Flow::Off);
        env.sink(|sink| flow.done(sink));
    }

    /// Bytes the response path holds (what the processing of a host's next message grows with).
    pub fn kept(&self) -> usize {
        match &self.mcp {
            Some(m) => m.kept(),
            None => self.response.kept(),
        }
    }
}

/// A response host that notes whether body bytes were written through it.
struct Noted<'a> {
    host: &'a mut dyn ResponseHost,
    wrote: bool,
}

impl ResponseHost for Noted<'_> {
    fn chunk(&mut self, size: usize) -> Option<Vec<u8>> {
        self.host.chunk(size)
    }
    fn set_chunk(&mut self, size: usize, bytes: &[u8]) -> bool {
        self.wrote |= !bytes.is_empty();
        self.host.set_chunk(size, bytes)
    }
    fn set_header(&mut self, name: &str, value: &str) -> bool {
        self.host.set_header(name, value)
    }
    fn remove_header(&mut self, name: &str) -> bool {
        self.host.remove_header(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::stats::metric_name;
    use crate::filter::stats::testing::Counts;

    /// A host that does what it is told and writes it down.
    #[derive(Default)]
    struct Host {
        calls: Vec<String>,
        body: Vec<u8>,
        chunk: Vec<u8>,
    }
    impl RequestHost for Host {
        fn set_header(&mut self, name: &str, value: &str) -> bool {
            self.calls.push(format!("set {name}: {value}"));
            true
        }
        fn remove_header(&mut self, name: &str) -> bool {
            self.calls.push(format!("remove {name}"));
            true
        }
        fn set_body(&mut self, _: usize, bytes: &[u8]) -> bool {
            self.body = bytes.to_vec();
            true
        }
        fn reject(&mut self, status: u16, _: &[u8]) -> bool {
            self.calls.push(format!("reject {status}"));
            true
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
        7_000_000
    }

    /// A request through every step as a host drives it: read, rewritten, logged, and its response's
    /// call given back its name and counted.
    #[test]
    fn one_exchange_from_headers_to_the_response_counters() {
        let config = Config::parse(br#"{"profile": "openai-strict"}"#).unwrap_or_default();
        let (mut metrics, mut logs, mut lines) = (Counts::default(), LogLimiter::default(), Vec::new());
        let mut log = |level: Level, text: &str| lines.push((level, text.to_string()));
        let mut env = Env { config: &config, metrics: &mut metrics, logs: &mut logs, cache: None, now_us: now, log: &mut log };
        let mut host = Host::default();
        let mut x = Exchange::default();
        let h =
            Headers { method: "POST", path: "/v1/chat/completions", content_type: Some("application/json"), accept_encoding: Some("br"), ..Headers::default() };
        assert_eq!(x.request_headers(&mut env, &h, Some("chat"), &RouteMeta::default(), &mut host), Headed::Continue);
        assert_eq!(host.calls, ["set accept-encoding: identity", "remove content-length"]);
        assert!(x.reading() && x.keep_reading(&mut env, 10));
        let body = br#"{"messages":[],"tools":[{"type":"function","function":{"name":"gh.search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]}"#;
        assert_eq!(x.request_end(&mut env, Some(&body[..]), body.len(), &mut host), Next::Continue);
        assert!(!x.reading() && x.awaits_response());
        assert!(String::from_utf8_lossy(&host.body).contains(r#""name":"gh_search""#), "{}", String::from_utf8_lossy(&host.body));
        // the response: read, the name given back, counted at the end
        // its length will change: the headers go on at once without it
        host.calls.clear();
        assert_eq!(x.response_headers(&mut env, 200, false, Some("application/json"), None, &mut host), Some(Next::Continue));
        assert_eq!(host.calls, ["remove content-length"]);
        host.chunk =
            br#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":"1","type":"function","function":{"name":"gh_search","arguments":"{\"q\":\"a\"}"}}]}}]}"#
                .to_vec();
        let size = host.chunk.len();
        assert_eq!(x.response_body(&mut env, &mut host, size, true), Next::Continue);
        assert!(String::from_utf8_lossy(&host.chunk).contains(r#""name":"gh.search""#));
        x.done(&mut env);
        let got = |c: &str| metrics.0.get(&metric_name("chat", "openai-strict", c)).copied().unwrap_or(0);
        assert_eq!((got("requests_rewritten"), got("name_mapped"), got("names_restored"), got("tool_calls_seen")), (1, 1, 1, 1));
        assert!(metrics.1.contains(&("chat".to_string(), "openai-strict")), "counters defined up front");
        assert!(
            lines.iter().any(|(l, t)| *l == Level::Warn && t.contains("route=chat") && t.contains("optional_nullable")),
            "a lossy rewrite warns: {lines:?}"
        );
    }

    /// What a host must not be asked to do: read a body past the limit, or a response nobody asked to
    /// read; and held bytes that cannot go out with trailers are counted as toolfit's failure.
    #[test]
    fn limits_ignored_requests_and_bytes_lost_at_trailers() {
        let config = Config::parse(br#"{"profile": "openai-strict", "max_body_bytes": 1000}"#).unwrap_or_default();
        let (mut metrics, mut logs) = (Counts::default(), LogLimiter::default());
        let mut log = |_: Level, _: &str| {};
        let mut host = Host::default();
        let post = Headers { method: "POST", path: "/v1/chat/completions", ..Headers::default() };
        {
            let mut env = Env { config: &config, metrics: &mut metrics, logs: &mut logs, cache: None, now_us: now, log: &mut log };
            let mut x = Exchange::default();
            let get = Headers { method: "GET", path: "/v1/chat/completions", ..Headers::default() };
            assert_eq!(x.request_headers(&mut env, &get, Some("chat"), &RouteMeta::default(), &mut host), Headed::Ignore);
            assert!(!x.reading() && host.calls.is_empty());
            assert_eq!(x.request_headers(&mut env, &post, Some("chat"), &RouteMeta::default(), &mut host), Headed::Continue);
            assert!(!x.keep_reading(&mut env, 1001) && !x.reading(), "past max_body_bytes: read no further");
            assert_eq!(x.request_end(&mut env, Some(&b"{}"[..]), 2, &mut host), Next::Continue, "nothing to finish");
            assert_eq!(x.response_headers(&mut env, 200, false, Some("application/json"), None, &mut host), None);
            // a body the host could not read: counted, left alone
            assert_eq!(x.request_headers(&mut env, &post, Some("chat"), &RouteMeta::default(), &mut host), Headed::Continue);
            assert_eq!(x.request_end(&mut env, None::<Vec<u8>>, 2, &mut host), Next::Continue);
        }
        let got = |m: &Counts, c: &str| m.0.get(&metric_name("chat", "openai-strict", c)).copied().unwrap_or(0);
        assert_eq!((got(&metrics, "skipped_too_large"), got(&metrics, "internal_errors")), (1, 1));
        // a stream held at its trailers: written on where the host can, counted lost where it cannot
        for (allowed, lost) in [(true, 0), (false, 1)] {
            let before = got(&metrics, "internal_errors");
            {
                let mut env = Env { config: &config, metrics: &mut metrics, logs: &mut logs, cache: None, now_us: now, log: &mut log };
                let mut x = Exchange::default();
                assert_eq!(x.request_headers(&mut env, &post, Some("chat"), &RouteMeta::default(), &mut host), Headed::Continue);
                let body = br#"{"messages":[],"tools":[{"type":"function","function":{"name":"gh.search","parameters":{"type":"object"}}}]}"#;
                let _ = x.request_end(&mut env, Some(&body[..]), body.len(), &mut host);
                assert!(x.response_headers(&mut env, 200, false, Some("text/event-stream"), None, &mut host).is_some());
                host.chunk =
                    br#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"1","type":"function","function":{"name":"gh_sea"#.to_vec();
                let size = host.chunk.len();
                let _ = x.response_body(&mut env, &mut host, size, false);
                assert!(x.kept() > 0, "the call's first part is held");
                host.chunk.clear();
                let _ = x.response_trailers(&mut env, &mut host, allowed);
            }
            assert_eq!(got(&metrics, "internal_errors") - before, lost, "body allowed: {allowed}");
        }
    }
}
