//! Arbitrary bytes as a request body, every format, every profile. Invariants: no panic; a rewritten
//! body is JSON and rewriting it again changes nothing; an untouched body is reported as untouched
//! (the filter then forwards the original bytes); the output stays within a bound of the input; a run
//! through the rewrite cache (one cache for the whole fuzzing process, so entries from earlier inputs
//! are there) gives exactly what a run without it gives. And the body scan (`api::skim`, behind
//! `raw::object`, `raw::array` and `raw::value`) accepts exactly what serde_json accepts, splitting it
//! into the same members; the scan of a body streamed in pieces (`api::scan`, cut where the input's
//! first byte says) accepts what the skim accepts and finds the same members. And a sequence: the
//! input cut at each 0xFF byte (never in UTF-8 text) into bodies sent one after another through one
//! fresh cache, each of which must come out as it does without a cache (a cached rewrite depends
//! only on its key, whatever came before it).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::Mutex;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use toolfit::api::cache::SiteCache;
use toolfit::api::raw;
use toolfit::api::{rewrite_body, rewrite_body_cached, Format};
use toolfit::schema::{profile, Options};

/// Every format and `auto`, from the code's one list.
fn formats() -> impl Iterator<Item = Format> {
    std::iter::once(Format::Auto).chain(toolfit::api::format::ALL.iter().map(|d| d.format))
}

static CACHE: Mutex<Option<SiteCache>> = Mutex::new(None);

/// The skim against serde_json's own reading of the same text.
fn same_as_serde_json(text: &str) {
    let theirs = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(text).ok();
    let ours = raw::object(text);
    assert_eq!(ours.is_some(), theirs.is_some(), "object accepted differently: {text:?}");
    if let (Some(o), Some(m)) = (ours, theirs) {
        for (k, v) in &o.0 {
            let last = o.0.iter().rev().find(|(k2, _)| k2 == k).map(|(_, v2)| v2.get());
            assert_eq!(m.get(k).map(|r| r.get()), last, "member {k:?} split differently: {text:?}");
            assert!(text.contains(v.get()));
        }
        assert_eq!(m.len(), o.0.iter().map(|(k, _)| k).collect::<std::collections::BTreeSet<_>>().len());
    }
    let theirs = serde_json::from_str::<Vec<Box<RawValue>>>(text).ok();
    let ours = raw::array(text).map(|a| a.0.iter().map(|v| v.get().to_owned()).collect::<Vec<_>>());
    assert_eq!(ours, theirs.map(|v| v.iter().map(|r| r.get().to_owned()).collect()), "array read differently: {text:?}");
    let theirs = serde_json::from_str::<Box<RawValue>>(text).ok();
    assert_eq!(raw::value(text).map(|v| v.get().to_owned()), theirs.map(|r| r.get().to_owned()), "value read differently: {text:?}");
}

/// The streamed scan, in three pieces, against the skim of the whole text.
fn streamed_as_skimmed(data: &[u8]) {
    let n = data.len();
    let (a, b) = (usize::from(data.first().copied().unwrap_or(0)) * n / 256, usize::from(data.last().copied().unwrap_or(0)) * n / 256);
    let (a, b) = (a.min(b), a.max(b));
    let mut s = toolfit::api::scan::Scan::default();
    let mut members = Vec::new();
    let mut ok = true;
    for piece in [&data[..a], &data[a..b], &data[b..]] {
        ok &= s.feed(piece, &mut |_| false) == toolfit::api::scan::Fed::Read;
        members.append(&mut s.members);
    }
    let ours = (ok && s.complete()).then(|| members.iter().map(|m| (m.key.clone().unwrap_or_default(), String::from_utf8_lossy(&data[m.value.0..m.value.1]).into_owned())).collect::<Vec<_>>());
    let skimmed = toolfit::api::skim::text(data).and_then(toolfit::api::skim::object).map(|o| o.into_iter().map(|(k, v)| (k, v.to_owned())).collect::<Vec<_>>());
    // a key past the scan's KEEP is not decoded; the skim decodes it
    if members.iter().all(|m| m.key.is_some()) {
        assert_eq!(ours, skimmed, "streamed scan differs: {:?} cut at {a}, {b}", String::from_utf8_lossy(data));
    }
}

/// The bodies of the input cut at 0xFF, in order through one fresh cache, each against no cache.
fn sequence_as_alone(data: &[u8]) {
    let bodies: Vec<&[u8]> = data.split(|b| *b == 0xFF).take(4).collect();
    if bodies.len() < 2 {
        return;
    }
    for p in profile::ALL {
        let mut cache = SiteCache::new(1 << 20);
        for (i, body) in bodies.iter().enumerate() {
            let plain = rewrite_body(body, Format::Auto, p, &Options::default()).map(|o| o.body);
            let cached = rewrite_body_cached(body, Format::Auto, p, &Options::default(), Some(&mut cache)).map(|o| o.body);
            assert_eq!(plain, cached, "body {i} of a sequence, after the ones before it ({})", p.name);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    sequence_as_alone(data);
    if let Ok(text) = std::str::from_utf8(data) {
        same_as_serde_json(text);
    }
    streamed_as_skimmed(data);
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(|| SiteCache::new(8 << 20));
    for format in formats() {
        let f = format.name();
        for p in profile::ALL {
            let plain = rewrite_body(data, format, p, &Options::default());
            let cached = rewrite_body_cached(data, format, p, &Options::default(), Some(cache));
            match (&plain, &cached) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.body, b.body, "cache changed the body ({f}, {})", p.name);
                    assert_eq!(a.report.counters, b.report.counters, "cache changed the counters ({f}, {})", p.name);
                    assert_eq!((a.tools, a.schemas_changed), (b.tools, b.schemas_changed));
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                _ => panic!("cache changed the outcome ({f}, {})", p.name),
            }
            let Ok(out) = plain else { continue };
            // untouched is reported as untouched: no body means no schema changed (the filter forwards the
            // original bytes and counts the request unchanged), and a body means different bytes
            let Some(new) = out.body else {
                assert_eq!(out.schemas_changed, 0, "schemas changed, yet no body ({f}, {})", p.name);
                continue;
            };
            assert_ne!(new.as_slice(), data, "an unchanged body reported as rewritten ({f}, {})", p.name);
            assert!(serde_json::from_slice::<serde_json::Value>(&new).is_ok(), "rewritten body is not JSON");
            assert!(new.len() <= 64 * data.len() + 16_384);
            let again = rewrite_body(&new, format, p, &Options::default()).expect("a rewritten body is readable");
            assert!(again.body.is_none(), "second rewrite changed the body ({f}, {})", p.name);
        }
    }
});
