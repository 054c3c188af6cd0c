//! Boolean subschemas, which llama.cpp rejects ("schema must be an object"), become objects:
//! `true` is `{}` (any value), `false` is `{"not": {}}` (never), which later passes resolve.

use crate::schema::merge::never;
use crate::schema::walk::{children_mut, Seg};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

/// Passes that must run before this one in a profile's list: boolean `items` spelled by draft-07 are rewritten by dialect first.
pub const AFTER: &[&str] = &["dialect"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let mut path = String::new();
    visit(root, &mut path, cx, 0);
}

fn visit(v: &mut Value, path: &mut String, cx: &mut Cx, depth: usize) {
    match v {
        Value::Bool(b) => {
            let b = *b;
            *v = if b { Value::Object(Map::new()) } else { never() };
            cx.record(path, Kind::BooleanSchema, if b { "true became {}" } else { "false became {\"not\":{}}" });
        }
        Value::Object(node) if depth < crate::schema::walk::HARD_DEPTH => {
            let base = path.len();
            children_mut(node, |seg, child| {
                // `additionalProperties`/`items` booleans are understood by llama.cpp where they are
                // keywords with their own meaning; only their `false` forms need care, done elsewhere.
                let keep = matches!(seg, Seg::Single("additionalProperties" | "unevaluatedProperties" | "unevaluatedItems"))
                    || (seg == Seg::Single("items") && child.is_boolean());
                if keep {
                    return;
                }
                seg.push_to(path);
                visit(child, path, cx, depth + 1);
                path.truncate(base);
            });
        }
        _ => {}
    }
}
