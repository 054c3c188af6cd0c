//! Arbitrary JSON as a schema, every profile, both contexts. Invariants: no panic, the output is JSON,
//! a second run changes nothing (idempotent), and the output stays within a bound of the input's size.
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolfit::schema::{normalize_or_loose, profile, Context, Options};

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else { return };
    for p in profile::ALL {
        for ctx in [Context::Tool, Context::Output] {
            let mut once = input.clone();
            // a declined strict attempt gives the non-strict rewrite, as the request path does
            normalize_or_loose(&mut once, p, &Options::default(), ctx, "t");
            let text = serde_json::to_string(&once).expect("output serialises");
            // the output is JSON (numbers past u64 print as floats, so no value-for-value comparison)
            assert!(serde_json::from_str::<Value>(&text).is_ok(), "output is not JSON");
            let mut twice = once.clone();
            let second = normalize_or_loose(&mut twice, p, &Options::default(), ctx, "t");
            assert_eq!(twice, once, "not idempotent ({}): {:?}", p.name, second.report.records.first());
            assert!(text.len() <= 64 * data.len() + 16_384, "output {} bytes for {} bytes in", text.len(), data.len());
        }
    }
});
