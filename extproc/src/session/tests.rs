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
    message(request, first, processing_mode::BodySendMode::Buffered)
}

/// A message of a stream whose response body is full duplex and whose request body comes as `mode`
/// says (the stream's protocol configuration rides on its `first` message).
fn message(request: processing_request::Request, first: bool, mode: processing_mode::BodySendMode) -> ProcessingRequest {
    let protocol_config = first.then(|| ProtocolConfiguration {
        request_body_mode: mode as i32,
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

fn duplex_msg(request: processing_request::Request, first: bool) -> ProcessingRequest {
    message(request, first, processing_mode::BodySendMode::FullDuplexStreamed)
}

fn request_piece(bytes: &[u8], end: bool) -> ProcessingRequest {
    duplex_msg(processing_request::Request::RequestBody(HttpBody { body: bytes.to_vec(), end_of_stream: end, ..HttpBody::default() }), false)
}

/// What full-duplex request answers carry: the streamed bytes in order, whether the last ends the
/// stream, and the header mutations answered (one entry per headers answer: its set headers' names).
fn request_streamed(answers: &[ProcessingResponse]) -> (Vec<u8>, bool, Vec<Vec<String>>) {
    let mut out = (Vec::new(), false, Vec::new());
    for a in answers {
        match &a.response {
            Some(processing_response::Response::RequestBody(b)) => {
                match b.response.as_ref().and_then(|c| c.body_mutation.as_ref()).and_then(|m| m.mutation.as_ref()) {
                    Some(body_mutation::Mutation::StreamedResponse(r)) => {
                        out.0.extend_from_slice(&r.body);
                        out.1 = r.end_of_stream;
                    }
                    other => panic!("a full-duplex body answer must be streamed bytes, got {other:?}"),
                }
            }
            Some(processing_response::Response::RequestHeaders(h)) => {
                let set = h
                    .response
                    .as_ref()
                    .and_then(|c| c.header_mutation.as_ref())
                    .map(|m| m.set_headers.iter().filter_map(|o| o.header.as_ref()).map(|h| h.key.clone()).collect());
                out.2.push(set.unwrap_or_default());
            }
            _ => {}
        }
    }
    out
}

/// A chat body whose tools openai-strict rewrites, after some conversation.
fn chat_body() -> Vec<u8> {
    let turns: Vec<String> = (0..40).map(|i| format!(r#"{{"role":"user","content":"turn {i} of the conversation"}}"#)).collect();
    let tools =
        r#"[{"type":"function","function":{"name":"gh.search","parameters":{"type":"object","properties":{"q":{"type":"string","pattern":"^\\p{Lu}"}}}}}]"#;
    format!(r#"{{"model":"m","messages":[{}],"tools":{tools}}}"#, turns.join(",")).into_bytes()
}

/// A full-duplex request in `framing`, its body in pieces of `cut` bytes: every answer until the
/// last piece, then the rescue taken before the last piece and what the session itself answers to it.
fn duplex_until_last(framing: &str, cut: usize) -> (Vec<ProcessingResponse>, Rescue, Vec<ProcessingResponse>, Vec<u8>) {
    let mut s = session(&format!(r#"{{"profile": "openai-strict", "framing": "{framing}"}}"#));
    let body = chat_body();
    let h = headers(&[(":method", "POST"), (":path", "/v1/chat/completions"), ("content-type", "application/json")], false);
    let mut before = s.on(duplex_msg(processing_request::Request::RequestHeaders(h), true));
    let pieces: Vec<&[u8]> = body.chunks(cut).collect();
    let Some((last, rest)) = pieces.split_last() else { panic!("a body") };
    for p in rest {
        before.extend(s.on(request_piece(p, false)));
    }
    let next = Inbound::from(request_piece(last, true));
    let rescue = s.rescue(Some(&next));
    let own = s.take(next);
    (before, rescue, own, body)
}

/// A message the processor gives up on (declined, late, failed) is answered by the rescue taken before
/// it: every byte Envoy handed over comes back once, in order, unchanged, ending the stream, whatever
/// the core had let go or kept. The control: the session's own answer to the same message is the
/// rewrite (so the rescue is not the same answer by chance).
#[test]
fn a_rescue_answers_every_kept_byte_unchanged() {
    for (framing, cut) in [("chunked", 97), ("chunked", 1), ("exact", 211)] {
        let (before, rescue, own, body) = duplex_until_last(framing, cut);
        let (rescued_session, rescued) = rescue.answers();
        let all: Vec<ProcessingResponse> = before.iter().chain(&rescued).cloned().collect();
        let (bytes, end, heads) = request_streamed(&all);
        assert!(bytes == body && end, "{framing}/{cut}: the rescue gives back the body as it came ({} of {} bytes)", bytes.len(), body.len());
        assert!(rescued_session.passing(), "the stream goes on in pass-through");
        if framing == "exact" {
            assert_eq!(heads, vec![Vec::<String>::new()], "exact: the held headers go out once, unchanged, with the body");
        }
        let (own_bytes, own_end, _) = request_streamed(&before.iter().chain(&own).cloned().collect::<Vec<_>>());
        assert!(own_end && own_bytes != body && String::from_utf8_lossy(&own_bytes).contains("gh_search"), "control: the session's own answer is the rewrite");
    }
}

/// The pieces a full-duplex stream keeps count in max_held_bytes: past it the body goes on unread,
/// every kept byte answered unchanged, counted skipped_over_budget, and the memory given back. The
/// control: the same body under a budget that fits is rewritten.
#[test]
fn kept_pieces_count_in_the_memory_budget() {
    for (budget, rewritten) in [(2_000, false), (10_000_000, true)] {
        let config = format!(r#"{{"profile": "openai-strict", "framing": "exact", "max_held_bytes": {budget}}}"#);
        let mut s = session(&config);
        let body = chat_body();
        let h = headers(&[(":method", "POST"), (":path", "/v1/chat/completions"), ("content-type", "application/json")], false);
        let mut answers = s.on(duplex_msg(processing_request::Request::RequestHeaders(h), true));
        let pieces: Vec<&[u8]> = body.chunks(300).collect();
        for (i, p) in pieces.iter().enumerate() {
            answers.extend(s.on(request_piece(p, i + 1 == pieces.len())));
            let held = s.shared.memory.held();
            assert!(held <= budget, "held {held} past {budget}");
            assert!(held >= s.body.len(), "the {} bytes kept are counted: held {held}", s.body.len());
        }
        let (bytes, end, _) = request_streamed(&answers);
        assert!(end, "the stream ends");
        assert_eq!(bytes != body, rewritten, "budget {budget}");
        let rendered = s.shared.metrics.render();
        let skipped = rendered.lines().any(|l| l.starts_with("toolfit_skipped_over_budget") && !l.ends_with(" 0"));
        assert_eq!(skipped, !rewritten, "counted skipped_over_budget: {budget}");
        drop(s.exchange);
        assert!(s.body.is_empty(), "nothing kept");
    }
}
