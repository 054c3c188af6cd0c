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

use envoy_types::pb::envoy::config::core::v3::{HeaderMap, HeaderValue, HeaderValueOption};
use envoy_types::pb::envoy::extensions::filters::http::ext_proc::v3::{processing_mode, ProcessingMode};
use envoy_types::pb::envoy::r#type::v3::HttpStatus;
use envoy_types::pb::envoy::service::ext_proc::v3::{
    body_mutation, processing_request, processing_response, BodyMutation, BodyResponse, CommonResponse, HeaderMutation, HeadersResponse, HttpBody, HttpHeaders,
    ImmediateResponse, ProcessingRequest, ProcessingResponse, StreamedBodyResponse, TrailersResponse,
};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use toolfit::api::cache::SiteCache;
use toolfit::filter::config::Config;
use toolfit::filter::exchange::{BodyAllowed, Exchange};
use toolfit::filter::headers;
use toolfit::filter::host::{self, Env, Headed, MetaValue, Next, RequestHost, RequestRead, ResponseHost, ResponseRead, RouteMeta, REJECT_HEADERS};
use toolfit::filter::log::LogLimiter;

use crate::metrics::Registry;

/// What every stream of the process shares.
pub struct Shared {
    pub config: Arc<Config>,
    pub metrics: Registry,
    pub logs: Mutex<LogLimiter>,
    /// The rewrite cache (one per process), sized by the configuration.
    pub cache: Mutex<Option<SiteCache>>,
}

impl Shared {
    pub fn new(config: Config) -> Shared {
        let cache = config.new_cache();
        Shared { config: Arc::new(config), metrics: Registry::default(), logs: Mutex::new(LogLimiter::default()), cache: Mutex::new(cache) }
    }
}

/// The ext_proc filter's name: the key of the attributes it sends.
const FILTER: &str = "envoy.filters.http.ext_proc";

pub struct Session {
    shared: Arc<Shared>,
    /// The request and its response as the core keeps them.
    exchange: Exchange,
    /// Pieces of a streamed request body, kept until the last one.
    body: Vec<u8>,
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
        Session { shared, exchange: Exchange::default(), body: Vec::new(), request_body: RequestBody::Buffered, response_body: ResponseBody::Streamed }
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
        let answers = match request {
            processing_request::Request::RequestHeaders(h) => self.request_headers(&h, route.as_deref(), &meta).into_iter().collect(),
            processing_request::Request::RequestBody(b) => self.request_body(b),
            processing_request::Request::RequestTrailers(_) => self.request_trailers(),
            processing_request::Request::ResponseHeaders(h) => self.response_headers(&h).into_iter().collect(),
            processing_request::Request::ResponseBody(b) => self.response_body(b),
            processing_request::Request::ResponseTrailers(_) => self.response_trailers(),
        };
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
        let total = self.body.len() + b.body.len();
        let Session { shared, exchange, .. } = self;
        if !with_env(shared, |env| exchange.keep_reading(env, total)) {
            // past max_body_bytes: what was kept goes on as it came
            let mut kept = std::mem::take(&mut self.body);
            kept.extend_from_slice(&b.body);
            return self.release_headers().into_iter().chain([self.pass_body(HttpBody { body: kept, ..b })]).collect();
        }
        if self.streamed() && !b.end_of_stream {
            // a piece: kept, answered with the whole at the end
            self.body.extend_from_slice(&b.body);
            return Vec::new();
        }
        let body = if self.body.is_empty() { b.body } else { [std::mem::take(&mut self.body), b.body].concat() };
        self.finish(body, true)
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
            out = self.finish(body, false);
        } else if let Some(h) = self.release_headers() {
            out.push(h);
        }
        out.push(trailers_answer(Leg::Request));
        out
    }

    /// Rewrites the whole request body; the answers that carry the verdict (the held headers first).
    /// `end`: the body's last piece is answered here (else trailers follow).
    fn finish(&mut self, body: Vec<u8>, end: bool) -> Vec<ProcessingResponse> {
        if !self.exchange.reading() {
            return vec![body_answer(Leg::Request, None)];
        }
        let waiting = match &mut self.request_body {
            RequestBody::Streamed { held } => held.take(),
            RequestBody::Buffered => None,
        };
        let held = waiting.is_some();
        let mut m = waiting.unwrap_or_default();
        let size = body.len();
        let Session { shared, exchange, .. } = self;
        let _ = with_env(shared, |env| exchange.request_end(env, Some(body.as_slice()), size, &mut m));
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
        out.push(streamed_answer(new, end));
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
            out.push(streamed_body(Leg::Response, held, false));
        }
        out.push(trailers_answer(Leg::Response));
        out
    }
}

