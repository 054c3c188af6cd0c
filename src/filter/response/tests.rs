//! The response path's tests: plain and streamed, every format, split anywhere, compressed.

use super::reply::Seen;
use super::*;
use crate::api;
use crate::api::Format;
use crate::api::NameMap;
use crate::filter::config::OnInvalid;
use crate::filter::encoding::Coding;
use crate::filter::host::{Next, ResponseHost};
use crate::filter::stats::metric_name;
use crate::schema::Report;
use serde_json::Value;

fn reply(format: Format, names: &[(&str, &str)], nulls: bool) -> Reply {
    let schema = r#"{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}"#;
    let tools = names
        .iter()
        .map(|(sent, name)| Tool {
            sent: sent.to_string(),
            name: name.to_string(),
            schema: schema.into(),
            nulls,
            lossy: Vec::new(),
            keys: Vec::new(),
            namespace: None,
        })
        .collect();
    let mut r = Reply::with_tools(format, tools, true, OnInvalid::Count, 1 << 20);
    r.route = "r".into();
    r.profile = "p";
    r
}

#[test]
fn plain_chat_gets_names_back_and_injected_nulls_out() {
    let r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
    let body = r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"gh_search","arguments":"{\"q\":\"a\",\"n\":null}"}}]}}]}"#;
    let mut t = Tally::default();
    let out = String::from_utf8(r.repair_json(body.as_bytes(), &mut t).unwrap()).unwrap();
    assert_eq!(out, body.replace("gh_search", "gh.search").replace(r#",\"n\":null"#, ""));
    assert_eq!((t.names_restored, t.nulls_removed, t.calls.len()), (1, 1, 1));
    assert!(t.calls[0].violation.is_none());
}

#[test]
fn invalid_calls_are_counted_with_their_place() {
    let r = reply(Format::Anthropic, &[("s", "s")], false);
    let body = r#"{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"s","input":{"n":"x"}},{"type":"tool_use","id":"u","name":"nope","input":{}}]}"#;
    let mut t = Tally::default();
    assert!(r.repair_json(body.as_bytes(), &mut t).is_none(), "nothing to repair");
    assert_eq!(t.calls.len(), 2);
    let v = t.calls[0].violation.as_ref().unwrap();
    assert_eq!((v.instance.as_str(), v.schema.as_str()), ("/", "/required"));
    assert!(t.calls[1].violation.as_ref().unwrap().reason.contains("does not declare"));
}

/// Every way of cutting `body` in two gives the same output as the whole.
fn every_split(r: &Reply, framing: Events, body: &str) -> (String, Tally) {
    let mut whole = Stream::new(r.clone(), framing, Coding::Identity);
    let expect = whole.feed(body.as_bytes(), true);
    for at in 0..=body.len() {
        let mut s = Stream::new(r.clone(), framing, Coding::Identity);
        let (a, b) = body.as_bytes().split_at(at);
        let mut got = s.feed(a, false);
        got.extend(s.feed(b, true));
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&expect), "split at {at}");
        assert_eq!(s.tally, whole.tally, "split at {at}");
    }
    (String::from_utf8(expect).unwrap(), whole.tally)
}

