//! The proxy-wasm shim: reads what Envoy says about a request and its response, hands it to
//! `crate::filter` (plain values in, verdicts out; body and header changes through the small
//! `RequestHost` and `ResponseHost` traits implemented below over `hostcalls`), and does what comes
//! back. No decisions live here, only the host's rules:
//!
//! - Host calls go through `hostcalls` and their errors are handled: the SDK's context helpers panic
//!   on an unexpected status (e.g. touching request headers after they were forwarded), and a panic
//!   traps the VM, which Envoy turns into 503s or a silent bypass.
//! - `Content-Length` and the framing (see `filter::request::hold_headers`): request headers go
//!   upstream before the body is read unless the callback pauses, which needs the plugin's
//!   `allow_on_headers_stop_iteration: true`.
//! - The end of a body can arrive in the trailers callback (Envoy's decompressor adds trailers), so
//!   the rewrite (and the response's repair) finishes there too.
//! - Past `max_body_bytes` buffering stops before Envoy's own buffer limit answers 413.

use crate::api::cache::SiteCache;
use crate::filter::config::{Config, Framing};
use crate::filter::exchange::{BodyAllowed, Exchange};
use crate::filter::headers;
use crate::filter::host::{self, Env, Headed, MetaValue, Next, RequestHost, RequestRead, ResponseHost, ResponseRead, RouteMeta, REJECT_HEADERS};
use crate::filter::log::LogLimiter;
use crate::filter::memory::Memory;
use crate::filter::stats::{route_series, Metrics, Series, SeriesBudget, SeriesKind};
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, LogLevel, MapType, MetricType};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::UNIX_EPOCH;

proxy_wasm::main! {{
    proxy_wasm::set_log_level(LogLevel::Trace);
    // any root_id Envoy gives gets the same filter
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root::default()) });
}}

/// The per-VM gauges, outside any route: `toolfit.vm.<n>.<name>` (the bootstrap's `stats_tags` make
/// `<n>` the label `vm`), so each worker's VM shows, not whichever wrote last.
const VM_GAUGES: [&str; 2] = ["vm_memory_bytes", "held_bytes"];

/// The per-VM counters of toolfit's own time, named as the gauges: nanoseconds spent inside the
/// filter's request callbacks and inside its response callbacks (Envoy's clock read on entry and on
/// exit, host calls included), and the streams they were spent on. Their ratio is what a request
/// costs the worker inside the VM, without the noise of a latency measured from outside.
const VM_COUNTERS: [&str; 3] = ["vm_request_ns", "vm_response_ns", "vm_streams"];

/// The label of this VM in the per-VM series: its number (`floor<n>` in the benchmarks' floor build,
/// so a floor VM beside toolfit's in one Envoy has series of its own).
fn vm_label() -> String {
    if cfg!(feature = "bench-floor") {
        format!("floor{}", vm_index())
    } else {
        vm_index().to_string()
    }
}

