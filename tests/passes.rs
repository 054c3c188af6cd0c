//! One group of cases per pass of the llama-cpp profile, with the failure cases the issue names: the
//! whole profile runs (as in production) and each case checks what its pass is for, plus the counters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use serde_json::{json, Value};
use toolfit::schema::{normalize, profile, Context, Kind, Options, Report};

fn llama(v: Value, ctx: Context) -> (Value, Report) {
    let mut v = v;
    let out = normalize(&mut v, &profile::LLAMA_CPP, &Options::default(), ctx, "t");
    (v, out.report)
}

fn out(v: Value) -> (Value, Report) {
    llama(v, Context::Output)
}

fn count(r: &Report, k: Kind) -> u64 {
    r.counters.get(&k).copied().unwrap_or(0)
}

/// The string form of the output, for "does not contain" checks.
fn text(v: &Value) -> String {
    v.to_string()
}

#[test]
fn bounds_depth_and_node_count() {
    let mut deep = json!({"type": "string", "maxLength": 7});
    for _ in 0..80 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let (v, r) = llama(deep, Context::Tool);
    assert!(count(&r, Kind::BoundsExceeded) >= 1);
    assert!(!text(&v).contains("maxLength"), "the part past depth 64 is gone");
    let props: serde_json::Map<String, Value> = (0..10_050).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
    let (_, r) = llama(json!({"type": "object", "properties": props}), Context::Tool);
    assert!(count(&r, Kind::BoundsExceeded) >= 1);
    assert!(r.lossy_count() >= 1);
}

/// Levels of JSON containers in `v`, the root object being level 0 (as vLLM counts them).
fn json_levels(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().filter(|c| c.is_object() || c.is_array()).map(|c| 1 + json_levels(c)).max().unwrap_or(0),
        Value::Array(a) => a.iter().filter(|c| c.is_object() || c.is_array()).map(|c| 1 + json_levels(c)).max().unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn bounds_keep_a_backend_nesting_limit_with_room_for_its_tool_wrapper() {
    let nested = |n: usize| {
        let mut s = json!({"type": "string", "enum": [["deep", ["data"]]]});
        for _ in 0..n {
            s = json!({"type": "object", "properties": {"a": s}, "required": ["a"]});
        }
        s
    };
    let limit = profile::VLLM.target.nesting.unwrap();
    for (ctx, levels) in [(Context::Tool, limit.levels(Context::Tool)), (Context::Output, limit.levels(Context::Output))] {
        // fits exactly: untouched
        let fits = nested((levels - 3) / 2);
        assert!(json_levels(&fits) <= levels);
        let mut v = fits.clone();
        let r = normalize(&mut v, &profile::VLLM, &Options::default(), ctx, "t").report;
        assert_eq!(count(&r, Kind::BoundsExceeded), 0, "{ctx:?}");
        // one level more: cut where it crosses, no deeper than the limit
        let mut v = nested((levels - 3) / 2 + 1);
        let r = normalize(&mut v, &profile::VLLM, &Options::default(), ctx, "t").report;
        assert_eq!(count(&r, Kind::BoundsExceeded), 1, "{ctx:?}");
        assert!(json_levels(&v) <= levels, "{ctx:?}: {} levels", json_levels(&v));
        assert!(json_levels(&v) >= levels - 3, "{ctx:?}: cut no higher than needed");
    }
    // llama.cpp sets no such limit
    let mut v = nested(40);
    let r = normalize(&mut v, &profile::LLAMA_CPP, &Options::default(), Context::Tool, "t").report;
    assert_eq!(count(&r, Kind::BoundsExceeded), 0);
}

#[test]
fn dialect_draft07_and_openapi() {
    let (v, r) = out(json!({
        "type": "object",
        "definitions": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}},
        "properties": {
            "t": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false},
            "n": {"$ref": "#/definitions/n"},
            "o": {"type": "string", "nullable": true},
            "s": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "STRING"}
        },
        "required": ["t", "n", "o", "s"]
    }));
    let p = &v["properties"];
    // items array + additionalItems: false is a tuple of at most two: one exact tuple per length
    // (the empty tuple's branch has no `prefixItems`: an empty one constrains nothing and 2020-12 refuses it)
    let lengths: Vec<usize> = p["t"]["anyOf"].as_array().unwrap().iter().map(|b| b["prefixItems"].as_array().map_or(0, Vec::len)).collect();
    assert_eq!(lengths, vec![0, 1, 2]);
    assert_eq!(p["t"]["anyOf"][2]["prefixItems"], json!([{"type": "string"}, {"type": "integer"}]));
    assert!(text(&p["o"]).contains("null"), "nullable became a null type: {}", p["o"]);
    assert_eq!(p["s"], json!({"type": "string"}));
    assert!(text(&v).contains("exclusiveMinimum") || text(&v).contains("\"minimum\":1"), "{v}");
    assert!(count(&r, Kind::DialectNormalized) >= 3);
    assert_eq!(r.lossy_count(), 0, "{:?}", r.first_lossy());
}