#[test]
fn chat_stream_split_anywhere() {
    let r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
    let ev = |j: &str| format!("data: {j}\n\n");
    let body = [
        ev(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}"#),
        ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"gh_","arguments":""}}]},"finish_reason":null}]}"#),
        ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"search","arguments":"{\"q\":\"a\","}}]},"finish_reason":null}]}"#),
        ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"n\":null}"}}]},"finish_reason":null}]}"#),
        ev(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    let (out, t) = every_split(&r, Events::Sse, &body);
    assert_eq!((t.names_restored, t.nulls_removed, t.calls.len()), (1, 1, 1));
    // what a client assembles: the concatenated fragments
    let (mut name, mut args) = (String::new(), String::new());
    for line in out.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|l| *l != "[DONE]") {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(f) = v.pointer("/choices/0/delta/tool_calls/0/function") {
            name += f.get("name").and_then(Value::as_str).unwrap_or("");
            args += f.get("arguments").and_then(Value::as_str).unwrap_or("");
        }
    }
    assert_eq!((name.as_str(), args.as_str()), ("gh.search", r#"{"q":"a"}"#));
    assert!(
        out.starts_with(&ev(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}"#)),
        "untouched events as they came"
    );
}

#[test]
fn a_stream_needing_no_repair_is_never_held() {
    let r = reply(Format::OpenAiChat, &[("s", "s")], false);
    let e1 = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"s\",\"arguments\":\"{\\\"n\\\":\"}}]}}]}\n\n";
    let mut s = Stream::new(r, Events::Sse, Coding::Identity);
    assert_eq!(s.feed(e1.as_bytes(), false), e1.as_bytes());
    let e2: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n";
    assert_eq!(s.feed(e2, true), e2);
    assert_eq!(s.tally.calls.len(), 1);
    assert_eq!(s.tally.calls[0].violation.as_ref().unwrap().schema, "/required", "q is missing");
}

#[test]
fn anthropic_and_responses_streams() {
    let r = reply(Format::Anthropic, &[("gh_search", "gh.search")], false);
    let body = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"gh_search\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\": \\\"x\\\"}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let (out, t) = every_split(&r, Events::Sse, body);
    assert_eq!(out, body.replace("\"gh_search\"", "\"gh.search\""));
    assert_eq!((t.names_restored, t.calls.len()), (1, 1));

    let r = reply(Format::OpenAiResponses, &[("gh_search", "gh.search")], true);
    let body = concat!(
        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"\"}}\n\n",
        "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"{\\\"q\\\":\\\"a\\\",\\\"n\\\":null}\"}\n\n",
        "event: response.function_call_arguments.done\ndata: {\"type\":\"response.function_call_arguments.done\",\"output_index\":0,\"arguments\":\"{\\\"q\\\":\\\"a\\\",\\\"n\\\":null}\"}\n\n",
        "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"{\\\"q\\\":\\\"a\\\",\\\"n\\\":null}\"}}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"{\\\"q\\\":\\\"a\\\",\\\"n\\\":null}\"}]}}\n\n",
    );
    let (out, t) = every_split(&r, Events::Sse, body);
    assert!(!out.contains("gh_search") && !out.contains("null"), "{out}");
    assert!(out.contains(r#""delta":"{\"q\":\"a\"}""#), "the first delta carries the repaired arguments: {out}");
    assert_eq!(t.calls.len(), 1, "the closing summary is not counted again");
}

#[test]
fn gemini_and_ollama_events_carry_whole_calls() {
    let r = reply(Format::Gemini, &[("_9lives", "9lives")], false);
    let body = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"_9lives\",\"args\":{\"q\":\"a\"}}}]}}]}\r\n\r\n";
    let (out, t) = every_split(&r, Events::Sse, body);
    assert_eq!(out, body.replace("_9lives", "9lives"));
    assert_eq!(t.calls.len(), 1);
    let r = reply(Format::Ollama, &[("s", "s")], false);
    let body = "{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"s\",\"arguments\":{\"q\":1}}}]},\"done\":false}\n{\"done\":true}\n";
    let (out, t) = every_split(&r, Events::Lines, body);
    assert_eq!(out, body);
    assert_eq!(t.calls[0].violation.as_ref().unwrap().instance, "/q");
}

#[test]
fn reply_reads_the_request_as_sent() {
    let body = br#"{"messages":[{"role":"user","content":"long"}],"tools":[{"type":"function","function":{"name":"a.b","parameters":{"type":"object"}}}]}"#;
    let out = api::rewrite_body(body, Format::OpenAiChat, &crate::schema::profile::OPENAI, &Default::default()).unwrap();
    let lists = out.tool_lists_of(std::borrow::Cow::Borrowed(&body[..]));
    let text = String::from_utf8(lists.clone()).unwrap();
    assert!(!text.contains("messages"), "a borrowed body: only the tool lists are copied: {text}");
    // an owned body that is mostly its tool lists is kept whole (no copy), and read the same
    let whole = out.tool_lists_of(std::borrow::Cow::Owned(body.to_vec()));
    assert_eq!(whole, body.to_vec(), "a catalog-sized list: the body itself");
    let long = format!(r#"{{"messages":[{{"role":"user","content":"{}"}}],"tools":[]}}"#, "x".repeat(500));
    let o = api::rewrite_body(long.as_bytes(), Format::OpenAiChat, &crate::schema::profile::OPENAI, &Default::default()).unwrap();
    assert_eq!(o.tool_lists_of(std::borrow::Cow::Owned(long.clone().into_bytes())), br#"{"tools":[]}"#.to_vec(), "long messages: the lists are copied out");
    for lists in [lists, whole] {
        let r = Reply::of(lists, Format::OpenAiChat, out.names.clone(), &out.report, true, OnInvalid::Count, 100);
        assert!(r.repairs(), "a name was mapped");
        assert_eq!((r.tools()[0].sent.as_str(), r.tools()[0].name.as_str(), r.tools()[0].schema.as_str()), ("a_b", "a.b", r#"{"type":"object"}"#));
        assert_eq!(r.tools().len(), 1);
    }
    let r = Reply::of(r#"{"messages":[]}"#.into(), Format::OpenAiChat, NameMap::default(), &Report::default(), true, OnInvalid::Count, 100);
    assert!(r.tools().is_empty() && !r.repairs());
}

use crate::filter::stats::testing::Counts;

#[test]
fn counts_go_to_the_route_and_each_tool() {
    let mut r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], false);
    let mut tools = r.tools().to_vec();
    tools[0].lossy = vec!["/properties/n".into()];
    let route = r.route.clone();
    r = Reply::with_tools(r.format, tools, true, OnInvalid::Count, r.max_bytes);
    r.route = route;
    r.profile = "p";
    let body = r#"{"choices":[{"message":{"tool_calls":[{"function":{"name":"gh_search","arguments":"{\"q\":\"a\",\"n\":\"x\"}"}},{"function":{"name":"gh_search","arguments":"{\"q\":\"a\"}"}}]}}]}"#;
    let mut t = Tally::default();
    assert!(r.repair_json(body.as_bytes(), &mut t).is_some());
    let mut m = Counts::default();
    let line = t.count(&r.route, r.profile, &mut m).unwrap();
    let get = |c: &str| m.0.get(&metric_name("r", "p", c)).copied().unwrap_or(0);
    assert_eq!((get("tool_calls_seen"), get("tool_calls_invalid"), get("tool_calls_invalid_lossy"), get("names_restored")), (2, 1, 1, 2));
    assert_eq!((get("tool.gh_search.calls_seen"), get("tool.gh_search.calls_invalid"), get("tool.gh_search.calls_invalid_lossy")), (2, 1, 1));
    assert!(line.text.contains(r#"tool "gh.search" at /n: expected "integer""#) && line.text.contains("lossy"), "{}", line.text);
}

#[test]
fn a_chat_event_that_mentions_the_responses_summary_is_only_chat() {
    let r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], false);
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"gh_\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"response.completed\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"search\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
    );
    let (out, t) = every_split(&r, Events::Sse, body);
    assert_eq!((t.calls.len(), t.names_restored), (1, 1), "{out}");
    assert!(out.contains("gh.search"), "{out}");
}

fn gzip(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn chat_call_stream() -> String {
    let ev = |j: &str| format!("data: {j}\n\n");
    [
        ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"gh_search","arguments":"{\"q\":"}}]},"finish_reason":null}]}"#),
        ev(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\",\"n\":null}"}}]},"finish_reason":null}]}"#),
        ev(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat()
}

