//! The bugs demonstrated in the two libraries people compare toolfit with (backend-rules.md §4:
//! PyPI `mcp-schema-normalize` 0.1.1, B*; npm `@silupanda/schema-bridge` 0.2.3, S*), each as the input
//! that shows it and what toolfit does instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use serde_json::{json, Value};
use toolfit::api::convert::{convert, To};
use toolfit::schema::profile::{self, Profile};
use toolfit::schema::{normalize, Context, Kind, Options, Report};

fn run(p: &Profile, schema: Value) -> (Value, Report) {
    let mut v = schema;
    let o = normalize(&mut v, p, &Options::default(), Context::Tool, "t");
    (v, o.report)
}

/// Every `$ref` in `v` points at something in `v`.
fn refs_resolve(v: &Value) -> bool {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|c| refs(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| refs(c, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(v, &mut all);
    all.iter().all(|r| r == "#" || r.strip_prefix('#').is_some_and(|p| v.pointer(p).is_some()))
}

/// The list `convert --to NAME` writes.
fn to(name: &str) -> To {
    To::by_name(name).unwrap_or_else(|| panic!("no convert --to {name}"))
}

fn tools(to: To, strict: bool, list: Value) -> Value {
    let (out, _) = convert(json!({ "tools": list }).to_string().as_bytes(), to, strict, &Options::default()).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn node() -> Value {
    json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}})
}

#[test]
fn b1_s7_recursive_refs_keep_their_definitions() {
    for p in [&profile::LLAMA_CPP, &profile::OPENAI_STRICT, &profile::GEMINI_JSON, &profile::VLLM] {
        let (v, _) = run(p, node());
        assert!(refs_resolve(&v), "{}: dangling ref in {v}", p.name);
    }
    // S7: draft-07 `definitions` with refs to them
    let d7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"n": {"$ref": "#/definitions/Node"}},
                    "definitions": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}}}}});
    for p in [&profile::LLAMA_CPP, &profile::OPENAI_STRICT, &profile::ANTHROPIC_STRICT] {
        let (v, _) = run(p, d7.clone());
        assert!(refs_resolve(&v), "{}: dangling ref in {v}", p.name);
    }
}

#[test]
fn b2_b7_s9_cut_types_keep_their_type() {
    // a chain of refs ending at a string stays a string; a recursive array cut below stays an array
    let chain = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/C"}, "C": {"$ref": "#/$defs/D"},
        "D": {"$ref": "#/$defs/E"}, "E": {"$ref": "#/$defs/F"}, "F": {"type": "string", "maxLength": 5}}});
    for p in [&profile::LLAMA_CPP, &profile::GEMINI, &profile::COHERE] {
        let (v, _) = run(p, chain.clone());
        let a = &v["properties"]["a"];
        let a = if a.get("$ref").is_some() { v.pointer(a["$ref"].as_str().unwrap().trim_start_matches('#')).unwrap() } else { a };
        assert_eq!(a["type"], "string", "{}: {v}", p.name);
    }
    let list = json!({"type": "object", "properties": {"l": {"$ref": "#/$defs/L"}}, "$defs": {"L": {"type": "array", "items": {"$ref": "#/$defs/L"}}}});
    let (v, r) = run(&profile::GEMINI, list);
    assert!(!v.to_string().contains("$ref"), "{v}");
    let mut cur = &v["properties"]["l"];
    while let Some(next) = cur.get("items").filter(|n| n.get("type").is_some()) {
        cur = next;
    }
    assert_eq!(cur["type"], "array", "the cut keeps the type: {v}");
    assert_eq!(cur["items"], json!({}), "and Gemini's items: {v}");
    assert!(r.counters.contains_key(&Kind::RecursionCut));
}

#[test]
fn b3_s10_ref_siblings_are_kept() {
    let s = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "the a", "default": "x"}}, "$defs": {"A": {"type": "string"}}});
    for p in [&profile::LLAMA_CPP, &profile::GEMINI, &profile::COHERE, &profile::OPENAI_STRICT] {
        let (v, _) = run(p, s.clone());
        let text = v.to_string();
        assert!(text.contains("the a"), "{}: description lost: {text}", p.name);
        assert!(text.contains("\"default\":\"x\"") || text.contains("(Default: \\\"x\\\".)"), "{}: default lost: {text}", p.name);
    }
}

#[test]
fn b4_a_property_named_not_is_a_property() {
    let s = json!({"type": "object", "properties": {"not": {}, "a": {"type": "string"}}, "required": ["not"]});
    for p in [&profile::LLAMA_CPP, &profile::GEMINI, &profile::OPENAI, &profile::ANTHROPIC_STRICT] {
        let (v, _) = run(p, s.clone());
        assert!(v["properties"].get("not").is_some(), "{}: {v}", p.name);
    }
}