#[test]
fn boolean_subschemas() {
    let (v, r) = llama(json!({"type": "object", "properties": {"a": true, "b": false}, "additionalProperties": false}), Context::Tool);
    assert!(v["properties"].get("b").is_none(), "a property that can never be present is removed: {v}");
    assert!(v["properties"]["a"].is_object());
    assert!(count(&r, Kind::BooleanSchema) >= 1);
}

#[test]
fn refs_every_spelling_resolves() {
    let (v, r) = llama(
        json!({
            "type": "object",
            "$defs": {"a~b/c": {"type": "string", "maxLength": 3}, "x": {"$anchor": "here", "type": "integer"}},
            "properties": {
                "p": {"type": "array", "items": {"type": "boolean"}},
                "escaped": {"$ref": "#/$defs/a~0b~1c"},
                "pct": {"$ref": "#/$defs/a~0b%7E1c"},
                "into_props": {"$ref": "#/properties/p/items"},
                "anchor": {"$ref": "#here"},
                "with_siblings": {"$ref": "#/$defs/a~0b~1c", "minLength": 1}
            }
        }),
        Context::Tool,
    );
    let p = &v["properties"];
    assert_eq!(p["escaped"]["maxLength"], json!(3));
    assert_eq!(p["into_props"]["type"], json!("boolean"));
    assert_eq!(p["anchor"]["type"], json!("integer"));
    // siblings of a $ref are constraints (2020-12): both kept
    assert_eq!(p["with_siblings"]["maxLength"], json!(3));
    assert_eq!(p["with_siblings"]["minLength"], json!(1));
    assert_eq!(count(&r, Kind::RefsUnresolved), 0, "{:?}", r.records);
    // a percent-encoded pointer (`%7E` is `~`) resolves to the same definition
    assert_eq!(p["pct"], json!({"type": "string", "maxLength": 3}));
}

#[test]
fn refs_recursive_targets_stay_in_defs() {
    let (v, r) = llama(
        json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}},
               "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}}),
        Context::Tool,
    );
    let s = text(&v);
    assert!(v["$defs"].is_object(), "$defs kept for the recursive target: {s}");
    // every ref points at a root $defs entry that exists
    let defs = v["$defs"].as_object().unwrap();
    for r in s.split("\"$ref\":\"#/$defs/").skip(1) {
        let name = r.split('"').next().unwrap();
        assert!(defs.contains_key(name), "dangling {name} in {s}");
    }
    assert_eq!(r.lossy_count(), 0);
}

#[test]
fn refs_dangling_and_external_become_any_value_never_fetched() {
    let (v, r) = llama(
        json!({"type": "object", "properties": {"d": {"$ref": "#/$defs/missing"}, "e": {"$ref": "https://example.invalid/s.json"}, "f": {"$ref": "file:///etc/passwd"}}}),
        Context::Tool,
    );
    assert_eq!(count(&r, Kind::RefsUnresolved), 1);
    assert_eq!(count(&r, Kind::RefExternal), 2);
    assert!(!text(&v).contains("$ref"));
}

