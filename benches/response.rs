//! Response-path throughput (native): `cargo bench --bench response`. One streamed chat completion
//! (400 content events, then a tool call in 60 argument fragments) fed in 1 KiB chunks, and one
//! 200 KB plain response. Prints MB/s for toolfit reading it (validity only, nothing held), repairing
//! it (a mapped name and injected nulls: the call's events held), and, as the floor for any reader of
//! the stream, serde_json parsing every event; then the ratios against that floor. Best of repeated runs.

use std::hint::black_box;
use toolfit::api::Format;
use toolfit::filter::config::OnInvalid;
use toolfit::filter::encoding::Coding;
use toolfit::filter::response::{Events, Reply, Stream, Tally, Tool};

mod common;
use common::best_of;

fn reply(repairs: bool) -> Reply {
    let schema = r#"{"type":"object","properties":{"q":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"n":{"type":"integer"}},"required":["q","tags"]}"#;
    let (sent, name) = if repairs { ("gh_search", "gh.search") } else { ("gh_search", "gh_search") };
    let tool = Tool { sent: sent.into(), name: name.into(), schema: schema.into(), nulls: repairs, lossy: Vec::new(), keys: Vec::new(), namespace: None };
    Reply::with_tools(Format::OpenAiChat, vec![tool], true, OnInvalid::Count, 16 << 20)
}

fn event(v: serde_json::Value) -> String {
    format!("data: {v}\n\n")
}

fn main() {
    let mut s = String::new();
    for i in 0..400 {
        s += &event(
            serde_json::json!({"id": "c", "choices": [{"index": 0, "delta": {"content": format!("token {i} of a long answer ")}, "finish_reason": null}]}),
        );
    }
    s += &event(
        serde_json::json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call", "type": "function", "function": {"name": "gh_search", "arguments": ""}}]}}]}),
    );
    let args = serde_json::json!({"q": "a query", "tags": (0..40).map(|i| format!("tag-{i}")).collect::<Vec<_>>(), "n": null}).to_string();
    let chars: Vec<char> = args.chars().collect();
    for part in chars.chunks(chars.len().div_ceil(60)) {
        let part: String = part.iter().collect();
        s += &event(serde_json::json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}}]}));
    }
    s += &event(serde_json::json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    s += "data: [DONE]\n\n";
    let bytes = s.as_bytes();
    let mb = bytes.len() as f64 / 1e6;

    let floor = best_of(|| {
        for ev in s.split("\n\n") {
            if let Some(j) = ev.strip_prefix("data: ") {
                black_box(serde_json::from_str::<serde_json::Value>(j).ok());
            }
        }
    });
    let run = |repairs: bool| {
        best_of(|| {
            let mut st = Stream::new(reply(repairs), Events::Sse, Coding::Identity);
            let mut out = 0;
            for c in bytes.chunks(1024) {
                out += st.feed(c, false).len();
            }
            out += st.feed(&[], true).len();
            black_box((out, st.tally.calls.len()));
        })
    };
    let read = run(false);
    let repair = run(true);

    let plain = serde_json::json!({"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "x".repeat(200_000),
        "tool_calls": [{"id": "1", "type": "function", "function": {"name": "gh_search", "arguments": args}}]}}]})
    .to_string();
    let pmb = plain.len() as f64 / 1e6;
    let pfloor = best_of(|| {
        black_box(serde_json::from_str::<serde_json::Value>(&plain).ok());
    });
    let prepair = best_of(|| {
        let mut t = Tally::default();
        black_box(reply(true).repair_json(plain.as_bytes(), &mut t));
    });
    println!("| body | size | serde_json parse (floor) | toolfit read (validity) | toolfit repair | read / floor | repair / floor |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| SSE chat stream, 1 KiB chunks | {:.0} KB | {:.0} MB/s | {:.0} MB/s | {:.0} MB/s | {:.2}x | {:.2}x |",
        mb * 1e3,
        mb / floor,
        mb / read,
        mb / repair,
        read / floor,
        repair / floor
    );
    println!("| plain JSON response | {:.0} KB | {:.0} MB/s | - | {:.0} MB/s | - | {:.2}x |", pmb * 1e3, pmb / pfloor, pmb / prepair, prepair / pfloor);
}
