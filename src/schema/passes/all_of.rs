//! `allOf` merged into one schema. llama.cpp merges only object `properties` (and older versions make
//! every such property required); any other member (a string's bounds, a ref to a string) becomes a
//! grammar for `{}`. Unions inside `allOf` become one `anyOf` of the combinations.

use super::unions::cross;
use crate::schema::lookup::{Lookup, Take};
use crate::schema::merge::{intersect, into_map, never, never_map, Merged};
use crate::schema::walk::post_order;
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["allOf"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let defs = root_defs(root);
    let max_branches = cx.opts.limits.max_branches;
    let mut recs: Vec<(String, Kind, String, crate::schema::Removed)> = Vec::new();
    post_order(root, "", &mut |node, path| {
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
            recs.push((path.to_string(), Kind::AllofMerged, "allOf members contradict: no value matches".into(), vec![]));
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
        recs.push((path.to_string(), Kind::AllofMerged, "allOf merged into one schema".into(), lost));
    });
    for (path, kind, detail, lost) in recs {
        cx.record(&path, kind, detail);
        if !lost.is_empty() {
            let text: Vec<String> = lost.iter().map(|(k, v)| format!("{k}: {}", crate::schema::compact(v, 120))).collect();
            cx.record(&path, Kind::KeywordRemoved, format!("could not combine {}", text.join("; ")));
        }
    }
}

/// Root definitions, for members that are refs (the refs pass left only `#/$defs/X` and
/// `#/definitions/X`; one level is copied in, its own refs stay refs).
pub(crate) fn root_defs(root: &Value) -> Value {
    let mut m = Map::new();
    for k in ["$defs", "definitions"] {
        if let Some(d) = root.get(k) {
            m.insert(k.to_string(), d.clone());
        }
    }
    Value::Object(m)
}

/// `m` with a `$ref` to a definition replaced by a copy of it (one level; the copy's own refs stay).
/// A recursive definition is not copied: its copy would hold the same shape again, and every run
/// would unroll it one level more. Keywords beside such a ref are dropped by the refs pass, visibly.
pub(crate) fn deref(m: Value, defs: &Value) -> Value {
    if is_recursive_ref(&m, defs) {
        return m;
    }
    if let Value::Object(o) = &m {
        if let Some(r) = o.at("$ref").and_then(Value::as_str) {
            if let Some(t) = r.strip_prefix('#').and_then(|p| defs.pointer(p)) {
                let mut t = into_map(t.clone());
                for (k, v) in o {
                    if k != "$ref" {
                        t.insert(k.clone(), v.clone());
                    }
                }
                return Value::Object(t);
            }
        }
    }
    m
}

/// Whether `m` is a `$ref` whose target refers back to itself (a recursive type): such a branch
/// cannot be expanded into a finite copy, so a keyword beside it cannot be pushed all the way in.
/// Searches at most a bounded number of nodes and answers true when the bound is reached.
pub(crate) fn is_recursive_ref(m: &Value, defs: &Value) -> bool {
    const MAX_NODES: usize = 4_096;
    let Some(start) = m.at("$ref").and_then(Value::as_str) else { return false };
    let target = |r: &str| r.strip_prefix('#').and_then(|p| defs.pointer(p));
    let mut followed: Vec<&str> = vec![start];
    let mut stack: Vec<&Value> = target(start).into_iter().collect();
    let mut visited = 0usize;
    while let Some(v) = stack.pop() {
        visited += 1;
        if visited > MAX_NODES {
            return true;
        }
        let Value::Object(node) = v else { continue };
        if let Some(r) = node.at("$ref").and_then(Value::as_str) {
            if r == start {
                return true;
            }
            if !followed.contains(&r) {
                followed.push(r);
                stack.extend(target(r));
            }
        }
        crate::schema::walk::children(node, |_, c| stack.push(c));
    }
    false
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
