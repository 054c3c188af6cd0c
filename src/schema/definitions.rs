//! Root definitions as passes that look through refs read them: the refs pass has left only plain
//! `#/$defs/X` (or `#/definitions/X`) refs, so one level can be copied in where a pass needs the shape.

use crate::schema::lookup::Lookup;
use crate::schema::merge::into_map;
use serde_json::{Map, Value};

/// Root definitions, for members that are refs (the refs pass left only `#/$defs/X` and
/// `#/definitions/X`; one level is copied in, its own refs stay refs).
pub fn root_defs(root: &Value) -> Value {
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
pub fn deref(m: Value, defs: &Value) -> Value {
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
pub fn is_recursive_ref(m: &Value, defs: &Value) -> bool {
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

/// Object nodes in a value (data included): what inlining a copy of it adds, for the inlining budget.
pub fn count_objects(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(count_objects).sum::<usize>(),
        Value::Array(a) => a.iter().map(count_objects).sum(),
        _ => 0,
    }
}
