//! Keywords the backend ignores without a word, or refuses ([`crate::schema::Target::unenforced`]),
//! and formats it does not compile ([`crate::schema::Target::formats`]): removed so the loss is visible
//! (and, by default, said in the node's `description`) and the request compiles. Trivially true keywords
//! are just dropped. (`unevaluated*` with a plain meaning was already converted by `unevaluated`, before
//! applicators were flattened.)

use super::{primary_type, Probe};
use crate::schema::lookup::{KeySet, Lookup};
use crate::schema::types::Types;
use crate::schema::walk::{post_order_cx, Path};
use crate::schema::{removed_text, Cx, Kind, Target};
use serde_json::{Map, Value};

fn trivially_true(k: &str, v: &Value) -> bool {
    match k {
        "uniqueItems" => v == &Value::Bool(false),
        "minProperties" | "minContains" => v.as_f64().is_some_and(|n| n <= 0.0) && k != "minContains",
        "unevaluatedProperties" | "unevaluatedItems" => v == &Value::Bool(true) || v.as_object().is_some_and(|m| m.is_empty()),
        "if" | "then" | "else" | "propertyNames" | "contentSchema" => v.as_object().is_some_and(|m| m.is_empty()) || v == &Value::Bool(true),
        _ => false,
    }
}

/// Whether no property name can match two of these `patternProperties` regexes: each is anchored
/// (`^`) and starts with a literal that no other's literal start agrees with. Conservative: false
/// whenever it cannot tell.
fn provably_disjoint(p: &serde_json::Map<String, Value>) -> bool {
    let literal = |re: &str| -> Option<String> {
        let rest = re.strip_prefix('^')?;
        let lit: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
        // a quantifier right after the literal makes its last character optional
        let next = rest.get(lit.len()..).and_then(|r| r.chars().next());
        let lit = if matches!(next, Some('*' | '?' | '{')) { lit.get(..lit.len().saturating_sub(1))?.to_string() } else { lit };
        (!lit.is_empty()).then_some(lit)
    };
    let lits: Option<Vec<String>> = p.keys().map(|k| literal(k)).collect();
    let Some(lits) = lits else { return p.len() < 2 };
    lits.iter().enumerate().all(|(i, a)| lits.iter().skip(i + 1).all(|b| !(a.starts_with(b.as_str()) || b.starts_with(a.as_str()))))
}

/// Whether the pass may change `node` ([`super::Pass::acts`]): it holds a keyword the target does not
/// enforce, `patternProperties` where they must be disjoint, or a `format` the target does not keep.
pub fn acts(node: &Map<String, Value>, probe: &Probe, _: &crate::schema::walk::Place) -> bool {
    node.iter().any(|(k, v)| {
        probe.unenforced.contains(k)
            || match k.as_str() {
                "format" => !v.as_str().is_some_and(|f| probe.target.keeps_format(f)),
                "patternProperties" => probe.target.disjoint_pattern_properties,
                _ => false,
            }
    })
}

