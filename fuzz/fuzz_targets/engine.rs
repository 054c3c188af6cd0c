//! Arbitrary JSON as a schema, every profile, both contexts. Invariants: no panic, every change is
//! reported (a run with no record leaves the schema's meaning-bearing form as it was), a second run
//! changes nothing (idempotent), the output stays within a bound of the input's size, and
//! skipping passes (by keyword census and node tests) changes neither the output nor the counters.
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;
use toolfit::schema::passes::Pass;
use toolfit::schema::profile::Profile;
use toolfit::schema::report::order_free;
use toolfit::schema::{normalize, normalize_or_loose, profile, Context, Options};

/// Each profile with every pass walking every schema: no keyword gate, no node test.
fn ungated() -> &'static [Profile] {
    static ALL: OnceLock<Vec<Profile>> = OnceLock::new();
    ALL.get_or_init(|| {
        let strip = |list: &[Pass]| -> &'static [Pass] {
            Box::leak(list.iter().map(|p| Pass { name: p.name, run: p.run, wants: &[], after: p.after, acts: None }).collect::<Vec<_>>().into_boxed_slice())
        };
        profile::ALL
            .iter()
            .map(|p| Profile {
                name: p.name,
                passes: strip(p.passes),
                tool_passes: p.tool_passes.map(strip),
                about: "",
                target: p.target,
                defaults: p.defaults,
                modes: None,
                json_fields: None,
                outputs: None,
                plans: Default::default(),
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else { return };
    for p in profile::ALL {
        for ctx in [Context::Tool, Context::Output] {
            let mut once = input.clone();
            // a declined strict attempt gives the non-strict rewrite, as the request path does
            let first = normalize_or_loose(&mut once, p, &Options::default(), ctx, "t");
            // every change is reported: a run that records nothing leaves the schema as it was
            if first.report.records.is_empty() && first.report.counters.is_empty() {
                assert_eq!(order_free(&once), order_free(&input), "changed without a record ({})", p.name);
            }
            let text = serde_json::to_string(&once).expect("output serialises");
            let mut twice = once.clone();
            let second = normalize_or_loose(&mut twice, p, &Options::default(), ctx, "t");
            assert_eq!(twice, once, "not idempotent ({}): {:?}", p.name, second.report.records.first());
            assert!(text.len() <= 64 * data.len() + 16_384, "output {} bytes for {} bytes in", text.len(), data.len());
        }
    }
    for (p, every) in profile::ALL.iter().zip(ungated()) {
        for ctx in [Context::Tool, Context::Output] {
            let (mut skipping, mut walking) = (input.clone(), input.clone());
            let a = normalize(&mut skipping, p, &Options::default(), ctx, "t");
            let b = normalize(&mut walking, every, &Options::default(), ctx, "t");
            assert_eq!(skipping, walking, "skipping passes changed the output ({})", p.name);
            assert_eq!(a.report.counters, b.report.counters, "skipping passes changed the report ({})", p.name);
        }
    }
});
