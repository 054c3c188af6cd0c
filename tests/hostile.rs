//! Hostile and broken input, with the outcome of each pinned: what the body becomes and which counter
//! moves. Bounds are asserted on output size and on the limits that fired; a watchdog turns a hang into
//! a failure (speed itself is shown by the benchmarks, not here).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;
use toolfit::api::{rewrite_body, Format, Skip};
use toolfit::filter::config::Config;
use toolfit::filter::host::{Headers, RouteMeta};
use toolfit::filter::request::{finish, start, Start, Verdict};
use toolfit::filter::stats::{metric_name, Metrics, Series};
use toolfit::schema::{normalize, profile, Context, Options};

/// Runs `f` on another thread; a test fails instead of hanging past `secs`.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new().stack_size(8 << 20).spawn(move || tx.send(f()).ok()).unwrap();
    rx.recv_timeout(Duration::from_secs(secs)).expect("did not finish: a hang")
}

#[derive(Default)]
struct Counts(HashMap<String, u64>);
impl Metrics for Counts {
    fn add(&mut self, s: &Series, n: u64) {
        *self.0.entry(s.dotted()).or_default() += n;
    }
    fn record(&mut self, _: &Series, _: u64) {}
}

/// The filter's whole decision for one chat body: verdict and the counters that moved.
fn through_filter(body: Vec<u8>) -> (Verdict, HashMap<String, u64>) {
    within(60, move || {
        let cfg = Config::default();
        let mut m = Counts::default();
        let h = Headers { method: "POST", path: "/v1/chat/completions", content_type: Some("application/json"), ..Headers::default() };
        let Start::Buffer(plan) = start(&cfg, &h, Some("chat"), &RouteMeta::default(), &mut m, &mut |_| {}) else { panic!() };
        let (v, _, _) = finish(&cfg, &plan, &body, &mut m, &mut || 0, None);
        let short: HashMap<String, u64> =
            m.0.into_iter().filter(|(_, n)| *n > 0).map(|(k, n)| (k.trim_start_matches(&metric_name("chat", "llama-cpp", "")).to_string(), n)).collect();
        (v, short)
    })
}

fn chat(schema: &str) -> Vec<u8> {
    format!(r#"{{"messages":[],"tools":[{{"type":"function","function":{{"name":"t","description":"d","parameters":{schema}}}}}]}}"#).into_bytes()
}

fn replaced(v: &Verdict) -> Value {
    match v {
        Verdict::Replace(b) => serde_json::from_slice(b).unwrap(),
        other => panic!("expected a rewrite, got {other:?}"),
    }
}

/// Nesting as the `bounds` pass counts it: a map keyword's object adds nothing, an array keyword's
/// array a level of its own.
fn schema_depth(v: &Value) -> usize {
    let Value::Object(m) = v else { return 0 };
    let mut d = 0;
    for (k, c) in m {
        let sub = match (k.as_str(), c) {
            ("properties" | "$defs" | "definitions" | "patternProperties" | "dependentSchemas", Value::Object(x)) => {
                1 + x.values().map(schema_depth).max().unwrap_or(0)
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems" | "items", Value::Array(a)) => 2 + a.iter().map(schema_depth).max().unwrap_or(0),
            ("items" | "additionalProperties" | "not" | "contains" | "if" | "then" | "else" | "propertyNames", x) => 1 + schema_depth(x),
            _ => 0,
        };
        d = d.max(sub);
    }
    d
}

fn params(body: &Value) -> &Value {
    &body["tools"][0]["function"]["parameters"]
}

#[test]
fn ref_fan_out_bomb_stays_small() {
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        // percent-encoded pointers: llama.cpp cannot resolve them, so every ref must be rewritten
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"a": {"$ref": format!("#/%24defs/d{}", i + 1)}, "b": {"$ref": format!("#/%24defs/d{}", i + 1)}}}),
        );
    }
    defs.insert("d40".into(), json!({"type": "string"}));
    let s = json!({"type": "object", "properties": {"x": {"$ref": "#/%24defs/d0"}}, "$defs": defs}).to_string();
    let (v, c) = through_filter(chat(&s));
    let out = replaced(&v);
    // 2^40 paths if every ref were inlined: the budget keeps refs into $defs instead
    let text = out.to_string();
    assert!(text.len() < 200_000, "{} bytes", text.len());
    assert!(text.contains("\"$ref\":\"#/$defs/d39\""), "refs kept in $defs: {text}");
    assert_eq!(c.get("requests_rewritten"), Some(&1));
}

