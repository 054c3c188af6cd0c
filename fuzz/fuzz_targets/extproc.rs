//! Arbitrary sequences of ext_proc messages into one `toolfit-extproc` stream (`Session`), as Envoy would
//! send them and as it never would (headers twice, a body before its headers, a response before the
//! request ended). Invariants: no panic; each message gets at most three answers, each of the kind
//! Envoy expects for that message (a request body is answered with a body answer, or with the held
//! request headers, or with an immediate response); what goes out stays within a bound of what came in.
//!
//! The input is a small program:
//! - byte 0: configuration (llama-cpp, openai-strict with a dotted tool name mapped, gemini) in bits
//!   0-1; bit 2 `FULL_DUPLEX_STREAMED`; bit 3 observability mode; bits 4-5 the route's metadata (none,
//!   profile mcp, strict, disabled); bit 6 a route name; bit 7 `FULL_DUPLEX_STREAMED` response bodies;
//! - byte 1: the path; byte 2: content type (bits 0-1), gzip content encoding (bit 2), headers end the
//!   stream (bit 3);
//! - then operations, one byte each (`op % 6`, bit 3 = end of stream): 0 request body piece (two
//!   length bytes, then that many bytes), 1 request trailers, 2 response headers (a byte: status bits
//!   0-1, content type bits 2-3, gzip bit 4), 3 response body piece (as 0), 4 response trailers,
//!   5 request headers again.
#![no_main]
use envoy_types::pb::envoy::config::core::v3::{HeaderMap, HeaderValue};
use envoy_types::pb::envoy::extensions::filters::http::ext_proc::v3::processing_mode::BodySendMode;
use envoy_types::pb::envoy::service::ext_proc::v3::{
    processing_request::Request, processing_response::Response, HttpBody, HttpHeaders, HttpTrailers, ProcessingRequest, ProcessingResponse,
    ProtocolConfiguration,
};
use envoy_types::pb::google::protobuf::{value::Kind, Struct, Value};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use std::sync::{Arc, OnceLock};
use toolfit_extproc::session::{Session, Shared};

const CONFIGS: [&str; 3] = [
    r#"{"profile": "llama-cpp", "framing": "exact", "max_body_bytes": 1048576}"#,
    r#"{"profile": "openai-strict", "framing": "exact", "max_body_bytes": 1048576}"#,
    r#"{"profile": "gemini", "max_body_bytes": 65536, "cache_bytes": 0}"#,
];
const PATHS: [&str; 9] = [
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
    "/api/chat",
    "/completion",
    "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    "/v2/chat",
    "/v1/embeddings",
    "/health",
];
const CONTENT_TYPES: [Option<&str>; 4] = [Some("application/json"), None, Some("text/event-stream"), Some("application/x-ndjson")];
const STATUS: [&str; 4] = ["200", "200", "500", "204"];

/// One process's shared state per configuration, kept across inputs as a running processor keeps it
/// (the rewrite cache and the counters fill up).
fn shared(i: usize) -> Option<Arc<Shared>> {
    static ALL: OnceLock<Vec<Arc<Shared>>> = OnceLock::new();
    // every configuration must parse: one dropped here would leave its programs fuzzing nothing
    let all = ALL.get_or_init(|| {
        CONFIGS
            .iter()
            .map(|c| toolfit::filter::config::Config::parse(c.as_bytes()).unwrap_or_else(|e| panic!("fuzz config {c}: {e:?}")))
            .map(|c| Arc::new(Shared::new(c)))
            .collect()
    });
    all.get(i).cloned()
}

struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn piece(&mut self) -> Vec<u8> {
        let n = usize::from(u16::from_le_bytes([self.byte().unwrap_or(0), self.byte().unwrap_or(0)])).min(self.0.len());
        let (piece, rest) = self.0.split_at(n);
        self.0 = rest;
        piece.to_vec()
    }
}

fn headers(pairs: &[(&str, &str)], end_of_stream: bool) -> HttpHeaders {
    let headers = pairs.iter().map(|(k, v)| HeaderValue { key: (*k).to_string(), raw_value: v.as_bytes().to_vec(), ..Default::default() }).collect();
    HttpHeaders { headers: Some(HeaderMap { headers }), end_of_stream, ..Default::default() }
}

fn string(s: &str) -> Value {
    Value { kind: Some(Kind::StringValue(s.to_string())) }
}