#[test]
fn all_of_of_string_constraints_merges() {
    let (v, r) = out(json!({"allOf": [{"type": "string", "minLength": 2}, {"maxLength": 5}]}));
    assert_eq!(v, json!({"type": "string", "minLength": 2, "maxLength": 5}));
    assert_eq!(count(&r, Kind::AllofMerged), 1);
    assert_eq!(r.lossy_count(), 0);
    // llama.cpp's string rule uses the pattern and ignores lengths beside it: that loss is recorded
    let (v, r) = out(json!({"allOf": [{"type": "string", "minLength": 2}, {"pattern": "^a"}]}));
    assert_eq!(v["pattern"], json!("^a.*$"));
    assert_eq!(count(&r, Kind::PatternRemoved), 1);
}

#[test]
fn unions_beside_properties_are_intersected() {
    let (v, r) = llama(
        json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 4}, "b": {"type": "integer"}}, "required": ["b"],
               "anyOf": [{"required": ["a"], "properties": {"a": {"minLength": 1}}}, {"required": ["c"]}]}),
        Context::Tool,
    );
    let branches = v["anyOf"].as_array().expect("anyOf stays");
    assert_eq!(branches.len(), 2);
    let b0 = &branches[0];
    assert_eq!(b0["properties"]["a"]["maxLength"], json!(4), "parent constraint kept");
    assert_eq!(b0["properties"]["a"]["minLength"], json!(1), "branch constraint kept");
    let req: Vec<&str> = b0["required"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert!(req.contains(&"a") && req.contains(&"b"), "required is the union: {req:?}");
    assert!(branches.iter().all(|b| b["type"] == json!("object")), "no branch is 'any JSON value'");
    assert_eq!(count(&r, Kind::AnyofDistributed), 1);
}

#[test]
fn any_of_and_one_of_on_one_node() {
    let (v, r) = out(json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "oneOf": [{"minLength": 2, "type": "string"}, {"type": "boolean"}]}));
    let b = v["anyOf"].as_array().unwrap();
    assert_eq!(b.len(), 1, "only string survives both unions: {v}");
    assert_eq!(b[0]["minLength"], json!(2));
    assert!(count(&r, Kind::AnyofDistributed) == 1);
}

#[test]
fn never_branches_and_impossible_optional_properties() {
    let (v, r) = llama(
        json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"not": {}}]}, "gone": {"not": {}}}, "additionalProperties": false}),
        Context::Tool,
    );
    assert_eq!(v["properties"]["a"], json!({"anyOf": [{"type": "string"}]}));
    assert!(v["properties"].get("gone").is_none());
    assert!(count(&r, Kind::NeverDropped) >= 2);
    assert_eq!(r.lossy_count(), 0);
}

#[test]
fn tool_root_is_an_object() {
    for (input, why) in [(json!({}), "no parameters"), (json!({"properties": {"a": {"type": "string"}}}), "untyped"), (json!(true), "boolean")] {
        let (v, _) = llama(input, Context::Tool);
        assert_eq!(v["type"], json!("object"), "{why}: {v}");
    }
    let (v, _) = out(json!({"type": "string"}));
    assert_eq!(v, json!({"type": "string"}), "structured output keeps any root");
}

#[test]
fn unsupported_keywords_removed_and_described() {
    let (v, r) = llama(
        json!({"type": "object", "properties": {"a": {"type": "string", "not": {"const": "x"}}, "l": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true}},
               "if": {"required": ["a"]}, "then": {"required": ["l"]}}),
        Context::Tool,
    );
    let s = text(&v);
    for k in ["not", "if", "then", "uniqueItems"] {
        assert!(!s.contains(&format!("\"{k}\":")), "{k} left in {s}");
    }
    assert!(v["properties"]["a"]["description"].as_str().unwrap().contains("not"));
    assert_eq!(count(&r, Kind::NotDropped), 1);
    assert!(count(&r, Kind::KeywordRemoved) >= 2);
    assert!(r.records.iter().all(|x| !x.kind.lossy() || !x.path.is_empty() || x.kind == Kind::KeywordRemoved));
}

