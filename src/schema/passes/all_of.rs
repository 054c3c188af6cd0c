//! `allOf` merged into one schema. llama.cpp merges only object `properties` (and older versions make
//! every such property required); any other member (a string's bounds, a ref to a string) becomes a
//! grammar for `{}`. Unions inside `allOf` become one `anyOf` of the combinations.

use crate::schema::definitions::{deref, root_defs};
use crate::schema::lookup::{Lookup, Take};
use crate::schema::merge::{cross, intersect, never, never_map, Merged};
use crate::schema::walk::post_order_cx;
use crate::schema::{Cx, Kind};
use serde_json::Value;

/// Passes that must run before this one in a profile's list: members that are refs are read through plain root definitions.
pub const AFTER: &[&str] = &["refs"];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["allOf"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let defs = root_defs(root);
    let max_branches = cx.opts.limits.max_branches;
    post_order_cx(root, cx, &mut |node, path, cx| {
        let Some(Value::Array(members)) = node.take("allOf") else { return };
        let mut base = std::mem::take(node);
        let mut lost = Vec::new();
        let mut unions: Vec<Vec<Value>> = Vec::new();
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(u)) = base.remove(key) {
                unions.push(u);
            }
        }
        let mut is_never = false;
        for m in flatten(members, &defs, 0) {
            let Value::Object(mut m) = m else { continue };
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(u)) = m.remove(key) {
                    unions.push(u);
                }
            }
            match intersect(&base, &m, &mut lost) {
                Merged::Schema(s) => base = s,
                Merged::Never => is_never = true,
            }
        }
        if is_never {
            *node = never_map();
            cx.record(path, Kind::AllofMerged, "allOf members contradict: no value matches");
            return;
        }
        match unions.len() {
            0 => {}
            1 => {
                base.insert("anyOf".into(), Value::Array(unions.pop().unwrap_or_default()));
            }
            _ => {
                let (branches, dropped) = cross(&unions, max_branches, &mut lost);
                if dropped {
                    lost.push(("anyOf".into(), Value::String(format!("{} combined unions over {max_branches} branches", unions.len()))));
                }
                base.insert("anyOf".into(), Value::Array(branches));
            }
        }
        *node = base;
        // what could not be combined is said in the description, and recorded after the merge
        cx.record(path, Kind::AllofMerged, "allOf merged into one schema");
        if !lost.is_empty() {
            let text = crate::schema::removed_text(&lost, 120);
            cx.lost(node, path, Kind::KeywordRemoved, &text, format!("could not combine {text}"));
        }
    });
}

/// Members with nested `allOf`s spliced in and ref members replaced by their definitions.
fn flatten(members: Vec<Value>, defs: &Value, depth: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for m in members {
        let m = deref(m, defs);
        match m {
            Value::Object(mut o) if depth < 16 && o.has("allOf") => {
                let inner = match o.remove("allOf") {
                    Some(Value::Array(a)) => a,
                    _ => vec![],
                };
                out.push(Value::Object(o));
                out.extend(flatten(inner, defs, depth + 1));
            }
            Value::Bool(true) => {}
            Value::Bool(false) => out.push(never()),
            other => out.push(other),
        }
    }
    out
}
