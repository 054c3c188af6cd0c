//! Intersection of two schemas (what `allOf` means, and what a union's siblings mean for each branch).
//!
//! `intersect(a, b)` returns one schema that accepts exactly what both accept, or `Never` when nothing
//! can satisfy both. Where two constraints cannot be combined into one keyword (two different
//! patterns, say), `a`'s is kept and `b`'s is reported in `lost`, so the caller records a lossy change.
//! Unions (`anyOf`/`oneOf`) and `$ref`s must be resolved by the caller first.

use super::types::Types;
use super::walk::is_annotation;
use crate::schema::lookup::Lookup;
use serde_json::{Map, Number, Value};

pub enum Merged {
    Schema(Map<String, Value>),
    Never,
}

/// Whether a node is the "never" schema the boolean pass writes for `false` (`{"not": {}}`).
pub fn is_never(node: &Map<String, Value>) -> bool {
    // one look at each key rather than a lookup per keyword: this runs on every property of every node
    node.iter().any(|(k, v)| match (k.as_str(), v) {
        // `not` of "any value", however spelled: `{}`, annotations only, or every type listed
        ("not", Value::Object(n)) => n.iter().all(|(k, v)| is_annotation(k) || (k == "type" && Types::of_value_type(v) == Some(Types::ALL))),
        ("not", Value::Bool(true)) => true,
        ("enum" | "type" | "anyOf" | "oneOf", Value::Array(a)) => a.is_empty(),
        _ => false,
    })
}

/// The schema no value matches, as toolfit spells it.
pub fn never() -> Value {
    Value::Object(never_map())
}

/// [`never`] as a node's map, to put in place of one.
pub fn never_map() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("not".into(), Value::Object(Map::new()));
    m
}

/// A schema value as a node's map: `true` is the empty map, `false` (and anything else) nothing.
pub fn into_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Which side of a value a bound keyword limits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// `minimum`, `minLength`, ...: the larger of two is the tighter.
    Lower,
    /// `maximum`, `maxLength`, ...: the smaller.
    Upper,
}

fn tighter(a: &Value, b: &Value, bound: Bound) -> Value {
    match (num(a), num(b)) {
        (Some(x), Some(y)) => {
            let b_tighter = match bound {
                Bound::Lower => y > x,
                Bound::Upper => y < x,
            };
            if b_tighter {
                b.clone()
            } else {
                a.clone()
            }
        }
        (None, Some(_)) => b.clone(),
        _ => a.clone(),
    }
}

const LOWER: &[&str] = &["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"];
const UPPER: &[&str] = &["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"];

/// Depth guard: intersecting nested properties recurses; past this depth the rest is kept from `a`.
const MAX_MERGE_DEPTH: usize = 64;

pub fn intersect(a: &Map<String, Value>, b: &Map<String, Value>, lost: &mut Vec<(String, Value)>) -> Merged {
    intersect_at(a, b, lost, 0)
}

fn as_obj(v: &Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m.clone()),
        Value::Bool(true) => Some(Map::new()),
        Value::Bool(false) => Some(never_map()),
        _ => None,
    }
}

/// Intersects two subschemas given as values; `None` result means "never".
fn intersect_values(a: &Value, b: &Value, lost: &mut Vec<(String, Value)>, depth: usize) -> Option<Value> {
    let (Some(x), Some(y)) = (as_obj(a), as_obj(b)) else { return Some(a.clone()) };
    if is_never(&x) || is_never(&y) {
        return None;
    }
    match intersect_at(&x, &y, lost, depth + 1) {
        Merged::Schema(m) => Some(Value::Object(m)),
        Merged::Never => None,
    }
}