#[test]
fn unsupported_without_promotion_leaves_descriptions_alone() {
    let mut v = json!({"type": "string", "not": {"const": "x"}});
    let opts = Options { promote_to_description: false, ..Options::default() };
    normalize(&mut v, &profile::LLAMA_CPP, &opts, Context::Output, "t");
    assert_eq!(v, json!({"type": "string"}));
}

#[test]
fn open_objects_and_required_declared() {
    let mut v = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]});
    let opts = Options { open_objects: true, ..Options::default() };
    let r = normalize(&mut v, &profile::LLAMA_CPP, &opts, Context::Tool, "t").report;
    assert_eq!(v["additionalProperties"], json!(true));
    assert!(v["properties"].get("b").is_some(), "required b declared so llama.cpp enforces it");
    assert_eq!(count(&r, Kind::ObjectOpened), 1);
    assert_eq!(count(&r, Kind::RequiredDeclared), 1);
    // closed by default: nothing to do for a plain object, and the same required name still declared
    let (closed, r) = llama(json!({"type": "object", "properties": {"a": {"type": "string"}}}), Context::Tool);
    assert!(closed.get("additionalProperties").is_none());
    assert!(r.is_empty(), "{:?}", r.records);
    let (v, r) = llama(json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}), Context::Tool);
    assert!(v["properties"].get("b").is_some() && v.get("additionalProperties").is_none(), "{v}");
    assert_eq!((count(&r, Kind::RequiredDeclared), count(&r, Kind::ObjectOpened)), (1, 0));
}

#[test]
fn explicit_types_for_untyped_subschemas() {
    let (v, r) = llama(json!({"type": "object", "properties": {"d": {"description": "anything"}, "n": {"minLength": 1}}}), Context::Tool);
    assert!(v["properties"]["d"]["type"].is_array(), "{v}");
    // minLength applies to strings only: a string branch keeps it, the other types stay allowed
    let n = v["properties"]["n"]["anyOf"].as_array().unwrap();
    assert_eq!(n[0], json!({"type": "string", "minLength": 1}));
    assert!(!text(&n[1]).contains("\"string\""));
    assert!(count(&r, Kind::TypesExplicit) >= 2);
    assert_eq!(r.lossy_count(), 0);
}

#[test]
fn patterns_rewritten_or_removed() {
    let (v, r) = out(json!({"type": "object", "properties": {
        "digits": {"type": "string", "pattern": "^\\d{3}-\\w+$"},
        "group": {"type": "string", "pattern": "^(?:[A-Z]+)-[0-9]+$"},
        "unanchored": {"type": "string", "pattern": "abc"},
        "look": {"type": "string", "pattern": "^(?=.*[a-z]).{8,}$"},
        "backref": {"type": "string", "pattern": "^(a)\\1$"}
    }}));
    let p = &v["properties"];
    for k in ["digits", "group"] {
        let pat = p[k]["pattern"].as_str().unwrap();
        assert!(!pat.contains("\\d") && !pat.contains("\\w") && !pat.contains("(?"), "{k}: {pat}");
    }
    assert_eq!(p["unanchored"]["pattern"], json!("^.*abc.*$"));
    assert!(p["look"].get("pattern").is_none() && p["backref"].get("pattern").is_none());
    assert!(count(&r, Kind::PatternRewritten) >= 3);
    assert_eq!(count(&r, Kind::PatternRemoved), 2);
}

