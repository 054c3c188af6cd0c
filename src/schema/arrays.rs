//! Array shapes more than one pass writes the same way.

use crate::schema::lookup::Lookup;
use serde_json::{Map, Value};

/// `items: true` is no constraint; `items: false` allows no items past `prefixItems`. llama.cpp
/// rejects both spellings ("schema must be an object").
pub fn boolean_items(node: &mut Map<String, Value>) -> Option<&'static str> {
    match node.at("items") {
        Some(Value::Bool(true)) => {
            node.remove("items");
            Some("items: true removed")
        }
        Some(Value::Bool(false)) => {
            node.remove("items");
            let n = node.at("prefixItems").and_then(Value::as_array).map_or(0, Vec::len) as u64;
            let cap = node.at("maxItems").and_then(Value::as_u64).map_or(n, |m| m.min(n));
            node.insert("maxItems".into(), Value::from(cap));
            Some("items: false became maxItems")
        }
        _ => None,
    }
}
