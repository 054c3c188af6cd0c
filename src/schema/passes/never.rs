//! Schemas no value can satisfy (`not: {}` from zod's `never`, `false`, an empty `enum`, contradictory
//! merges), which llama.cpp cannot express: dropped from unions, removed from `properties` when
//! optional, and propagated to the parent when required. `items` that can never match means an empty
//! array; `additionalProperties` that can never match means `false`.

use crate::schema::lookup::Lookup;
use crate::schema::merge::{is_never, never_map};
use crate::schema::walk::{post_order_cx, Path};
use crate::schema::{Context, Cx, Kind, Never};
use serde_json::{Map, Value};

/// Passes that must run before this one in a profile's list: `false` is spelled `not: {}`.
pub const AFTER: &[&str] = &["boolean_schemas"];

/// Whether the pass may change a schema at `node` ([`super::Pass::acts`]): every step needs a node
/// that can never match (the node itself, a branch, a property, a tuple position, `items`,
/// `additionalProperties`), but for the respelling of a closed object without `properties`.
pub fn acts(node: &Map<String, Value>, probe: &super::Probe, _: &crate::schema::walk::Place) -> bool {
    is_never(node) || (probe.target.never == Never::EmptyAnyOf && node.at("additionalProperties") == Some(&Value::Bool(false)) && !node.has("properties"))
}

pub fn run(root: &mut Value, cx: &mut Cx) {
    let spell = cx.target.never;
    post_order_cx(root, cx, &mut |node, path, cx| {
        // each step returns true when the whole node became the never sentinel: nothing more to do
        if union_branches(node, path, cx) || properties(node, path, cx) || tuple(node, path, cx) {
            return;
        }
        if node.at("items").and_then(Value::as_object).is_some_and(is_never) {
            node.remove("items");
            node.insert("maxItems".into(), Value::from(node.at("prefixItems").and_then(Value::as_array).map_or(0, Vec::len)));
            cx.record(path, Kind::NeverDropped, "items can never match: no items allowed");
        }
        if node.at("additionalProperties").and_then(Value::as_object).is_some_and(is_never) {
            node.insert("additionalProperties".into(), Value::Bool(false));
            cx.record(path, Kind::NeverDropped, "additionalProperties can never match: false");
        }
        if spell == Never::EmptyAnyOf {
            respell(node, path, cx);
        }
    });
    if root.as_object().is_some_and(is_never) {
        let (replacement, what) = match cx.context {
            Context::Tool => (serde_json::json!({"type": "object"}), "any object"),
            // spelled as `explicit_types` spells "any value", so a second run leaves it as it is
            Context::Output => (serde_json::json!({"type": crate::schema::types::Types::ALL.to_json()}), "any value"),
        };
        *root = replacement;
        cx.record("", Kind::SchemaReplaced, format!("no value can match the schema; replaced by {what}"));
    }
}

/// Drops union branches that can never match; true when none is left (the node can never match).
fn union_branches(node: &mut Map<String, Value>, path: &Path, cx: &mut Cx) -> bool {
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(bs)) = node.at_mut(key) else { continue };
        let before = bs.len();
        bs.retain(|b| !b.as_object().is_some_and(is_never));
        let n = before - bs.len();
        if n > 0 {
            cx.record(path, Kind::NeverDropped, format!("{n} {key} branch(es) can never match"));
            if bs.is_empty() {
                *node = never_map();
                return true;
            }
        }
    }
    false
}

/// Removes optional properties that can never be present; true when a required one can never match
/// (the object itself can never match).
fn properties(node: &mut Map<String, Value>, path: &Path, cx: &mut Cx) -> bool {
    let closed = node.at("additionalProperties") == Some(&Value::Bool(false));
    let dead: Vec<String> = match node.at("properties") {
        Some(Value::Object(props)) => props.iter().filter(|(_, v)| v.as_object().is_some_and(is_never)).map(|(k, _)| k.clone()).collect(),
        _ => Vec::new(),
    };
    if dead.is_empty() {
        return false; // the common case: nothing to look up
    }
    let required: Vec<String> =
        node.at("required").and_then(Value::as_array).map(|r| r.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default();
    let mut dead_required = None;
    if let Some(Value::Object(props)) = node.at_mut("properties") {
        for name in dead {
            if required.contains(&name) {
                dead_required = Some(name);
                break;
            }
            props.shift_remove(&name); // keep the order: llama.cpp writes properties in it
            let kind = if closed { Kind::NeverDropped } else { Kind::NotDropped };
            let why = if closed { "can never be present; removed" } else { "can never be present; removed, and an open object cannot forbid it" };
            cx.record(&format!("{path}/properties/{name}"), kind, format!("property {name} {why}"));
        }
    }
    let Some(name) = dead_required else { return false };
    if node.at("type").and_then(Value::as_str) == Some("object") || !node.has("type") {
        cx.record(path, Kind::NeverDropped, format!("required property {name} can never match"));
        *node = never_map();
        return true;
    }
    false
}

/// A tuple position no value can fill: arrays end before it; true when `minItems` needs it (the
/// node can never match).
fn tuple(node: &mut Map<String, Value>, path: &Path, cx: &mut Cx) -> bool {
    let cut = node.at("prefixItems").and_then(Value::as_array).and_then(|t| t.iter().position(|x| x.as_object().is_some_and(is_never)));
    let Some(i) = cut else { return false };
    if node.at("minItems").and_then(Value::as_u64).is_some_and(|m| m > i as u64) {
        cx.record(path, Kind::NeverDropped, format!("tuple position {i} can never match"));
        *node = never_map();
        return true;
    }
    if let Some(Value::Array(t)) = node.at_mut("prefixItems") {
        t.truncate(i);
    }
    node.remove("items");
    let cap = node.at("maxItems").and_then(Value::as_u64).map_or(i as u64, |m| m.min(i as u64));
    node.insert("maxItems".into(), Value::from(cap));
    cx.record(path, Kind::NeverDropped, format!("tuple position {i} can never match: arrays end before it"));
    false
}

/// The never sentinels a node holds as subschemas, and a closed object without `properties`, written as
/// a backend that refuses `not` reads them ([`Never::EmptyAnyOf`]). Exact.
fn respell(node: &mut Map<String, Value>, path: &Path, cx: &mut Cx) {
    let mut n = 0;
    crate::schema::walk::children_mut(node, |_, c| {
        if c.as_object().is_some_and(|m| m.len() == 1 && m.contains_key("not") && is_never(m)) {
            *c = serde_json::json!({"anyOf": []});
            n += 1;
        }
    });
    if n > 0 {
        cx.record(path, Kind::KeywordNormalized, format!("{n} never-matching subschema(s) written as anyOf: [] (the backend refuses not)"));
    }
    if node.at("additionalProperties") == Some(&Value::Bool(false)) && !node.has("properties") {
        node.insert("properties".into(), Value::Object(Map::new()));
        cx.record(path, Kind::KeywordNormalized, "properties: {} written beside additionalProperties: false (read only beside it)");
    }
}