#[test]
fn gzip_streams_are_repaired_decoded_or_passed_compressed() {
    let body = chat_call_stream();
    let z = gzip(body.as_bytes());
    let mapped = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
    for cut in [1, 10, z.len() / 2, z.len() - 1] {
        // repairs due: what goes on is the decoded stream, repaired
        let mut s = Stream::new(mapped.clone(), Events::Sse, Coding::Gzip);
        let mut out = s.feed(&z[..cut], false);
        out.extend(s.feed(&z[cut..], true));
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("gh.search") && !out.contains(r#"\"n\""#) && out.ends_with("data: [DONE]\n\n"), "{out}");
        assert_eq!((s.tally.names_restored, s.tally.nulls_removed, s.tally.unrepaired), (1, 1, 0));
        // only read (nothing to repair): the compressed bytes go on as they came, still counted
        let read_only = reply(Format::OpenAiChat, &[("gh_search", "gh_search")], false);
        let mut s = Stream::new(read_only, Events::Sse, Coding::Gzip);
        let mut out = s.feed(&z[..cut], false);
        out.extend(s.feed(&z[cut..], true));
        assert_eq!(out, z);
        assert_eq!(s.tally.calls.len(), 1);
    }
}

#[test]
fn gemini_argument_keys_get_their_original_names_back() {
    let schema = r#"{"type":"object","properties":{"issue-key":{"type":"string"},"page":{"type":"object","properties":{"per.page":{"type":"integer"}}}},"required":["issue-key"]}"#;
    let keys = vec![("issue_key".to_string(), "issue-key".to_string()), ("per_page".to_string(), "per.page".to_string())];
    let tool = Tool { sent: "jira".into(), name: "jira".into(), schema: schema.into(), nulls: false, lossy: Vec::new(), keys, namespace: None };
    let r = Reply::with_tools(Format::Gemini, vec![tool], true, OnInvalid::Count, 1 << 20);
    assert!(r.repairs());
    let body = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"jira","args":{"issue_key":"AB-1","page":{"per_page":5}}}}]}}]}"#;
    let mut t = Tally::default();
    let out = String::from_utf8(r.repair_json(body.as_bytes(), &mut t).unwrap()).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.pointer("/candidates/0/content/parts/0/functionCall/args").unwrap(), &serde_json::json!({"issue-key": "AB-1", "page": {"per.page": 5}}));
    assert_eq!((t.properties_restored, t.calls.len(), t.calls[0].violation.is_none()), (2, 1, true), "valid against the client's schema once restored");
    // streamed: each event carries whole calls
    let (out, t) = every_split(&r, Events::Sse, &format!("data: {body}\n\n"));
    assert!(out.contains(r#""issue-key":"AB-1""#) && t.properties_restored == 2, "{out}");
}

#[test]
fn a_stream_that_does_not_decode_goes_on_as_it_came() {
    let mapped = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
    let mut s = Stream::new(mapped, Events::Sse, Coding::Gzip);
    let junk = b"this is not gzip at all, but the upstream said so".to_vec();
    let mut out = s.feed(&junk[..10], false);
    out.extend(s.feed(&junk[10..], true));
    assert_eq!(out, junk);
    assert_eq!(s.tally.unrepaired, 1);
}

#[test]
fn begin_reads_status_type_and_encoding() {
    let plain = reply(Format::OpenAiChat, &[("s", "s")], false);
    let mapped = reply(Format::OpenAiChat, &[("a_b", "a.b")], false);
    let json = Some("application/json; charset=utf-8");
    assert_eq!(begin(&plain, 200, false, json, None), Begin::Json { hold: false, wait: false, coding: Coding::Identity });
    assert_eq!(begin(&mapped, 200, false, json, None), Begin::Json { hold: true, wait: false, coding: Coding::Identity });
    assert_eq!(begin(&mapped, 500, false, json, None), Begin::Skip);
    assert_eq!(begin(&mapped, 200, true, json, None), Begin::Skip);
    assert_eq!(begin(&mapped, 200, false, Some("text/html"), None), Begin::Skip);
    assert_eq!(begin(&mapped, 200, false, json, Some("gzip")), Begin::Json { hold: true, wait: false, coding: Coding::Gzip });
    assert_eq!(begin(&mapped, 200, false, json, Some("br")), Begin::Encoded);
    assert_eq!(begin(&plain, 200, false, Some("text/event-stream"), Some("zstd")), Begin::Encoded);
    // decoded on the way out only when the body may change
    assert!(begin(&mapped, 200, false, json, Some("gzip")).decodes(&mapped));
    assert!(!begin(&plain, 200, false, json, Some("gzip")).decodes(&plain));
    assert!(!begin(&mapped, 200, false, json, None).decodes(&mapped));
    assert!(Begin::Stream(Events::Sse, Coding::Deflate).decodes(&mapped) && !Begin::Stream(Events::Sse, Coding::Deflate).decodes(&plain));
    assert_eq!(begin(&mapped, 200, false, Some("text/event-stream"), Some("identity")), Begin::Stream(Events::Sse, Coding::Identity));
    assert_eq!(begin(&plain, 200, false, Some("application/x-ndjson"), None), Begin::Stream(Events::Lines, Coding::Identity));
    assert!(!Begin::Stream(Events::Sse, Coding::Identity).changes(&plain) && Begin::Stream(Events::Sse, Coding::Identity).changes(&mapped));
    let mut rejecting = plain.clone();
    rejecting.on_invalid = OnInvalid::Reject;
    assert_eq!(begin(&rejecting, 200, false, json, None), Begin::Json { hold: true, wait: true, coding: Coding::Identity });
}

#[test]
fn a_held_call_past_the_limit_goes_on_as_it_came() {
    let mut r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], false);
    r.max_bytes = 50;
    let e = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"gh_search\",\"arguments\":\"\"}}]}}]}\n\n";
    let mut s = Stream::new(r, Events::Sse, Coding::Identity);
    assert_eq!(s.feed(e.as_bytes(), false), e.as_bytes());
    assert_eq!(s.tally.unrepaired, 1);
}