/// Passes that must run before this one in a profile's list: keywords are in their 2020-12 spelling.
pub const AFTER: &[&str] = &["dialect"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let target = cx.target;
    let unenforced: Vec<&'static str> = target.unenforced_keywords().filter(|k| *k != "not").collect();
    let unenforced_set = KeySet::new(unenforced.iter().copied());
    let drops_not = target.unenforced("not");
    post_order_cx(root, cx, &mut |node, path, cx| {
        let mut removed = Vec::new();
        let mut normalized = Vec::new();
        // the node's keys (a few) asked of the set; in the list's order only when one is there
        let present: Vec<&'static str> = if node.keys().any(|n| unenforced_set.contains(n)) {
            unenforced.iter().copied().filter(|k| node.keys().any(|n| n == k)).collect()
        } else {
            Vec::new()
        };
        for k in present {
            if let Some(v) = node.remove(k) {
                if trivially_true(k, &v) {
                    normalized.push((k.to_string(), v));
                } else {
                    removed.push((k.to_string(), v));
                }
            }
        }
        // a backend that needs `patternProperties` disjoint refuses the whole schema otherwise
        if target.disjoint_pattern_properties && node.at("patternProperties").and_then(Value::as_object).is_some_and(|p| !provably_disjoint(p)) {
            if let Some(v) = node.remove("patternProperties") {
                removed.push(("patternProperties".to_string(), v));
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
        if drops_not && node.has("not") && !crate::schema::merge::is_never(node) {
            if let Some(v) = node.remove("not") {
                removed.push(("not".to_string(), v));
            }
        }
        drop_format(node, target, &mut removed, &mut normalized);
        if removed.is_empty() && normalized.is_empty() {
            return; // the common case: nothing removed, nothing to say
        }
        report(node, path, cx, removed, &normalized);
    });
}

/// Keywords as (name, value) pairs.
type Removed = Vec<(String, Value)>;

/// A `format` the backend does not compile is removed; one that is not a string means nothing.
fn drop_format(node: &mut Map<String, Value>, target: &Target, removed: &mut Removed, normalized: &mut Removed) {
    match node.at("format") {
        Some(Value::String(f)) => {
            // a hosted API with a keyword list checks every format, whatever the type
            let string_ok = primary_type(node).is_none_or(|t| t.contains(Types::STRING)) || target.keywords.is_some();
            if !target.keeps_format(f) && string_ok {
                if let Some(v) = node.remove("format") {
                    removed.push(("format".to_string(), v));
                }
            }
        }
        Some(_) => {
            if let Some(v) = node.remove("format") {
                normalized.push(("format".to_string(), v));
            }
        }
        None => {}
    }
}

/// One description sentence for everything removed at a node, and its records (`not` has its own kind).
fn report(node: &mut Map<String, Value>, path: &Path, cx: &mut Cx, removed: Removed, normalized: &Removed) {
    cx.say(node, &removed_text(&removed, 120));
    let (nots, rest): (Vec<_>, Vec<_>) = removed.into_iter().partition(|(k, _)| k == "not");
    if !nots.is_empty() {
        cx.record(path, Kind::NotDropped, format!("removed {}", removed_text(&nots, 120)));
    }
    if !rest.is_empty() {
        cx.record(path, Kind::KeywordRemoved, format!("removed {}", removed_text(&rest, 120)));
    }
    if !normalized.is_empty() {
        let names: Vec<&str> = normalized.iter().map(|(k, _)| k.as_str()).collect();
        cx.record(path, Kind::KeywordNormalized, format!("removed always-true {}", names.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::schema::passes::testing::{apply, count};
    use crate::schema::Target;

    #[test]
    fn always_true_values_are_dropped_quietly_and_the_rest_said() {
        // (keyword, value, always true): each alone on its node, as a property's schema often is
        let cases = [
            ("uniqueItems", json!(false), true),
            ("uniqueItems", json!(true), false),
            ("minProperties", json!(0), true),
            ("minProperties", json!(1), false),
            // `minContains: 0` changes what `contains` means: never dropped quietly
            ("minContains", json!(0), false),
            ("minContains", json!(1), false),
            ("unevaluatedProperties", json!(true), true),
            ("unevaluatedItems", json!({}), true),
            ("unevaluatedProperties", json!(false), false),
            ("if", json!({}), true),
            ("then", json!(true), true),
            ("else", json!({"required": ["a"]}), false),
            ("propertyNames", json!({}), true),
            ("propertyNames", json!({"maxLength": 3}), false),
            ("contentSchema", json!(true), true),
        ];
        for (k, value, quiet) in cases {
            let (v, r) = apply(run, json!({ k: value.clone() }), &Target::LLAMA_CPP);
            assert!(v.get(k).is_none(), "{k}: {value} stays: {v}");
            let said = v.get("description").and_then(Value::as_str).unwrap_or_default();
            if quiet {
                assert_eq!((count(&r, Kind::KeywordNormalized), count(&r, Kind::KeywordRemoved)), (1, 0), "{k}: {value}");
                assert_eq!(said, "", "{k}: {value}");
            } else {
                assert_eq!((count(&r, Kind::KeywordNormalized), count(&r, Kind::KeywordRemoved)), (0, 1), "{k}: {value}");
                assert!(said.contains(k), "{k}: {value}: {said:?}");
            }
        }
    }

    #[test]
    fn additional_properties_goes_only_with_the_pattern_properties_it_stood_beside() {
        let pp = json!({"^x-": {"type": "string"}});
        // false would forbid the names the patterns allowed: removed with them
        let (v, r) = apply(run, json!({"patternProperties": pp, "additionalProperties": false}), &Target::LLAMA_CPP);
        assert!(v.get("patternProperties").is_none() && v.get("additionalProperties").is_none(), "{v}");
        assert_eq!(count(&r, Kind::KeywordRemoved), 1);
        // true forbids nothing: it stays
        let (v, _) = apply(run, json!({"patternProperties": pp, "additionalProperties": true}), &Target::LLAMA_CPP);
        assert_eq!(v.get("additionalProperties"), Some(&json!(true)), "{v}");
        // another keyword removed beside it leaves it alone
        let (v, _) = apply(run, json!({"minProperties": 2, "additionalProperties": false}), &Target::LLAMA_CPP);
        assert_eq!(v.get("additionalProperties"), Some(&json!(false)), "{v}");
    }

    #[test]
    fn pattern_properties_stay_where_the_target_enforces_them_and_they_are_disjoint() {
        let disjoint = json!({"patternProperties": {"^a": {}, "^b": {}}, "additionalProperties": false});
        let (v, r) = apply(run, disjoint.clone(), &Target::GUIDANCE);
        assert_eq!(v, disjoint);
        assert_eq!(count(&r, Kind::KeywordRemoved), 0);
        let (v, r) = apply(run, json!({"patternProperties": {"^a": {}, "^ab": {}}}), &Target::GUIDANCE);
        assert!(v.get("patternProperties").is_none(), "{v}");
        assert_eq!(count(&r, Kind::KeywordRemoved), 1);
    }

    #[test]
    fn pattern_properties_are_disjoint_only_when_their_anchored_literals_differ() {
        let d = |v: Value| provably_disjoint(v.as_object().unwrap_or(&serde_json::Map::new()));
        assert!(d(json!({"^a": {}, "^b": {}})));
        assert!(d(json!({"^x-": {}, "^y_": {}})));
        // `_` and `-` belong to the literal: these differ after the common `a`
        assert!(d(json!({"^a_b": {}, "^a-c": {}})));
        assert!(d(json!({"anything": {}})), "one pattern never overlaps itself");
        assert!(!d(json!({"a*": {}, "aaa*": {}})), "unanchored");
        assert!(!d(json!({"^ab": {}, "^a": {}})), "one literal starts the other");
        assert!(!d(json!({"^ab*": {}, "^a": {}})), "b* may be empty");
        assert!(!d(json!({"f.*": {}, "b.*": {}})));
    }
}