#[test]
fn cycles_of_every_shape_terminate_and_keep_refs_valid() {
    for s in [
        json!({"$ref": "#"}),
        json!({"type": "object", "properties": {"self": {"$ref": "#"}}}),
        json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}),
        json!({"type": "object", "properties": {"l": {"$ref": "#/$defs/list"}}, "$defs": {"list": {"type": "array", "items": {"$ref": "#/$defs/list"}}}}),
        json!({"type": "object", "properties": {"t": {"$ref": "#/$defs/t"}}, "$defs": {"t": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/t"}]}}}),
        json!({"$defs": {"x": {"$defs": {"y": {"$ref": "#/$defs/x"}}, "$ref": "#/$defs/x/$defs/y"}}, "$ref": "#/$defs/x"}),
    ] {
        for ctx in [Context::Tool, Context::Output] {
            let input = s.clone();
            let out = within(10, move || {
                let mut v = input;
                normalize(&mut v, &profile::LLAMA_CPP, &Options::default(), ctx, "t");
                v
            });
            let text = out.to_string();
            for r in text.split("\"$ref\":\"").skip(1) {
                let target = r.split('"').next().unwrap();
                let ptr = target.trim_start_matches('#');
                assert!(out.pointer(ptr).is_some(), "{s} -> dangling {target} in {text}");
            }
        }
    }
}

#[test]
fn external_and_dangling_refs_are_never_fetched() {
    // nothing in the engine can open a socket or a file: a listener here sees no connection
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    let s = format!(
        r##"{{"type":"object","properties":{{"a":{{"$ref":"http://127.0.0.1:{port}/s.json"}},"b":{{"$ref":"file:///etc/passwd"}},"c":{{"$ref":"#/$defs/nope"}},"d":{{"$ref":"s.json#/x"}}}}}}"##
    );
    let (v, c) = through_filter(chat(&s));
    let out = replaced(&v);
    assert!(!out.to_string().contains("$ref"));
    assert_eq!(c.get("ref_external"), Some(&3));
    assert_eq!(c.get("refs_unresolved"), Some(&1));
    std::thread::sleep(Duration::from_millis(50));
    assert!(l.accept().is_err(), "the engine connected to the $ref URL");
}

#[test]
fn nesting_100000_deep_is_cut_to_the_bound_and_counted() {
    // too deep for the parser: cut at the byte level (a subschema past the depth bound, or the schema
    // holding data nested too deep), then rewritten like any other schema
    for (inner, at) in [
        ("{\"items\":".repeat(100_000) + "{}" + &"}".repeat(100_000), "/items".repeat(65)),
        ("{\"type\":\"array\",\"default\":".to_string() + &"[".repeat(100_000) + &"]".repeat(100_000) + "}", "/properties/x".into()),
    ] {
        let schema = if at.starts_with("/items") { inner } else { format!(r#"{{"type":"object","properties":{{"x":{inner}}}}}"#) };
        let (v, c) = through_filter(chat(&schema));
        let out = replaced(&v);
        assert!(c.get("bounds_exceeded").is_some_and(|n| *n >= 1), "{c:?}");
        assert_eq!(c.get("schemas_unparsed"), None, "{c:?}");
        assert_eq!(c.get("requests_rewritten"), Some(&1));
        // nothing with subschemas deeper than 64: leaves (the cuts' `{}`) may sit one level below
        assert!(schema_depth(params(&out)) <= 65, "deeper than the bound: {}", params(&out));
        assert!(out.to_string().len() < 20_000);
        let _ = at;
    }
    // within the parser's reach but past max_depth: cut at 64, recorded
    let mut s = json!({"type": "string"});
    for _ in 0..70 {
        s = json!({"type": "array", "items": s});
    }
    let (v, c) = through_filter(chat(&json!({"type": "object", "properties": {"deep": s}}).to_string()));
    assert!(matches!(v, Verdict::Replace(_)));
    assert!(c.contains_key("bounds_exceeded"), "{c:?}");
}

#[test]
fn a_million_properties_replace_the_schema() {
    let props: serde_json::Map<String, Value> = (0..1_000_000).map(|i| (format!("p{i}"), json!({}))).collect();
    let s = json!({"type": "object", "properties": props}).to_string();
    let n = s.len();
    let (v, c) = through_filter(chat(&s));
    let out = replaced(&v);
    assert_eq!(params(&out), &json!({"type": "object"}));
    assert_eq!(c.get("bounds_exceeded"), Some(&1));
    assert!(n > 10_000_000);
}

#[test]
fn enum_of_100000_values_and_huge_counts() {
    let vals: Vec<String> = (0..100_000).map(|i| format!("v{i}")).collect();
    let s = json!({"type": "object", "properties": {"e": {"type": "string", "enum": vals}, "a": {"type": "array", "minItems": 1u64 << 60, "items": {"type": "integer"}},
                   "s": {"type": "string", "maxLength": 1e300}}})
    .to_string();
    let (v, c) = through_filter(chat(&s));
    let out = replaced(&v);
    let p = params(&out);
    assert_eq!(p["properties"]["e"]["enum"].as_array().unwrap().len(), 100_000, "data is data: kept");
    assert!(p["properties"]["a"]["minItems"].as_u64().unwrap() <= 1000);
    assert!(c.contains_key("repetition_clamped"));
}

#[test]
fn broken_schemas_get_a_pinned_outcome() {
    let cases: &[(&str, &str)] = &[
        (r#"{"type":"object","properties":{"r":{"type":"string","pattern":"(unclosed"}}}"#, "pattern_removed"),
        (r#"{"type":7,"properties":{"a":{"type":["string",null]}}}"#, "keyword_removed"),
        (r#"true"#, "tool_root_fixed"),
        (r#"false"#, "schema_replaced"),
        (r#"{"type":"object","properties":{"a":{"const":-0.0,"minimum":-0}}}"#, ""),
        (r#"{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"integer"}}}"#, ""),
    ];
    for (s, counter) in cases {
        let (v, c) = through_filter(chat(s));
        if counter.is_empty() {
            assert!(matches!(v, Verdict::Forward | Verdict::Replace(_)), "{s}");
        } else {
            assert!(c.contains_key(*counter), "{s}: {c:?}");
            let out = replaced(&v);
            assert_eq!(params(&out)["type"], json!("object"), "{s}");
        }
    }
    // numbers past f64 and lone surrogates: the schema cannot be parsed, the body goes as it came
    for s in [r#"{"type":"object","properties":{"n":{"maximum":1e400}}}"#, r#"{"type":"object","description":"\ud800"}"#] {
        let (v, c) = through_filter(chat(s));
        assert_eq!(v, Verdict::Forward, "{s}");
        assert_eq!(c.get("schemas_unparsed"), Some(&1), "{s}: {c:?}");
    }
}

#[test]
fn broken_bodies_are_forwarded_and_counted() {
    let cases: &[(&[u8], &str)] = &[
        (b"", "skipped_not_json"),
        (b"null", "skipped_unknown_shape"),
        (b"[1,2]", "skipped_unknown_shape"),
        (b"{\"tools\": [", "skipped_not_json"),
        (b"{\"tools\": []} trailing", "skipped_not_json"),
        (b"{\"tools\": [{\"type\":\"function\",\"function\":{\"name\":\"\xff\xfe\"}}]}", "skipped_not_json"),
        (b"\x1f\x8b\x08\x00gzip", "skipped_not_json"),
    ];
    for (body, counter) in cases {
        let (v, c) = through_filter(body.to_vec());
        assert_eq!(v, Verdict::Forward, "{body:?}");
        assert_eq!(c.get(*counter), Some(&1), "{body:?}: {c:?}");
    }
    assert!(matches!(rewrite_body(b"{\"x\":1}", Format::OpenAiChat, &profile::LLAMA_CPP, &Options::default()), Err(Skip::UnknownShape)));
}