/// Now by Envoy's clock, in nanoseconds (0 if it cannot be read: the time spent then counts as 0).
fn now_ns() -> u64 {
    hostcalls::get_current_time().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// This VM's number among the VMs of this `vm_id` (one per worker, and the main thread's), claimed
/// once from a counter in the VMs' shared data.
fn vm_index() -> u32 {
    static INDEX: OnceLock<u32> = OnceLock::new();
    *INDEX.get_or_init(|| {
        const KEY: &str = "toolfit.vm_count";
        // a few tries: another VM may take the counter between our read and our write
        for _ in 0..64 {
            let Ok((value, cas)) = hostcalls::get_shared_data(KEY) else { break };
            let n = value.and_then(|v| std::str::from_utf8(&v).ok().and_then(|t| t.parse::<u32>().ok())).unwrap_or(0);
            if hostcalls::set_shared_data(KEY, Some(n.saturating_add(1).to_string().as_bytes()), cas).is_ok() {
                return n;
            }
        }
        u32::MAX
    })
}

/// Metric ids by name: `define_metric` once per name per VM.
#[derive(Default)]
struct HostMetrics {
    ids: HashMap<String, u32>,
    /// How many series this VM gives Envoy.
    budget: SeriesBudget,
}

impl HostMetrics {
    /// Defines every counter of a route and profile the first time it is seen, so dashboards and
    /// alerts see zeros rather than missing series.
    fn define_all(&mut self, route: &str, profile: &'static str) {
        if !self.budget.define(route, profile) {
            return;
        }
        for (kind, s) in route_series(route, profile) {
            let _ = self.id(if kind == SeriesKind::Histogram { MetricType::Histogram } else { MetricType::Counter }, &s.dotted());
        }
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

impl Metrics for HostMetrics {
    fn prepare(&mut self, route: &str, profile: &'static str) {
        self.define_all(route, profile);
    }
    fn add(&mut self, s: &Series, n: u64) {
        let ids = &self.ids;
        let name = self.budget.admit(*s, Series::dotted, |k| ids.contains_key(k));
        if let Some(id) = self.id(MetricType::Counter, &name) {
            let _ = hostcalls::increment_metric(id, i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
    fn record(&mut self, s: &Series, value: u64) {
        if let Some(id) = self.id(MetricType::Histogram, &s.dotted()) {
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
                self.shared.borrow_mut().cache = c.new_cache();
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
        // linear memory only grows: the first gauge is the VM's high-water mark; the second what its
        // requests in flight hold now (bounded by max_held_bytes)
        let linear = core::arch::wasm32::memory_size(0) as u64 * 65536;
        let held = u64::try_from(vm_memory().held()).unwrap_or(u64::MAX);
        let vm = vm_label();
        for (name, value) in VM_GAUGES.into_iter().zip([linear, held]) {
            if let Some(id) = shared.metrics.id(MetricType::Gauge, &format!("toolfit.vm.{vm}.{name}")) {
                let _ = hostcalls::record_metric(id, value);
            }
        }
    }

    fn create_http_context(&self, _id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http {
            config: self.config.clone(),
            shared: self.shared.clone(),
            exchange: Exchange::default(),
            released: 0,
            seen: 0,
            spent: Spent::default(),
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Http {
    config: Rc<Config>,
    shared: Rc<RefCell<Shared>>,
    /// The request and its response as the core keeps them.
    exchange: Exchange,
    /// The request body bytes let go: Envoy holds the body from this offset on.
    released: usize,
    /// The request body bytes handed to the core so far.
    seen: usize,
    /// Nanoseconds spent in this stream's callbacks.
    spent: Spent,
}

/// Nanoseconds spent in a stream's request callbacks and in its response callbacks.
#[derive(Default)]
struct Spent {
    request: u64,
    response: u64,
}

#[derive(Clone, Copy)]
enum Path {
    Request,
    Response,
}

impl Context for Http {}

#[link(wasm_import_module = "env")]
extern "C" {
    /// The ABI's own call: the SDK's `get_map_bytes` panics (traps the VM) on a status it does not
    /// expect and on a header name that is not UTF-8.
    fn proxy_get_header_map_pairs(map_type: u32, return_map_data: *mut *mut u8, return_map_size: *mut usize) -> u32;
}

/// A header map (request or response headers), read whole in one host call: the serialised map, as
/// bytes the VM owns (empty if it cannot be read). `filter::headers::pairs` reads it.
fn header_map(map: MapType) -> Vec<u8> {
    let mut data: *mut u8 = std::ptr::null_mut();
    let mut size: usize = 0;
    // SAFETY: the host writes a pointer it allocated through this module's allocator
    // (`proxy_on_memory_allocate`, the SDK's, which hands out a `Vec<u8>`'s buffer of exactly that
    // size) and its size; ownership passes to the module, so the bytes are taken back as that `Vec`.
    unsafe {
        if proxy_get_header_map_pairs(map as u32, &mut data, &mut size) != 0 || data.is_null() {
            return Vec::new();
        }
        Vec::from_raw_parts(data, size, size)
    }
}

/// The headers `read` takes (by name, lower case) from one read of `map`.
fn headers_of<R>(map: MapType, read: impl FnOnce(&mut dyn FnMut(&str) -> Option<String>) -> R) -> R {
    let bytes = header_map(map);
    let pairs = headers::pairs(&bytes).unwrap_or_default();
    read(&mut |name| headers::first(&pairs, name))
}

fn property(path: Vec<&str>) -> Option<String> {
    let b = hostcalls::get_property(path).ok().flatten()?;
    String::from_utf8(b).ok()
}

/// `metadata.filter_metadata.toolfit` of the matched route, each key a property (a boolean comes
/// back as one byte).
fn route_meta() -> RouteMeta {
    RouteMeta::read(|k| hostcalls::get_property(vec!["xds", "route_metadata", "filter_metadata", "toolfit", k]).ok().flatten().map(MetaValue::Bytes))
}

fn now_us() -> u64 {
    now_ns() / 1000
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _n: usize, end_of_stream: bool) -> Action {
        self.timed(Path::Request, |h| h.http_request_headers(end_of_stream))
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        self.timed(Path::Request, |h| h.http_request_body(body_size, end_of_stream))
    }

    fn on_http_request_trailers(&mut self, _n: usize) -> Action {
        self.timed(Path::Request, Http::http_request_trailers)
    }

    fn on_http_response_headers(&mut self, _n: usize, end_of_stream: bool) -> Action {
        self.timed(Path::Response, |h| h.http_response_headers(end_of_stream))
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        self.timed(Path::Response, |h| h.http_response_body(body_size, end_of_stream))
    }

    fn on_http_response_trailers(&mut self, _n: usize) -> Action {
        self.timed(Path::Response, Http::http_response_trailers)
    }

    fn on_log(&mut self) {
        let Http { config, shared, exchange, spent, .. } = self;
        with_env(config, shared, |env| exchange.done(env));
        let vm = vm_label();
        let mut shared = shared.borrow_mut();
        for (name, n) in VM_COUNTERS.into_iter().zip([spent.request, spent.response, 1]) {
            if let Some(id) = shared.metrics.id(MetricType::Counter, &format!("toolfit.vm.{vm}.{name}")) {
                let _ = hostcalls::increment_metric(id, i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
    }
}

/// The request body and headers, as `crate::filter::request` changes them; Envoy holds the body from
/// offset `released` on.
struct WasmRequest {
    released: usize,
}

impl RequestHost for WasmRequest {
    fn set_header(&mut self, name: &str, value: &str) -> bool {
        hostcalls::set_map_value(MapType::HttpRequestHeaders, name, Some(value)).is_ok()
    }
    fn remove_header(&mut self, name: &str) -> bool {
        hostcalls::remove_map_value(MapType::HttpRequestHeaders, name).is_ok()
    }
    fn set_body(&mut self, at: usize, size: usize, bytes: &[u8]) -> bool {
        // Envoy's buffer can only be replaced whole (in one call, so a failure leaves it as it was):
        // the held bytes before `at` go back in front of the new ones
        let keep = at.saturating_sub(self.released);
        let held = size.saturating_sub(self.released);
        if keep == 0 {
            return hostcalls::set_buffer(BufferType::HttpRequestBody, 0, held, bytes).is_ok();
        }
        let Ok(Some(mut new)) = hostcalls::get_buffer(BufferType::HttpRequestBody, 0, keep) else { return false };
        if new.len() != keep {
            return false;
        }
        new.reserve_exact(bytes.len());
        new.extend_from_slice(bytes);
        hostcalls::set_buffer(BufferType::HttpRequestBody, 0, held, &new).is_ok()
    }
    fn reject(&mut self, status: u16, body: &[u8]) -> bool {
        let headers = REJECT_HEADERS.to_vec();
        hostcalls::send_http_response(u32::from(status), headers, Some(body)).is_ok()
    }
}

/// The response body and headers, as `crate::filter::response` reads and changes them.
struct WasmResponse;

impl ResponseHost for WasmResponse {
    fn chunk(&mut self, size: usize) -> Option<Vec<u8>> {
        hostcalls::get_buffer(BufferType::HttpResponseBody, 0, size).ok().map(Option::unwrap_or_default)
    }
    fn set_chunk(&mut self, size: usize, bytes: &[u8]) -> bool {
        hostcalls::set_buffer(BufferType::HttpResponseBody, 0, size, bytes).is_ok()
    }
    fn set_header(&mut self, name: &str, value: &str) -> bool {
        hostcalls::set_map_value(MapType::HttpResponseHeaders, name, Some(value)).is_ok()
    }
    fn remove_header(&mut self, name: &str) -> bool {
        hostcalls::remove_map_value(MapType::HttpResponseHeaders, name).is_ok()
    }
}

fn action(next: Next) -> Action {
    match next {
        Next::Continue => Action::Continue,
        Next::Pause => Action::Pause,
    }
}

/// The floor build's filter (Cargo.toml's `bench-floor`), nothing decided or read: in `exact` framing
/// Envoy holding a request for a Wasm filter until its body's end and handing that body to the VM
/// once; in `chunked`, the headers sent on without their length and each piece handed to the VM as it
/// comes and let go.
fn floor(framing: Framing, end_of_stream: bool, body_size: Option<usize>) -> Action {
    if framing == Framing::Chunked {
        match body_size {
            None => {
                let _ = hostcalls::remove_map_value(MapType::HttpRequestHeaders, "content-length");
            }
            Some(size) => {
                let _ = hostcalls::get_buffer(BufferType::HttpRequestBody, 0, size);
            }
        }
        return Action::Continue;
    }
    if !end_of_stream {
        return Action::Pause;
    }
    if let Some(size) = body_size {
        let _ = hostcalls::get_buffer(BufferType::HttpRequestBody, 0, size);
    }
    Action::Continue
}

/// A request header's value, read alone (the test build's trap header).
#[cfg(feature = "test-trap")]
fn header_opt(name: &Option<String>) -> Option<String> {
    hostcalls::get_map_value_bytes(MapType::HttpRequestHeaders, name.as_deref()?).ok().flatten().map(headers::text)
}

/// Runs `f` with the core's view of this plugin: its configuration, counters, log rate limit and
/// rewrite cache, the VM's clock and Envoy's log.
fn with_env<R>(config: &Config, shared: &RefCell<Shared>, f: impl FnOnce(&mut Env) -> R) -> R {
    let mut shared = shared.borrow_mut();
    let Shared { metrics, logs, cache } = &mut *shared;
    host::with_env(config, metrics, logs, cache.as_mut(), vm_memory(), now_us, f)
}

/// What this VM's requests in flight hold, whichever plugin they came through (plugins with the same
/// `vm_id` share one VM, so one linear memory).
fn vm_memory() -> &'static Arc<Memory> {
    static MEMORY: OnceLock<Arc<Memory>> = OnceLock::new();
    MEMORY.get_or_init(Memory::new)
}

/// The callbacks' work, each timed by its `HttpContext` callback (see [`VM_COUNTERS`]).
impl Http {
    fn timed(&mut self, path: Path, f: impl FnOnce(&mut Self) -> Action) -> Action {
        let t0 = now_ns();
        let action = f(self);
        let took = now_ns().saturating_sub(t0);
        let spent = match path {
            Path::Request => &mut self.spent.request,
            Path::Response => &mut self.spent.response,
        };
        *spent = spent.saturating_add(took);
        action
    }

    fn http_request_headers(&mut self, end_of_stream: bool) -> Action {
        if cfg!(feature = "bench-floor") {
            return floor(self.config.framing, end_of_stream, None);
        }
        let read = headers_of(MapType::HttpRequestHeaders, |get| RequestRead::read(get));
        #[cfg(feature = "test-trap")]
        if let (Some(h), Some(_)) = (&self.config.test_trap_header, header_opt(&self.config.test_trap_header)) {
            // test build only (see Config::test_trap_header): shows what Envoy's failure policy does
            log::warn!("toolfit: trapping on request header {h} (test_trap_header is set)");
            core::arch::wasm32::unreachable();
        }
        let h = read.headers(end_of_stream);
        let route = property(vec!["xds", "route_name"]);
        let meta = route_meta();
        let Http { config, shared, exchange, .. } = self;
        match with_env(config, shared, |env| exchange.request_headers(env, &h, route.as_deref(), &meta, &mut WasmRequest { released: 0 })) {
            Headed::Ignore | Headed::Continue => Action::Continue,
            Headed::Pause => Action::Pause,
        }
    }

    fn http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if cfg!(feature = "bench-floor") {
            return floor(self.config.framing, end_of_stream, Some(body_size));
        }
        if !self.exchange.reading() {
            return Action::Continue;
        }
        // Envoy holds the body from `released` on (all it buffered while paused, else this piece);
        // the bytes past `seen` are new, and read only if the core asks for them
        let total = self.released.saturating_add(body_size);
        let fresh = total.saturating_sub(self.seen);
        let offset = self.seen.saturating_sub(self.released);
        let read = || hostcalls::get_buffer(BufferType::HttpRequestBody, offset, fresh).ok().map(Option::unwrap_or_default);
        let Http { config, shared, exchange, .. } = self;
        let released = self.released;
        let go = with_env(config, shared, |env| exchange.request_piece(env, total, fresh, read, &mut WasmRequest { released }));
        self.seen = total;
        if self.exchange.answered() {
            // toolfit answered the request itself (a local reply): nothing goes on
            return Action::Pause;
        }
        if !self.exchange.reading() {
            return Action::Continue;
        }
        if end_of_stream {
            return self.finish();
        }
        // a piece goes on whole or waits with the others: Envoy's buffer cannot be let go in part
        if go >= total {
            self.released = total;
            return Action::Continue;
        }
        Action::Pause
    }

    fn http_request_trailers(&mut self) -> Action {
        if self.exchange.reading() {
            return self.finish();
        }
        Action::Continue
    }

    fn http_response_headers(&mut self, end_of_stream: bool) -> Action {
        if !self.exchange.awaits_response() {
            return Action::Continue;
        }
        let read = headers_of(MapType::HttpResponseHeaders, |get| ResponseRead::read(get));
        let Http { config, shared, exchange, .. } = self;
        let next = with_env(config, shared, |env| exchange.response_headers(env, &read.headers(end_of_stream), &mut WasmResponse));
        action(next.unwrap_or(Next::Continue))
    }

    fn http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if !self.exchange.reading_response() {
            return Action::Continue;
        }
        let Http { config, shared, exchange, .. } = self;
        action(with_env(config, shared, |env| exchange.response_body(env, &mut WasmResponse, body_size, end_of_stream)))
    }

    fn http_response_trailers(&mut self) -> Action {
        let Http { config, shared, exchange, .. } = self;
        // the trailers callback can still replace the last body bytes
        action(with_env(config, shared, |env| exchange.response_trailers(env, &mut WasmResponse, BodyAllowed::Yes)))
    }

    fn finish(&mut self) -> Action {
        if !self.exchange.reading() {
            return Action::Continue;
        }
        let (size, released) = (self.seen, self.released);
        // read into the VM only if the core takes it (the memory of the requests in flight has room),
        // from where it holds the body
        let read = |at: usize| {
            let at = at.max(released);
            hostcalls::get_buffer(BufferType::HttpRequestBody, at - released, size.saturating_sub(at)).ok().map(Option::unwrap_or_default)
        };
        let Http { config, shared, exchange, .. } = self;
        action(with_env(config, shared, |env| exchange.request_end(env, read, size, &mut WasmRequest { released })))
    }
}