fn intersect_at(a: &Map<String, Value>, b: &Map<String, Value>, lost: &mut Vec<(String, Value)>, depth: usize) -> Merged {
    if is_never(a) || is_never(b) {
        return Merged::Never;
    }
    if depth > MAX_MERGE_DEPTH {
        for (k, v) in b {
            if !a.has(k) && !is_annotation(k) {
                lost.push((k.clone(), v.clone()));
            }
        }
        return Merged::Schema(a.clone());
    }
    let mut out = a.clone();
    for (k, vb) in b {
        let Some(va) = a.at(k) else {
            out.insert(k.clone(), vb.clone());
            continue;
        };
        if va == vb {
            continue;
        }
        if merge_keyword(k, a, b, &mut out, lost, depth).is_none() {
            return Merged::Never;
        }
    }
    relate_siblings(a, b, &mut out, lost, depth);
    if !literals_typed(&mut out) {
        return Merged::Never;
    }
    Merged::Schema(out)
}

/// One keyword both sides hold, with different values, merged into `out`; `None` when no value can
/// satisfy both.
fn merge_keyword(
    k: &str,
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    out: &mut Map<String, Value>,
    lost: &mut Vec<(String, Value)>,
    depth: usize,
) -> Option<()> {
    let (Some(va), Some(vb)) = (a.at(k), b.at(k)) else { return Some(()) };
    let key = k;
    match key {
        "type" => {
            let ta = Types::of(a).unwrap_or(Types::ALL);
            let tb = Types::of(b).unwrap_or(Types::ALL);
            let t = ta.inter(tb);
            if t.is_empty() {
                return None;
            }
            out.insert("type".into(), t.to_json());
        }
        "required" => {
            let mut req: Vec<Value> = va.as_array().cloned().unwrap_or_default();
            for r in vb.as_array().into_iter().flatten() {
                if !req.contains(r) {
                    req.push(r.clone());
                }
            }
            out.insert(k.to_string(), Value::Array(req));
        }
        "enum" => {
            let (Some(ea), Some(eb)) = (va.as_array(), vb.as_array()) else { return Some(()) };
            let both: Vec<Value> = ea.iter().filter(|v| eb.contains(v)).cloned().collect();
            if both.is_empty() {
                return None;
            }
            out.insert(k.to_string(), Value::Array(both));
        }
        "const" => return None, // two different constants
        "properties" => {
            let (Some(pa), Some(pb)) = (va.as_object(), vb.as_object()) else { return Some(()) };
            out.insert(k.to_string(), Value::Object(merge_properties(pa, pb, lost, depth)));
        }
        "items" | "additionalProperties" | "propertyNames" | "contains" | "unevaluatedItems" | "unevaluatedProperties" => {
            merge_subschema(k, va, vb, out, lost, depth);
        }
        "prefixItems" => {
            let (Some(xa), Some(xb)) = (va.as_array(), vb.as_array()) else { return Some(()) };
            out.insert(k.to_string(), Value::Array(merge_tuple(xa, xb, lost, depth)));
        }
        "uniqueItems" => {
            out.insert(k.to_string(), Value::Bool(va == &Value::Bool(true) || vb == &Value::Bool(true)));
        }
        "allOf" => {
            let mut all = va.as_array().cloned().unwrap_or_default();
            all.extend(vb.as_array().cloned().unwrap_or_default());
            out.insert(k.to_string(), Value::Array(all));
        }
        _ if LOWER.contains(&key) => {
            out.insert(k.to_string(), tighter(va, vb, Bound::Lower));
        }
        _ if UPPER.contains(&key) => {
            out.insert(k.to_string(), tighter(va, vb, Bound::Upper));
        }
        _ if is_annotation(key) => {
            // the more specific side (b: a branch, or a later allOf member) describes the value
            out.insert(k.to_string(), vb.clone());
        }
        _ => lost.push((k.to_string(), vb.clone())),
    }
    Some(())
}

