//! One ext_proc stream (one HTTP request and its response), as plain values: a `ProcessingRequest` in,
//! the `ProcessingResponse` Envoy waits for out. Like `src/wasm.rs` it only moves bytes and headers
//! between Envoy and `toolfit::filter`, which decides; the differences are the host's:
//!
//! - Envoy holds what it sent until the answer: headers and body changes go back as mutations in
//!   the answer to the message they concern (`Mutations`, `Chunk`), not as calls on a buffer.
//! - A request toolfit will not read is answered with a `mode_override` that stops Envoy sending its
//!   body and its response (Envoy's `allow_mode_override: true`): an untouched request costs one round
//!   trip.
//! - The request body comes whole (`BUFFERED`) or in pieces (`FULL_DUPLEX_STREAMED`: each piece is
//!   answered with the bytes the core has decided, the rest kept here, as the pieces Envoy sent, until
//!   they may go or the body's end brings their rewrite). The response body comes in pieces
//!   (`STREAMED`), each answered with its own bytes or their replacement, which is how the Wasm
//!   filter's response path already works.
//! - In full duplex Envoy forgets a piece once it has sent it here: every byte it hands over must come
//!   back in an answer, exactly once and in order, whatever toolfit decides. So a stream is never
//!   given up by closing it while it keeps bytes: a [`Rescue`] (taken before heavy work, sharing the
//!   kept pieces) answers them unchanged, and the stream goes on in pass-through, every later message
//!   answered as it came, until Envoy ends it.
mod answers;
mod attributes;
mod mutations;
mod pieces;
#[cfg(test)]
mod tests;

use bytes::Bytes;
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
use toolfit::filter::memory::{Held, Memory};

use crate::metrics::Registry;
use answers::*;
use attributes::*;
use mutations::*;
use pieces::Pieces;

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
    /// Streams toolfit gave up on and answered in pass-through from there, by why.
    pub passed_on: [AtomicU64; GiveUp::ALL.len()],
}

/// Why a stream went on in pass-through: what it kept answered unchanged, and every later message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUp {
    /// Its message found no free core in time, or was expected to take past `--message-timeout-ms`.
    Declined,
    /// Its message took past `--message-timeout-ms` (the late rewrite is dropped).
    Late,
    /// Its message's processing failed.
    Failed,
    /// Its request body had not arrived by `--request-deadline-ms`.
    Deadline,
    /// Its request body came slower than `--min-request-bytes-per-s`.
    Slow,
    /// Envoy sent nothing more within `--idle-timeout-ms` while the stream kept bytes.
    Idle,
    /// It came past `--max-streams`: served in pass-through from its first message.
    Overflow,
}

impl GiveUp {
    pub const ALL: [GiveUp; 7] = [GiveUp::Declined, GiveUp::Late, GiveUp::Failed, GiveUp::Deadline, GiveUp::Slow, GiveUp::Idle, GiveUp::Overflow];

