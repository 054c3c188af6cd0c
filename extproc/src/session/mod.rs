//! One ext_proc stream (one HTTP request and its response), as plain values: a `ProcessingRequest` in,
//! the `ProcessingResponse` Envoy waits for out. Like `src/wasm.rs` it only moves bytes and headers
//! between Envoy and `toolfit::filter`, which decides; the differences are the host's:
//!
//! - Envoy holds what it sent until the answer: headers and body changes go back as mutations in
//!   the answer to the message they concern (`Mutations`, `Chunk`), not as calls on a buffer.
//! - A request toolfit will not read is answered with a `mode_override` that stops Envoy sending its
//!   body and its response (Envoy's `allow_mode_override: true`): an untouched request costs one round
//!   trip.
//! - The request body comes whole (`BUFFERED`) or in pieces (`FULL_DUPLEX_STREAMED`: the pieces are
//!   kept here and answered once, with the whole new body, when the last one arrives). The response
//!   body comes in pieces (`STREAMED`), each answered with its own bytes or their replacement, which
//!   is how the Wasm filter's response path already works.
mod answers;
mod attributes;
mod mutations;
#[cfg(test)]
mod tests;

use envoy_types::pb::envoy::extensions::filters::http::ext_proc::v3::processing_mode;
use envoy_types::pb::envoy::service::ext_proc::v3::{
    processing_request, CommonResponse, HeaderMutation, HttpBody, HttpHeaders, ProcessingRequest, ProcessingResponse,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use toolfit::api::cache::SiteCache;
use toolfit::filter::config::Config;
use toolfit::filter::exchange::{BodyAllowed, Exchange};
use toolfit::filter::host::{self, Env, Headed, Next, RequestRead, ResponseRead, RouteMeta};
use toolfit::filter::log::LogLimiter;
use toolfit::filter::memory::Memory;

use crate::metrics::Registry;
use answers::*;
use attributes::*;
use mutations::*;

/// What every stream of the process shares.
pub struct Shared {
    pub config: Arc<Config>,
    pub metrics: Registry,
    pub logs: Mutex<LogLimiter>,
    /// The rewrite cache (one per process), sized by the configuration.
    pub cache: Mutex<Option<SiteCache>>,
    /// What every request in flight holds (`max_held_bytes` bounds it for the whole process).
    pub memory: Arc<Memory>,
    /// toolfit's own time, as the Wasm filter's per-VM counters: nanoseconds in the core's handling of
    /// request messages and of response messages (gRPC aside), and the streams that ended.
    pub spent: Spent,
}

/// The process's `toolfit_vm_request_ns`, `toolfit_vm_response_ns` and `toolfit_vm_streams`.
#[derive(Default)]
pub struct Spent {
    pub request_ns: AtomicU64,
    pub response_ns: AtomicU64,
    pub streams: AtomicU64,
}

impl Shared {
    pub fn new(config: Config) -> Shared {
        let cache = config.new_cache();
        Shared {
            config: Arc::new(config),
            metrics: Registry::default(),
            logs: Mutex::new(LogLimiter::default()),
            cache: Mutex::new(cache),
            memory: Memory::new(),
            spent: Spent::default(),
        }
    }
}

pub struct Session {
    shared: Arc<Shared>,
    /// The request and its response as the core keeps them.
    exchange: Exchange,
    /// The bytes of a streamed request body not let go yet, kept until they may go (the core says when).
    body: Vec<u8>,
    /// The request body bytes let go: `body` starts at this offset.
    released: usize,
    /// How the request body comes, and what waits on it.
    request_body: RequestBody,
    /// How the response body comes, and what waits on it.
    response_body: ResponseBody,
}

/// How the request body reaches the processor (the stream's protocol configuration).
enum RequestBody {
    /// `BUFFERED`: whole, in one message; its headers were answered already.
    Buffered,
    /// `FULL_DUPLEX_STREAMED`: in pieces, kept here until the last and answered as streamed
    /// mutations. `held`: the headers' answer, when it waits for the new body's length (exact framing).
    Streamed { held: Option<Mutations> },
}

/// How the response body reaches the processor.
enum ResponseBody {
    /// `STREAMED`: in pieces, each answered with its bytes or their repair.
    Streamed,
    /// Switched to `BUFFERED_PARTIAL` at its headers (`on_invalid_tool_call: reject`: the answer may
    /// be a 502): Envoy holds the headers and buffers the body.
    Buffered,
    /// `FULL_DUPLEX_STREAMED` (agentgateway's and Istio's inference pools' mode): pieces each
    /// answered with streamed bytes. `held`: the headers' answer, while it waits for the verdict at
    /// the body's end (Envoy keeps sending the pieces meanwhile).
    Duplex { held: Option<CommonResponse> },
}

impl Session {
    pub fn new(shared: Arc<Shared>) -> Session {
        Session {
            shared,
            exchange: Exchange::default(),
            body: Vec::new(),
            released: 0,
            request_body: RequestBody::Buffered,
            response_body: ResponseBody::Streamed,
        }
    }

    /// The request body comes in pieces.
    fn streamed(&self) -> bool {
        matches!(self.request_body, RequestBody::Streamed { .. })
    }

    /// The response body comes in full-duplex pieces.
    fn response_streamed(&self) -> bool {
        matches!(self.response_body, ResponseBody::Duplex { .. })
    }

    /// The answers to one message, in order: none where Envoy expects none (observability mode, a
    /// piece of a streamed body kept for later, headers waiting for it), two when held headers go
    /// out with the body.
    pub fn on(&mut self, msg: ProcessingRequest) -> Vec<ProcessingResponse> {
        let observe = msg.observability_mode;
        if let Some(p) = &msg.protocol_config {
            // (sent with the first message; a repeat changes nothing that is held)
            let duplex = processing_mode::BodySendMode::FullDuplexStreamed as i32;
            if (p.request_body_mode == duplex) != self.streamed() {
                self.request_body = if p.request_body_mode == duplex { RequestBody::Streamed { held: None } } else { RequestBody::Buffered };
            }
            if (p.response_body_mode == duplex) != self.response_streamed() {
                self.response_body = if p.response_body_mode == duplex { ResponseBody::Duplex { held: None } } else { ResponseBody::Streamed };
            }
        }
        // the route's name and settings come with the request headers, and only they read them
        let (route, meta) = match msg.request {
            Some(processing_request::Request::RequestHeaders(_)) => (route_name(&msg), route_meta(&msg)),
            _ => (None, RouteMeta::default()),
        };
        let Some(request) = msg.request else { return Vec::new() };
        let t0 = Instant::now();
        let response = matches!(
            request,
            processing_request::Request::ResponseHeaders(_) | processing_request::Request::ResponseBody(_) | processing_request::Request::ResponseTrailers(_)
        );
        let answers = match request {
            processing_request::Request::RequestHeaders(h) => self.request_headers(&h, route.as_deref(), &meta).into_iter().collect(),
            processing_request::Request::RequestBody(b) => self.request_body(b),
            processing_request::Request::RequestTrailers(_) => self.request_trailers(),
            processing_request::Request::ResponseHeaders(h) => self.response_headers(&h).into_iter().collect(),
            processing_request::Request::ResponseBody(b) => self.response_body(b),
            processing_request::Request::ResponseTrailers(_) => self.response_trailers(),
        };
        let took = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let spent = &self.shared.spent;
        (if response { &spent.response_ns } else { &spent.request_ns }).fetch_add(took, Ordering::Relaxed);
        if observe {
            Vec::new()
        } else {
            answers
        }
    }

    /// Bytes this stream keeps (a streamed request body's pieces, a held response): with the next
    /// message's own, what its processing grows with.
    pub fn kept(&self) -> usize {
        self.body.len() + self.exchange.kept()
    }

    /// The stream ended (the response is complete, cut, or the client went away): the response's
    /// counters, once.
    pub fn end(&mut self) {
        let Session { shared, exchange, .. } = self;
        with_env(shared, |env| exchange.done(env));
        shared.spent.streams.fetch_add(1, Ordering::Relaxed);
    }

    fn request_headers(&mut self, h: &HttpHeaders, route: Option<&str>, meta: &RouteMeta) -> Option<ProcessingResponse> {
        let read = RequestRead::read(|name| header(h.headers.as_ref(), name));
        let hs = read.headers(h.end_of_stream);
        let mut m = Mutations::default();
        let Session { shared, exchange, .. } = self;
        let headed = with_env(shared, |env| exchange.request_headers(env, &hs, route, meta, &mut m));
        if headed == Headed::Ignore {
            return Some(skip_rest());
        }
        if let (RequestBody::Streamed { held }, Headed::Pause) = (&mut self.request_body, headed) {
            // the body streams past Envoy: the headers wait here for its new length
            *held = Some(m);
            return None;
        }
        Some(headers_answer(Leg::Request, Some(m.common())))
    }

    fn request_body(&mut self, b: HttpBody) -> Vec<ProcessingResponse> {
        if !self.exchange.reading() {
            return vec![self.pass_body(b)];
        }
        let total = self.released + self.body.len() + b.body.len();
        let Session { shared, exchange, .. } = self;
        let go = with_env(shared, |env| exchange.request_piece(env, total, b.body.len(), || Some(b.body.as_slice())));
        if !self.exchange.reading() {
            // past max_body_bytes, not JSON, no memory: what was kept goes on as it came
            let mut kept = std::mem::take(&mut self.body);
            kept.extend_from_slice(&b.body);
            return self.release_headers().into_iter().chain([self.pass_body(HttpBody { body: kept, ..b })]).collect();
        }
        if self.streamed() && !b.end_of_stream {
            // a piece: what the core has decided goes on now (none while the headers wait), the rest
            // is kept until it may go
            self.body.extend_from_slice(&b.body);
            let n = go.min(total).saturating_sub(self.released).min(self.body.len());
            if n == 0 || matches!(self.request_body, RequestBody::Streamed { held: Some(_) }) {
                return Vec::new();
            }
            self.released += n;
            let out: Vec<u8> = self.body.drain(..n).collect();
            return vec![streamed_answer(out, false)];
        }
        let body = if self.body.is_empty() { b.body } else { [std::mem::take(&mut self.body), b.body].concat() };
        self.finish(body, Ends::WithBody)
    }

    /// A body toolfit does not change: in `BUFFERED` the answer without mutation, streamed its bytes.
    fn pass_body(&mut self, b: HttpBody) -> ProcessingResponse {
        if self.streamed() {
            streamed_answer(b.body, b.end_of_stream)
        } else {
            body_answer(Leg::Request, None)
        }
    }

    /// Held request headers go out as they were asked for (`None` if none are held).
    fn release_headers(&mut self) -> Option<ProcessingResponse> {
        let RequestBody::Streamed { held } = &mut self.request_body else { return None };
        held.take().map(|m| headers_answer(Leg::Request, Some(m.common())))
    }

    fn request_trailers(&mut self) -> Vec<ProcessingResponse> {
        let mut out = Vec::new();
        if self.exchange.reading() && self.streamed() {
            // the body ended in trailers: what was kept is the whole body
            let body = std::mem::take(&mut self.body);
            out = self.finish(body, Ends::InTrailers);
        } else if let Some(h) = self.release_headers() {
            out.push(h);
        }
        out.push(trailers_answer(Leg::Request));
        out
    }

    /// Rewrites the request body (`body`: its bytes from `released` on, what was not let go); the
    /// answers that carry the verdict (the held headers first). `ends`: whether the stream ends with
    /// the body or in trailers.
    fn finish(&mut self, body: Vec<u8>, ends: Ends) -> Vec<ProcessingResponse> {
        if !self.exchange.reading() {
            return vec![body_answer(Leg::Request, None)];
        }
        let waiting = match &mut self.request_body {
            RequestBody::Streamed { held } => held.take(),
            RequestBody::Buffered => None,
        };
        let held = waiting.is_some();
        let mut m = waiting.unwrap_or_default();
        let released = self.released;
        let size = released + body.len();
        let Session { shared, exchange, .. } = self;
        let _ = with_env(shared, |env| exchange.request_end(env, |at| body.get(at.saturating_sub(released)..), size, &mut m));
        if let Some(tail) = m.body.take() {
            // the new bytes replace the body from `body_at` on: the kept bytes before it stay
            let keep = m.body_at.saturating_sub(released).min(body.len());
            m.body = Some([body.get(..keep).unwrap_or_default(), tail.as_slice()].concat());
        }
        if let Some((status, err)) = m.reject.take() {
            return vec![reject(status, err)];
        }
        if !self.streamed() {
            return vec![body_answer(Leg::Request, Some(m.common()))];
        }
        let new = m.body.take().unwrap_or(body);
        let mut out = Vec::new();
        if held {
            out.push(headers_answer(Leg::Request, Some(m.common())));
        }
        out.push(streamed_answer(new, ends == Ends::WithBody));
        out
    }

    fn response_headers(&mut self, h: &HttpHeaders) -> Option<ProcessingResponse> {
        let read = ResponseRead::read(|name| header(h.headers.as_ref(), name));
        let mut chunk = Chunk::default();
        let Session { shared, exchange, .. } = self;
        let Some(next) = with_env(shared, |env| exchange.response_headers(env, &read.headers(h.end_of_stream), &mut chunk)) else {
            // a full-duplex body is answered piece by piece whatever happens (no mode override there)
            return Some(if self.response_streamed() { headers_answer(Leg::Response, None) } else { skip_response(None) });
        };
        if self.response_streamed() {
            if next == Next::Pause && self.exchange.reading_response() && !h.end_of_stream {
                // the verdict comes with the body's end: the headers wait for it
                self.response_body = ResponseBody::Duplex { held: Some(chunk.common()) };
                return None;
            }
            return Some(headers_answer(Leg::Response, Some(chunk.common())));
        }
        if !self.exchange.reading_response() {
            // nothing of this response is read: Envoy sends the body straight on
            return Some(skip_response(Some(chunk.common())));
        }
        if next == Next::Pause {
            // the headers wait for the whole body, which Envoy buffers (up to its buffer limit; past it
            // Envoy sends what it has and the rest goes on unread, see response_body)
            self.response_body = ResponseBody::Buffered;
            return Some(buffer_response(chunk.common()));
        }
        Some(headers_answer(Leg::Response, Some(chunk.common())))
    }

    fn response_body(&mut self, b: HttpBody) -> Vec<ProcessingResponse> {
        if !self.exchange.reading_response() {
            if self.response_streamed() {
                return self.release_response(None).into_iter().chain([streamed_body(Leg::Response, b.body, b.end_of_stream)]).collect();
            }
            return vec![body_answer(Leg::Response, None)];
        }
        if matches!(self.response_body, ResponseBody::Buffered) && !b.end_of_stream {
            // Envoy's buffer limit was reached: this is the body's first part, the rest streams on
            // without coming here. It goes on as it came, counted.
            let Session { shared, exchange, .. } = self;
            with_env(shared, |env| exchange.response_unseen(env));
            return vec![body_answer(Leg::Response, None)];
        }
        let mut chunk = Chunk { bytes: b.body, ..Chunk::default() };
        let size = chunk.bytes.len();
        let Session { shared, exchange, .. } = self;
        let _ = with_env(shared, |env| exchange.response_body(env, &mut chunk, size, b.end_of_stream));
        if !self.response_streamed() {
            return vec![body_answer(Leg::Response, Some(chunk.common()))];
        }
        let Chunk { bytes, out, headers } = chunk;
        let out = out.unwrap_or(bytes);
        if matches!(self.response_body, ResponseBody::Duplex { held: Some(_) }) && out.is_empty() && !b.end_of_stream {
            // still held, with the headers
            return Vec::new();
        }
        self.release_response(Some(headers)).into_iter().chain([streamed_body(Leg::Response, out, b.end_of_stream)]).collect()
    }

    /// Held response headers go out, with the changes the body's end made to them (`None` if none are
    /// held).
    fn release_response(&mut self, changes: Option<Mutations>) -> Option<ProcessingResponse> {
        let ResponseBody::Duplex { held } = &mut self.response_body else { return None };
        let mut common = held.take()?;
        if let Some(later) = changes.map(|m| m.common()).and_then(|c| c.header_mutation) {
            let m = common.header_mutation.get_or_insert_with(HeaderMutation::default);
            m.set_headers.extend(later.set_headers);
            m.remove_headers.extend(later.remove_headers);
        }
        Some(headers_answer(Leg::Response, Some(common)))
    }

    fn response_trailers(&mut self) -> Vec<ProcessingResponse> {
        let mut chunk = Chunk::default();
        let streamed = self.response_streamed();
        let Session { shared, exchange, .. } = self;
        // a trailers answer carries no body: in STREAMED, bytes toolfit still held cannot go out any
        // more; in full duplex they go out as the body's last piece
        let allowed = if streamed { BodyAllowed::Yes } else { BodyAllowed::No };
        let _ = with_env(shared, |env| exchange.response_trailers(env, &mut chunk, allowed));
        let held = chunk.out.take().unwrap_or_default();
        if !streamed {
            return vec![trailers_answer(Leg::Response)];
        }
        // full duplex: what was held goes out as the body's last piece, before the trailers
        let mut out: Vec<ProcessingResponse> = self.release_response(Some(chunk.headers)).into_iter().collect();
        if !held.is_empty() {
            out.push(streamed_body(Leg::Response, held, false /* end_of_stream: the trailers follow */));
        }
        out.push(trailers_answer(Leg::Response));
        out
    }
}

/// Runs `f` with the core's view of the process: its configuration, counters, log rate limit and
/// rewrite cache, the clock and the log.
pub fn with_env<R>(shared: &Shared, f: impl FnOnce(&mut Env) -> R) -> R {
    let mut metrics = &shared.metrics;
    let mut fallback = LogLimiter::default();
    let mut logs = shared.logs.lock().ok();
    let logs = logs.as_deref_mut().unwrap_or(&mut fallback);
    let mut cache = shared.cache.lock().ok();
    let cache = cache.as_mut().and_then(|c| c.as_mut());
    host::with_env(&shared.config, &mut metrics, logs, cache, &shared.memory, now_us, f)
}
