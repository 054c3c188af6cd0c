//! The untouched request's cost natively: `cargo bench --bench scan`.
//! Two bodies that need no change (the 200 KB request of `make bench-envoy`: one 200 KB message and 40
//! small closed tools; and a 1 MiB conversation of 400 messages with the same 40 tools). For each, the
//! floors any reader pays (a copy of the body, UTF-8 validation, serde_json skimming it as a value it
//! ignores) beside toolfit's whole request path with the cache warm (finding the schema-bearing members,
//! the cache lookups, deciding nothing changes), and the scan alone (UTF-8 check, top-level members).
//! Prints MB/s and toolfit's time over the copy's and over serde_json's skim. `bench/bench_scan.py` runs
//! it natively and as wasm in V8 (Node's), with and without simd128.

use std::hint::black_box;
use toolfit::api::cache::SiteCache;
use toolfit::api::{rewrite_body_cached, Format};
use toolfit::schema::profile::LLAMA_CPP;

mod common;
use common::best_of;

fn tools() -> String {
    let one = r#"{"type":"function","function":{"name":"q","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}}}"#;
    vec![one; 40].join(", ")
}

fn main() {
    let typical = format!(r#"{{"model": "m", "messages": [{{"role": "user", "content": "{}"}}], "tools": [{}]}}"#, "x".repeat(200_000), tools());
    // a conversation: 400 turns of prose with quotes, escapes and non-ASCII, as agents send
    let turn = r#"{"role": "assistant", "content": "The build failed in \"make test\": 3 of 412 checks.\nSee the log \u2014 line 88. Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber. "#;
    let prose = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt. ".repeat(27);
    let msgs: Vec<String> = (0..400).map(|_| format!("{turn}{prose}\"}}")).collect();
    let conversation = format!(r#"{{"model": "m", "messages": [{}], "tools": [{}]}}"#, msgs.join(", "), tools());
    let opts = LLAMA_CPP.default_options();
    for (name, body) in [("200 KB request", typical.into_bytes()), ("1 MiB conversation", conversation.into_bytes())] {
        let mut cache = SiteCache::new(8 << 20);
        let first = rewrite_body_cached(&body, Format::Auto, &LLAMA_CPP, &opts, Some(&mut cache));
        if !matches!(&first, Ok(o) if o.body.is_none()) {
            eprintln!("{name}: not untouched; the bench measures nothing");
            continue;
        }
        let copy = best_of(|| {
            black_box(black_box(&body).to_vec());
        });
        let utf8 = best_of(|| {
            let _ = black_box(std::str::from_utf8(black_box(&body)));
        });
        let serde = best_of(|| {
            let _ = black_box(serde_json::from_slice::<serde::de::IgnoredAny>(black_box(&body)));
        });
        let scan = best_of(|| {
            let _ = black_box(toolfit::api::skim::text(black_box(&body)).and_then(toolfit::api::raw::object));
        });
        // the same scan piece by piece, as a body streams past (16 KiB pieces, as Envoy hands them over)
        let streamed = best_of(|| {
            let mut s = toolfit::api::scan::Scan::default();
            for piece in black_box(&body).chunks(16 << 10) {
                let _ = black_box(s.feed(piece, &mut |_| false));
            }
            black_box(s.complete());
        });
        let toolfit = best_of(|| {
            let _ = black_box(rewrite_body_cached(black_box(&body), Format::Auto, &LLAMA_CPP, &opts, Some(&mut cache)));
        });
        let mbs = |s: f64| body.len() as f64 / s / 1e6;
        println!(
            "{name} ({} bytes): copy {:.0} MB/s, core::str::from_utf8 {:.0} MB/s, serde_json skim {:.0} MB/s; toolfit: the scan (utf-8 and members) {:.0} MB/s, streamed in 16 KiB pieces {:.0} MB/s, the request (warm) {:.0} MB/s = {:.1}x the copy's time, {:.2}x serde_json's",
            body.len(),
            mbs(copy),
            mbs(utf8),
            mbs(serde),
            mbs(scan),
            mbs(streamed),
            mbs(toolfit),
            toolfit / copy,
            toolfit / serde
        );
    }
}