    /// The `reason` label of `toolfit_extproc_streams_passed_on`.
    pub fn label(self) -> &'static str {
        match self {
            GiveUp::Declined => "declined",
            GiveUp::Late => "late",
            GiveUp::Failed => "failed",
            GiveUp::Deadline => "deadline",
            GiveUp::Slow => "slow",
            GiveUp::Idle => "idle",
            GiveUp::Overflow => "overflow",
        }
    }
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
            passed_on: Default::default(),
        }
    }

    /// Counts a stream given up on for `why`.
    pub fn passed_on(&self, why: GiveUp) {
        if let Some(n) = GiveUp::ALL.iter().position(|g| *g == why).and_then(|i| self.passed_on.get(i)) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A message as the session takes it: a body piece's bytes taken out of the message as shared
/// [`Bytes`], so a [`Rescue`] can keep them without a copy.
pub struct Inbound {
    msg: ProcessingRequest,
    piece: Bytes,
}

impl From<ProcessingRequest> for Inbound {
    fn from(mut msg: ProcessingRequest) -> Inbound {
        let piece = match &mut msg.request {
            Some(processing_request::Request::RequestBody(b) | processing_request::Request::ResponseBody(b)) => Bytes::from(std::mem::take(&mut b.body)),
            _ => Bytes::new(),
        };
        Inbound { msg, piece }
    }
}

impl Inbound {
    pub fn message(&self) -> &ProcessingRequest {
        &self.msg
    }

    /// The body bytes it carries.
    pub fn body_len(&self) -> usize {
        self.piece.len()
    }

    /// A copy sharing the piece (`piece`: false leaves it out, where Envoy holds the body itself).
    fn copy(&self, piece: bool) -> Inbound {
        Inbound { msg: self.msg.clone(), piece: if piece { self.piece.clone() } else { Bytes::new() } }
    }
}

/// What answers a stream's kept bytes unchanged if the message about to be processed is not: a
/// pass-through session sharing the kept pieces, and that message's copy.
pub struct Rescue {
    session: Session,
    inbound: Option<Inbound>,
}

impl Rescue {
    /// The answers that hand back, unchanged, every byte the stream kept and the message's own, and
    /// the pass-through session that answers the stream's later messages.
    pub fn answers(self) -> (Session, Vec<ProcessingResponse>) {
        let Rescue { mut session, inbound } = self;
        let out = match inbound {
            Some(i) => session.take(i),
            None => session.flush_request(),
        };
        (session, out)
    }
}

pub struct Session {
    shared: Arc<Shared>,
    /// The request and its response as the core keeps them.
    exchange: Exchange,
    /// The bytes of a streamed request body not let go yet, kept until they may go (the core says when).
    body: Pieces,
    /// What `body` holds of the memory of the requests in flight (`max_held_bytes`).
    body_held: Held,
    /// The request body bytes let go: `body` starts at this offset.
    released: usize,
    /// How the request body comes, and what waits on it.
    request_body: RequestBody,
    /// How the response body comes, and what waits on it.
    response_body: ResponseBody,
    /// toolfit gave this stream up: every message is answered as it came.
    passthrough: bool,
    /// The request body has ended here (its last piece or its trailers came), or will not come.
    request_ended: bool,
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
            body: Pieces::default(),
            body_held: Held::default(),
            released: 0,
            request_body: RequestBody::Buffered,
            response_body: ResponseBody::Streamed,
            passthrough: false,
            request_ended: false,
        }
    }

    /// A session that answers every message as it came (a stream past `--max-streams`).
    pub fn passthrough(shared: Arc<Shared>) -> Session {
        Session { passthrough: true, ..Session::new(shared) }
    }

    /// Whether toolfit gave this stream up (it reads and keeps nothing more).
    pub fn passing(&self) -> bool {
        self.passthrough
    }

    /// Whether the request body has ended here (or never comes through here).
    pub fn request_ended(&self) -> bool {
        self.request_ended
    }

    /// Whether the request body is still coming in full-duplex pieces (a stream closed now could lose
    /// one in flight).
    pub fn request_streaming(&self) -> bool {
        self.streamed() && !self.request_ended
    }

    /// What answers, unchanged, what this stream keeps and `next` (the message about to be processed),
    /// should that processing not answer. The kept pieces are shared, not copied.
    pub fn rescue(&self, next: Option<&Inbound>) -> Rescue {
        let request_body = match &self.request_body {
            RequestBody::Buffered => RequestBody::Buffered,
            // headers held for the body's new length go out unchanged, with the body as it came
            RequestBody::Streamed { held } => RequestBody::Streamed { held: held.as_ref().map(|_| Mutations::default()) },
        };
        let response_body = match &self.response_body {
            ResponseBody::Streamed => ResponseBody::Streamed,
            ResponseBody::Buffered => ResponseBody::Buffered,
            ResponseBody::Duplex { .. } => ResponseBody::Duplex { held: None },
        };
        let session = Session {
            shared: self.shared.clone(),
            exchange: Exchange::default(),
            body: self.body.clone(),
            body_held: Held::default(),
            released: self.released,
            request_body,
            response_body,
            passthrough: true,
            request_ended: self.request_ended,
        };
        // the piece's bytes are needed only where the answer carries them (full duplex): elsewhere
        // Envoy keeps its body, and a copy would cost the one-piece body its copy-free hand-over
        let carried = |i: &Inbound| match i.msg.request {
            Some(processing_request::Request::RequestBody(_)) => self.streamed(),
            Some(processing_request::Request::ResponseBody(_)) => self.response_streamed(),
            _ => false,
        };
        Rescue { session, inbound: next.map(|i| i.copy(carried(i))) }
    }

    /// Whether `next` must be processed to its end whatever it takes: a response message while the
    /// response path holds bytes or headers (they are the core's, repaired or not, and no rescue can
    /// give them back).
    pub fn must_finish(&self, next: &Inbound) -> bool {
        let response = matches!(
            next.msg.request,
            Some(
                processing_request::Request::ResponseHeaders(_)
                    | processing_request::Request::ResponseBody(_)
                    | processing_request::Request::ResponseTrailers(_)
            )
        );
        response && (self.exchange.kept() > 0 || matches!(self.response_body, ResponseBody::Duplex { held: Some(_) } | ResponseBody::Buffered))
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
        self.take(Inbound::from(msg))
    }

    /// [`Session::on`] for a message whose body piece was taken out already.
    pub fn take(&mut self, inbound: Inbound) -> Vec<ProcessingResponse> {
        let Inbound { msg, piece } = inbound;
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
        let ended = match &request {
            processing_request::Request::RequestHeaders(h) => h.end_of_stream,
            processing_request::Request::RequestBody(b) => b.end_of_stream,
            _ => true,
        };
        let answers = if self.passthrough {
            self.pass(request, piece)
        } else {
            match request {
                processing_request::Request::RequestHeaders(h) => self.request_headers(&h, route.as_deref(), &meta).into_iter().collect(),
                processing_request::Request::RequestBody(b) => self.request_body(piece, b.end_of_stream),
                processing_request::Request::RequestTrailers(_) => self.request_trailers(),
                processing_request::Request::ResponseHeaders(h) => self.response_headers(&h).into_iter().collect(),
                processing_request::Request::ResponseBody(b) => self.response_body(HttpBody { body: Vec::from(piece), ..b }),
                processing_request::Request::ResponseTrailers(_) => self.response_trailers(),
            }
        };
        self.request_ended |= ended;
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

    /// The pass-through answer to each message: what the stream kept first, then the message as it
    /// came. A request or response toolfit has not begun to read is skipped where the mode allows
    /// (a mode override is not honoured in full duplex: there every piece is answered).
    fn pass(&mut self, request: processing_request::Request, piece: Bytes) -> Vec<ProcessingResponse> {
        use processing_request::Request as R;
        match request {
            R::RequestHeaders(_) => vec![skip_rest()],
            R::RequestBody(b) => {
                // in BUFFERED Envoy holds the body: the answer carries none of it
                if self.streamed() {
                    self.body.push(piece);
                }
                self.release_headers().into_iter().chain([self.pass_body(b.end_of_stream)]).collect()
            }
            R::RequestTrailers(_) => {
                let mut out = self.flush_request();
                out.push(trailers_answer(Leg::Request));
                out
            }
            R::ResponseHeaders(_) if self.response_streamed() => vec![headers_answer(Leg::Response, None)],
            R::ResponseHeaders(_) => vec![skip_response(None)],
            R::ResponseBody(b) if self.response_streamed() => vec![streamed_body(Leg::Response, Vec::from(piece), b.end_of_stream)],
            R::ResponseBody(_) => vec![body_answer(Leg::Response, None)],
            R::ResponseTrailers(_) => vec![trailers_answer(Leg::Response)],
        }
    }

    /// Held request headers (unchanged) and the request bytes kept, as they came.
    fn flush_request(&mut self) -> Vec<ProcessingResponse> {
        let mut out: Vec<ProcessingResponse> = self.release_headers().into_iter().collect();
        let kept = self.take_kept();
        if self.streamed() && !kept.is_empty() {
            out.push(streamed_answer(kept, false));
        }
        out
    }

    /// The request bytes kept, taken out, and what they held of the memory budget given back.
    fn take_kept(&mut self) -> Vec<u8> {
        self.body_held.release();
        self.body.take_all()
    }

    /// Holds in the memory budget what the request bytes kept take now: `false` if that would pass
    /// `max_held_bytes` (nothing changes then).
    fn count_kept(&mut self) -> bool {
        self.body_held.resize(&self.shared.memory, self.body.len(), self.shared.config.max_held_bytes)
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

    fn request_body(&mut self, piece: Bytes, end_of_stream: bool) -> Vec<ProcessingResponse> {
        if !self.exchange.reading() {
            self.body.push(piece);
            return vec![self.pass_body(end_of_stream)];
        }
        let total = self.released + self.body.len() + piece.len();
        let Session { shared, exchange, .. } = self;
        let mut m = Mutations::default();
        let go = with_env(shared, |env| exchange.request_piece(env, total, piece.len(), || Some(&piece[..]), &mut m));
        if let (true, Some((status, err))) = (self.exchange.answered(), m.reject.take()) {
            // toolfit answered the request itself: what Envoy sent of it goes no further
            let _ = self.take_kept();
            return vec![reject(status, err)];
        }
        self.body.push(piece);
        if self.streamed() && !end_of_stream && self.exchange.reading() {
            // the pieces kept here count in max_held_bytes beside what the core holds
            if !self.count_kept() {
                let Session { shared, exchange, .. } = self;
                with_env(shared, |env| exchange.host_over_budget(env, total));
            }
        }
        if !self.exchange.reading() {
            // past max_body_bytes, not JSON, no memory: what was kept goes on as it came
            return self.release_headers().into_iter().chain([self.pass_body(end_of_stream)]).collect();
        }
        if self.streamed() && !end_of_stream {
            // a piece: what the core has decided goes on now (none while the headers wait), the rest
            // is kept until it may go
            let n = go.min(total).saturating_sub(self.released).min(self.body.len());
            if n == 0 || matches!(self.request_body, RequestBody::Streamed { held: Some(_) }) {
                return Vec::new();
            }
            self.released += n;
            let out = self.body.take_front(n);
            let _ = self.count_kept();
            return vec![streamed_answer(out, false)];
        }
        let body = self.take_kept();
        self.finish(body, Ends::WithBody)
    }

    /// The kept bytes, which toolfit does not change: in `BUFFERED` the answer without mutation (Envoy
    /// holds the body), streamed the bytes themselves.
    fn pass_body(&mut self, end_of_stream: bool) -> ProcessingResponse {
        let kept = self.take_kept();
        if self.streamed() {
            streamed_answer(kept, end_of_stream)
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
            let body = self.take_kept();
            out = self.finish(body, Ends::InTrailers);
        } else if self.streamed() && !self.body.is_empty() {
            out = self.flush_request();
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
