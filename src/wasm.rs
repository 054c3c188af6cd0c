//! The proxy-wasm shim: reads what Envoy says about a request, asks `crate::filter` what to do, and
//! does it. No decisions live here, only the host's rules:
//!
//! - Host calls go through `hostcalls` and their errors are handled: the SDK's context helpers panic
//!   on an unexpected status (e.g. touching request headers after they were forwarded), and a panic
//!   traps the VM, which Envoy turns into 503s or a silent bypass.
//! - `Content-Length`: a rewritten body changes length, and a stale header makes Envoy send the old
//!   length: the upstream cuts the body and reads the rest as the next request on the pooled
//!   connection. In `chunked` framing the header is removed before the headers go upstream (they
//!   cannot be touched afterwards); in `exact` framing the headers are held (Pause, which needs the
//!   plugin's `allow_on_headers_stop_iteration: true`) and get the new length with the new body.
//! - The end of a body can arrive in the trailers callback (Envoy's decompressor adds trailers), so
//!   the rewrite finishes there too.
//! - Past `max_body_bytes` buffering stops before Envoy's own buffer limit answers 413.

use crate::api::cache::SiteCache;
use crate::filter::config::{Config, Framing};
use crate::filter::encoding::Decoder;
use crate::filter::request::{self, Headers, Line, LogLimiter, Plan, RouteMeta, Start, Verdict};
use crate::filter::response::{self, Begin, OnInvalid, Reply, Stream, Tally};
use crate::filter::stats::{metric_name, Metrics, Stat};
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, LogLevel, MapType, MetricType};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::UNIX_EPOCH;

proxy_wasm::main! {{
    proxy_wasm::set_log_level(LogLevel::Trace);
    // any root_id Envoy gives gets the same filter
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root::default()) });
}}

/// Per-VM gauge outside any route (no labels).
const MEMORY: &str = "toolfit.vm_memory_bytes";

/// Metric ids by name: `define_metric` once per name per VM.
#[derive(Default)]
struct HostMetrics {
    ids: HashMap<String, u32>,
    /// Route/profile pairs whose counters are all defined.
    defined: std::collections::HashSet<(String, &'static str)>,
    /// Per-tool metrics defined so far.
    tool_metrics: usize,
}

impl HostMetrics {
    /// Defines every counter of a route and profile the first time it is seen, so dashboards and
    /// alerts see zeros rather than missing series.
    fn define_all(&mut self, route: &str, profile: &'static str) {
        if self.defined.len() > 4096 || self.defined.contains(&(route.to_string(), profile)) {
            return;
        }
        self.defined.insert((route.to_string(), profile));
        for c in request::all_counter_names() {
            let _ = self.id(MetricType::Counter, &metric_name(route, profile, c));
        }
        let _ = self.id(MetricType::Histogram, &metric_name(route, profile, Stat::RewriteUs.name()));
    }

