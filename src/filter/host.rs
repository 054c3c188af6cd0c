//! The whole contract between the core and a host (`src/wasm.rs`, `extproc/`): what a host hands over
//! (the request's [`Headers`], the route's [`RouteMeta`], an [`Env`] for each callback) and what it
//! carries out ([`Headed`] and [`Next`], the calls of [`RequestHost`] and [`ResponseHost`]). The hosts
//! implement these and decide nothing. A leaf of the filter: it imports none of the modules that
//! decide (request, response, exchange, mcp).

use super::config::Config;
use super::log::{Line, LogLimiter};
use super::memory::Memory;
use super::stats::Metrics;
use crate::api::cache::SiteCache;
use std::sync::Arc;

/// The request header a client sets to choose its profile on an MCP route (it wins over the session's).
pub const PROFILE_HEADER: &str = "x-toolfit-profile";
/// The MCP session header (streamable HTTP).
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The tool a `tools/call` names, as a header (the stateless protocol, 2026-07-28).
pub const NAME_HEADER: &str = "mcp-name";
/// The JSON-RPC method of a POST, as a header (the stateless protocol, 2026-07-28).
pub const METHOD_HEADER: &str = "mcp-method";

/// The request headers the core reads (names in lower case, as both proxies hand them over), in the
/// order [`RequestRead`] keeps them: a host reads these and no other.
pub const REQUEST_HEADERS: [&str; 11] = [
    ":method",
    ":path",
    "content-type",
    "content-encoding",
    "accept-encoding",
    SESSION_HEADER,
    PROFILE_HEADER,
    ":authority",
    NAME_HEADER,
    METHOD_HEADER,
    "authorization",
];

/// The response headers the core reads, in the order [`ResponseRead`] keeps them.
pub const RESPONSE_HEADERS: [&str; 4] = [":status", "content-type", "content-encoding", SESSION_HEADER];

/// The headers of toolfit's own answer (strict mode's 400, a rejected reply): JSON, and marked as
/// toolfit's so a client and the access log can tell it from the upstream's.
pub const REJECT_HEADERS: [(&str, &str); 2] = [("content-type", "application/json"), ("x-toolfit", "rejected")];

/// The request headers as a host read them (owned): [`RequestRead::headers`] lends them as [`Headers`].
pub struct RequestRead([Option<String>; REQUEST_HEADERS.len()]);

impl RequestRead {
    /// Reads each of [`REQUEST_HEADERS`] with `get` (a header's value; `None` when absent).
    pub fn read(get: impl FnMut(&str) -> Option<String>) -> Self {
        RequestRead(REQUEST_HEADERS.map(get))
    }

    pub fn headers(&self, end_of_stream: bool) -> Headers<'_> {
        let [method, path, content_type, content_encoding, accept_encoding, session, profile, authority, mcp_name, mcp_method, authorization] = &self.0;
        Headers {
            method: method.as_deref().unwrap_or_default(),
            path: path.as_deref().unwrap_or_default(),
            content_type: content_type.as_deref(),
            content_encoding: content_encoding.as_deref(),
            accept_encoding: accept_encoding.as_deref(),
            end_of_stream,
            session: session.as_deref(),
            profile: profile.as_deref(),
            authority: authority.as_deref(),
            mcp_name: mcp_name.as_deref(),
            mcp_method: mcp_method.as_deref(),
            authorization: authorization.as_deref(),
        }
    }
}

/// What the response's headers say, as far as toolfit cares.
#[derive(Debug, Default, Clone, Copy)]
pub struct ResponseHeaders<'a> {
    /// `:status` (0 when missing or not a number).
    pub status: u16,
    pub end_of_stream: bool,
    pub content_type: Option<&'a str>,
    pub content_encoding: Option<&'a str>,
    /// The answer's `Mcp-Session-Id` (what an MCP route reads).
    pub session: Option<&'a str>,
}

/// The response headers as a host read them (owned).
pub struct ResponseRead([Option<String>; RESPONSE_HEADERS.len()]);

impl ResponseRead {
    /// Reads each of [`RESPONSE_HEADERS`] with `get`.
    pub fn read(get: impl FnMut(&str) -> Option<String>) -> Self {
        ResponseRead(RESPONSE_HEADERS.map(get))
    }