/// A host as Envoy behaves for the response path: each callback's chunk sits in a buffer the flow may
/// replace; what is in it after the callback goes to the client. Headers are a map; `fail` names
/// headers whose change fails.
#[derive(Default)]
struct Host {
    buffer: Vec<u8>,
    sent: Vec<u8>,
    headers: std::collections::BTreeMap<String, String>,
    fail: Vec<&'static str>,
}

impl ResponseHost for Host {
    fn chunk(&mut self, size: usize) -> Option<Vec<u8>> {
        self.buffer.get(..size).map(<[u8]>::to_vec)
    }
    fn set_chunk(&mut self, size: usize, bytes: &[u8]) -> bool {
        let rest = self.buffer.split_off(size.min(self.buffer.len()));
        self.buffer = [bytes, &rest].concat();
        true
    }
    fn set_header(&mut self, name: &str, value: &str) -> bool {
        if self.fail.contains(&name) {
            return false;
        }
        self.headers.insert(name.into(), value.into());
        true
    }
    fn remove_header(&mut self, name: &str) -> bool {
        if self.fail.contains(&name) {
            return false;
        }
        self.headers.remove(name);
        true
    }
}

/// Runs a JSON response through a flow in chunks of `size` bytes: (what the client got, each
/// callback's answer, the counters).
fn through_flow(r: Reply, body: &str, size: usize, host: &mut Host) -> (String, Vec<Next>, Counts) {
    let (mut m, mut logs, mut warn) = (Counts::default(), crate::filter::log::LogLimiter::default(), |_: &str| {});
    let mut sink = Sink { metrics: &mut m, logs: &mut logs, now_s: 0, lines_per_second: 10, warn: &mut warn };
    host.headers.insert("content-length".into(), body.len().to_string());
    let (mut flow, first) = Flow::start(r, 200, false, Some("application/json"), None, host, &mut sink);
    let mut nexts = vec![first];
    let chunks: Vec<&[u8]> = body.as_bytes().chunks(size).collect();
    for (i, c) in chunks.iter().enumerate() {
        host.buffer = c.to_vec();
        nexts.push(flow.body(host, &mut sink, c.len(), i + 1 == chunks.len()));
        let out = std::mem::take(&mut host.buffer);
        host.sent.extend_from_slice(&out);
    }
    flow.done(&mut sink);
    (String::from_utf8_lossy(&host.sent).into_owned(), nexts, m)
}

const CHAT_CALL: &str = r#"{"choices":[{"message":{"tool_calls":[{"function":{"name":"gh_search","arguments":"{\"q\":\"a\",\"n\":null}"}}]}}]}"#;