    fn id(&mut self, t: MetricType, name: &str) -> Option<u32> {
        if let Some(id) = self.ids.get(name) {
            return Some(*id);
        }
        let id = hostcalls::define_metric(t, name).ok()?;
        self.ids.insert(name.to_string(), id);
        Some(id)
    }
}

/// Per-tool metrics per VM, at most: tool names come from requests (and a model may call a name no
/// request declared), and Envoy keeps every stat it was given, so past this the rest count as
/// `tool.other`.
const TOOL_METRICS: usize = 3000;

impl Metrics for HostMetrics {
    fn prepare(&mut self, route: &str, profile: &'static str) {
        self.define_all(route, profile);
    }
    fn add(&mut self, name: &str, n: u64) {
        let other;
        let mut name = name;
        if let Some((head, rest)) = name.split_once(".tool.") {
            if !self.ids.contains_key(name) {
                if self.tool_metrics >= TOOL_METRICS {
                    let counter = rest.rsplit('.').next().unwrap_or(rest);
                    other = format!("{head}.tool.other.{counter}");
                    name = &other;
                } else {
                    self.tool_metrics += 1;
                }
            }
        }
        if let Some(id) = self.id(MetricType::Counter, name) {
            let _ = hostcalls::increment_metric(id, i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
    fn record(&mut self, name: &str, value: u64) {
        if let Some(id) = self.id(MetricType::Histogram, name) {
            let _ = hostcalls::record_metric(id, value);
        }
    }
}

/// What every request of this plugin shares: the config in force when it started, counters, logs.
#[derive(Default)]
struct Shared {
    metrics: HostMetrics,
    logs: LogLimiter,
    /// This worker's rewrite cache, sized by the configuration in force.
    cache: Option<SiteCache>,
}

#[derive(Default)]
struct Root {
    config: Rc<Config>,
    shared: Rc<RefCell<Shared>>,
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _size: usize) -> bool {
        let bytes = hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX).ok().flatten().unwrap_or_default();
        match Config::parse(&bytes) {
            Ok(c) => {
                log::info!(
                    "toolfit {} configured: profile={} routes={} framing={:?} max_body_bytes={} strict={}",
                    env!("CARGO_PKG_VERSION"),
                    c.profile.name,
                    c.routes.len(),
                    c.framing,
                    c.max_body_bytes,
                    c.strict
                );
                // a new config applies to requests that start from now on; running ones keep theirs.
                // The cache starts afresh (entries are keyed by options too, but the size may change).
                self.shared.borrow_mut().cache = (c.cache_bytes > 0).then(|| SiteCache::new(c.cache_bytes));
                self.config = Rc::new(c);
                // the memory gauge: now, then every few seconds
                self.on_tick();
                let _ = hostcalls::set_tick_period(std::time::Duration::from_secs(5));
                true
            }
            Err(e) => {
                log::error!("toolfit: {e}");
                false
            }
        }
    }

    fn on_tick(&mut self) {
        let mut shared = self.shared.borrow_mut();
        // linear memory only grows: this gauge is the VM's high-water mark
        let bytes = core::arch::wasm32::memory_size(0) as u64 * 65536;
        if let Some(id) = shared.metrics.id(MetricType::Gauge, MEMORY) {
            let _ = hostcalls::record_metric(id, bytes);
        }
    }

    fn create_http_context(&self, _id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http { config: self.config.clone(), shared: self.shared.clone(), plan: None, buffered: 0, reply: None, resp: Resp::Off }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Http {
    config: Rc<Config>,
    shared: Rc<RefCell<Shared>>,
    /// Set while this request's body is being buffered.
    plan: Option<Plan>,
    buffered: usize,
    /// What the response path needs, once the request declared tools.
    reply: Option<Reply>,
    resp: Resp,
}

/// How the response body is being read.
enum Resp {
    /// Not at all: it streams on untouched.
    Off,
    /// A JSON body. `hold`: toolfit keeps it (in `copy`, out of Envoy's buffer) until the end, as it may
    /// change; else chunks go on at once and `copy` keeps them for the check at the end. `decoder`:
    /// the upstream compressed it; `copy` holds it decoded.
    Json { reply: Reply, hold: bool, copy: Vec<u8>, decoder: Option<Decoder> },
    /// A compressed body whose headers already said identity, held past `max_body_bytes`: the rest
    /// goes on decoded, unread.
    Decoding(Decoder),
    /// SSE or NDJSON: each chunk goes on as soon as the events in it may.
    Stream(Box<Stream>),
}

impl Context for Http {}

fn header(name: &str) -> Option<String> {
    hostcalls::get_map_value(MapType::HttpRequestHeaders, name).ok().flatten()
}

fn property(path: Vec<&str>) -> Option<String> {
    let b = hostcalls::get_property(path).ok().flatten()?;
    String::from_utf8(b).ok()
}

/// `metadata.filter_metadata.toolfit` of the matched route. Strings are read as they are; a boolean
/// comes back as one byte, and "true"/"false" strings are accepted too.
fn route_meta() -> RouteMeta {
    let leaf = |k: &str| hostcalls::get_property(vec!["xds", "route_metadata", "filter_metadata", "toolfit", k]).ok().flatten();
    let flag = |k: &str| {
        leaf(k).and_then(|b| match b.as_slice() {
            [1] | b"true" => Some(true),
            [0] | b"false" => Some(false),
            _ => None,
        })
    };
    RouteMeta { profile: leaf("profile").and_then(|b| String::from_utf8(b).ok()), strict: flag("strict"), disabled: flag("disabled").unwrap_or(false) }
}

fn now_us() -> u64 {
    hostcalls::get_current_time().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _n: usize, end_of_stream: bool) -> Action {
        let (method, path) = (header(":method").unwrap_or_default(), header(":path").unwrap_or_default());
        let (ct, ce, ae) = (header("content-type"), header("content-encoding"), header("accept-encoding"));
        #[cfg(feature = "test-trap")]
        if let (Some(h), Some(_)) = (&self.config.test_trap_header, header_opt(&self.config.test_trap_header)) {
            // test build only (see Config::test_trap_header): shows what Envoy's failure policy does
            log::warn!("toolfit: trapping on request header {h} (test_trap_header is set)");
            core::arch::wasm32::unreachable();
        }
        let h = Headers {
            method: &method,
            path: &path,
            content_type: ct.as_deref(),
            content_encoding: ce.as_deref(),
            accept_encoding: ae.as_deref(),
            end_of_stream,
        };
        let route = property(vec!["xds", "route_name"]);
        let meta = route_meta();
        let mut shared = self.shared.borrow_mut();
        let start = request::start(&self.config, &h, route.as_deref(), &meta, &mut shared.metrics, &mut |w| log::warn!("toolfit: {w}"));
        let Start::Buffer(plan) = start else { return Action::Continue };
        shared.metrics.define_all(&plan.route, plan.profile.name);
        if let Some(ae) = &plan.accept_encoding {
            // the upstream may compress only in codings toolfit reads (else its answer goes on unrepaired)
            if hostcalls::set_map_value(MapType::HttpRequestHeaders, "accept-encoding", Some(ae)).is_err() {
                plan.count(&mut shared.metrics, Stat::InternalErrors, 1);
            }
        }
        match self.config.framing {
            Framing::Chunked => {
                if hostcalls::remove_map_value(MapType::HttpRequestHeaders, "content-length").is_err() {
                    // the length cannot be dropped, so the body must not change: leave this request alone
                    plan.count(&mut shared.metrics, Stat::InternalErrors, 1);
                    return Action::Continue;
                }
                self.plan = Some(plan);
                Action::Continue
            }
            Framing::Exact => {
                self.plan = Some(plan);
                Action::Pause
            }
        }
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        let Some(plan) = &self.plan else { return Action::Continue };
        // while paused, body_size is everything buffered so far
        self.buffered = body_size;
        if !request::keep_buffering(&self.config, plan, body_size, &mut self.shared.borrow_mut().metrics) {
            self.plan = None;
            return Action::Continue;
        }
        if !end_of_stream {
            return Action::Pause;
        }
        self.finish()
    }

    fn on_http_request_trailers(&mut self, _n: usize) -> Action {
        if self.plan.is_some() {
            return self.finish();
        }
        Action::Continue
    }

    fn on_http_response_headers(&mut self, _n: usize, end_of_stream: bool) -> Action {
        let Some(reply) = self.reply.take() else { return Action::Continue };
        let status = response_header(":status").and_then(|s| s.parse::<u16>().ok()).unwrap_or(0);
        let how = response::begin(&reply, status, end_of_stream, response_header("content-type").as_deref(), response_header("content-encoding").as_deref());
        if how == Begin::Encoded && reply.repairs() {
            self.count(&reply, &Tally { unrepaired: 1, ..Tally::default() });
        }
        // a body that may change length loses its Content-Length (the client reads it chunked)
        if how.changes(&reply) && hostcalls::remove_map_value(MapType::HttpResponseHeaders, "content-length").is_err() {
            self.internal_error(&reply);
            return Action::Continue;
        }
        // one that goes on decoded loses its Content-Encoding; if that fails it goes on as it came
        if how.decodes(&reply) && hostcalls::remove_map_value(MapType::HttpResponseHeaders, "content-encoding").is_err() {
            self.internal_error(&reply);
            self.count(&reply, &Tally { unrepaired: 1, ..Tally::default() });
            return Action::Continue;
        }
        match how {
            Begin::Skip | Begin::Encoded => Action::Continue,
            Begin::Stream(f, coding) => {
                self.resp = Resp::Stream(Box::new(Stream::new(reply, f, coding)));
                Action::Continue
            }
            Begin::Json { hold, wait, coding } => {
                let decoder = Decoder::new(coding, response::decode_limit(&reply));
                self.resp = Resp::Json { reply, hold, copy: Vec::new(), decoder };
                // reject answers with another status: the headers wait for the body (framing: exact,
                // checked at configuration)
                if wait {
                    Action::Pause
                } else {
                    Action::Continue
                }
            }
        }
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        match &mut self.resp {
            Resp::Off => Action::Continue,
            Resp::Stream(stream) => {
                let chunk = hostcalls::get_buffer(BufferType::HttpResponseBody, 0, body_size).ok().flatten().unwrap_or_default();
                let out = stream.feed(&chunk, end_of_stream);
                if out != chunk && hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &out).is_err() {
                    stream.tally.unrepaired += 1;
                }
                if end_of_stream {
                    self.response_done();
                }
                Action::Continue
            }
            Resp::Json { .. } => {
                let Resp::Json { reply, hold, copy, decoder } = std::mem::replace(&mut self.resp, Resp::Off) else { return Action::Continue };
                self.json_body(reply, hold, copy, decoder, body_size, end_of_stream)
            }
            Resp::Decoding(decoder) => {
                let chunk = hostcalls::get_buffer(BufferType::HttpResponseBody, 0, body_size).ok().flatten().unwrap_or_default();
                // a chunk that does not decode goes on as it came (the body is corrupt either way)
                if let Ok(out) = decoder.feed(&chunk, end_of_stream) {
                    let _ = hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &out);
                } else {
                    self.resp = Resp::Off;
                }
                Action::Continue
            }
        }
    }