/// Runs `f` with the core's view of the process: its configuration, counters, log rate limit and
/// rewrite cache, the clock and the log.
/// Runs `f` with the core's view of the process's shared state.
pub fn with_env<R>(shared: &Shared, f: impl FnOnce(&mut Env) -> R) -> R {
    let mut metrics = &shared.metrics;
    let mut fallback = LogLimiter::default();
    let mut logs = shared.logs.lock().ok();
    let logs = logs.as_deref_mut().unwrap_or(&mut fallback);
    let mut cache = shared.cache.lock().ok();
    let cache = cache.as_mut().and_then(|c| c.as_mut());
    host::with_env(&shared.config, &mut metrics, logs, cache, now_us, f)
}

/// `xds.route_name`, which Envoy sends when the filter's `request_attributes` lists it.
fn route_name(msg: &ProcessingRequest) -> Option<String> {
    use envoy_types::pb::google::protobuf::value::Kind;
    let v = msg.attributes.get(FILTER)?.fields.get("xds.route_name")?;
    match &v.kind {
        Some(Kind::StringValue(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Where the route's settings sit among the attributes Envoy sends: one CEL attribute per setting,
/// `xds.route_metadata.filter_metadata.toolfit.<key>` (Envoy sends the whole `xds.route_metadata` only
/// as protobuf text, not as a Struct; a leaf comes as its own value, and a missing one not at all).
const ROUTE_META: &str = "xds.route_metadata.filter_metadata.toolfit.";

/// The matched route's `metadata.filter_metadata.toolfit` (`profile`, `strict`, `disabled`), as the
/// Wasm filter reads it: from the attributes above, else from the stream's metadata context under
/// `toolfit` (for gateways that set per-route settings as dynamic metadata and forward that
/// namespace). Booleans may come as strings, as route metadata written by hand often has them.
fn route_meta(msg: &ProcessingRequest) -> RouteMeta {
    use envoy_types::pb::google::protobuf::value::Kind;
    let attrs = msg.attributes.get(FILTER);
    let dynamic = msg.metadata_context.as_ref().and_then(|m| m.filter_metadata.get("toolfit"));
    RouteMeta::read(|k| {
        let from_route = attrs.and_then(|a| a.fields.get(&format!("{ROUTE_META}{k}")));
        match from_route.or_else(|| dynamic.and_then(|d| d.fields.get(k))).and_then(|v| v.kind.clone())? {
            Kind::BoolValue(b) => Some(MetaValue::Bool(b)),
            Kind::StringValue(s) => Some(MetaValue::Bytes(s.into_bytes())),
            _ => None,
        }
    })
}

/// A header's value (Envoy sends `raw_value` unless told otherwise).
fn header(map: Option<&HeaderMap>, name: &str) -> Option<String> {
    let h = map?.headers.iter().find(|h| h.key.eq_ignore_ascii_case(name))?;
    if h.raw_value.is_empty() {
        Some(h.value.clone())
    } else {
        Some(headers::text(h.raw_value.clone()))
    }
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Header and body changes the filter asked for, answered with the message they concern.
#[derive(Default)]
struct Mutations {
    set: Vec<(String, String)>,
    remove: Vec<String>,
    body: Option<Vec<u8>>,
    reject: Option<(u16, Vec<u8>)>,
}

impl Mutations {
    fn header_mutation(&self) -> Option<HeaderMutation> {
        if self.set.is_empty() && self.remove.is_empty() {
            return None;
        }
        let set_headers = self
            .set
            .iter()
            .map(|(k, v)| HeaderValueOption {
                header: Some(HeaderValue { key: k.clone(), raw_value: v.clone().into_bytes(), ..HeaderValue::default() }),
                // OVERWRITE_IF_EXISTS_OR_ADD
                append_action: 2,
                ..HeaderValueOption::default()
            })
            .collect();
        Some(HeaderMutation { set_headers, remove_headers: self.remove.clone() })
    }

    fn common(&self) -> CommonResponse {
        let body_mutation = self.body.as_ref().map(|b| BodyMutation {
            mutation: Some(if b.is_empty() { body_mutation::Mutation::ClearBody(true) } else { body_mutation::Mutation::Body(b.clone()) }),
        });
        CommonResponse { header_mutation: self.header_mutation(), body_mutation, ..CommonResponse::default() }
    }
}

impl RequestHost for Mutations {
    fn set_header(&mut self, name: &str, value: &str) -> bool {
        self.remove.retain(|r| !r.eq_ignore_ascii_case(name));
        self.set.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.set.push((name.to_ascii_lowercase(), value.to_string()));
        true
    }
    fn remove_header(&mut self, name: &str) -> bool {
        self.set.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.remove.push(name.to_ascii_lowercase());
        true
    }
    fn set_body(&mut self, _size: usize, bytes: &[u8]) -> bool {
        self.body = Some(bytes.to_vec());
        true
    }
    fn reject(&mut self, status: u16, body: &[u8]) -> bool {
        self.reject = Some((status, body.to_vec()));
        true
    }
}

/// One response message's bytes (a body piece, or none for headers and trailers) and what the
/// response path did with them.
#[derive(Default)]
struct Chunk {
    bytes: Vec<u8>,
    out: Option<Vec<u8>>,
    headers: Mutations,
}

impl Chunk {
    fn common(&self) -> CommonResponse {
        let mut c = self.headers.common();
        if let Some(out) = &self.out {
            c.body_mutation = Some(BodyMutation {
                mutation: Some(if out.is_empty() { body_mutation::Mutation::ClearBody(true) } else { body_mutation::Mutation::Body(out.clone()) }),
            });
        }
        c
    }
}

impl ResponseHost for Chunk {
    fn chunk(&mut self, size: usize) -> Option<Vec<u8>> {
        let cur = self.out.as_ref().unwrap_or(&self.bytes);
        cur.get(..size.min(cur.len())).map(<[u8]>::to_vec)
    }
    fn set_chunk(&mut self, size: usize, bytes: &[u8]) -> bool {
        let cur = self.out.as_ref().unwrap_or(&self.bytes);
        let rest = cur.get(size.min(cur.len())..).unwrap_or_default();
        self.out = Some([bytes, rest].concat());
        true
    }
    fn set_header(&mut self, name: &str, value: &str) -> bool {
        RequestHost::set_header(&mut self.headers, name, value)
    }
    fn remove_header(&mut self, name: &str) -> bool {
        RequestHost::remove_header(&mut self.headers, name)
    }
}

/// Which half of the exchange an answer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leg {
    Request,
    Response,
}

fn headers_answer(leg: Leg, common: Option<CommonResponse>) -> ProcessingResponse {
    let h = HeadersResponse { response: common };
    let response = match leg {
        Leg::Request => processing_response::Response::RequestHeaders(h),
        Leg::Response => processing_response::Response::ResponseHeaders(h),
    };
    ProcessingResponse { response: Some(response), ..ProcessingResponse::default() }
}

fn body_answer(leg: Leg, common: Option<CommonResponse>) -> ProcessingResponse {
    let b = BodyResponse { response: common };
    let response = match leg {
        Leg::Request => processing_response::Response::RequestBody(b),
        Leg::Response => processing_response::Response::ResponseBody(b),
    };
    ProcessingResponse { response: Some(response), ..ProcessingResponse::default() }
}

/// The answer to the last piece of a `FULL_DUPLEX_STREAMED` request body: the whole body, in one piece.
fn streamed_answer(body: Vec<u8>, end_of_stream: bool) -> ProcessingResponse {
    streamed_body(Leg::Request, body, end_of_stream)
}

/// Bytes of a `FULL_DUPLEX_STREAMED` body of the request or the response.
fn streamed_body(leg: Leg, body: Vec<u8>, end_of_stream: bool) -> ProcessingResponse {
    let m = BodyMutation {
        mutation: Some(body_mutation::Mutation::StreamedResponse(StreamedBodyResponse { body, end_of_stream, ..StreamedBodyResponse::default() })),
    };
    body_answer(leg, Some(CommonResponse { body_mutation: Some(m), ..CommonResponse::default() }))
}

fn trailers_answer(leg: Leg) -> ProcessingResponse {
    let t = TrailersResponse::default();
    let response = match leg {
        Leg::Request => processing_response::Response::RequestTrailers(t),
        Leg::Response => processing_response::Response::ResponseTrailers(t),
    };
    ProcessingResponse { response: Some(response), ..ProcessingResponse::default() }
}

/// The request is not toolfit's: its headers go on unchanged, and Envoy sends nothing more of this
/// stream (no body, no response).
fn skip_rest() -> ProcessingResponse {
    answer_then(headers_answer(Leg::Request, None), processing_mode::HeaderSendMode::Skip, processing_mode::BodySendMode::None)
}

/// The response's headers, with what toolfit changes in them, and no more of the stream: its body and
/// trailers go to the client without a round trip here (most requests: no reply to repair).
fn skip_response(common: Option<CommonResponse>) -> ProcessingResponse {
    answer_then(headers_answer(Leg::Response, common), processing_mode::HeaderSendMode::Default, processing_mode::BodySendMode::None)
}

/// The response's headers, answered, waiting with their changes for the body, which Envoy buffers and
/// sends whole (`BUFFERED_PARTIAL`: a body past Envoy's buffer limit is sent up to it and the rest goes
/// on, rather than failing the response as `BUFFERED` would).
fn buffer_response(common: CommonResponse) -> ProcessingResponse {
    answer_then(headers_answer(Leg::Response, Some(common)), processing_mode::HeaderSendMode::Default, processing_mode::BodySendMode::BufferedPartial)
}

/// `answer` with a mode override for the rest of the stream: no request body or trailers (they are
/// past or not wanted), the response's headers and body as given, no response trailers.
fn answer_then(
    mut answer: ProcessingResponse,
    response_headers: processing_mode::HeaderSendMode,
    response_body: processing_mode::BodySendMode,
) -> ProcessingResponse {
    answer.mode_override = Some(ProcessingMode {
        request_header_mode: processing_mode::HeaderSendMode::Default as i32,
        response_header_mode: response_headers as i32,
        request_body_mode: processing_mode::BodySendMode::None as i32,
        response_body_mode: response_body as i32,
        request_trailer_mode: processing_mode::HeaderSendMode::Skip as i32,
        response_trailer_mode: processing_mode::HeaderSendMode::Skip as i32,
    });
    answer
}

/// Strict mode's answer: the request goes no further.
fn reject(status: u16, body: Vec<u8>) -> ProcessingResponse {
    let mut m = Mutations::default();
    for (name, value) in REJECT_HEADERS {
        let _ = RequestHost::set_header(&mut m, name, value);
    }
    let r = ImmediateResponse { status: Some(HttpStatus { code: i32::from(status) }), headers: m.header_mutation(), body, ..ImmediateResponse::default() };
    ProcessingResponse { response: Some(processing_response::Response::ImmediateResponse(r)), ..ProcessingResponse::default() }
}

#[cfg(test)]
mod tests {
    //! Full-duplex response bodies, message by message (Envoy runs them in `tests/envoy/responses.py`;
    //! these name what each answer must be).
    use super::*;
    use envoy_types::pb::envoy::service::ext_proc::v3::ProtocolConfiguration;

    fn session(config: &str) -> Session {
        let config = toolfit::filter::config::Config::parse(config.as_bytes()).unwrap_or_else(|e| panic!("config: {e}"));
        Session::new(Arc::new(Shared::new(config)))
    }

    fn headers(pairs: &[(&str, &str)], end_of_stream: bool) -> HttpHeaders {
        let headers = pairs.iter().map(|(k, v)| HeaderValue { key: (*k).to_string(), raw_value: v.as_bytes().to_vec(), ..HeaderValue::default() }).collect();
        HttpHeaders { headers: Some(HeaderMap { headers }), end_of_stream, ..HttpHeaders::default() }
    }

    fn msg(request: processing_request::Request, first: bool) -> ProcessingRequest {
        let protocol_config = first.then(|| ProtocolConfiguration {
            request_body_mode: processing_mode::BodySendMode::Buffered as i32,
            response_body_mode: processing_mode::BodySendMode::FullDuplexStreamed as i32,
            ..ProtocolConfiguration::default()
        });
        ProcessingRequest { request: Some(request), protocol_config, ..ProcessingRequest::default() }
    }

    /// Sends a request whose tool name openai-strict maps (`gh.search` -> `gh_search`), then the response
    /// headers; returns the answers to the response headers.
    fn request_then_response_headers(s: &mut Session) -> Vec<ProcessingResponse> {
        let tools =
            r#"[{"type":"function","function":{"name":"gh.search","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}]"#;
        let body = format!(r#"{{"model":"m","messages":[],"tools":{tools}}}"#);
        let h = headers(&[(":method", "POST"), (":path", "/v1/chat/completions"), ("content-type", "application/json")], false);
        let _ = s.on(msg(processing_request::Request::RequestHeaders(h), true));
        let sent = s.on(msg(processing_request::Request::RequestBody(HttpBody { body: body.into_bytes(), end_of_stream: true, ..HttpBody::default() }), false));
        assert!(!sent.is_empty(), "the request body is answered");
        let h = headers(&[(":status", "200"), ("content-type", "application/json")], false);
        s.on(msg(processing_request::Request::ResponseHeaders(h), false))
    }

    fn body_piece(s: &mut Session, bytes: &[u8], end: bool) -> Vec<ProcessingResponse> {
        s.on(msg(processing_request::Request::ResponseBody(HttpBody { body: bytes.to_vec(), end_of_stream: end, ..HttpBody::default() }), false))
    }

    /// The streamed bytes of full-duplex body answers, and whether the last one ends the stream.
    fn streamed(answers: &[ProcessingResponse]) -> (Vec<u8>, bool) {
        let mut out = (Vec::new(), false);
        for a in answers {
            if let Some(processing_response::Response::ResponseBody(b)) = &a.response {
                match b.response.as_ref().and_then(|c| c.body_mutation.as_ref()).and_then(|m| m.mutation.as_ref()) {
                    Some(body_mutation::Mutation::StreamedResponse(r)) => {
                        out.0.extend_from_slice(&r.body);
                        out.1 = r.end_of_stream;
                    }
                    other => panic!("a full-duplex body answer must be streamed bytes, got {other:?}"),
                }
            }
        }
        out
    }

    const REPLY: &str =
        r#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":"1","type":"function","function":{"name":"gh_search","arguments":"{\"q\":\"a\"}"}}]}}]}"#;

    #[test]
    fn full_duplex_reply_is_streamed_back_repaired() {
        let mut s = session(r#"{"profile": "openai-strict", "framing": "exact"}"#);
        let answers = request_then_response_headers(&mut s);
        assert!(
            matches!(answers.as_slice(), [ProcessingResponse { response: Some(processing_response::Response::ResponseHeaders(_)), .. }]),
            "headers answered at once"
        );
        let (cut, rest) = REPLY.as_bytes().split_at(60);
        let mut answers = body_piece(&mut s, cut, false);
        answers.extend(body_piece(&mut s, rest, true));
        let (bytes, end) = streamed(&answers);
        let text = String::from_utf8(bytes).unwrap_or_default();
        assert!(end, "the last piece ends the stream");
        assert!(text.contains(r#""name":"gh.search""#) && !text.contains("gh_search"), "the client's own name restored: {text}");
    }

    #[test]
    fn full_duplex_reject_holds_headers_until_the_verdict() {
        let mut s = session(r#"{"profile": "openai-strict", "framing": "exact", "on_invalid_tool_call": "reject"}"#);
        assert!(request_then_response_headers(&mut s).is_empty(), "the headers wait for the body");
        let invalid = REPLY.replace(r#"{\"q\":\"a\"}"#, "{}");
        let (cut, rest) = invalid.as_bytes().split_at(60);
        assert!(body_piece(&mut s, cut, false).is_empty(), "a piece before the end is held");
        let answers = body_piece(&mut s, rest, true);
        let status = answers.first().and_then(|a| match &a.response {
            Some(processing_response::Response::ResponseHeaders(h)) => h.response.as_ref()?.header_mutation.as_ref()?.set_headers.iter().find_map(|o| {
                let h = o.header.as_ref()?;
                (h.key == ":status").then(|| String::from_utf8_lossy(&h.raw_value).into_owned())
            }),
            _ => None,
        });
        assert_eq!(status.as_deref(), Some("502"), "the held headers go out first, turned into a 502: {answers:?}");
        let (bytes, end) = streamed(&answers);
        assert!(end && String::from_utf8_lossy(&bytes).contains("toolfit_invalid_tool_call"), "then the error body, ending the stream");
    }
}
