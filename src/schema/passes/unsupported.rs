//! Keywords the backend ignores without a word, or refuses ([`crate::schema::Target::unenforced`]),
//! and formats it does not compile ([`crate::schema::Target::formats`]): removed so the loss is visible
//! (and, by default, said in the node's `description`) and the request compiles. Trivially true keywords
//! are just dropped. (`unevaluated*` with a plain meaning was already converted by `unevaluated`, before
//! applicators were flattened.)

use super::primary_type;
use crate::schema::lookup::Lookup;
use crate::schema::types::Types;
use crate::schema::walk::post_order;
use crate::schema::{Cx, Kind};
use serde_json::Value;

fn trivially_true(k: &str, v: &Value) -> bool {
    match k {
        "uniqueItems" => v == &Value::Bool(false),
        "minProperties" | "minContains" => v.as_f64().is_some_and(|n| n <= 0.0) && k != "minContains",
        "unevaluatedProperties" | "unevaluatedItems" => v == &Value::Bool(true) || v.as_object().is_some_and(|m| m.is_empty()),
        "if" | "then" | "else" | "propertyNames" | "contentSchema" => v.as_object().is_some_and(|m| m.is_empty()) || v == &Value::Bool(true),
        _ => false,
    }
}

/// Passes that must run before this one in a profile's list: keywords are in their 2020-12 spelling.
pub const AFTER: &[&str] = &["dialect"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let promote_on = cx.opts.promote_to_description;
    let target = cx.target;
    let mut jobs: Vec<(String, crate::schema::Removed, crate::schema::Removed)> = Vec::new();
    post_order(root, "", &mut |node, path| {
        let mut removed = Vec::new();
        let mut normalized = Vec::new();
        // one scan over the node's keys (a few) instead of a hashed lookup per ignored keyword (many)
        let present: Vec<&'static str> = target.unenforced_keywords().filter(|k| *k != "not" && node.keys().any(|n| n == k)).collect();
        for k in present {
            if let Some(v) = node.remove(k) {
                if trivially_true(k, &v) {
                    normalized.push((k.to_string(), v));
                } else {
                    removed.push((k.to_string(), v));
                }
            }
        }
        // additionalProperties does not apply to names patternProperties matched: without them it would
        // forbid properties the schema allows, so it goes too (looser, never tighter)
        if removed.iter().any(|(k, _)| k == "patternProperties") {
            if let Some(v) = node.remove("additionalProperties") {
                if v == Value::Bool(true) {
                    node.insert("additionalProperties".into(), v);
                } else {
                    removed.push(("additionalProperties".to_string(), v));
                }
            }
        }
        // the never sentinel (`not: {}`) stays: the `never` passes remove it where it matters
        if target.unenforced("not") && !crate::schema::merge::is_never(node) {
            if let Some(v) = node.remove("not") {
                removed.push(("not".to_string(), v));
            }
        }
        let t = primary_type(node);
        if let Some(f) = node.at("format").and_then(Value::as_str) {
            let string_ok = t.is_none_or(|t| t.contains(Types::STRING));
            if !target.keeps_format(f) && string_ok {
                if let Some(v) = node.remove("format") {
                    removed.push(("format".to_string(), v));
                }
            }
        } else if let Some(v) = node.at("format").cloned() {
            node.remove("format");
            normalized.push(("format".to_string(), v));
        }
        if !removed.is_empty() || !normalized.is_empty() {
            jobs.push((path.to_string(), removed.clone(), normalized));
            if promote_on {
                if let Some(text) = describe(&removed) {
                    crate::schema::promote(node, &text);
                }
            }
        }
    });
    for (path, removed, normalized) in jobs {
        let nots: Vec<(String, Value)> = removed.iter().filter(|(k, _)| k == "not").cloned().collect();
        let rest: Vec<(String, Value)> = removed.into_iter().filter(|(k, _)| k != "not").collect();
        if !nots.is_empty() {
            let text = describe(&nots).unwrap_or_default();
            cx.record(&path, Kind::NotDropped, format!("removed {text}"));
        }
        if !rest.is_empty() {
            let text = describe(&rest).unwrap_or_default();
            cx.record(&path, Kind::KeywordRemoved, format!("removed {text}"));
        }
        if !normalized.is_empty() {
            let names: Vec<&str> = normalized.iter().map(|(k, _)| k.as_str()).collect();
            cx.record(&path, Kind::KeywordNormalized, format!("removed always-true {}", names.join(", ")));
        }
    }
}

fn describe(removed: &[(String, Value)]) -> Option<String> {
    if removed.is_empty() {
        return None;
    }
    let t: Vec<String> = removed.iter().map(|(k, v)| format!("{k}: {}", crate::schema::compact(v, 120))).collect();
    Some(t.join("; "))
}
