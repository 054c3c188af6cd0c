//! `prefixItems` as llama.cpp can write it.
//!
//! Every llama.cpp version turns `prefixItems: [A, B, C]` into a tuple of exactly three items and
//! ignores `minItems`, `maxItems` and `items` beside it; JSON Schema allows any shorter array too,
//! and longer ones unless `items` forbids them. So a node whose tuple allows several lengths becomes a
//! union: one exact tuple per allowed length (`prefixItems: []` for the empty array, the one spelling
//! every version writes), one branch for longer arrays where they are allowed (their items may be any
//! of the tuple's schemas or `items`: positions are not enforced past the tuple, a lossy record), and
//! one branch for the node's non-array types. This runs before `unions`, which moves the node's other
//! keywords into the branches.

use crate::schema::lookup::Lookup;
use crate::schema::merge::cross;
use crate::schema::merge::is_never;
use crate::schema::types::Types;
use crate::schema::walk::post_order_cx;
use crate::schema::{Cx, Kind};
use serde_json::{json, Map, Value};

/// Passes that must run before this one in a profile's list: tuples are `prefixItems`, not draft-07 `items` arrays.
pub const AFTER: &[&str] = &["dialect"];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["prefixItems"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let max_branches = cx.opts.limits.max_branches as u64;
    post_order_cx(root, cx, &mut |node, path, cx| {
        let Some(Value::Array(tuple)) = node.at("prefixItems") else { return };
        if Types::of(node).is_some_and(|t| !t.contains(Types::ARRAY)) {
            return; // array keywords on a node that cannot be an array constrain nothing
        }
        let n = tuple.len() as u64;
        let lo = node.at("minItems").and_then(Value::as_u64).unwrap_or(0);
        let hi = node.at("maxItems").and_then(Value::as_u64);
        let items = node.at("items").filter(|i| !i.as_object().is_some_and(Map::is_empty) && i != &&Value::Bool(true));
        let no_more = items.is_some_and(|i| i == &Value::Bool(false) || i.as_object().is_some_and(is_never));
        let longer = !no_more && hi.is_none_or(|h| h > n);
        if (lo >= n && !longer) || lo > n {
            return; // exactly the tuple llama.cpp writes (or nothing can match: `never` says so)
        }
        let key = match (node.has("anyOf"), node.has("oneOf")) {
            (false, _) => "anyOf",
            // tuples of different lengths are exclusive: as a oneOf (or intersected into one) they are exact
            _ => "oneOf",
        };
        let top = hi.map_or(n, |h| h.min(n));
        if top.saturating_sub(lo) + 2 > max_branches {
            return;
        }
        let mut branches: Vec<Value> = (lo..=top)
            // minItems/maxItems say the tuple is exact (llama.cpp ignores them): the output is a fixed point
            .map(|k| json!({"type": "array", "prefixItems": tuple.iter().take(k as usize).cloned().collect::<Vec<_>>(), "minItems": k, "maxItems": k}))
            .collect();
        let mut tail_lost = false;
        if longer {
            let mut any_of: Vec<Value> = tuple.clone();
            let tail = match items {
                Some(i) => {
                    any_of.push(i.clone());
                    json!({"anyOf": any_of})
                }
                None => json!({}),
            };
            let mut b = json!({"type": "array", "minItems": lo.max(n + 1), "items": tail});
            if let (Some(h), Value::Object(m)) = (hi, &mut b) {
                m.insert("maxItems".into(), Value::from(h));
            }
            branches.push(b);
            tail_lost = true;
        }
        let others = Types::of(node).unwrap_or(Types::ALL).minus(Types::ARRAY);
        if !others.is_empty() {
            branches.push(json!({"type": others.to_json()}));
        }
        if let Some(Value::Array(one_of)) = node.at("oneOf").filter(|_| key == "oneOf") {
            let mut lost = Vec::new();
            let (crossed, dropped) = cross(&[one_of.clone(), branches], max_branches as usize, &mut lost);
            if dropped || !lost.is_empty() {
                return; // too many combinations: the exact tuple stays (a later run sees the same)
            }
            branches = crossed;
        }
        for k in ["prefixItems", "items", "minItems", "maxItems"] {
            node.remove(k);
        }
        node.insert(key.into(), Value::Array(branches));
        if tail_lost {
            cx.record(path, Kind::KeywordRemoved, format!("items past the first {n} are not checked by position"));
        }
        cx.record(path, Kind::TupleExpanded, format!("prefixItems of {n}: one exact tuple per allowed length"));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Context, Options, Report};

    fn run_on(mut v: Value) -> (Value, Report) {
        let opts = Options::default();
        let mut cx = Cx::new("t", Context::Output, &opts, &crate::schema::profile::LLAMA_CPP.target);
        run(&mut v, &mut cx);
        (v, cx.report)
    }

    #[test]
    fn exact_tuple_is_left_alone() {
        let s = json!({"type": "array", "prefixItems": [{"type": "integer"}, {}], "minItems": 2, "maxItems": 2});
        assert_eq!(run_on(s.clone()).0, s);
    }

    #[test]
    fn shorter_arrays_become_tuples() {
        let (v, r) = run_on(json!({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "maxItems": 2}));
        assert_eq!(
            v,
            json!({"type": "array", "anyOf": [
                {"type": "array", "prefixItems": [], "minItems": 0, "maxItems": 0},
                {"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 1, "maxItems": 1},
                {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}
            ]})
        );
        assert_eq!(r.lossy_count(), 0);
    }

    #[test]
    fn longer_arrays_and_other_types_are_kept_with_a_lossy_record() {
        let (v, r) = run_on(json!({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}, "minItems": 1}));
        let branches = v.at("anyOf").and_then(Value::as_array).cloned().unwrap_or_default();
        assert_eq!(branches.len(), 3);
        assert_eq!(branches[1], json!({"type": "array", "minItems": 2, "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}));
        assert!(branches[2].at("type").is_some_and(|t| !t.to_string().contains("array")));
        assert_eq!(r.lossy_count(), 1);
    }

    #[test]
    fn beside_an_existing_any_of_uses_one_of() {
        let (v, _) = run_on(json!({"prefixItems": [{}], "items": false, "anyOf": [{"type": "array"}]}));
        assert!(v.at("oneOf").is_some() && v.at("anyOf").is_some());
    }
}