    fn on_http_response_trailers(&mut self, _n: usize) -> Action {
        // a body that ends in trailers: what toolfit still holds goes out now, as the end of the body
        let (held, reply) = match &mut self.resp {
            Resp::Stream(stream) => (stream.feed(&[], true), stream.reply().clone()),
            Resp::Json { hold: true, .. } => {
                let Resp::Json { reply, copy, decoder, .. } = std::mem::replace(&mut self.resp, Resp::Off) else { return self.trailers_done() };
                match decoder.map_or(Ok(Vec::new()), |mut d| d.feed(&[], true)) {
                    Ok(rest) => {
                        let body = [copy, rest].concat();
                        self.answer(&reply, &body, 0);
                    }
                    Err(_) => {
                        self.count(&reply, &Tally { unrepaired: 1, ..Tally::default() });
                        if hostcalls::set_buffer(BufferType::HttpResponseBody, 0, 0, &copy).is_err() {
                            self.internal_error(&reply);
                        }
                    }
                }
                return Action::Continue;
            }
            Resp::Decoding(decoder) => {
                let rest = decoder.feed(&[], true).unwrap_or_default();
                if !rest.is_empty() {
                    let _ = hostcalls::set_buffer(BufferType::HttpResponseBody, 0, 0, &rest);
                }
                return self.trailers_done();
            }
            _ => return self.trailers_done(),
        };
        if !held.is_empty() && hostcalls::set_buffer(BufferType::HttpResponseBody, 0, 0, &held).is_err() {
            self.internal_error(&reply);
        }
        self.trailers_done()
    }