#[test]
fn integer_bounds_normalized() {
    let (v, r) = out(json!({"type": "integer", "exclusiveMinimum": 0, "maximum": 9.5}));
    assert_eq!(v["minimum"], json!(1));
    assert_eq!(v["maximum"], json!(9));
    assert!(count(&r, Kind::BoundsNormalized) >= 1);
    assert_eq!(r.lossy_count(), 0);
}

#[test]
fn repetition_clamped() {
    let (v, r) = out(
        json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 100000}, "a": {"type": "array", "minItems": 5000, "items": {"type": "integer"}}}}),
    );
    // clamping a maximum would refuse valid values: it goes (looser); a minimum is lowered (looser)
    assert!(v["properties"]["s"].get("maxLength").is_none());
    assert!(v["properties"]["a"]["minItems"].as_u64().unwrap() <= 1000);
    assert_eq!(count(&r, Kind::RepetitionClamped), 2);
}

#[test]
fn enums_empty_and_escaped() {
    let (v, r) = llama(json!({"type": "object", "properties": {"e": {"enum": []}, "q": {"type": "string", "enum": ["say \"hi\"", "plain"]}}}), Context::Tool);
    assert!(v["properties"].get("e").is_none(), "an optional property no value satisfies is removed: {v}");
    let q = text(&v["properties"]["q"]);
    assert!(q.contains("pattern") && q.contains("plain"), "{q}");
    assert!(count(&r, Kind::EnumRewritten) == 1);
    // an open object cannot forbid the property: removing it allows any value there (lossy)
    assert_eq!(count(&r, Kind::NotDropped), 1);
}

#[test]
fn data_keywords_are_not_schemas_and_property_names_are_names() {
    let input = json!({"type": "object", "properties": {
        "not": {"type": "string", "default": {"$ref": "#/nowhere", "not": {}}},
        "anyOf": {"type": "integer", "examples": [{"allOf": []}]}
    }, "required": ["not"], "additionalProperties": false});
    let (v, r) = llama(input.clone(), Context::Tool);
    assert_eq!(v, input, "nothing here needs a change: {:?}", r.records);
    assert!(r.records.is_empty());
}

#[test]
fn a_schema_llama_cpp_already_handles_is_untouched() {
    let input = json!({"type": "object", "properties": {"q": {"type": "string", "description": "query"}, "n": {"type": "integer", "minimum": 1, "maximum": 50}},
                       "required": ["q"], "additionalProperties": false});
    let (v, r) = llama(input.clone(), Context::Tool);
    assert_eq!(v, input);
    assert!(r.records.is_empty());
}