#[test]
fn b5_data_keywords_are_not_schemas() {
    let s = json!({"type": "object", "properties": {"a": {"type": "object", "examples": [{"$ref": "#/$defs/A"}], "default": {"anyOf": 1}}}, "$defs": {"A": {"type": "integer"}}});
    let (v, _) = run(&profile::LLAMA_CPP, s);
    assert_eq!(v["properties"]["a"]["examples"], json!([{"$ref": "#/$defs/A"}]), "{v}");
    assert_eq!(v["properties"]["a"]["default"], json!({"anyOf": 1}), "{v}");
}

#[test]
fn b6_s1_siblings_and_all_of_intersect() {
    // B6: a branch's `maxLength` does not lose the sibling's `type`
    let s = json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"properties": {"a": {"maxLength": 3}}}, {"required": ["a"]}]});
    let (v, _) = run(&profile::LLAMA_CPP, s);
    let text = v.to_string();
    assert!(!text.contains("{\"maxLength\":3}"), "type lost beside maxLength: {text}");
    // S1: allOf keeps the parent's properties and required
    let s = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "allOf": [{"properties": {"b": {"type": "integer"}}}]});
    for p in [&profile::OPENAI_STRICT, &profile::GEMINI, &profile::LLAMA_CPP] {
        let (v, _) = run(p, s.clone());
        assert!(v["properties"].get("a").is_some() && v["properties"].get("b").is_some(), "{}: {v}", p.name);
        assert!(v["required"].as_array().unwrap().contains(&json!("a")), "{}: {v}", p.name);
    }
}

#[test]
fn b8_anchor_refs_resolve() {
    let s = json!({"type": "object", "properties": {"a": {"$ref": "#node"}}, "$defs": {"N": {"$anchor": "node", "type": "integer"}}});
    for p in [&profile::LLAMA_CPP, &profile::GEMINI, &profile::OPENAI_STRICT] {
        let (v, _) = run(p, s.clone());
        let a = &v["properties"]["a"];
        let a = if a.get("$ref").is_some() { v.pointer(a["$ref"].as_str().unwrap().trim_start_matches('#')).unwrap().clone() } else { a.clone() };
        assert!(a.to_string().contains("integer"), "{}: {v}", p.name);
    }
}

#[test]
fn b9_never_stays_never() {
    let s = json!({"type": "object", "properties": {"a": {"type": "string", "not": {}}}, "required": ["a"]});
    let (v, r) = run(&profile::LLAMA_CPP, s);
    // a required property no value satisfies: the whole schema is unsatisfiable, never "any string"
    assert_ne!(v["properties"]["a"], json!({"type": "string"}), "{v}");
    // llama.cpp cannot spell "no value": the schema is replaced by any object, and the report says so
    assert_eq!(v, json!({"type": "object"}));
    let kinds: Vec<(Kind, &str, bool)> = r.records.iter().map(|x| (x.kind, x.path.as_str(), x.lossy())).collect();
    assert_eq!(kinds, [(Kind::NeverDropped, "", false), (Kind::SchemaReplaced, "", true)], "{:?}", r.records);
}

#[test]
fn b12_every_tool_shape_is_read() {
    let p = &profile::LLAMA_CPP;
    let s = r#"{"type":"object","properties":{"a":{"type":"string","pattern":"\\d"}}}"#;
    for body in [
        format!(r#"{{"tools":[{{"type":"function","name":"f","parameters":{s}}}]}}"#),
        format!(r#"{{"tools":[{{"name":"f","inputSchema":{s}}}]}}"#),
        format!(r#"{{"tools":[{{"type":"function","function":{{"name":"f","parameters":{s}}}}}]}}"#),
    ] {
        let o = toolfit::api::rewrite_body(body.as_bytes(), toolfit::api::Format::Auto, p, &Options::default()).unwrap();
        assert_eq!(o.tools, 1, "{body}");
        assert!(o.body.is_some(), "{body}");
    }
}

#[test]
fn deep_nesting_is_bounded_not_a_crash() {
    // built as text: a value this deep would overflow the test's own stack
    let text = format!("{}{}{}", r#"{"type":"object","properties":{"a":"#.repeat(8000), r#"{"type":"string"}"#, "}}".repeat(8000));
    for p in [&profile::OPENAI_STRICT, &profile::GEMINI, &profile::LLAMA_CPP] {
        let body = format!(r#"{{"tools":[{{"type":"function","function":{{"name":"f","parameters":{text}}}}}]}}"#);
        let o = toolfit::api::rewrite_body(body.as_bytes(), toolfit::api::Format::OpenAiChat, p, &Options::default()).unwrap();
        assert!(o.report.counters.contains_key(&Kind::BoundsExceeded), "{}", p.name);
    }
}

#[test]
fn s2_any_of_beside_one_of_keeps_both() {
    let s = json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}], "oneOf": [{"minimum": 1}, {"maxLength": 2}]}}});
    let (v, _) = run(&profile::OPENAI_STRICT, s);
    let text = v["properties"]["a"].to_string();
    assert!(text.contains("string") && text.contains("integer"), "anyOf branches lost: {text}");
}