/// A keyword holding one subschema both sides have: their intersection; where nothing satisfies both,
/// no element (`items`: `maxItems: 0`) or no member (`false`).
fn merge_subschema(k: &str, va: &Value, vb: &Value, out: &mut Map<String, Value>, lost: &mut Vec<(String, Value)>, depth: usize) {
    match intersect_values(va, vb, lost, depth) {
        Some(s) => {
            out.insert(k.to_string(), s);
        }
        None if k == "items" => {
            out.remove("items");
            out.insert("maxItems".into(), Value::Number(Number::from(0)));
        }
        None => {
            out.insert(k.to_string(), Value::Bool(false));
        }
    }
}

/// Both sides' `properties`: a name both declare must satisfy both (never, if it cannot).
fn merge_properties(pa: &Map<String, Value>, pb: &Map<String, Value>, lost: &mut Vec<(String, Value)>, depth: usize) -> Map<String, Value> {
    let mut props = pa.clone();
    for (name, sb) in pb {
        let merged = match pa.get(name) {
            Some(sa) => intersect_values(sa, sb, lost, depth).unwrap_or_else(never),
            None => sb.clone(),
        };
        props.insert(name.clone(), merged);
    }
    props
}

/// Both sides' `prefixItems`, position by position; a position only one side covers keeps its schema.
fn merge_tuple(xa: &[Value], xb: &[Value], lost: &mut Vec<(String, Value)>, depth: usize) -> Vec<Value> {
    let n = xa.len().max(xb.len());
    let mut items = Vec::with_capacity(n);
    for i in 0..n {
        match (xa.get(i), xb.get(i)) {
            (Some(x), Some(y)) => items.push(intersect_values(x, y, lost, depth).unwrap_or_else(never)),
            (Some(x), None) | (None, Some(x)) => items.push(x.clone()),
            (None, None) => {}
        }
    }
    items
}

/// What one side's keywords say about the other's: a property one side declares and the other leaves to
/// `additionalProperties`, a tuple position one side covers and the other leaves to `items`, and
/// positions past `maxItems`.
fn relate_siblings(a: &Map<String, Value>, b: &Map<String, Value>, out: &mut Map<String, Value>, lost: &mut Vec<(String, Value)>, depth: usize) {
    // A property that one side declares and the other leaves to additionalProperties must satisfy both.
    for (x, y) in [(a, b), (b, a)] {
        let (Some(px), Some(ap)) = (x.at("properties").and_then(Value::as_object), y.at("additionalProperties")) else {
            continue;
        };
        let py = y.at("properties").and_then(Value::as_object);
        for (name, sx) in px {
            if py.is_some_and(|p| p.contains_key(name)) {
                continue;
            }
            let merged = intersect_values(sx, ap, lost, depth).unwrap_or_else(never);
            if let Some(Value::Object(props)) = out.at_mut("properties") {
                props.insert(name.clone(), merged);
            }
        }
    }
    // A position one side's `prefixItems` covers and the other leaves to its `items` must satisfy both
    // (the mirror of the properties rule above): `items` beside a prefix applies only past it.
    for (x, y) in [(a, b), (b, a)] {
        let (Some(px), Some(iy)) = (x.at("prefixItems").and_then(Value::as_array), y.at("items")) else {
            continue;
        };
        let covered = y.at("prefixItems").and_then(Value::as_array).map_or(0, Vec::len);
        let mut positions = match out.at("prefixItems") {
            Some(Value::Array(p)) => p.clone(),
            _ => continue,
        };
        for (i, sx) in px.iter().enumerate().skip(covered) {
            if let Some(slot) = positions.get_mut(i) {
                *slot = intersect_values(sx, iy, lost, depth).unwrap_or_else(never);
            }
        }
        out.insert("prefixItems".into(), Value::Array(positions));
    }
    // Positions past `maxItems` can never be filled: a merged tuple longer than that is cut to it, so
    // compilers that refuse (xgrammar) or ignore (outlines) the count beside a longer tuple read it right.
    let max_items = out.at("maxItems").and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok());
    if let (Some(max), Some(Value::Array(tuple))) = (max_items, out.at_mut("prefixItems")) {
        tuple.truncate(max);
    }
}

