//! `anyOf`/`oneOf` with keywords beside them. llama.cpp compiles the union alone and drops everything
//! beside it (with only `required` in the branches, the union becomes "any JSON value"), so the
//! siblings are intersected into every branch. `anyOf` and `oneOf` on one node are intersected
//! pairwise. A `oneOf` whose branches may overlap becomes `anyOf` with a lossy record: grammars cannot
//! say "exactly one".

use crate::schema::definitions::{deref, is_recursive_ref, root_defs};
use crate::schema::lookup::Lookup;
use crate::schema::merge::{cross, intersect, is_never, never_map, Merged};
use crate::schema::types::Types;
use crate::schema::walk::{is_constraint, post_order_cx, Path};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Passes that must run before this one in a profile's list: branches that are refs are read through plain root definitions.
pub const AFTER: &[&str] = &["refs"];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["anyOf", "oneOf"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let defs = root_defs(root);
    let max_branches = cx.opts.limits.max_branches;
    let one_of_as_any_of = cx.target.one_of_as_any_of;
    post_order_cx(root, cx, &mut |node, path, cx| {
        if !node.has("anyOf") && !node.has("oneOf") {
            return;
        }
        let Some(found) = Found::read(node, &defs, one_of_as_any_of) else { return };
        let mut lost = Vec::new();
        let never_dropped = found.distribute(node, &defs, max_branches, &mut lost);
        found.report(node, path, never_dropped, &lost, cx);
    });
}

/// The types of a union branch as [`deref`] would give them, without copying it: the branch's own
/// `type`, else (a `$ref` into the definitions) its target's.
fn branch_types(b: &Value, defs: &Value) -> Option<Types> {
    let o = b.as_object()?;
    if let Some(t) = o.at("type") {
        return Types::of_value_type(t);
    }
    let target = o.at("$ref")?.as_str()?.strip_prefix('#').and_then(|p| defs.pointer(p))?;
    target.as_object().and_then(Types::of)
}

/// A node's unions and the constraints beside them, as read before the node changes.
struct Found {
    unions: Vec<Vec<Value>>,
    siblings: Map<String, Value>,
    /// A `oneOf` whose branches may overlap: written as `anyOf`, exactly-one is lost.
    overlapping_one_of: bool,
    /// The target reads `oneOf` as `anyOf`, so a disjoint one is spelled that way (exact).
    one_of_rewritten: bool,
}

impl Found {
    /// The node's unions (a non-array one is removed), or `None` where the backend compiles the node
    /// as it means: one union with nothing beside it (or only a `type` every branch has).
    fn read(node: &mut Map<String, Value>, defs: &Value, one_of_as_any_of: bool) -> Option<Found> {
        let one_of_rewritten = one_of_as_any_of && node.has("oneOf");
        for key in ["anyOf", "oneOf"] {
            if node.at(key).is_some_and(|u| !u.is_array()) {
                node.remove(key);
            }
        }
        // read in place; copied only when the node will change (most unions are left as they are)
        let unions: Vec<&Vec<Value>> = ["anyOf", "oneOf"].iter().filter_map(|k| node.at(k).and_then(Value::as_array)).collect();
        let overlapping_one_of = node.at("oneOf").and_then(Value::as_array).is_some_and(|u| may_overlap(u, defs));
        let siblings: Vec<(&String, &Value)> = node.iter().filter(|(k, _)| !matches!(k.as_str(), "anyOf" | "oneOf") && is_constraint(k)).collect();
        // a `type` beside the union that every branch already has constrains nothing more
        let implied = match siblings.as_slice() {
            [(k, t)] if k.as_str() == "type" => Types::of_value_type(t).is_some_and(|t| {
                unions.len() == 1
                    && unions.iter().copied().flatten().all(|b| {
                        // a recursive ref is left as it is: expanding it once more each run never ends
                        is_recursive_ref(b, defs) || branch_types(b, defs).is_some_and(|bt| t.contains(bt))
                    })
            }),
            _ => false,
        };
        if unions.len() == 1 && (siblings.is_empty() || implied) && !overlapping_one_of && !one_of_rewritten {
            return None;
        }
        let siblings = siblings.into_iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let unions = unions.into_iter().cloned().collect();
        Some(Found { unions, siblings, overlapping_one_of, one_of_rewritten })
    }

    /// Writes the node as one `anyOf` (several unions crossed) with the siblings moved into each
    /// branch; returns how many branches contradicted the siblings and were dropped.
    fn distribute(&self, node: &mut Map<String, Value>, defs: &Value, max_branches: usize, lost: &mut Vec<(String, Value)>) -> usize {
        let (mut branches, dropped) = match self.unions.as_slice() {
            [] => (Vec::new(), false),
            [one] => (one.clone(), false),
            many => cross(many, max_branches, lost),
        };
        if dropped {
            lost.push(("oneOf".into(), Value::String(format!("intersection over {max_branches} branches"))));
        }
        let mut never_dropped = 0;
        if !self.siblings.is_empty() {
            let mut out = Vec::with_capacity(branches.len());
            for b in branches {
                let b = deref(b, defs);
                let Value::Object(bm) = b else { continue };
                match intersect(&self.siblings, &bm, lost) {
                    Merged::Schema(m) => out.push(Value::Object(m)),
                    Merged::Never => never_dropped += 1,
                }
            }
            // a branch that is itself a union beside keywords (the siblings just moved in) is flattened
            // into this union: otherwise it is the very shape this pass removes, one level down
            branches = flatten(out, max_branches, lost);
            for k in self.siblings.keys() {
                node.remove(k);
            }
        }
        node.remove("oneOf");
        node.remove("anyOf");
        if branches.is_empty() {
            *node = never_map();
        } else {
            node.insert("anyOf".into(), Value::Array(branches));
        }
        never_dropped
    }