#[test]
fn a_held_json_response_comes_out_repaired_whole_without_its_length() {
    let mut host = Host::default();
    let (sent, nexts, m) = through_flow(reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true), CHAT_CALL, 7, &mut host);
    assert_eq!(sent, CHAT_CALL.replace("gh_search", "gh.search").replace(r#",\"n\":null"#, ""));
    assert!(!host.headers.contains_key("content-length"), "the length changes: it goes");
    assert!(nexts.iter().all(|n| *n == Next::Continue), "count mode never pauses");
    assert_eq!(m.0.get(&metric_name("r", "p", "names_restored")), Some(&1));
}

#[test]
fn reject_answers_502_with_the_tool_and_pauses_until_the_end() {
    let schema = r#"{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}"#;
    let tool = Tool { sent: "s".into(), name: "s".into(), schema: schema.into(), nulls: false, lossy: vec![], keys: vec![], namespace: None };
    let mut r = Reply::with_tools(Format::OpenAiChat, vec![tool], true, OnInvalid::Reject, 1 << 20);
    (r.route, r.profile) = ("r".into(), "p");
    let body = r#"{"choices":[{"message":{"tool_calls":[{"function":{"name":"s","arguments":"{}"}}]}}]}"#;
    let mut host = Host::default();
    let (sent, nexts, m) = through_flow(r, body, 10, &mut host);
    assert_eq!(host.headers.get(":status").map(String::as_str), Some("502"));
    assert_eq!(host.headers.get("content-length"), Some(&sent.len().to_string()));
    let v: Value = serde_json::from_str(&sent).unwrap();
    assert_eq!((v["error"]["tool"].as_str(), v["error"]["path"].as_str()), (Some("s"), Some("/")));
    assert_eq!(nexts.first(), Some(&Next::Pause), "the headers wait for the body");
    assert_eq!(nexts.last(), Some(&Next::Continue));
    assert_eq!(m.0.get(&metric_name("r", "p", "tool_calls_rejected")), Some(&1));
}

#[test]
fn a_header_the_host_cannot_change_leaves_the_response_as_it_came() {
    let mut host = Host { fail: vec!["content-length"], ..Host::default() };
    let (sent, _, m) = through_flow(reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true), CHAT_CALL, 9, &mut host);
    assert_eq!(sent, CHAT_CALL, "a body that cannot lose its length must not change");
    assert_eq!(m.0.get(&metric_name("r", "p", "internal_errors")), Some(&1));
    // and a 502 whose headers cannot be set is counted unrepaired, the repaired body sent
    let mut host = Host { fail: vec![":status"], ..Host::default() };
    let mut r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
    r.on_invalid = OnInvalid::Reject;
    let bad = CHAT_CALL.replace(r#"\"q\":\"a\","#, "");
    let (sent, _, m) = through_flow(r, &bad, 9, &mut host);
    assert!(sent.contains("gh.search"), "{sent}");
    assert_eq!(m.0.get(&metric_name("r", "p", "responses_unrepaired")), Some(&1));
}

#[test]
fn reply_takes_nulls_keys_and_lossy_places_from_the_report() {
    use crate::schema::{Kind, Record};
    let lists = br#"{"tools":[{"type":"function","function":{"name":"t","parameters":{"type":"object"}}},{"type":"function","function":{"name":"u","parameters":{"type":"object"}}}]}"#;
    let rec = |tool: &str, path: &str, kind: Kind, detail: &str| Record { tool: tool.into(), path: path.into(), kind, detail: detail.into() };
    assert!(Kind::PatternRemoved.lossy() && Kind::OptionalNullable.lossy() && !Kind::PropertyMapped.lossy());
    let mut report = Report::default();
    report.push(rec("t", "/properties/a", Kind::OptionalNullable, "optional: required and nullable"));
    report.push(rec("t", "/properties/b/pattern", Kind::PatternRemoved, "lookahead"));
    report.push(rec("u", "/properties/c.d", Kind::PropertyMapped, r#"property "c.d" sent as "c_d""#));
    let of = |report: &Report| {
        let r = Reply::of(lists.to_vec(), Format::OpenAiChat, NameMap::default(), report, false, OnInvalid::Count, 100);
        let tools = r.tools().to_vec();
        (r, tools)
    };
    let (r, tools) = of(&report);
    assert!(r.repairs() && r.wanted(), "nulls and keys to repair");
    let (t, u) = (&tools[0], &tools[1]);
    assert_eq!((t.nulls, u.nulls), (true, false), "only the tool a record names was made nullable");
    assert_eq!((t.lossy.clone(), u.lossy.clone()), (vec!["/properties/a".to_string(), "/properties/b/pattern".to_string()], vec![]));
    assert_eq!((t.keys.clone(), u.keys.clone()), (vec![], vec![("c_d".to_string(), "c.d".to_string())]));
    // records past the cap may have named more tools: then every tool is taken as made nullable
    let mut capped = report.clone();
    capped.dropped_records = 1;
    assert!(of(&capped).1.iter().all(|t| t.nulls));
    // ... but only when the rewrite made any nullable at all
    let mut none = Report::default();
    none.push(rec("u", "/properties/c.d", Kind::PropertyMapped, r#"property "c.d" sent as "c_d""#));
    none.dropped_records = 1;
    assert!(of(&none).1.iter().all(|t| !t.nulls));
    // nothing to repair and no validation: the response is not worth reading; validation alone is
    let quiet = Reply::of(lists.to_vec(), Format::OpenAiChat, NameMap::default(), &Report::default(), false, OnInvalid::Count, 100);
    assert!(!quiet.wanted());
    let checking = Reply::of(lists.to_vec(), Format::OpenAiChat, NameMap::default(), &Report::default(), true, OnInvalid::Count, 100);
    assert!(checking.wanted() && !checking.repairs());
}

#[test]
fn fix_changes_arguments_only_when_it_changed_something() {
    let mut tool = reply(Format::OpenAiChat, &[("s", "s")], true).tools()[0].clone();
    tool.keys = vec![("a_b".into(), "a.b".into())];
    let r = Reply::with_tools(Format::OpenAiChat, vec![tool], true, OnInvalid::Count, 1 << 20);
    let mut t = Tally::default();
    // spelled with spaces: a rewrite would respell it, so no repair must give no new text
    let same = r.fix("s", r#"{ "q": "x" }"#, Seen::First, &mut t);
    assert_eq!((same.name, same.args), (None, None));
    let keys = r.fix("s", r#"{"q": "x", "a_b": 1}"#, Seen::First, &mut t);
    assert_eq!(keys.args.as_deref(), Some(r#"{"q":"x","a.b":1}"#));
    let nulls = r.fix("s", r#"{"q": "x", "n": null}"#, Seen::First, &mut t);
    assert_eq!(nulls.args.as_deref(), Some(r#"{"q":"x"}"#));
    assert_eq!((t.properties_restored, t.nulls_removed, t.calls.len()), (1, 1, 3));
    // a call not counted (a stream's call seen again) adds no call, also for an undeclared tool
    let mut quiet = Tally::default();
    r.fix("s", "{}", Seen::Again, &mut quiet);
    r.fix("nope", "{}", Seen::Again, &mut quiet);
    assert!(quiet.calls.is_empty());
    r.fix("nope", "{}", Seen::First, &mut quiet);
    assert_eq!(quiet.calls.len(), 1);
}

#[test]
fn begin_keeps_the_coding_of_a_stream() {
    let mapped = reply(Format::OpenAiChat, &[("a_b", "a.b")], false);
    assert_eq!(begin(&mapped, 200, false, Some("text/event-stream"), Some("gzip")), Begin::Stream(Events::Sse, Coding::Gzip));
    assert_eq!(begin(&mapped, 200, false, Some("application/x-ndjson"), Some("deflate")), Begin::Stream(Events::Lines, Coding::Deflate));
}

#[test]
fn a_stream_says_what_it_keeps_and_whether_it_holds() {
    let body = chat_call_stream();
    let first_event = body.find("\n\n").map_or(0, |i| i + 2);
    let (event, partial) = (&body.as_bytes()[..first_event], &b"data: {\"choi"[..]);
    // repairs to make: the call's first event is held whole, and an incomplete one kept
    let mut s = Stream::new(reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true), Events::Sse, Coding::Identity);
    assert!(!s.holding() && s.kept() == 0);
    assert!(s.feed(event, false).is_empty(), "a call being repaired is held");
    assert!(s.holding());
    assert_eq!(s.kept(), event.len(), "its bytes, not a count of events");
    s.feed(partial, false);
    assert_eq!(s.kept(), event.len() + partial.len());
    // nothing to repair: events go as they come; an incomplete one is kept but holds nothing back
    let mut plain = Stream::new(reply(Format::OpenAiChat, &[("s", "s")], false), Events::Sse, Coding::Identity);
    plain.feed(partial, false);
    assert_eq!(plain.kept(), partial.len());
    assert!(!plain.holding());
    // a stream cut while holding counts its call as not repaired
    let mut m = Counts::default();
    let mut logs = crate::filter::log::LogLimiter::default();
    let mut warn = |_: &str| {};
    let mut sink = Sink { metrics: &mut m, logs: &mut logs, now_s: 0, lines_per_second: 10, warn: &mut warn };
    let mut held_only = Stream::new(reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true), Events::Sse, Coding::Identity);
    held_only.feed(event, false);
    assert!(held_only.holding(), "a held event and nothing incomplete");
    for stream in [s, held_only, plain] {
        Flow::Stream(Box::new(stream)).done(&mut sink);
    }
    assert_eq!(m.0.get(&metric_name("r", "p", "responses_unrepaired")).copied(), Some(2), "{:?}", m.0);
}

/// `body`'s events up to (not including) the one containing `marker`, fed with the body not ended.
fn fed_until(r: &Reply, body: &str, marker: &str) -> (String, String, Tally) {
    let cut = body.find(marker).and_then(|m| body.get(..m)).and_then(|b| b.rfind("\n\n")).map_or(0, |i| i + 2);
    let (head, tail) = body.split_at(cut);
    let mut s = Stream::new(r.clone(), Events::Sse, Coding::Identity);
    let out = String::from_utf8(s.feed(head.as_bytes(), false)).unwrap();
    assert!(!tail.is_empty(), "{marker} not in the body");
    (out, head.to_string(), std::mem::take(&mut s.tally))
}

#[test]
fn a_call_is_released_when_it_closes_not_at_the_end() {
    // chat: the finish_reason closes every call
    let r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
    let (out, head, t) = fed_until(&r, &chat_call_stream(), "[DONE]");
    assert_eq!(out.matches("\n\n").count(), head.matches("\n\n").count(), "every event released at finish_reason: {out}");
    assert!(out.contains("gh.search") && !out.contains(r#"\"n\":null"#) && out.ends_with("\"finish_reason\":\"tool_calls\"}]}\n\n"), "{out}");
    assert_eq!(t.calls.len(), 1);
    // anthropic: content_block_stop closes its block's call
    let r = reply(Format::Anthropic, &[("gh_search", "gh.search")], false);
    let body = concat!(
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"gh_search\",\"input\":{}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let (out, head, _) = fed_until(&r, body, "message_stop");
    assert_eq!(out, head.replace("gh_search", "gh.search"));
    // responses: a closing summary closes what is still open
    let r = reply(Format::OpenAiResponses, &[("gh_search", "gh.search")], false);
    let body = concat!(
        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"\"}}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"{}\"}]}}\n\n",
        "data: [DONE]\n\n",
    );
    let (out, head, t) = fed_until(&r, body, "[DONE]");
    assert_eq!(out, head.replace("gh_search", "gh.search"), "released at the summary");
    assert_eq!(t.calls.len(), 1);
}

#[test]
fn a_stream_ends_with_its_last_event_even_without_a_blank_line() {
    let r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
    let last = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bye\"},\"finish_reason\":\"stop\"}]}";
    let mut s = Stream::new(r, Events::Sse, Coding::Identity);
    assert_eq!(String::from_utf8(s.feed(last.as_bytes(), true)).unwrap(), last);
}

#[test]
fn a_held_call_of_exactly_the_limit_is_still_held_and_bytes_that_are_not_text_release_it() {
    let body = chat_call_stream();
    let first = body.find("\n\n").map_or(0, |i| i + 2);
    let event = &body.as_bytes()[..first];
    let mut r = reply(Format::OpenAiChat, &[("gh_search", "gh.search")], true);
    r.max_bytes = event.len();
    let mut s = Stream::new(r.clone(), Events::Sse, Coding::Identity);
    assert!(s.feed(event, false).is_empty(), "held: exactly the limit");
    r.max_bytes = event.len() - 1;
    let mut over = Stream::new(r, Events::Sse, Coding::Identity);
    assert_eq!(over.feed(event, false), event, "past the limit: on as it came");
    // an event that is not UTF-8 while a call is held: everything goes on, counted as not repaired
    let bad: &[u8] = b"data: \xff\n\n";
    let out = s.feed(bad, false);
    assert_eq!(out, [event, bad].concat());
    assert_eq!(s.tally.unrepaired, 1);
}

#[test]
fn a_close_completes_its_own_call_only() {
    let r = reply(Format::OpenAiResponses, &[("gh_search", "gh.search"), ("s", "s")], false);
    let added = |i: u32, name: &str| {
        format!("event: response.output_item.added\ndata: {{\"type\":\"response.output_item.added\",\"output_index\":{i},\"item\":{{\"type\":\"function_call\",\"name\":\"{name}\",\"arguments\":\"\"}}}}\n\n")
    };
    let done = "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"gh_search\",\"arguments\":\"{}\"}}\n\n";
    let mut s = Stream::new(r, Events::Sse, Coding::Identity);
    s.feed(format!("{}{}{done}", added(0, "gh_search"), added(1, "s")).as_bytes(), false);
    let tools: Vec<&str> = s.tally.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["gh.search"], "output_index 0 closed, 1 still open");
}

#[test]
fn a_tally_counts_only_what_happened_and_says_it_in_one_line() {
    let bad = |tool: &str| Call {
        tool: tool.into(),
        violation: Some(crate::schema::validate::Violation { instance: "/q".into(), schema: "/type".into(), reason: "expected".into() }),
        lossy: false,
    };
    // nothing happened: no counter is touched and nothing is said
    let mut m = Counts::default();
    assert!(Tally::default().count("r", "p", &mut m).is_none());
    assert!(m.0.is_empty(), "{:?}", m.0);
    let line = |calls: Vec<Call>, unrepaired: u64| {
        let mut m = Counts::default();
        Tally { calls, unrepaired, ..Tally::default() }.count("r", "p", &mut m).map(|l| l.text).unwrap_or_default()
    };
    let one = line(vec![bad("a")], 0);
    assert!(one.contains(r#"tool "a" at /q"#) && !one.contains("more invalid"), "{one}");
    assert!(line(vec![bad("a"), bad("b")], 0).ends_with(" (+1 more invalid calls)"));
    assert!(line(vec![bad("a"), bad("b"), bad("c")], 0).ends_with(" (+2 more invalid calls)"));
    let cut = line(Vec::new(), 1);
    assert!(cut.starts_with("route=r profile=p response forwarded unrepaired"), "{cut}");
    assert!(line(vec![bad("a")], 1).contains("expected response forwarded unrepaired"));
    assert!(!line(vec![bad("a")], 0).contains("unrepaired"));
}

/// Codex's request: an MCP server's tools inside a Responses namespace, beside tools toolfit has no
/// schema for (`web_search`, a `custom` free-form tool). The nested tool is rewritten and renamed, the
/// others go on byte for byte; the call comes back as `name` with its `namespace`, and gets its name
/// back (the namespace is the client's own, never renamed).
#[test]
fn a_call_to_a_tool_inside_a_namespace_gets_its_name_back() {
    let web = r#"{"type":"web_search"}"#;
    let custom = r#"{"type":"custom","name":"apply_patch","description":"d","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}}"#;
    let body = format!(
        r#"{{"model":"m","input":[],"tools":[{web},{custom},{{"type":"namespace","name":"mcp__srv","description":"d","tools":[{{"type":"function","name":"get.weather","strict":false,"parameters":{{"type":"object","properties":{{"city":{{"type":"string"}}}}}}}}]}}]}}"#
    );
    let out = api::rewrite_body(body.as_bytes(), Format::OpenAiResponses, &crate::schema::profile::OPENAI, &Default::default()).unwrap();
    let sent = String::from_utf8(out.body.clone().unwrap_or_default()).unwrap();
    assert!(sent.contains(web) && sent.contains(custom), "tools without a schema go on as they came: {sent}");
    assert!(sent.contains(r#""name":"get_weather""#) && sent.contains(r#""name":"mcp__srv""#), "{sent}");
    let r = Reply::of(
        out.tool_lists_of(std::borrow::Cow::Borrowed(body.as_bytes())),
        Format::OpenAiResponses,
        out.names.clone(),
        &out.report,
        true,
        OnInvalid::Count,
        1 << 20,
    );
    assert_eq!(r.tools().iter().map(|t| (t.sent.as_str(), t.name.as_str())).collect::<Vec<_>>(), [("get_weather", "get.weather")]);
    let answer = r#"{"output":[{"type":"function_call","call_id":"c","namespace":"mcp__srv","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}]}"#;
    let mut t = Tally::default();
    let fixed = String::from_utf8(r.repair_json(answer.as_bytes(), &mut t).unwrap_or_default()).unwrap();
    assert_eq!(fixed, answer.replace("get_weather", "get.weather"));
    assert_eq!((t.names_restored, t.calls.len()), (1, 1));
    assert!(t.calls[0].violation.is_none(), "checked against the nested tool's schema");
}

/// Codex against llama-server: the namespace's tools go as top-level function tools (`api::lift`), and
/// a call to one comes back, plain or streamed, under its own name with its namespace beside it, which
/// is how Codex finds the MCP tool; checked against the nested tool's schema.
#[test]
fn a_call_to_a_lifted_tool_gets_its_name_and_namespace_back() {
    let body = r#"{"model":"m","input":[],"tools":[{"type":"function","name":"exec","parameters":{"type":"object"}},{"type":"namespace","name":"mcp__time","description":"d","tools":[{"type":"function","name":"now","strict":false,"parameters":{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}}]}]}"#;
    let out = api::rewrite_body(body.as_bytes(), Format::OpenAiResponses, &crate::schema::profile::LLAMA_CPP, &Default::default()).unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&out.body.clone().unwrap_or_default()).unwrap_or_default();
    assert_eq!(sent["tools"][1]["name"], "mcp__time__now", "{sent}");
    assert_eq!(out.report.counters.get(&crate::schema::Kind::NamespaceLifted), Some(&1));
    let r = Reply::of(
        out.tool_lists_of(std::borrow::Cow::Borrowed(body.as_bytes())),
        Format::OpenAiResponses,
        out.names.clone(),
        &out.report,
        true,
        OnInvalid::Count,
        1 << 20,
    );
    assert!(r.repairs());
    let answer = r#"{"output":[{"type":"function_call","call_id":"c","name":"mcp__time__now","arguments":"{\"tz\":\"UTC\"}"}]}"#;
    let mut t = Tally::default();
    let fixed = String::from_utf8(r.repair_json(answer.as_bytes(), &mut t).unwrap_or_default()).unwrap_or_default();
    assert_eq!(fixed, answer.replace(r#""mcp__time__now""#, r#""now","namespace":"mcp__time""#));
    assert_eq!((t.names_restored, t.calls.len()), (1, 1));
    assert!(t.calls[0].violation.is_none());
    // streamed: every event that names the call says its name and namespace, split anywhere
    let stream = concat!(
        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"mcp__time__now\",\"arguments\":\"\"}}\n\n",
        "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"{\\\"tz\\\":3}\"}\n\n",
        "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"mcp__time__now\",\"arguments\":\"{\\\"tz\\\":3}\"}}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"name\":\"mcp__time__now\",\"arguments\":\"{\\\"tz\\\":3}\"}]}}\n\n",
    );
    let (out, t) = every_split(&r, Events::Sse, stream);
    assert_eq!(out, stream.replace("\"mcp__time__now\"", "\"now\",\"namespace\":\"mcp__time\""));
    assert_eq!((t.names_restored > 0, t.calls.len()), (true, 1));
    assert_eq!(t.calls[0].violation.as_ref().map(|v| v.instance.as_str()), Some("/tz"), "checked against the nested tool's schema");
}

/// Every way of cutting a binary `body` in two gives the same bytes as the whole.
fn every_split_bytes(r: &Reply, framing: Events, body: &[u8]) -> (Vec<u8>, Tally) {
    let mut whole = Stream::new(r.clone(), framing, Coding::Identity);
    let expect = whole.feed(body, true);
    for at in 0..=body.len() {
        let mut s = Stream::new(r.clone(), framing, Coding::Identity);
        let (a, b) = body.split_at(at);
        let mut got = s.feed(a, false);
        got.extend(s.feed(b, true));
        assert_eq!(got, expect, "split at {at}");
        assert_eq!(s.tally, whole.tally, "split at {at}");
    }
    (expect, whole.tally)
}

/// The messages of an event-stream body, each (headers, payload) read back with its checksums.
fn messages(mut b: &[u8]) -> Vec<(Vec<u8>, String)> {
    let mut out = Vec::new();
    while let Some(n) = frames::end(b).filter(|n| *n > 0) {
        let (m, rest) = b.split_at(n);
        let (h, p) = frames::read(m).expect("a message with right checksums");
        out.push((h.to_vec(), String::from_utf8_lossy(p).into_owned()));
        b = rest;
    }
    assert!(b.is_empty(), "bytes after the last message");
    out
}

#[test]
fn bedrock_converse_stream_messages_get_the_name_back_with_their_checksums() {
    use frames::tests::event;
    let r = reply(Format::BedrockConverse, &[("gh_search", "gh.search")], false);
    let events = [
        event("messageStart", r#"{"p":"abc","role":"assistant"}"#),
        event("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"text":"Let me look."},"p":"ab"}"#),
        event("contentBlockStop", r#"{"contentBlockIndex":0,"p":"a"}"#),
        event("contentBlockStart", r#"{"contentBlockIndex":1,"p":"abcd","start":{"toolUse":{"name":"gh_search","toolUseId":"tooluse_1"}}}"#),
        event("contentBlockDelta", r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"q\":"}},"p":"x"}"#),
        event("contentBlockDelta", r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"a\"}"}},"p":"x"}"#),
        event("contentBlockStop", r#"{"contentBlockIndex":1,"p":"abc"}"#),
        event("messageStop", r#"{"p":"ab","stopReason":"tool_use"}"#),
        event("metadata", r#"{"metrics":{"latencyMs":9},"usage":{"inputTokens":3,"outputTokens":4,"totalTokens":7}}"#),
    ];
    let body: Vec<u8> = events.concat();
    let (out, t) = every_split_bytes(&r, Events::Frames, &body);
    let got = messages(&out);
    let sent = messages(&body);
    assert_eq!(got.len(), sent.len());
    for (i, ((gh, gp), (sh, sp))) in got.iter().zip(&sent).enumerate() {
        assert_eq!(gh, sh, "message {i}: headers as they came");
        let want = if i == 3 { sp.replace("gh_search", "gh.search") } else { sp.clone() };
        assert_eq!(gp, &want, "message {i}");
    }
    // the name is as long as the one sent: the same length, other bytes (the message's checksums too)
    assert!(out.len() == body.len() && out != body);
    assert_eq!((t.names_restored, t.calls.len()), (1, 1));
    assert!(t.calls.first().is_some_and(|c| c.violation.is_none()), "the input pieces read as one call");
    // the controls: a message with a wrong checksum passes as it came (the client's SDK refuses it
    // as it would have), and the stream goes on
    let mut bad = events.clone();
    if let Some(b) = bad.get_mut(3).and_then(|m| m.get_mut(30)) {
        *b ^= 1;
    }
    let bad: Vec<u8> = bad.concat();
    let mut s = Stream::new(r.clone(), Events::Frames, Coding::Identity);
    let out = s.feed(&bad, true);
    assert_eq!(out, bad, "nothing to repair in a message toolfit cannot read");
    // and a stream that is not frames at all goes on as it came
    let mut s = Stream::new(r, Events::Frames, Coding::Identity);
    assert_eq!(s.feed(b"\x00\x00\x00\x02garbage", true), b"\x00\x00\x00\x02garbage");
}

#[test]
fn bedrock_invoke_stream_events_inside_base64_get_the_name_back() {
    use frames::tests::header;
    // InvokeModelWithResponseStream: each Anthropic event base64-encoded in a `chunk` message
    let chunk = |event: &str| {
        let mut h = header(":event-type", "chunk");
        h.extend(header(":content-type", "application/json"));
        h.extend(header(":message-type", "event"));
        frames::write(&h, format!(r#"{{"bytes":"{}","p":"abc"}}"#, frames::base64(event.as_bytes())).as_bytes())
    };
    let r = reply(Format::BedrockInvoke, &[("gh_search", "gh.search")], false);
    let events = [
        r#"{"type":"message_start","message":{"id":"m","role":"assistant","content":[]}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"gh_search","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":\"a\"}"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let body: Vec<u8> = events.iter().flat_map(|e| chunk(e)).collect();
    let (out, t) = every_split_bytes(&r, Events::Frames, &body);
    let got: Vec<String> =
        messages(&out).iter().map(|(_, p)| frames::unwrap(p, "bytes").map(|(a, inner, b)| format!("{a}|{inner}|{b}")).unwrap_or_default()).collect();
    for (i, e) in events.iter().enumerate() {
        let want = if i == 1 { e.replace("gh_search", "gh.search") } else { (*e).to_string() };
        assert_eq!(got.get(i).map(String::as_str), Some(format!(r#"{{"bytes":|{want}|,"p":"abc"}}"#).as_str()), "event {i}");
    }
    assert_eq!((t.names_restored, t.calls.len()), (1, 1));
    // the control: an envelope that is not base64 passes as it came
    let mut h = header(":event-type", "chunk");
    h.extend(header(":message-type", "event"));
    let odd = frames::write(&h, br#"{"bytes":"not base64!"}"#);
    assert_eq!(Stream::new(r, Events::Frames, Coding::Identity).feed(&odd, true), odd);
}
