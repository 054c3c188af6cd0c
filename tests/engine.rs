//! Engine properties over the real corpus and over arbitrary JSON: no panic, deterministic, idempotent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // tests may fail loudly

use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;
use toolfit::schema::report::order_free;
use toolfit::schema::{normalize, profile, Context, Kind, Options};

fn corpus() -> Vec<(String, Value, Context)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut out = Vec::new();
    for kind in ["servers", "issues", "synthetic"] {
        let mut files: Vec<_> = std::fs::read_dir(dir.join(kind)).into_iter().flatten().flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else { continue };
            let Ok(d) = serde_json::from_str::<Value>(&text) else { continue };
            let name = f.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            match kind {
                "servers" => {
                    for t in d["tools"].as_array().into_iter().flatten() {
                        out.push((format!("{name}/{}", t["name"]), t["inputSchema"].clone(), Context::Tool));
                    }
                }
                "issues" => out.push((name, d["schema"].clone(), Context::Tool)),
                _ => {
                    for e in d["entries"].as_array().into_iter().flatten() {
                        out.push((format!("{name}:{}", e["name"]), e["schema"].clone(), Context::Tool));
                        if e["outputSchema"].is_object() {
                            out.push((format!("{name}:{}:out", e["name"]), e["outputSchema"].clone(), Context::Output));
                        }
                    }
                }
            }
        }
    }
    out
}

fn run(v: &Value, ctx: Context) -> (Value, toolfit::schema::Report) {
    run_with(v, ctx, &Options::default())
}

fn run_with(v: &Value, ctx: Context, opts: &Options) -> (Value, toolfit::schema::Report) {
    run_in(&profile::LLAMA_CPP, v, ctx, opts)
}

fn run_in(p: &profile::Profile, v: &Value, ctx: Context, opts: &Options) -> (Value, toolfit::schema::Report) {
    let mut v = v.clone();
    let o = normalize(&mut v, p, opts, ctx, "t");
    (v, o.report)
}

/// The option sets whose passes differ: objects closed (default) and open; the oldest and the newest
/// llama.cpp release served.
fn option_sets() -> Vec<(&'static str, Options)> {
    use toolfit::schema::LlamaCpp;
    vec![
        ("default", Options::default()),
        ("open objects", Options { open_objects: true, ..Options::default() }),
        ("since 2026-10", Options { llama_cpp: LlamaCpp::V2026_10, ..Options::default() }),
    ]
}

#[test]
fn corpus_is_deterministic_and_idempotent() {
    let all = corpus();
    assert!(all.len() > 3000, "corpus missing: {}", all.len());
    for (p, (name, opts)) in profile::ALL.iter().flat_map(|p| option_sets().into_iter().map(move |o| (p, o))) {
        let name = format!("{} {name}", p.name);
        let mut changed = 0;
        for (label, schema, ctx) in &all {
            let (once, rep) = run_in(p, schema, *ctx, &opts);
            let (again, _) = run_in(p, schema, *ctx, &opts);
            assert_eq!(once, again, "{name}: {label}: not deterministic");
            if rep.counters.contains_key(&toolfit::schema::Kind::StrictDeclined) {
                // a strict mode declined: the caller sends the non-strict rewrite, this output is dropped
                changed += 1;
                continue;
            }
            let (twice, rep2) = run_in(p, &once, *ctx, &opts);
            assert_eq!(once, twice, "{name}: {label}: not idempotent; second run: {:?}", rep2.records.first());
            assert!(rep2.is_empty(), "{name}: {label}: second run reported {:?}", rep2.records.first());
            if !rep.is_empty() {
                changed += 1;
            }
            if *ctx == Context::Tool && p.passes_for(*ctx).iter().any(|x| x.name == "tool_root") {
                assert_eq!(once["type"], json!("object"), "{name}: {label}: tool root not an object");
            }
        }
        assert!(changed > 0 && changed < all.len(), "{name}: {changed} changed");
    }
}

