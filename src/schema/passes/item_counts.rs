//! Array lengths as the backend applies them. Where the target says counts need room
//! ([`crate::schema::Target::counts_need_room`]: llama.cpp up to 2025-08 applies `minItems`/`maxItems`
//! only beside `items`, xgrammar reads a missing `items` beside them as "no items"), `items` is written
//! out as "any value" (spelled as the target spells it: old llama.cpp reads `{}` as "an object"). And
//! llama.cpp 2024-08 and 2024-12 write a grammar they cannot parse for `maxItems: 0` beside `items`, so
//! there an array that must be empty becomes `const: []`. Both are exact. Runs after `explicit_types`
//! (every node has its types) and `repetition` (counts are whole).

use super::primary_type;
use crate::schema::lookup::Lookup;
use crate::schema::target::Place;
use crate::schema::types::Types;
use crate::schema::walk::{is_annotation, post_order_cx};
use crate::schema::{Context, Cx, Kind};
use serde_json::{json, Map, Value};

/// Passes that must run before this one in a profile's list: tuples are `prefixItems`.
pub const AFTER: &[&str] = &["dialect"];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["minItems", "maxItems"];

/// Keywords that apply to arrays only, dropped with the array branch when it must be empty.
const ARRAY_ONLY: &[&str] = &["items", "minItems", "maxItems", "prefixItems", "uniqueItems", "contains", "minContains", "maxContains"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let release = cx.release();
    let need_items = cx.target.counts_need_room && !release.is_some_and(|r| r.item_counts_without_items());
    let empty_ok = release.is_none_or(|r| r.empty_arrays_beside_items());
    let any_item = Value::Object(cx.target.any(Context::Output, Place::Inside));
    post_order_cx(root, cx, &mut |node, path, cx| {
        let Some(t) = primary_type(node) else { return };
        if !t.contains(Types::ARRAY) || node.has("prefixItems") || super::typed_elsewhere(node) {
            return;
        }
        let max = node.at("maxItems").and_then(Value::as_u64);
        if max == Some(0) && !empty_ok {
            empty_array(node, t);
            cx.record(path, Kind::ItemCountsSpelled, "maxItems: 0 written as const: []");
            return;
        }
        if (max.is_some() || node.has("minItems")) && !node.has("items") && need_items {
            node.insert("items".into(), any_item.clone());
            cx.record(path, Kind::ItemCountsSpelled, "items written out so minItems/maxItems apply");
        }
    });
}

/// The array branch of `node` as `const: []`; other types the node allows stay a branch of their own.
fn empty_array(node: &mut Map<String, Value>, t: Types) {
    let nullable = Types::of(node).is_some_and(|all| all.contains(Types::NULL));
    let others = t.minus(Types::ARRAY).union(if nullable { Types::NULL } else { Types::NONE });
    let mut keep = Map::new();
    let mut rest = Map::new();
    for (k, v) in std::mem::take(node) {
        if is_annotation(&k) {
            keep.insert(k, v);
        } else if k != "type" && !ARRAY_ONLY.contains(&k.as_str()) {
            rest.insert(k, v);
        }
    }
    *node = keep;
    if others.is_empty() {
        node.insert("const".into(), json!([]));
        return;
    }
    rest.insert("type".into(), others.to_json());
    node.insert("anyOf".into(), json!([{"const": []}, Value::Object(rest)]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{LlamaCpp, Options};

    fn run_on(mut v: Value, since: LlamaCpp) -> Value {
        let opts = Options { llama_cpp: since, ..Options::default() };
        let mut cx = Cx::new("t", Context::Output, &opts, &crate::schema::profile::LLAMA_CPP.target);
        run(&mut v, &mut cx);
        v
    }

    #[test]
    fn counts_get_items_on_releases_that_need_them() {
        let v = run_on(json!({"type": "array", "maxItems": 2, "description": "d"}), LlamaCpp::V2024_08);
        assert_eq!(v["items"]["type"].as_array().map(Vec::len), Some(6), "{v}");
        assert_eq!(v["maxItems"], 2);
        let v = run_on(json!({"type": "array", "minItems": 1}), LlamaCpp::V2026_10);
        assert!(v.get("items").is_none(), "2026-10 applies counts without items: {v}");
        let v = run_on(json!({"type": "array", "items": {"type": "string"}, "maxItems": 2}), LlamaCpp::V2024_08);
        assert_eq!(v["items"], json!({"type": "string"}));
    }

    #[test]
    fn an_array_that_must_be_empty_is_a_const() {
        let v = run_on(json!({"type": "array", "items": {"type": "boolean"}, "maxItems": 0, "title": "x"}), LlamaCpp::V2024_08);
        assert_eq!(v, json!({"title": "x", "const": []}));
        let v = run_on(json!({"type": ["array", "null", "string"], "maxItems": 0, "minLength": 2}), LlamaCpp::V2024_12);
        assert_eq!(v, json!({"anyOf": [{"const": []}, {"minLength": 2, "type": ["string", "null"]}]}));
        // 2025-05 on parse it as it is; they still need `items` for the count to apply, before 2026-10
        let v = run_on(json!({"type": "array", "maxItems": 0}), LlamaCpp::V2025_05);
        assert_eq!(v["maxItems"], 0);
        assert!(v.get("items").is_some());
    }
}
