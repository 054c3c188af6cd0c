//! Objects as JSON Schema means them. llama.cpp enforces `required` only for names in `properties`
//! (`{"required": ["a"]}` alone accepts `{}`), so such names are declared as any value. And where
//! `properties` is given without `additionalProperties`, JSON Schema allows other keys while llama.cpp
//! forbids them. Closed is the default: leaving undeclared keys out of the grammar only narrows what the
//! model may write, and every call it allows stays valid for the original schema. With `open_objects`
//! the object is opened explicitly, up to `max_open_properties` declared properties (past that
//! llama.cpp's grammar for "any other key" breaks; such objects stay closed, which never lets an
//! invalid value through). Where the target reads a missing `additionalProperties` beside
//! `minProperties` as "no more" ([`crate::schema::Target::counts_need_room`]), an object with fewer
//! declared properties than it must have is opened explicitly, as JSON Schema means it.

use super::Probe;
use crate::schema::lookup::Lookup;
use crate::schema::walk::post_order_cx;
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

/// Passes that must run before this one in a profile's list: an object's properties are in one node, not spread over `allOf`.
pub const AFTER: &[&str] = &["all_of"];

/// Whether `node` is an object schema of its own (not a ref's or a union's): the only nodes the pass
/// looks at.
fn own_object(node: &Map<String, Value>) -> bool {
    let objecty = match node.at("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(a)) => a.iter().any(|t| t == "object"),
        _ => node.has("properties") || node.has("required"),
    };
    objecty && !(node.has("$ref") || node.has("anyOf") || node.has("oneOf"))
}

/// Whether the pass may change `node` ([`super::Pass::acts`]): a required name it must declare, or an
/// object it opens (the conditions of `run`, read only).
pub fn acts(node: &Map<String, Value>, probe: &Probe, _: &crate::schema::walk::Place) -> bool {
    if !own_object(node) {
        return false;
    }
    let props = node.at("properties").and_then(Value::as_object);
    if node.at("required").and_then(Value::as_array).is_some_and(|r| r.iter().filter_map(Value::as_str).any(|r| !props.is_some_and(|p| p.contains_key(r)))) {
        return true;
    }
    let n_props = props.map_or(0, Map::len);
    let min_props = node.at("minProperties").and_then(Value::as_u64).unwrap_or(0);
    let unset = !node.has("additionalProperties");
    (probe.target.counts_need_room && unset && min_props > n_props as u64)
        || (probe.opts.open_objects && node.has("properties") && unset && n_props <= probe.opts.limits.max_open_properties)
}

pub fn run(root: &mut Value, cx: &mut Cx) {
    let open = cx.opts.open_objects;
    let max_open = cx.opts.limits.max_open_properties;
    let room = cx.target.counts_need_room;
    post_order_cx(root, cx, &mut |node, path, cx| {
        if !own_object(node) {
            return;
        }
        // only the missing names are copied (the node changes below)
        let props = node.at("properties").and_then(Value::as_object);
        let missing: Vec<String> = node
            .at("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).filter(|r| !props.is_some_and(|p| p.contains_key(*r))).map(String::from).collect())
            .unwrap_or_default();
        if !missing.is_empty() {
            // an undeclared required name must still satisfy additionalProperties
            let extra = match node.at("additionalProperties") {
                Some(Value::Object(m)) => Value::Object(m.clone()),
                Some(Value::Bool(false)) => crate::schema::merge::never(),
                _ => Value::Object(Map::new()),
            };
            let props = node.entry("properties").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(p) = props {
                for name in &missing {
                    p.insert(name.clone(), extra.clone());
                }
            }
            cx.record(path, Kind::RequiredDeclared, format!("required {} declared in properties", missing.join(", ")));
        }
        let n_props = node.at("properties").and_then(Value::as_object).map_or(0, Map::len);
        let min_props = node.at("minProperties").and_then(Value::as_u64).unwrap_or(0);
        if room && !node.has("additionalProperties") && min_props > n_props as u64 {
            node.insert("additionalProperties".into(), Value::Bool(true));
            cx.record(path, Kind::ObjectOpened, format!("other properties allowed, as JSON Schema says: {min_props} must be present"));
            return;
        }
        if open && node.has("properties") && !node.has("additionalProperties") && n_props <= max_open {
            node.insert("additionalProperties".into(), Value::Bool(true));
            cx.record(path, Kind::ObjectOpened, "other properties allowed, as JSON Schema says");
        }
    });
}