#[test]
fn the_mcp_profile_keeps_meaning() {
    for (label, schema, ctx) in corpus() {
        let mut v = schema.clone();
        let o = normalize(&mut v, &profile::MCP, &Options::default(), ctx, "t");
        assert!(o.report.lossy_count() == 0, "{label}: {:?}", o.report.first_lossy());
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("type".to_string()),
        Just("properties".to_string()),
        Just("anyOf".to_string()),
        Just("oneOf".to_string()),
        Just("allOf".to_string()),
        Just("$ref".to_string()),
        Just("items".to_string()),
        Just("not".to_string()),
        Just("required".to_string()),
        Just("enum".to_string()),
        Just("const".to_string()),
        Just("$defs".to_string()),
        Just("pattern".to_string()),
        Just("minimum".to_string()),
        Just("maxLength".to_string()),
        Just("prefixItems".to_string()),
        Just("additionalProperties".to_string()),
        Just("a".to_string()),
        Just("format".to_string()),
        Just("nullable".to_string()),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|n| json!(n)),
        prop_oneof![Just("string"), Just("object"), Just("integer"), Just("#"), Just("#/$defs/a"), Just("^\\d+$"), Just("a"), Just("null"), Just("(?:x")]
            .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
    #[test]
    fn arbitrary_json_never_panics_and_settles(v in arb_json()) {
        for ctx in [Context::Tool, Context::Output] {
            let (once, _) = run(&v, ctx);
            let (again, _) = run(&v, ctx);
            prop_assert_eq!(&once, &again);
            // every change is reported: a run that records nothing leaves the schema as it was
            let (_, first) = run(&v, ctx);
            if first.records.is_empty() && first.counters.is_empty() {
                prop_assert_eq!(order_free(&once), order_free(&v), "changed without a record");
            }
            let (twice, rep) = run(&once, ctx);
            prop_assert_eq!(&twice, &once, "not idempotent; second run: {:?}", rep.records.first());
        }
    }
}

