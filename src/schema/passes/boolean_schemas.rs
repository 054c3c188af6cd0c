//! Boolean subschemas, which llama.cpp rejects ("schema must be an object"), become objects:
//! `true` is `{}` (any value), `false` is `{"not": {}}` (never), which later passes resolve.

use crate::schema::merge::never;
use crate::schema::walk::{children, children_mut, Path, Seg};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

/// Passes that must run before this one in a profile's list: boolean `items` spelled by draft-07 are rewritten by dialect first.
pub const AFTER: &[&str] = &["dialect"];

/// Whether the pass may change `node` ([`super::Pass::acts`]): a boolean subschema it turns into an
/// object. (A boolean root has no node to ask: every test counts as yes there.)
pub fn acts(node: &Map<String, Value>, _: &super::Probe, _: &crate::schema::walk::Place) -> bool {
    let mut found = false;
    children(node, |seg, child| found = found || (child.is_boolean() && !kept(seg, child)));
    found
}

/// `additionalProperties`/`items` booleans are understood by llama.cpp where they are keywords with
/// their own meaning; only their `false` forms need care, done elsewhere.
fn kept(seg: Seg, child: &Value) -> bool {
    matches!(seg, Seg::Single("additionalProperties" | "unevaluatedProperties" | "unevaluatedItems")) || (seg == Seg::Single("items") && child.is_boolean())
}

pub fn run(root: &mut Value, cx: &mut Cx) {
    visit(root, &Path::root(""), cx, 0);
}

/// `path` is written out only where a boolean is found.
fn visit(v: &mut Value, path: &Path, cx: &mut Cx, depth: usize) {
    match v {
        Value::Bool(b) => {
            let b = *b;
            *v = if b { Value::Object(Map::new()) } else { never() };
            cx.record(path, Kind::BooleanSchema, if b { "true became {}" } else { "false became {\"not\":{}}" });
        }
        Value::Object(node) if depth < crate::schema::walk::HARD_DEPTH => {
            children_mut(node, |seg, child| {
                if kept(seg, child) {
                    return;
                }
                visit(child, &path.child(seg), cx, depth + 1);
            });
        }
        _ => {}
    }
}