    pub fn headers(&self, end_of_stream: bool) -> ResponseHeaders<'_> {
        let [status, content_type, content_encoding, session] = &self.0;
        ResponseHeaders {
            status: status.as_deref().and_then(|s| s.trim().parse().ok()).unwrap_or(0),
            end_of_stream,
            content_type: content_type.as_deref(),
            content_encoding: content_encoding.as_deref(),
            session: session.as_deref(),
        }
    }
}

/// One value of the route's `metadata.filter_metadata.toolfit`, as a host finds it: bytes (a string;
/// proxy-wasm gives a boolean as one byte) or a boolean.
pub enum MetaValue {
    Bytes(Vec<u8>),
    Bool(bool),
}

/// The keys of the route's `metadata.filter_metadata.toolfit` the core reads.
pub const ROUTE_META_KEYS: [&str; 3] = ["profile", "strict", "disabled"];

/// Writes a line the rate limit let through to the `log` facade, as both hosts do (their proxy's log).
pub fn write_log(level: Level, text: &str) {
    match level {
        Level::Warn => log::warn!("toolfit: {text}"),
        Level::Info => log::info!("toolfit: {text}"),
    }
}

/// Runs `f` with an [`Env`] over what the host keeps for its requests (the configuration in force,
/// counters, the log rate limit, the rewrite cache, the memory they hold) and its clock; lines go to [`write_log`].
pub fn with_env<R>(
    config: &Config,
    metrics: &mut dyn Metrics,
    logs: &mut LogLimiter,
    cache: Option<&mut SiteCache>,
    memory: &Arc<Memory>,
    now_us: fn() -> u64,
    f: impl FnOnce(&mut Env) -> R,
) -> R {
    let mut log = write_log;
    let mut env = Env { config, metrics, logs, cache, memory, now_us, log: &mut log };
    f(&mut env)
}

/// What a host does after a callback, on either path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Let what it has go on.
    Continue,
    /// Hold back what it has (headers, body so far): toolfit may still change it.
    Pause,
}

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
    /// What every request in flight holds together (the VM's, or the process's): see
    /// [`super::memory`].
    pub memory: &'a Arc<Memory>,
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

/// What the request's headers say, as far as toolfit cares.
#[derive(Debug, Default, Clone)]
pub struct Headers<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub content_type: Option<&'a str>,
    pub content_encoding: Option<&'a str>,
    /// The client's `Accept-Encoding`.
    pub accept_encoding: Option<&'a str>,
    /// The request has no body (end of stream with the headers).
    pub end_of_stream: bool,
    /// MCP routes: the `Mcp-Session-Id`, `x-toolfit-profile`, `:authority`, `Mcp-Name` and
    /// `Mcp-Method` headers (the last two: the tool a `tools/call` names and the message's method, in
    /// the stateless protocol).
    pub session: Option<&'a str>,
    pub profile: Option<&'a str>,
    pub authority: Option<&'a str>,
    pub mcp_name: Option<&'a str>,
    pub mcp_method: Option<&'a str>,
    /// The `Authorization` header: a request signed over its body (AWS SigV4) is never rewritten.
    pub authorization: Option<&'a str>,
}

/// Per-route overrides from the Envoy route's `metadata.filter_metadata.toolfit`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RouteMeta {
    pub profile: Option<String>,
    pub strict: Option<bool>,
    pub disabled: bool,
}

impl RouteMeta {
    /// Reads each of [`ROUTE_META_KEYS`] with `leaf`. A boolean may come as one, as the byte 1 or 0
    /// (proxy-wasm), or as the string "true" or "false" (route metadata written by hand often has
    /// them so); anything else is unset.
    pub fn read(mut leaf: impl FnMut(&str) -> Option<MetaValue>) -> Self {
        let mut flag = |k: &str| match leaf(k)? {
            MetaValue::Bool(b) => Some(b),
            MetaValue::Bytes(b) => match b.as_slice() {
                [1] | b"true" => Some(true),
                [0] | b"false" => Some(false),
                _ => None,
            },
        };
        let (strict, disabled) = (flag("strict"), flag("disabled").unwrap_or(false));
        let profile = match leaf("profile") {
            Some(MetaValue::Bytes(b)) => String::from_utf8(b).ok(),
            _ => None,
        };
        RouteMeta { profile, strict, disabled }
    }
}