/// Every change is reported: over the corpus, each profile, a schema whose run records nothing comes out
/// as it went in (the filter forwards such a body byte for byte, and the counters say nothing moved).
#[test]
fn a_schema_without_a_record_is_unchanged() {
    let (mut silent, mut changed, mut bad) = (0, 0, Vec::new());
    for (name, schema, ctx) in corpus() {
        for p in profile::ALL {
            let (out, rep) = run_in(p, &schema, ctx, &Options::default());
            if rep.records.is_empty() && rep.counters.is_empty() {
                silent += 1;
                if order_free(&out) != order_free(&schema) {
                    bad.push(format!("{name} ({}): {schema} -> {out}", p.name));
                }
            } else {
                changed += 1;
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} changed without a record:\n{}",
        bad.len(),
        bad.iter().take(20).map(|b| b.chars().take(400).collect::<String>()).collect::<Vec<_>>().join("\n")
    );
    assert!(silent > 100 && changed > 100, "{silent} schemas without a record, {changed} with");
}

#[test]
fn every_kind_has_a_counter_name_the_report_uses() {
    let (_, rep) = run(&json!({"type":"object","properties":{"a":{"type":"string","format":"email"}},"anyOf":[{"required":["a"]}]}), Context::Tool);
    for k in rep.counters.keys() {
        assert_eq!(Kind::from_name(k.name()), Some(*k));
    }
    assert!(rep.counters.contains_key(&Kind::AnyofDistributed));
    assert!(rep.counters.contains_key(&Kind::KeywordRemoved));
}

/// Inputs the fuzzers found (fuzz/), kept as regressions: each must settle in one run.
#[test]
fn fuzz_findings_stay_fixed() {
    for (s, ctx) in [
        (json!({"anyOf": [{"anyOf": [{"type": "null"}]}]}), Context::Tool),
        (json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"], "additionalProperties": false}), Context::Tool),
        (
            json!({"prefixItems": [{"const": "foo"}], "oneOf": [{"prefixItems": [true, {"const": "bar"}]}, {"prefixItems": [true, {"const": "baz"}]}], "unevaluatedItems": false}),
            Context::Output,
        ),
        (json!({"$defs": {"type": {"type": "string", "const": null}}}), Context::Output),
        (
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"one": {"oneOf": [{"$ref": "#/$defs/two"}, {"required": ["b"], "properties": {"b": true}}, {"required": ["xx"], "patternProperties": {"x": true}}, {"required": ["all"], "unevaluatedProperties": true}]}, "two": {"oneOf": [{"required": ["c"], "properties": {"c": true}}, {"requir$d": ["d"], "properthema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"one": {"oneOf": [{"$ref": "#/$defs/two"}, {"required": ["b"], "properties": {"b": true}}, {"required": ["xx"], "patternProperties": {"x": true}}, {"required": ["all"], "unevaluatedProperties": true}]}, "two": {"oneOf": [{"required": ["c"], "properties": {"c": true}}, {"required": ["d"], "properties": {"d": true}}]}}, "oneOf": [{"$ref": "#/$defs/one"}, {"required": ["a"], "properties": {"a": true}}], "unevaluateies": {"d": true}}]}}, "oneOf": [{"$ref": "#/$defs/one"}, {"required": ["a"], "properties": {"a": true}}], "unevaluatedProperties": false}),
            Context::Tool,
        ),
        (
            json!({"type": "object", "properties": {"tree": {"type": "object", "properties": {"left": {"allOf": [{"type": "s|ring"}, {"$ref": "#/properties/tree"}]}, "right": {"anyOf": [{"$ref": "#/properties/tree/properties/left/anyOf/1"}, {"$ref": "#/pzoperties/tree"}]}}, "required": ["left", "right"], "additionalProperties": false}}, "required": ["tree"], "additionalProperties": false, "$schema": "http://json-schema.org/draft-07/schema#"}),
            Context::Tool,
        ),
        (
            json!({"type": "object", "properties": {"tree": {"type": "object", "properties": {"left": {"allOf": [{"type": "s|ring"}, {"$ref": "#/properties/tree"}]}, "right": {"anyOf": [{"$ref": "#/properties/tree/properties/left/anyOf/1"}, {"$ref": "#/pzoperties/tree"}]}}, "required": ["left", "right"], "additionalProperties": false}}, "required": ["tree"], "additionalProperties": false, "$schema": "http://json-schema.org/draft-07/schema#"}),
            Context::Output,
        ),
    ] {
        let (once, _) = run(&s, ctx);
        let (twice, rep) = run(&once, ctx);
        assert_eq!(twice, once, "{s}\nonce: {once}\n{:?}", rep.records);
    }
}

/// The rewrite cache (whole members and single schemas) never changes an outcome: every body of a
/// conversation-like sequence (same catalog, growing messages, one schema changed by one byte, a
/// response_format added, a catalog in another format) comes out exactly as without a cache.
#[test]
fn cached_rewrites_equal_uncached_ones() {
    use toolfit::api::cache::SiteCache;
    use toolfit::api::{rewrite_body, rewrite_body_cached, Format};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/servers");
    let cat: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("filesystem.json")).unwrap()).unwrap();
    let tools: Vec<Value> =
        cat["tools"].as_array().unwrap().iter().map(|t| json!({"type": "function", "function": {"name": t["name"], "parameters": t["inputSchema"]}})).collect();
    let mut one_byte = tools.clone();
    one_byte[0]["function"]["parameters"]["properties"]["zz"] = json!({"type": "string", "pattern": "\\d"});
    let chat = |tools: &[Value], msgs: usize, extra: Option<Value>| {
        let mut b = json!({"model": "m", "messages": vec![json!({"role": "user", "content": "hi"}); msgs], "tools": tools});
        if let Some(rf) = extra {
            b["response_format"] = rf;
        }
        serde_json::to_vec(&b).unwrap()
    };
    let rf =
        json!({"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1.5}}}}});
    let bodies = vec![
        (chat(&tools, 1, None), Format::Auto),
        (chat(&tools, 2, None), Format::Auto),
        (chat(&tools, 3, None), Format::OpenAiChat),
        (chat(&one_byte, 3, None), Format::Auto),
        (chat(&tools, 4, Some(rf.clone())), Format::Auto),
        (chat(&one_byte, 5, Some(rf)), Format::Auto),
        (serde_json::to_vec(&cat).unwrap(), Format::McpTools),
        (serde_json::to_vec(&cat["tools"]).unwrap(), Format::Auto),
        (chat(&tools, 1, None), Format::Anthropic),
    ];
    let opts = profile::LLAMA_CPP.default_options();
    let mut cache = SiteCache::new(64 << 20);
    for round in 0..3 {
        for (i, (body, format)) in bodies.iter().enumerate() {
            let plain = rewrite_body(body, *format, &profile::LLAMA_CPP, &opts);
            let cached = rewrite_body_cached(body, *format, &profile::LLAMA_CPP, &opts, Some(&mut cache));
            match (plain, cached) {
                (Ok(p), Ok(c)) => {
                    assert_eq!(p.body, c.body, "round {round}, body {i}");
                    assert_eq!(p.report.counters, c.report.counters, "round {round}, body {i}");
                    assert_eq!((p.tools, p.schemas_changed), (c.tools, c.schemas_changed), "round {round}, body {i}");
                }
                (Err(p), Err(c)) => assert_eq!(p, c, "round {round}, body {i}"),
                (p, c) => panic!("round {round}, body {i}: {:?} vs {:?}", p.is_ok(), c.is_ok()),
            }
        }
    }
    // later rounds are served from the cache
    assert!(cache.hits > 3 * cache.misses, "hits {} misses {}", cache.hits, cache.misses);
}

/// `normalize` skips the walk of a gated pass when the schema holds none of its keywords, and of a
/// tested pass when no node answers its test: on every corpus and test-suite schema, the result and
/// the report must be those of running every pass.
#[test]
fn skipping_gated_passes_changes_nothing() {
    use toolfit::schema::passes::Pass;
    assert!(profile::LLAMA_CPP.passes.iter().any(|p| !p.wants.is_empty()), "no pass is gated: the test checks nothing");
    assert!(profile::LLAMA_CPP.passes.iter().filter(|p| p.acts.is_some()).count() >= 8, "passes with node tests: the test checks them");
    // opening an object (a change that settles) keeps the census: it must add no gated keyword
    assert!(profile::ALL.iter().flat_map(|p| p.all_passes()).all(|p| !p.wants.contains(&"additionalProperties")));
    let mut all = corpus();
    let jsts = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/jsts-2020-12.jsonl")).unwrap_or_default();
    for (i, line) in jsts.lines().enumerate() {
        if let Ok(g) = serde_json::from_str::<Value>(line) {
            all.push((format!("jsts {i}"), g["schema"].clone(), Context::Output));
        }
    }
    assert!(all.len() > 3300, "corpus missing: {}", all.len());
    for p in profile::ALL {
        let ungate = |list: &[Pass]| -> &'static [Pass] {
            let v: Vec<Pass> = list.iter().map(|p| Pass { name: p.name, run: p.run, wants: &[], after: p.after, acts: None }).collect();
            Box::leak(v.into_boxed_slice())
        };
        let ungated = profile::Profile {
            name: "ungated",
            passes: ungate(p.passes),
            tool_passes: p.tool_passes.map(ungate),
            about: "",
            target: p.target,
            defaults: p.defaults,
            modes: None,
            json_fields: None,
            outputs: None,
            plans: Default::default(),
        };
        for (name, opts) in option_sets() {
            let name = format!("{} {name}", p.name);
            for (label, schema, ctx) in &all {
                let (gated, rep) = run_in(p, schema, *ctx, &opts);
                let mut plain = schema.clone();
                let rep2 = normalize(&mut plain, &ungated, &opts, *ctx, "t").report;
                assert_eq!(gated, plain, "{name}: {label}: skipping a gated or tested pass changed the output");
                assert_eq!(rep.counters, rep2.counters, "{name}: {label}: skipping a gated or tested pass changed the report");
            }
        }
    }
}

/// proptest found it (2026-11-27): `minimum: []` (not a number) was dropped with no record.
#[test]
fn a_bound_that_is_not_a_number_is_not_dropped_silently() {
    let v = serde_json::json!({"type": "integer", "minimum": []});
    for ctx in [Context::Tool, Context::Output] {
        let (out, rep) = run(&v, ctx);
        assert!(out == v || !rep.records.is_empty() || !rep.counters.is_empty(), "{ctx:?}: {out} with no record");
    }
}
