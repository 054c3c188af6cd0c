//! Full-duplex response bodies, message by message (Envoy runs them in `tests/envoy/responses.py`;
//! these name what each answer must be).
use super::*;
use envoy_types::pb::envoy::config::core::v3::{HeaderMap, HeaderValue};
use envoy_types::pb::envoy::service::ext_proc::v3::{body_mutation, processing_response, ProtocolConfiguration};

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
    let tools = r#"[{"type":"function","function":{"name":"gh.search","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}]"#;
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