/// Whether a merged `const` or `enum` can be of the merged type (an `enum` keeps the values that are).
fn literals_typed(out: &mut Map<String, Value>) -> bool {
    // A merged const or enum must also be of the merged type.
    if let Some(t) = Types::of(out) {
        if let Some(c) = out.at("const") {
            if !(t.contains(Types::of_value(c)) || t.contains(Types::INTEGER) && Types::of_value(c) == Types::INTEGER) {
                return false;
            }
        }
        if let Some(Value::Array(e)) = out.at("enum") {
            let kept: Vec<Value> = e.iter().filter(|v| t.contains(Types::of_value(v))).cloned().collect();
            if kept.is_empty() {
                return false;
            }
            out.insert("enum".into(), Value::Array(kept));
        }
    }
    true
}

/// All combinations of one branch from each union, intersected; over `max` combinations only the
/// first union is kept (the second return value says so).
pub fn cross(unions: &[Vec<Value>], max: usize, lost: &mut Vec<(String, Value)>) -> (Vec<Value>, bool) {
    let mut acc: Vec<Map<String, Value>> = vec![Map::new()];
    for (i, u) in unions.iter().enumerate() {
        if acc.len().saturating_mul(u.len()) > max {
            if i == 0 {
                return (u.clone(), true);
            }
            return (acc.into_iter().map(Value::Object).collect(), true);
        }
        let mut next = Vec::new();
        for a in &acc {
            for b in u {
                let Value::Object(bm) = b else { continue };
                if let Merged::Schema(m) = intersect(a, bm, lost) {
                    next.push(m);
                }
            }
        }
        acc = next;
    }
    (acc.into_iter().map(Value::Object).collect(), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn property_constraints_from_both_sides_are_kept() {
        let mut lost = vec![];
        let a = m(json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}));
        let b = m(json!({"properties":{"a":{"maxLength":3},"b":{"type":"integer"}},"required":["b"]}));
        let Merged::Schema(r) = intersect(&a, &b, &mut lost) else { panic!("never") };
        assert_eq!(Value::Object(r), json!({"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"type":"integer"}},"required":["a","b"]}));
        assert!(lost.is_empty());
    }

    #[test]
    fn contradictions_are_never() {
        let mut lost = vec![];
        assert!(matches!(intersect(&m(json!({"type":"string"})), &m(json!({"type":"integer"})), &mut lost), Merged::Never));
        assert!(matches!(intersect(&m(json!({"enum":[1,2]})), &m(json!({"enum":[3]})), &mut lost), Merged::Never));
        assert!(matches!(intersect(&m(json!({"type":"string"})), &m(json!({"const":1})), &mut lost), Merged::Never));
    }

    #[test]
    fn integer_inside_number_and_bounds_tighten() {
        let mut lost = vec![];
        let Merged::Schema(r) = intersect(&m(json!({"type":"number","minimum":1,"maximum":9})), &m(json!({"type":"integer","minimum":3})), &mut lost) else {
            panic!()
        };
        assert_eq!(Value::Object(r), json!({"type":"integer","minimum":3,"maximum":9}));
    }

    #[test]
    fn two_patterns_keep_one_and_report_the_other() {
        let mut lost = vec![];
        let Merged::Schema(r) = intersect(&m(json!({"pattern":"^a"})), &m(json!({"pattern":"b$"})), &mut lost) else { panic!() };
        assert_eq!(r.at("pattern"), Some(&json!("^a")));
        assert_eq!(lost, vec![("pattern".to_string(), json!("b$"))]);
    }

    #[test]
    fn closed_object_forbids_the_others_properties() {
        let mut lost = vec![];
        let a = m(json!({"properties":{"a":{}},"additionalProperties":false}));
        let b = m(json!({"properties":{"b":{}}}));
        let Merged::Schema(r) = intersect(&a, &b, &mut lost) else { panic!() };
        assert_eq!(r["properties"]["b"], never());
    }
}
