//! Boolean subschemas, which llama.cpp rejects ("schema must be an object"), become objects:
//! `true` is `{}` (any value), `false` is `{"not": {}}` (never), which later passes resolve.

use crate::schema::merge::never;
use crate::schema::walk::{children_mut, Path, Seg};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

/// Passes that must run before this one in a profile's list: boolean `items` spelled by draft-07 are rewritten by dialect first.
pub const AFTER: &[&str] = &["dialect"];

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
                // `additionalProperties`/`items` booleans are understood by llama.cpp where they are
                // keywords with their own meaning; only their `false` forms need care, done elsewhere.
                let keep = matches!(seg, Seg::Single("additionalProperties" | "unevaluatedProperties" | "unevaluatedItems"))
                    || (seg == Seg::Single("items") && child.is_boolean());
                if keep {
                    return;
                }
                visit(child, &path.child(seg), cx, depth + 1);
            });
        }
        _ => {}
    }
}