/// Which answers Envoy accepts for a message: its own kind, and for body and trailers messages also
/// the request headers held for the body; an immediate response for anything on the request path.
fn fits(msg: &Request, answer: &ProcessingResponse) -> bool {
    match (msg, &answer.response) {
        (Request::RequestHeaders(_), Some(Response::RequestHeaders(_) | Response::ImmediateResponse(_))) => true,
        (Request::RequestBody(_), Some(Response::RequestHeaders(_) | Response::RequestBody(_) | Response::ImmediateResponse(_))) => true,
        (Request::RequestTrailers(_), Some(Response::RequestHeaders(_) | Response::RequestBody(_) | Response::RequestTrailers(_) | Response::ImmediateResponse(_))) => true,
        (Request::ResponseHeaders(_), Some(Response::ResponseHeaders(_))) => true,
        // full-duplex responses: held response headers go out with the body's end or its trailers
        (Request::ResponseBody(_), Some(Response::ResponseHeaders(_) | Response::ResponseBody(_))) => true,
        (Request::ResponseTrailers(_), Some(Response::ResponseHeaders(_) | Response::ResponseBody(_) | Response::ResponseTrailers(_))) => true,
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let (Some(flags), Some(path), Some(kind)) = (input.byte(), input.byte(), input.byte()) else { return };
    let Some(shared) = shared(usize::from(flags & 3) % CONFIGS.len()) else { return };
    let streamed = flags & 4 != 0;
    let observe = flags & 8 != 0;
    let mut attrs = Struct::default();
    match (flags >> 4) & 3 {
        1 => drop(attrs.fields.insert("xds.route_metadata.filter_metadata.toolfit.profile".into(), string("mcp"))),
        2 => drop(attrs.fields.insert("xds.route_metadata.filter_metadata.toolfit.strict".into(), Value { kind: Some(Kind::BoolValue(true)) })),
        3 => drop(attrs.fields.insert("xds.route_metadata.filter_metadata.toolfit.disabled".into(), string("true"))),
        _ => {}
    }
    if flags & 64 != 0 {
        attrs.fields.insert("xds.route_name".into(), string("chat"));
    }
    let path = PATHS[usize::from(path) % PATHS.len()];
    let ct = CONTENT_TYPES[usize::from(kind & 3)];
    let mut pairs = vec![(":method", "POST"), (":path", path), ("accept-encoding", "gzip, br")];
    if let Some(ct) = ct {
        pairs.push(("content-type", ct));
    }
    if kind & 4 != 0 {
        pairs.push(("content-encoding", "gzip"));
    }
    let request_headers = headers(&pairs, kind & 8 != 0);
    let mode = if streamed { BodySendMode::FullDuplexStreamed } else { BodySendMode::Buffered };
    let response_mode = if flags & 128 != 0 { BodySendMode::FullDuplexStreamed } else { BodySendMode::Streamed };
    let first = ProcessingRequest {
        request: Some(Request::RequestHeaders(request_headers.clone())),
        attributes: [("envoy.filters.http.ext_proc".to_string(), attrs)].into_iter().collect(),
        protocol_config: Some(ProtocolConfiguration { request_body_mode: mode as i32, response_body_mode: response_mode as i32, ..Default::default() }),
        observability_mode: observe,
        ..Default::default()
    };
    let mut messages = vec![first];
    let mut bytes_in = data.len();
    while let Some(op) = input.byte() {
        let end = op & 8 != 0;
        let request = match op % 6 {
            0 => Request::RequestBody(HttpBody { body: input.piece(), end_of_stream: end, ..Default::default() }),
            1 => Request::RequestTrailers(HttpTrailers::default()),
            2 => {
                let b = input.byte().unwrap_or(0);
                let ct = ["application/json", "text/event-stream", "application/x-ndjson", "text/plain"][usize::from(b >> 2 & 3)];
                let mut pairs = vec![(":status", STATUS[usize::from(b & 3)]), ("content-type", ct)];
                if b & 16 != 0 {
                    pairs.push(("content-encoding", "gzip"));
                }
                Request::ResponseHeaders(headers(&pairs, end))
            }
            3 => Request::ResponseBody(HttpBody { body: input.piece(), end_of_stream: end, ..Default::default() }),
            4 => Request::ResponseTrailers(HttpTrailers::default()),
            _ => Request::RequestHeaders(request_headers.clone()),
        };
        messages.push(ProcessingRequest { request: Some(request), observability_mode: observe, ..Default::default() });
        if messages.len() > 4096 {
            break;
        }
    }
    let mut session = Session::new(shared);
    let mut bytes_out = 0usize;
    for msg in messages {
        let Some(kind) = msg.request.clone() else { continue };
        bytes_in += 64;
        let answers = session.on(msg);
        assert!(answers.len() <= 3, "{} answers to one message", answers.len());
        for a in &answers {
            assert!(fits(&kind, a), "answer {:?} to a {:?}", a.response.as_ref().map(std::mem::discriminant), std::mem::discriminant(&kind));
            bytes_out += a.encoded_len();
        }
        if observe {
            assert!(answers.is_empty(), "observability mode takes no answers");
        }
    }
    session.end();
    // a rewrite can grow a body (a name mapped, a description added, a schema unrolled), within this
    assert!(bytes_out <= 64 * bytes_in + 65_536, "{bytes_out} bytes out for {bytes_in} in");
});