/// The calls the request path makes on its host once it has decided to buffer a request. Each
/// returns whether it worked; a failure is handled here.
pub trait RequestHost {
    fn set_header(&mut self, name: &str, value: &str) -> bool;
    fn remove_header(&mut self, name: &str) -> bool;
    /// Puts `bytes` in place of the body's bytes from offset `at` to its end `size` (bytes the host
    /// holds: toolfit never lets a byte go that it may change).
    fn set_body(&mut self, at: usize, size: usize, bytes: &[u8]) -> bool;
    /// Answers the client with `status` and a JSON `body` instead of forwarding the request.
    fn reject(&mut self, status: u16, body: &[u8]) -> bool;
}

/// The calls the response path makes on its host. Each returns whether it worked; a failure is
/// handled here (counted, and the response left consistent).
pub trait ResponseHost {
    /// The `size` body bytes the host holds for this callback; `None`: they cannot be read.
    fn chunk(&mut self, size: usize) -> Option<Vec<u8>>;
    /// Puts `bytes` in place of the first `size` bytes the host holds.
    fn set_chunk(&mut self, size: usize, bytes: &[u8]) -> bool;
    fn set_header(&mut self, name: &str, value: &str) -> bool;
    fn remove_header(&mut self, name: &str) -> bool;
}

/// What unit tests drive the core with.
#[cfg(test)]
pub(crate) mod testing {
    use super::{RequestHost, ResponseHost};

    /// A host that does what it is told and writes it down: every call in order (`set name: value`,
    /// `remove name`, `reject status`), the headers set and removed, the body set, the chunk.
    #[derive(Default)]
    pub struct Recorder {
        pub calls: Vec<String>,
        pub set: Vec<(String, String)>,
        pub removed: Vec<String>,
        pub body: Option<Vec<u8>>,
        /// The offset `body` replaces the body from.
        pub body_at: usize,
        pub chunk: Vec<u8>,
    }

    impl RequestHost for Recorder {
        fn set_header(&mut self, name: &str, value: &str) -> bool {
            self.calls.push(format!("set {name}: {value}"));
            self.set.push((name.into(), value.into()));
            true
        }
        fn remove_header(&mut self, name: &str) -> bool {
            self.calls.push(format!("remove {name}"));
            self.removed.push(name.into());
            true
        }
        fn set_body(&mut self, at: usize, _: usize, bytes: &[u8]) -> bool {
            self.body_at = at;
            self.body = Some(bytes.to_vec());
            true
        }
        fn reject(&mut self, status: u16, body: &[u8]) -> bool {
            self.calls.push(format!("reject {status} {}", String::from_utf8_lossy(body)));
            true
        }
    }

    impl ResponseHost for Recorder {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_by_one_list() {
        let got = RequestRead::read(|n| (n != "authorization").then(|| format!("v{n}")));
        let h = got.headers(true);
        assert_eq!(
            (h.method, h.path, h.session, h.profile, h.mcp_name, h.mcp_method, h.authorization),
            ("v:method", "v:path", Some("vmcp-session-id"), Some("vx-toolfit-profile"), Some("vmcp-name"), Some("vmcp-method"), None)
        );
        assert!(h.end_of_stream);
        let r = ResponseRead::read(|n| match n {
            ":status" => Some(" 201".into()),
            "content-type" => Some("application/json".into()),
            _ => None,
        });
        let r = r.headers(false);
        assert_eq!((r.status, r.content_type, r.session), (201, Some("application/json"), None));
        assert_eq!(ResponseRead::read(|_| Some("x".into())).headers(false).status, 0);
    }

    #[test]
    fn route_metadata_reads_both_hosts_booleans() {
        let m = RouteMeta::read(|k| match k {
            "profile" => Some(MetaValue::Bytes(b"vllm".to_vec())),
            "strict" => Some(MetaValue::Bytes(vec![1])),
            "disabled" => Some(MetaValue::Bytes(b"false".to_vec())),
            _ => None,
        });
        assert_eq!(m, RouteMeta { profile: Some("vllm".into()), strict: Some(true), disabled: false });
        let m = RouteMeta::read(|k| match k {
            "strict" => Some(MetaValue::Bool(false)),
            "disabled" => Some(MetaValue::Bool(true)),
            "profile" => Some(MetaValue::Bool(true)),
            _ => None,
        });
        assert_eq!(m, RouteMeta { profile: None, strict: Some(false), disabled: true });
        assert_eq!(RouteMeta::read(|_| Some(MetaValue::Bytes(b"yes".to_vec()))).strict, None);
    }
}