#[test]
fn s3_optional_enums_accept_null() {
    let s = json!({"type": "object", "properties": {"e": {"type": "string", "enum": ["a", "b"]}}});
    let (v, _) = run(&profile::OPENAI_STRICT, s);
    assert!(v["properties"]["e"]["enum"].as_array().unwrap().contains(&Value::Null), "{v}");
    assert!(v["properties"]["e"]["type"].as_array().unwrap().contains(&json!("null")), "{v}");
}

#[test]
fn s4_nullable_objects_are_closed() {
    let s = json!({"type": "object", "properties": {"o": {"type": ["object", "null"], "properties": {"x": {"type": "string"}}}}, "required": ["o"]});
    let (v, _) = run(&profile::OPENAI_STRICT, s);
    assert_eq!(v["properties"]["o"]["additionalProperties"], json!(false), "{v}");
}

#[test]
fn s5_strict_refused_keywords_do_not_survive() {
    let s = json!({"type": "object", "properties": {"m": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        "o": {"type": "object", "properties": {"k": {"type": "string"}}, "minProperties": 1, "if": {"required": ["k"]}, "then": {}},
        "t": {"type": "array", "items": {"type": "object", "properties": {"z": {"type": "integer"}}, "propertyNames": {"maxLength": 3}}}}});
    let (v, r) = run(&profile::OPENAI_STRICT, s);
    let text = v.to_string();
    for k in ["uniqueItems", "minProperties", "\"if\"", "propertyNames"] {
        assert!(!text.contains(&format!("\"{}\":", k.trim_matches('"'))), "{k} survived: {text}");
    }
    assert!(r.counters.contains_key(&Kind::KeywordRemoved));
    // inside `items` too: the nested object is closed
    assert_eq!(v["properties"]["t"]["items"]["additionalProperties"], json!(false), "{v}");
}

#[test]
fn s6_supported_keywords_are_kept() {
    let s = json!({"type": "object", "properties": {"e": {"type": "string", "format": "email", "pattern": "^[a-z]+@"}, "n": {"type": "integer", "minimum": 1, "maximum": 9},
        "l": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}}, "required": ["e", "n", "l"]});
    let (v, _) = run(&profile::OPENAI_STRICT, s);
    assert_eq!(v["properties"]["e"]["format"], "email");
    assert!(v["properties"]["e"]["pattern"].is_string());
    assert_eq!((v["properties"]["n"]["minimum"].clone(), v["properties"]["n"]["maximum"].clone()), (json!(1), json!(9)));
    assert_eq!((v["properties"]["l"]["minItems"].clone(), v["properties"]["l"]["maxItems"].clone()), (json!(1), json!(3)));
}

#[test]
fn s8_refs_under_pattern_properties_resolve() {
    let s = json!({"type": "object", "patternProperties": {"^x": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "integer"}}});
    for p in [&profile::COHERE, &profile::OLLAMA, &profile::GEMINI_JSON, &profile::LLAMA_CPP] {
        let (v, _) = run(p, s.clone());
        assert!(refs_resolve(&v), "{}: {v}", p.name);
    }
}

#[test]
fn s11_false_stays_false() {
    let s = json!({"type": "object", "properties": {"gone": false, "a": {"type": "string"}}});
    for p in [&profile::OPENAI_STRICT, &profile::LLAMA_CPP] {
        let (v, r) = run(p, s.clone());
        // a property no value satisfies is one the model must never write: it leaves the schema (never
        // "anything"), and the report counts it
        assert!(v["properties"].get("gone").is_none(), "{}: false became {}", p.name, v["properties"]["gone"]);
        assert_eq!(v["properties"]["a"]["type"], if p.name == "openai-strict" { json!(["string", "null"]) } else { json!("string") });
        if p.name == "openai-strict" {
            assert_eq!(v["additionalProperties"], json!(false), "{v}");
        }
        assert!(r.counters.get(&Kind::BooleanSchema).is_some_and(|n| *n >= 1), "{}: {:?}", p.name, r.records);
    }
}