#[test]
fn strict_refusals_name_tool_and_path() {
    let (_, r) = llama(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^(?!x)"}}}), Context::Tool);
    let first = r.first_lossy().expect("a lossy record");
    assert_eq!(first.tool, "t");
    assert_eq!(first.path, "/properties/a");
}

fn since(v: Value, ctx: Context, s: toolfit::schema::LlamaCpp) -> (Value, Report) {
    let mut v = v;
    let opts = Options { llama_cpp: s, ..Options::default() };
    let out = normalize(&mut v, &profile::LLAMA_CPP, &opts, ctx, "t");
    (v, out.report)
}

#[test]
fn dialect_draft07_ref_siblings_id_anchors_and_item_pointers() {
    // before 2019-09, keywords beside `$ref` are ignored: applying them would refuse valid values
    let (v, r) = llama(
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"r": {"type": "integer"}}, "type": "object", "properties": {"a": {"$ref": "#/definitions/r", "maximum": 2, "description": "d"}}}),
        Context::Tool,
    );
    assert!(v["properties"]["a"].get("maximum").is_none(), "{v}");
    assert_eq!(v["properties"]["a"]["description"], "d");
    assert_eq!(r.lossy_count(), 0);
    // 2020-12 applies them: kept (merged with the target)
    let (v, _) = llama(json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/r", "maximum": 2}}, "$defs": {"r": {"type": "integer"}}}), Context::Tool);
    assert_eq!(v["properties"]["a"]["maximum"], 2, "{v}");
    // `$id: "#foo"` is an anchor
    let (v, r) = llama(
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {"$ref": "#foo"}}, "definitions": {"A": {"$id": "#foo", "type": "integer"}}}),
        Context::Tool,
    );
    assert_eq!(v["properties"]["a"]["type"], "integer", "{v}");
    assert_eq!(count(&r, Kind::RefsUnresolved), 0);
    // a pointer into an array-form `items` follows it to `prefixItems`
    let (v, r) = out(json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "integer"}, {"$ref": "#/items/0"}]}));
    assert_eq!(count(&r, Kind::RefsUnresolved), 0, "{v}");
    assert!(text(&v).contains(r#""prefixItems":[{"type":"integer"},{"type":"integer"}]"#), "{v}");
    assert!(v.get("$defs").is_none(), "no definition left behind: {v}");
}

#[test]
fn item_counts_apply_on_every_release() {
    use toolfit::schema::LlamaCpp;
    let (v, r) = out(json!({"type": "array", "maxItems": 2}));
    assert!(v["items"]["type"].is_array(), "items written out for releases up to 2025-08: {v}");
    assert_eq!(count(&r, Kind::ItemCountsSpelled), 1);
    let (v, _) = out(json!({"items": {"type": "boolean"}, "maxItems": 0}));
    assert_eq!(v["anyOf"][0], json!({"const": []}), "{v}");
    for src in [json!({"type": "array", "items": false}), json!({"type": "array", "unevaluatedItems": false})] {
        let (v, _) = out(src.clone());
        assert_eq!(v, json!({"const": []}), "{src}");
    }
    let (v, r) = since(json!({"type": "array", "maxItems": 2}), Context::Output, LlamaCpp::V2026_10);
    assert_eq!((v, r.is_empty()), (json!({"type": "array", "maxItems": 2}), true));
}

#[test]
fn ref_chains_collapse_to_their_final_target() {
    use toolfit::schema::LlamaCpp;
    let s = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"type": "object", "properties": {"n": {"$ref": "#/$defs/B"}}}}});
    let (v, r) = llama(s.clone(), Context::Tool);
    assert_eq!(v["properties"]["a"], json!({"$ref": "#/$defs/B"}), "{v}");
    assert!(v["$defs"].get("A").is_none(), "the link is dropped with nothing left pointing at it: {v}");
    assert_eq!(r.lossy_count(), 0);
    let (v, _) = since(s, Context::Tool, LlamaCpp::V2026_10);
    assert_eq!(v["properties"]["a"], json!({"$ref": "#/$defs/A"}), "2026-10 compiles chains: {v}");
}