    fn report(&self, node: &mut Map<String, Value>, path: &Path, never_dropped: usize, lost: &[(String, Value)], cx: &mut Cx) {
        if !self.siblings.is_empty() || self.unions.len() > 1 {
            cx.record(path, Kind::AnyofDistributed, format!("{} keyword(s) beside the union moved into its branches", self.siblings.len()));
        }
        if never_dropped > 0 {
            cx.record(path, Kind::NeverDropped, format!("{never_dropped} branch(es) contradict the keywords beside the union"));
        }
        if self.one_of_rewritten && !self.overlapping_one_of {
            cx.record(path, Kind::OneofDisjoint, "oneOf branches cannot overlap: written as anyOf");
        }
        if self.overlapping_one_of {
            cx.lost(node, path, Kind::OneofAsAnyof, "exactly one of the alternatives", "oneOf branches may overlap; exactly-one is not enforced");
        }
        if !lost.is_empty() {
            let text: Vec<String> = lost.iter().map(|(k, v)| format!("{k}: {}", crate::schema::compact(v, 120))).collect();
            cx.record(path, Kind::KeywordRemoved, format!("could not combine {}", text.join("; ")));
        }
    }
}

/// Replaces each branch that holds `anyOf`/`oneOf` beside constraints by the intersections of those
/// constraints with the inner branches (a union of unions is one union). Over `max` branches, or where
/// the inner unions cannot be combined, a branch is kept as it is.
fn flatten(branches: Vec<Value>, max: usize, lost: &mut Vec<(String, Value)>) -> Vec<Value> {
    let mut out = Vec::with_capacity(branches.len());
    for b in branches {
        let Value::Object(m) = &b else {
            out.push(b);
            continue;
        };
        let inner: Vec<Vec<Value>> = ["anyOf", "oneOf"].iter().filter_map(|k| m.at(k).and_then(Value::as_array).cloned()).collect();
        // definitions stay where they are (refs point at the root's), they are not constraints to copy
        let rest: Map<String, Value> =
            m.iter().filter(|(k, _)| !matches!(k.as_str(), "anyOf" | "oneOf" | "$defs" | "definitions")).map(|(k, v)| (k.clone(), v.clone())).collect();
        if inner.is_empty() || !rest.keys().any(|k| is_constraint(k)) {
            out.push(b);
            continue;
        }
        let (combos, dropped) = cross(&inner, max, lost);
        if dropped || out.len() + combos.len() > max {
            out.push(b);
            continue;
        }
        for c in combos {
            if let Value::Object(cm) = c {
                if let Merged::Schema(x) = intersect(&rest, &cm, lost) {
                    out.push(Value::Object(x));
                }
            }
        }
    }
    out
}

/// Whether two branches of a `oneOf` could both match one value. Conservative: true unless their types
/// are disjoint, or a property both require has disjoint `const`/`enum` values.
fn may_overlap(branches: &[Value], defs: &Value) -> bool {
    // a branch without a `$ref` is read where it is; only a referenced one is resolved into a copy
    let bs: Vec<Cow<'_, Map<String, Value>>> = branches
        .iter()
        .filter_map(|b| match b {
            Value::Object(m) if !m.has("$ref") => Some(Cow::Borrowed(m)),
            _ => match deref(b.clone(), defs) {
                Value::Object(m) => Some(Cow::Owned(m)),
                _ => None,
            },
        })
        .filter(|m| !is_never(m))
        .collect();
    for (i, a) in bs.iter().enumerate() {
        for b in bs.iter().skip(i + 1) {
            if !disjoint(a, b) {
                return true;
            }
        }
    }
    false
}

/// The values a schema lists (`const`, else `enum`), where they are.
fn values_of(s: &Map<String, Value>) -> Option<&[Value]> {
    if let Some(c) = s.at("const") {
        return Some(std::slice::from_ref(c));
    }
    s.at("enum").and_then(Value::as_array).map(Vec::as_slice)
}

fn disjoint(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    if let (Some(ta), Some(tb)) = (Types::of(a), Types::of(b)) {
        if ta.inter(tb).is_empty() {
            return true;
        }
    }
    if let (Some(va), Some(vb)) = (values_of(a), values_of(b)) {
        return !va.iter().any(|v| vb.contains(v));
    }
    fn req(m: &Map<String, Value>) -> &[Value] {
        m.at("required").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }
    let (ra, rb) = (req(a), req(b));
    let (Some(pa), Some(pb)) = (a.at("properties").and_then(Value::as_object), b.at("properties").and_then(Value::as_object)) else {
        return false;
    };
    for (name, sa) in pa {
        let n = Value::String(name.clone());
        if !ra.contains(&n) || !rb.contains(&n) {
            continue;
        }
        if let (Some(sb), Some(va)) = (pb.get(name), sa.as_object().and_then(values_of)) {
            if let Some(vb) = sb.as_object().and_then(values_of) {
                if !va.iter().any(|v| vb.contains(v)) {
                    return true;
                }
            }
        }
    }
    false
}
