//! Arbitrary bytes as a model server's response, in every format, plain and streamed. Invariants: no
//! panic; a stream (SSE, NDJSON, AWS event-stream) fed in two pieces (cut where the first byte says) gives exactly what it gives
//! whole, and the same counts; a response to a request that needs no repair comes out byte for byte;
//! what comes out stays within a bound of what went in; a repaired plain body of JSON is JSON; the
//! same body gzip-compressed and cut anywhere gives, on a repairing stream, exactly what the identity
//! stream gives; arbitrary bytes said to be gzip or deflate never panic and stay bounded.
#![no_main]
use libfuzzer_sys::fuzz_target;
use toolfit::api::Format;
use std::io::Write;
use toolfit::filter::encoding::Coding;
use toolfit::filter::config::OnInvalid;
use toolfit::filter::response::{Events, Reply, Stream, Tally, Tool};

/// Every format whose responses carry calls, from the code's one list.
fn formats() -> impl Iterator<Item = Format> {
    toolfit::api::format::ALL.iter().filter(|d| !d.calls.is_empty()).map(|d| d.format)
}

fn reply(format: Format, repairs: bool) -> Reply {
    let schema = r##"{"type":"object","properties":{"q":{"type":"string"},"n":{"type":["integer"]},"o":{"$ref":"#"}},"required":["q"]}"##;
    let tool = |sent: &str, name: &str| Tool { sent: sent.into(), name: name.into(), schema: schema.into(), nulls: repairs, lossy: vec![String::new()], keys: Vec::new(), namespace: None };
    let tools = if repairs { vec![tool("gh_search", "gh.search"), tool("s", "s")] } else { vec![tool("s", "s")] };
    Reply::with_tools(format, tools, true, OnInvalid::Count, 4096)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else { return };
    let cut = usize::from(first) * body.len() / 256;
    for format in formats() {
        for repairs in [false, true] {
            let r = reply(format, repairs);
            let mut t = Tally::default();
            if let Some(new) = r.repair_json(body, &mut t) {
                assert!(repairs || t.names_restored == 0);
                assert!(new.len() <= 2 * body.len() + 1024);
                if serde_json::from_slice::<serde_json::Value>(body).is_ok() {
                    assert!(serde_json::from_slice::<serde_json::Value>(&new).is_ok(), "repaired JSON is not JSON");
                }
            }
            for framing in [Events::Sse, Events::Lines, Events::Frames] {
                let mut whole = Stream::new(r.clone(), framing, Coding::Identity);
                let all = whole.feed(body, true);
                let mut split = Stream::new(r.clone(), framing, Coding::Identity);
                let (a, b) = body.split_at(cut.min(body.len()));
                let mut got = split.feed(a, false);
                got.extend(split.feed(b, true));
                if whole.tally.unrepaired == 0 && split.tally.unrepaired == 0 {
                    assert_eq!(all, got, "a cut changed the output ({format:?}, {framing:?})");
                    assert_eq!(whole.tally, split.tally);
                }
                if !repairs {
                    assert_eq!(all, body, "a response needing no repair changed");
                }
                assert!(all.len() <= 2 * body.len() + 1024);
                if repairs {
                    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                    let _ = e.write_all(body);
                    let z = e.finish().unwrap_or_default();
                    let mut g = Stream::new(r.clone(), framing, Coding::Gzip);
                    let (a, b) = z.split_at(usize::from(first) * z.len() / 256);
                    let mut out = g.feed(a, false);
                    out.extend(g.feed(b, true));
                    if whole.tally.unrepaired == 0 && g.tally.unrepaired == 0 {
                        assert_eq!(out, all, "gzip changed the output ({format:?}, {framing:?})");
                    }
                }
                for coding in [Coding::Gzip, Coding::Deflate] {
                    let mut s = Stream::new(r.clone(), framing, coding);
                    let mut out = s.feed(a, false);
                    out.extend(s.feed(b, true));
                    assert!(out.len() <= 2 * body.len() + 2 * (4096usize.max(1 << 20)) + 1024);
                }
            }
        }
    }
});
