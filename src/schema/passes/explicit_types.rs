//! Explicit types. JSON Schema keywords apply to one type each and let every other type through;
//! llama.cpp instead infers one type from them (`{"minLength": 2}` means only strings) and older
//! versions reject a schema with no type at all, or read `{}` as "an object". So a schema without
//! `type` gets one: all types when nothing constrains, else one branch per constrained type plus one for
//! the rest.

use crate::schema::merge::is_never;
use crate::schema::types::{keyword_type, Types};
use crate::schema::walk::{is_annotation, post_order_cx, Seg};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

const ORDER: [Types; 5] = [Types::OBJECT, Types::ARRAY, Types::STRING, Types::NUMBER, Types::BOOLEAN];

/// Passes that must run before this one in a profile's list: keywords beside a union are in its branches.
pub const AFTER: &[&str] = &["unions"];

/// Whether the pass may change `node` ([`super::Pass::acts`]): a node without a usable `type` whose
/// values nothing else gives (the conditions of `run` but the one on its place, read only).
pub fn acts(node: &Map<String, Value>, _: &super::Probe, _: &crate::schema::walk::Place) -> bool {
    !super::typed_elsewhere(node) && !is_never(node) && Types::of(node).is_none()
}

pub fn run(root: &mut Value, cx: &mut Cx) {
    post_order_cx(root, cx, &mut |node, path, cx| {
        // (the pointer ends in `/not`: a `not`, or a property of that name, asked without writing it)
        if matches!(path.seg(), Some(Seg::Single("not") | Seg::Map(_, "not"))) {
            return; // only the never sentinel (`not: {}`) keeps a `not` this late: its `{}` stays as it is
        }
        if super::typed_elsewhere(node) || is_never(node) {
            return;
        }
        // a node with a type is left as it is (most nodes): asked before anything is collected
        let declared = Types::of(node);
        if declared.is_some() {
            return;
        }
        let allowed = declared.unwrap_or(Types::ALL);
        let mut constrained = Types::NONE;
        for k in node.keys() {
            if let Some(t) = keyword_type(k) {
                constrained = constrained.union(t.inter(allowed));
            }
        }
        let groups: Vec<Types> = ORDER.iter().copied().filter(|g| !constrained.inter(*g).is_empty()).collect();
        match declared {
            None if groups.is_empty() => {
                node.insert("type".into(), Types::ALL.to_json());
                cx.record(path, Kind::TypesExplicit, "no type: every type allowed explicitly");
                return;
            }
            None => {}
            // a type list: llama.cpp copies the keywords into each listed type, each reads its own
            Some(_) => return,
        }
        // split: one branch per constrained type with its keywords, one branch for the other types
        let mut annotations = Map::new();
        let mut rest = Map::new();
        for (k, v) in std::mem::take(node) {
            if k == "type" {
                continue;
            }
            if is_annotation(&k) || keyword_type(&k).is_none() {
                // descriptions, `$defs` and the like stay on the node itself
                annotations.insert(k, v);
            } else {
                rest.insert(k, v);
            }
        }
        let mut branches = Vec::new();
        let mut covered = Types::NONE;
        for g in &groups {
            let t = allowed.inter(*g);
            let mut b = Map::new();
            b.insert("type".into(), t.to_json());
            for (k, v) in &rest {
                if keyword_type(k).is_some_and(|kt| !kt.inter(*g).is_empty()) {
                    b.insert(k.clone(), v.clone());
                }
            }
            covered = covered.union(t);
            branches.push(Value::Object(b));
        }
        let others = allowed.minus(covered);
        if !others.is_empty() {
            let mut b = Map::new();
            b.insert("type".into(), others.to_json());
            branches.push(Value::Object(b));
        }
        *node = annotations;
        if branches.len() == 1 {
            if let Some(Value::Object(b)) = branches.pop() {
                for (k, v) in b {
                    node.insert(k, v);
                }
            }
        } else {
            node.insert("anyOf".into(), Value::Array(branches));
        }
        cx.record(path, Kind::TypesExplicit, "keywords that apply to one type each: one branch per type");
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, count};
    use crate::schema::Target;
    use serde_json::json;

    #[test]
    fn an_unconstrained_node_gets_every_type_and_says_so() {
        let (v, r) = apply(run, json!({"description": "anything"}), &Target::LLAMA_CPP);
        assert_eq!(v, json!({"description": "anything", "type": Types::ALL.to_json()}));
        assert_eq!(count(&r, Kind::TypesExplicit), 1);
        // the record says why: no type at all, not a split by keywords (what a log reader sees)
        let details: Vec<&str> = r.records.iter().map(|x| x.detail.as_str()).collect();
        assert_eq!(details, ["no type: every type allowed explicitly"]);
    }

    #[test]
    fn a_split_keeps_what_is_not_a_type_keyword_on_the_node() {
        // `not` and `$defs` are neither annotations nor keywords of one type: they stay beside the branches
        let (v, r) = apply(run, json!({"minLength": 2, "not": {"const": "ab"}, "$defs": {"a": {"type": "string"}}, "title": "T"}), &Target::LLAMA_CPP);
        assert_eq!(v["not"], json!({"const": "ab"}), "{v}");
        assert_eq!(v["$defs"], json!({"a": {"type": "string"}}), "{v}");
        assert_eq!(v["title"], json!("T"));
        let branches = v["anyOf"].as_array().map(Vec::as_slice).unwrap_or_default();
        assert_eq!(branches.first(), Some(&json!({"type": "string", "minLength": 2})), "{v}");
        assert_eq!(branches.len(), 2, "{v}");
        assert_eq!(count(&r, Kind::TypesExplicit), 1);
    }
}
