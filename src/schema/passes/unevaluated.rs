//! `unevaluatedProperties`/`unevaluatedItems` where they mean exactly `additionalProperties`/`items`.
//!
//! This runs first (before `dialect` drops `items: true`, which still evaluates every item), before refs, `allOf` and unions are flattened, because the meaning depends on the
//! original structure: the keyword sees what in-place applicators beside it (and, for a subschema
//! of an applicator, its parent's siblings) evaluated. Only a node with no in-place applicator that
//! is not itself one (an `allOf`/`anyOf`/... branch or a `$defs` entry reached through `$ref`) has the
//! simple meaning. Everywhere else the keyword is left for `unsupported`, which removes it with a
//! lossy record: after flattening, converting it would forbid properties that were evaluated.

use crate::schema::lookup::Lookup;
use crate::schema::walk::{post_order_cx, Seg};
use crate::schema::{Cx, Kind};

/// Keywords that evaluate in place: an `unevaluated*` beside them can see what they evaluated.
const IN_PLACE: &[&str] = &["allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "$ref", "$dynamicRef", "$recursiveRef"];
/// Path segments of a subschema that is evaluated in place of its parent (or reached by `$ref`).
const IN_PLACE_PARENTS: &[&str] = &["allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "$defs", "definitions"];

/// Passes that must run before this one in a profile's list: nothing: it reads the 2020-12 keywords as written.
pub const AFTER: &[&str] = &[];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["unevaluatedProperties", "unevaluatedItems"];

pub fn run(root: &mut serde_json::Value, cx: &mut Cx) {
    post_order_cx(root, cx, &mut |node, path, cx| {
        if !node.has("unevaluatedProperties") && !node.has("unevaluatedItems") {
            return;
        }
        // beside additionalProperties (items), every property (item) is evaluated by this very node,
        // whatever applicators say: the unevaluated* keyword can never apply
        if node.has("additionalProperties") && node.remove("unevaluatedProperties").is_some() {
            cx.record(path, Kind::KeywordNormalized, "unevaluatedProperties beside additionalProperties never applies; removed".to_string());
        }
        if node.has("items") && node.remove("unevaluatedItems").is_some() {
            cx.record(path, Kind::KeywordNormalized, "unevaluatedItems beside items never applies; removed".to_string());
        }
        // an applicator's subschema (`/allOf/0`, `/then`, `/$defs/a`): the keyword the node sits under,
        // so a property *named* `allOf` is not taken for the keyword
        if IN_PLACE.iter().any(|k| node.has(k)) || IN_PLACE_PARENTS.contains(&path.seg().map_or("", Seg::key)) {
            return;
        }
        if let Some(u) = node.remove("unevaluatedProperties") {
            node.insert("additionalProperties".into(), u);
            cx.record(path, Kind::KeywordNormalized, "unevaluatedProperties became additionalProperties".to_string());
        }
        if !node.has("contains") {
            if let Some(u) = node.remove("unevaluatedItems") {
                node.insert("items".into(), u);
                crate::schema::arrays::boolean_items(node);
                cx.record(path, Kind::KeywordNormalized, "unevaluatedItems became items".to_string());
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Context, Options};
    use serde_json::json;

    fn run_on(mut v: serde_json::Value) -> serde_json::Value {
        let opts = Options::default();
        let mut cx = Cx::new("t", Context::Output, &opts, &crate::schema::profile::LLAMA_CPP.target);
        run(&mut v, &mut cx);
        v
    }

    #[test]
    fn plain_node_converts() {
        let v = run_on(json!({"properties": {"a": {}}, "unevaluatedProperties": false}));
        assert_eq!(v, json!({"properties": {"a": {}}, "additionalProperties": false}));
    }

    #[test]
    fn beside_or_inside_applicators_is_left_alone() {
        for s in [
            json!({"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": false}),
            json!({"$ref": "#/$defs/x", "unevaluatedProperties": false}),
            json!({"allOf": [{"unevaluatedProperties": false}], "properties": {"a": {}}}),
            json!({"$defs": {"x": {"unevaluatedProperties": false}}}),
            json!({"anyOf": [{"prefixItems": [{}]}, {"unevaluatedItems": false}]}),
        ] {
            assert_eq!(run_on(s.clone()), s);
        }
    }

    #[test]
    fn property_named_like_an_applicator_is_still_a_property() {
        let v = run_on(json!({"properties": {"allOf": {"unevaluatedProperties": false}}}));
        assert_eq!(v, json!({"properties": {"allOf": {"additionalProperties": false}}}));
    }
}