#[test]
fn recursive_definitions_are_listed_last_before_2025_05() {
    use toolfit::schema::LlamaCpp;
    let s = json!({"type": "object", "properties": {"t": {"$ref": "#/$defs/N"}}, "$defs": {"N": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/N"}}}}}});
    let (v, r) = llama(s.clone(), Context::Tool);
    assert_eq!(v.as_object().unwrap().keys().next_back().unwrap(), "x-toolfit-refs");
    assert_eq!(count(&r, Kind::RefsListed), 1);
    let (v, r) = since(s, Context::Tool, LlamaCpp::V2025_05);
    assert!(v.get("x-toolfit-refs").is_none() && r.is_empty(), "{v}");
}

#[test]
fn integer_bounds_past_32_bits_kept_where_the_served_releases_enforce_them() {
    use toolfit::schema::LlamaCpp;
    let s = json!({"type": "integer", "minimum": -10_000_000_000_i64, "maximum": 10_000_000_000_i64});
    let (v, r) = out(s.clone());
    assert!(v.get("maximum").is_none() && v.get("minimum").is_none() && r.lossy_count() == 1, "{v}");
    assert!(r.records.iter().any(|x| x.detail.contains("beyond what the served releases enforce")));
    let (v, r) = since(s.clone(), Context::Output, LlamaCpp::V2026_10);
    assert_eq!((v, r.is_empty()), (s, true));
    let (v, r) = since(json!({"type": "integer", "maximum": 1e17}), Context::Output, LlamaCpp::V2026_10);
    assert!(v.get("maximum").is_none() && r.lossy_count() == 1, "past 2^53 not exact in f64: {v}");
}

#[test]
fn nesting_too_deep_to_parse_is_cut_in_the_cli_path() {
    let text = r#"{"type":"object","properties":{"a":"#.repeat(1_000) + "{}" + &"}}".repeat(1_000);
    let mut report = Report::default();
    let mut v = toolfit::schema::parse(&text, &Options::default(), Context::Tool, "t", &mut report).expect("cut, then parsed");
    assert_eq!(count(&report, Kind::BoundsExceeded), 1);
    assert!(report.records[0].detail.starts_with("nested deeper than"), "{}", report.records[0].detail);
    let r = normalize(&mut v, &profile::LLAMA_CPP, &Options::default(), Context::Tool, "t").report;
    assert_eq!(count(&r, Kind::SchemaReplaced), 0);
    assert!(toolfit::schema::parse("{\"a\":", &Options::default(), Context::Tool, "t", &mut Report::default()).is_err(), "not JSON stays an error");
}

/// No schema declares one dialect and holds another's keywords: a draft-07 stamp over keywords the
/// translation changed becomes 2020-12's, `definitions` move to `$defs` with the refs into them. An
/// untranslated draft-07 schema keeps its stamp unless the options declare 2020-12 (for clients that
/// validate with 2020-12 only). The control: the same schema with no stamp keeps none.
#[test]
fn dialect_stamp_matches_the_keywords() {
    let run = |v: Value, declare: bool| {
        let mut v = v;
        let opts = Options { declare_2020_12: declare, ..Options::default() };
        let out = normalize(&mut v, &profile::MCP, &opts, Context::Output, "t");
        (v, out.report)
    };
    let d7 = "http://json-schema.org/draft-07/schema#";
    let tuple = json!({"$schema": d7, "type": "object", "properties": {"p": {"type": "array", "items": [{"type": "string"}], "additionalItems": false},
        "n": {"$ref": "#/definitions/n"}}, "definitions": {"n": {"type": "integer"}}});
    let (v, r) = run(tuple.clone(), false);
    assert_eq!(v["$schema"], "https://json-schema.org/draft/2020-12/schema", "{v}");
    assert_eq!((v["properties"]["n"]["$ref"].as_str(), v["$defs"]["n"]["type"].as_str(), v.get("definitions")), (Some("#/$defs/n"), Some("integer"), None));
    assert!(v["properties"]["p"].get("prefixItems").is_some() && r.lossy_count() == 0, "{v}");
    // a draft-07 schema the translation leaves alone keeps its stamp, unless 2020-12 is declared
    let plain = json!({"$schema": d7, "type": "object", "properties": {"a": {"$ref": "#/definitions/a"}}, "definitions": {"a": {"type": "string"}}});
    let (v, r) = run(plain.clone(), false);
    assert_eq!((v, count(&r, Kind::DialectNormalized)), (plain.clone(), 0));
    let (v, r) = run(plain.clone(), true);
    assert_eq!(
        v,
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}})
    );
    assert_eq!((count(&r, Kind::DialectNormalized), r.lossy_count()), (1, 0));
    // a draft-07 stamp over 2020-12's keywords (as servers write them): declared as what it holds
    let (v, _) = run(json!({"$schema": d7, "type": "array", "prefixItems": [{"type": "string"}]}), false);
    assert_eq!(v["$schema"], "https://json-schema.org/draft/2020-12/schema");
    // 2019-09 too; the control: no stamp, none written
    let (v, _) = run(json!({"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "object"}), true);
    assert_eq!(v["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let (v, _) = run(json!({"type": "array", "items": [{"type": "string"}]}), true);
    assert!(v.get("$schema").is_none() && v.get("prefixItems").is_some(), "{v}");
}