    fn on_log(&mut self) {
        // a response cut short still counts the calls it carried
        self.response_done();
    }
}

fn response_header(name: &str) -> Option<String> {
    hostcalls::get_map_value(MapType::HttpResponseHeaders, name).ok().flatten()
}

#[cfg(feature = "test-trap")]
fn header_opt(name: &Option<String>) -> Option<String> {
    name.as_deref().and_then(header)
}

impl Http {
    fn trailers_done(&mut self) -> Action {
        self.response_done();
        Action::Continue
    }

    /// Counts what the response's repair did (once), when its body has ended or stopped.
    fn response_done(&mut self) {
        match std::mem::replace(&mut self.resp, Resp::Off) {
            Resp::Off | Resp::Decoding(_) => {}
            Resp::Stream(mut stream) => {
                if stream.holding() {
                    stream.tally.unrepaired += 1;
                }
                self.count(stream.reply(), &stream.tally);
            }
            Resp::Json { reply, copy, .. } => {
                let mut tally = Tally::default();
                let _ = reply.repair_json(&copy, &mut tally);
                self.count(&reply, &tally);
            }
        }
    }

    /// A chunk of a JSON response; `self.resp` is put back while more is to come. A compressed body
    /// is read decoded: `copy` holds decoded bytes.
    fn json_body(&mut self, reply: Reply, hold: bool, mut copy: Vec<u8>, mut decoder: Option<Decoder>, body_size: usize, end: bool) -> Action {
        let Ok(chunk) = hostcalls::get_buffer(BufferType::HttpResponseBody, 0, body_size).map(Option::unwrap_or_default) else {
            // unreadable: this chunk goes on as it is, and what was taken before it in front of it
            if hold && !copy.is_empty() && hostcalls::set_buffer(BufferType::HttpResponseBody, 0, 0, &copy).is_err() {
                self.internal_error(&reply);
            }
            self.count(&reply, &Tally { unrepaired: 1, ..Tally::default() });
            return Action::Continue;
        };
        let text = match &mut decoder {
            Some(d) => d.feed(&chunk, end),
            None => Ok(chunk),
        };
        if !hold {
            // only read: every chunk goes on at once (compressed as it came), a decoded copy is kept
            // for the check (not past max_bytes, nor once it does not decode)
            if let Ok(text) = text.as_deref() {
                if copy.len() + text.len() <= reply.max_bytes {
                    copy.extend_from_slice(text);
                    self.resp = Resp::Json { reply, hold, copy, decoder };
                    if end {
                        self.response_done();
                    }
                }
            }
            return Action::Continue;
        }
        // held: toolfit keeps the bytes itself (each chunk taken out of Envoy's buffer), so a large
        // response never meets Envoy's buffer limit (a 500 or a reset); past max_bytes what was taken
        // goes back out, unrepaired (and the rest decoded, since the headers already said identity)
        let text = match text {
            Ok(t) => t,
            Err(_) => {
                // not decodable: what was taken goes back, then the chunk as it came (corrupt either way)
                let raw = hostcalls::get_buffer(BufferType::HttpResponseBody, 0, body_size).ok().flatten().unwrap_or_default();
                copy.extend_from_slice(&raw);
                if hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &copy).is_err() {
                    self.internal_error(&reply);
                }
                self.count(&reply, &Tally { unrepaired: 1, ..Tally::default() });
                return Action::Continue;
            }
        };
        copy.extend_from_slice(&text);
        if copy.len() > reply.max_bytes {
            if hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &copy).is_err() {
                self.internal_error(&reply);
            }
            self.count(&reply, &Tally { unrepaired: 1, ..Tally::default() });
            if let (Some(d), false) = (decoder, end) {
                self.resp = Resp::Decoding(d);
            }
            return Action::Continue;
        }
        if end {
            self.answer(&reply, &copy, body_size);
            return Action::Continue;
        }
        if hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &[]).is_err() {
            // the chunk stays where it is, so what was taken before it cannot come back in order
            self.internal_error(&reply);
            return Action::Continue;
        }
        // with reject the headers wait: the (empty) body waits with them
        let wait = reply.on_invalid == OnInvalid::Reject;
        self.resp = Resp::Json { reply, hold, copy, decoder };
        if wait {
            Action::Pause
        } else {
            Action::Continue
        }
    }

    /// A held JSON response, complete (`body`: all of it, which toolfit took out of Envoy's buffer;
    /// the buffer holds the last `size` bytes): repaired, or replaced by an error when a call is
    /// invalid and the route rejects those, or put back as it came.
    fn answer(&mut self, reply: &Reply, body: &[u8], size: usize) {
        let mut tally = Tally::default();
        let repaired = reply.repair_json(body, &mut tally);
        let mut out: &[u8] = repaired.as_deref().unwrap_or(body);
        let err = match (reply.on_invalid, tally.first_invalid()) {
            (OnInvalid::Reject, Some(call)) => Some(reply.rejection(call)),
            _ => None,
        };
        if let Some(err) = &err {
            let headers = [(":status", "502"), ("x-toolfit", "invalid-tool-call"), ("content-type", "application/json")];
            if headers.iter().all(|(k, v)| hostcalls::set_map_value(MapType::HttpResponseHeaders, k, Some(v)).is_ok()) {
                tally.rejected = 1;
                out = err;
            } else {
                tally.unrepaired += 1;
            }
        }
        if reply.on_invalid == OnInvalid::Reject {
            // the held headers go with the exact length of what is sent
            let _ = hostcalls::set_map_value(MapType::HttpResponseHeaders, "content-length", Some(&out.len().to_string()));
        }
        if hostcalls::set_buffer(BufferType::HttpResponseBody, 0, size, out).is_err() {
            tally.rejected = 0;
            self.internal_error(reply);
        }
        self.count(reply, &tally);
    }

    fn internal_error(&mut self, reply: &Reply) {
        let mut shared = self.shared.borrow_mut();
        shared.metrics.add(&metric_name(&reply.route, reply.profile, Stat::InternalErrors.name()), 1);
    }

    fn count(&mut self, reply: &Reply, tally: &Tally) {
        let mut shared = self.shared.borrow_mut();
        let Shared { metrics, logs, .. } = &mut *shared;
        metrics.define_all(&reply.route, reply.profile);
        if let Some(Line { text, .. }) = tally.count(reply, metrics) {
            if let Some(text) = logs.admit(&reply.route, now_us() / 1_000_000, self.config.log_lines_per_second, text) {
                log::warn!("toolfit: {text}");
            }
        }
    }

    fn finish(&mut self) -> Action {
        let Some(plan) = self.plan.take() else { return Action::Continue };
        let size = self.buffered;
        let mut shared = self.shared.borrow_mut();
        let Shared { metrics, logs, cache } = &mut *shared;
        let body = match hostcalls::get_buffer(BufferType::HttpRequestBody, 0, size) {
            Ok(Some(b)) => b,
            Ok(None) => Vec::new(),
            Err(_) => {
                plan.count(metrics, Stat::InternalErrors, 1);
                return Action::Continue;
            }
        };
        let (verdict, line, reply) = request::finish(&self.config, &plan, &body, metrics, &mut now_us, cache.as_mut());
        self.reply = reply;
        if let Some(line) = line {
            if let Some(text) = logs.admit(&plan.route, now_us() / 1_000_000, self.config.log_lines_per_second, line.text) {
                if line.warn {
                    log::warn!("toolfit: {text}");
                } else {
                    log::info!("toolfit: {text}");
                }
            }
        }
        match verdict {
            Verdict::Forward => Action::Continue,
            Verdict::Replace(new) => {
                if self.config.framing == Framing::Exact
                    && hostcalls::set_map_value(MapType::HttpRequestHeaders, "content-length", Some(&new.len().to_string())).is_err()
                {
                    plan.count(metrics, Stat::InternalErrors, 1);
                    return Action::Continue; // length unchanged, body unchanged: consistent
                }
                if hostcalls::set_buffer(BufferType::HttpRequestBody, 0, size, &new).is_err() {
                    plan.count(metrics, Stat::InternalErrors, 1);
                    if self.config.framing == Framing::Exact {
                        // put the original length back: the original body is still there
                        let _ = hostcalls::set_map_value(MapType::HttpRequestHeaders, "content-length", Some(&size.to_string()));
                    }
                }
                Action::Continue
            }
            Verdict::Reject(status, err) => {
                let headers = vec![("content-type", "application/json"), ("x-toolfit", "rejected")];
                if hostcalls::send_http_response(u32::from(status), headers, Some(&err)).is_err() {
                    plan.count(metrics, Stat::InternalErrors, 1);
                    return Action::Continue;
                }
                Action::Pause
            }
        }
    }
}