#[test]
fn s12_s13_gemini_parameters_hold_only_schema_fields() {
    let s = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"n": {"$ref": "#/$defs/N"}, "c": {"const": "x"}, "t": {"type": ["string", "null"]},
        "m": {"type": "object", "additionalProperties": {"type": "string"}, "propertyNames": {"pattern": "^a"}}, "e": {"type": "integer", "exclusiveMinimum": 0}, "d": {"type": "string", "default": "q"}},
        "$defs": {"N": {"type": "string"}}});
    let (v, _) = run(&profile::GEMINI, s);
    let text = v.to_string();
    for k in ["$ref", "$defs", "$schema", "additionalProperties", "const", "propertyNames", "exclusiveMinimum"] {
        assert!(!text.contains(&format!("\"{k}\":")), "{k} left: {text}");
    }
    assert_eq!(v["properties"]["t"], json!({"type": "string", "nullable": true}));
    assert_eq!(v["properties"]["d"]["default"], "q", "S13: default is a Schema field, kept");
    // the envelope: functionDeclarations
    let out = tools(to("gemini"), false, json!([{"name": "f", "inputSchema": {"type": "object"}}]));
    assert!(out[0]["functionDeclarations"][0]["parameters"].is_object(), "{out}");
}

#[test]
fn s14_no_root_union_for_strict() {
    let s = json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"b": {"type": "string"}}, "required": ["b"]}]});
    for p in [&profile::OPENAI_STRICT, &profile::ANTHROPIC, &profile::ANTHROPIC_STRICT, &profile::GEMINI] {
        let (v, r) = run(p, s.clone());
        assert!(v.get("anyOf").is_none() && v.get("oneOf").is_none(), "{}: {v}", p.name);
        assert!(r.counters.contains_key(&Kind::RootUnionMerged), "{}", p.name);
    }
}

#[test]
fn s15_mcp_names_pass_through_convert() {
    let out = tools(
        to("mcp"),
        false,
        json!([{"name": "github.create_issue", "inputSchema": {"type": "object"}}, {"name": "ns:tool", "inputSchema": {"type": "object"}}]),
    );
    assert_eq!(out[0]["name"], "github.create_issue");
    assert_eq!(out[1]["name"], "ns:tool");
}

/// S15's other half: a 200-character name is not sent to OpenAI as it is (limit 64), nor a dotted one
/// to Anthropic; Gemini keeps `ns:tool` and dots, which it takes.
#[test]
fn s15_names_the_api_refuses_are_mapped_not_passed() {
    let long = "t".repeat(200);
    let out = tools(
        to("openai"),
        false,
        json!([{"name": long, "inputSchema": {"type": "object"}}, {"name": "github.create_issue", "inputSchema": {"type": "object"}}]),
    );
    let n0 = out[0]["function"]["name"].as_str().unwrap();
    assert!(n0.len() <= 64 && n0.starts_with("ttt"), "{n0}");
    assert_eq!(out[1]["function"]["name"], "github_create_issue");
    let out = tools(to("anthropic"), false, json!([{"name": "github.create_issue", "inputSchema": {"type": "object"}}]));
    assert_eq!(out[0]["name"], "github_create_issue");
    let out = tools(to("gemini"), false, json!([{"name": "ns:tool.v1", "inputSchema": {"type": "object"}}]));
    assert_eq!(out[0]["functionDeclarations"][0]["name"], "ns:tool.v1");
}

#[test]
fn s16_ollama_tools_are_function_tools() {
    let out =
        tools(to("ollama"), false, json!([{"name": "f", "description": "d", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}]));
    assert_eq!(out[0]["type"], "function");
    assert!(out[0]["function"]["parameters"].is_object(), "{out}");
    assert!(out[0].get("format").is_none());
}

#[test]
fn s20_defs_and_definitions_together() {
    let s = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/definitions/B"}}, "$defs": {"A": {"type": "string"}}, "definitions": {"B": {"type": "integer"}}});
    for p in [&profile::OPENAI_STRICT, &profile::ANTHROPIC_STRICT, &profile::LLAMA_CPP, &profile::GEMINI_JSON] {
        let (v, _) = run(p, s.clone());
        assert!(refs_resolve(&v), "{}: {v}", p.name);
        assert!(v.to_string().contains("integer"), "{}: {v}", p.name);
    }
}

#[test]
fn fan_out_of_definitions_is_bounded() {
    // a diamond of depth 30: each definition refers to the next twice (2^30 copies inlined naively)
    let mut defs = serde_json::Map::new();
    for i in 0..30 {
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": {"l": {"$ref": format!("#/$defs/D{}", i + 1)}, "r": {"$ref": format!("#/$defs/D{}", i + 1)}}}),
        );
    }
    defs.insert("D30".into(), json!({"type": "string"}));
    let s = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/D0"}}, "$defs": defs});
    for p in [&profile::GEMINI, &profile::COHERE, &profile::OPENAI_STRICT, &profile::LLAMA_CPP] {
        let (v, _) = run(p, s.clone());
        assert!(v.to_string().len() < 4_000_000, "{}: {} bytes", p.name, v.to_string().len());
    }
}
