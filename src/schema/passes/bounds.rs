//! Bounds the work a schema can cause before any other pass looks at it (MCP SEP-2106 semantics):
//! nesting depth (every container counts, except the map objects of `properties`, `$defs`, ...) and the
//! number of object nodes outside data keywords. What lies past a bound becomes "any value" (as the
//! target spells it): no node deeper than `max_depth` has subschemas (a leaf one level below, such as
//! what a cut leaves, is within the bound), and no node at it has subschemas in an array keyword.
//! Runs first, so every pass works within the bounds, and last, because inlined refs and type splits
//! nest deeper.
//!
//! A backend that limits how deep a schema document's JSON nests ([`crate::schema::Target::nesting`],
//! data and keyword containers included) gets the same cut where a node would reach past that limit.

use crate::schema::target::Place;
use crate::schema::walk::{children_mut, Path, Slot, MAP};
use crate::schema::{Context, Cx, Kind};
use serde_json::{Map, Value};

/// Passes that must run before this one in a profile's list: nothing: it bounds the input every other pass walks.
pub const AFTER: &[&str] = &[];

/// Whether the pass may change a schema at `node` ([`super::Pass::acts`]): a node at the depth bound
/// or past it, past the node bound, or any node where the target bounds the document's nesting too.
pub fn acts(_: &Map<String, Value>, probe: &super::Probe, place: &crate::schema::walk::Place) -> bool {
    let limits = &probe.opts.limits;
    probe.target.nesting.is_some() || place.levels >= limits.max_depth || place.count > limits.max_nodes
}

pub fn run(root: &mut Value, cx: &mut Cx) {
    let max_nodes = cx.opts.limits.max_nodes;
    if over(root, max_nodes) {
        // Too many nodes to rewrite within bounded time and memory: the schema as a whole is replaced
        // (cutting off only the excess would still leave, say, a million properties to walk and emit).
        let what = if cx.context == Context::Tool { "any object" } else { "any value" };
        *root = Value::Object(cx.target.any(cx.context, Place::Root));
        cx.record("", Kind::BoundsExceeded, format!("more than {max_nodes} schema nodes: schema replaced by {what}"));
        return;
    }
    let mut nodes = 0usize;
    visit(root, 0, &mut nodes, &Path::root(""), cx);
    if let Some(n) = cx.target.nesting {
        let levels = n.levels(cx.context);
        // what a cut leaves must fit itself: typed "any value" holds an array one level down
        let any_height = height(&Value::Object(cx.target.any(cx.context, Place::Inside)));
        fit_levels(root, 0, levels, any_height, &Path::root(""), cx);
    }
}

/// How many levels of containers `v` holds, itself included (0 for a scalar).
fn height(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(height).max().unwrap_or(0),
        Value::Array(a) => 1 + a.iter().map(height).max().unwrap_or(0),
        _ => 0,
    }
}

/// Levels a schema node takes below its own, not counting its subschemas' own objects: a data
/// member's containers, and the map or array a keyword holds its subschemas in.
fn own_height(m: &Map<String, Value>) -> usize {
    use crate::schema::walk::{ARRAY, SINGLE};
    let beside = |vals: &mut dyn Iterator<Item = &Value>| 1 + vals.filter(|c| !c.is_object()).map(height).max().unwrap_or(0);
    let member = |(k, v): (&String, &Value)| match v {
        Value::Object(o) if MAP.contains(&k.as_str()) => beside(&mut o.values()),
        Value::Array(a) if ARRAY.contains(&k.as_str()) => beside(&mut a.iter()),
        Value::Object(_) if SINGLE.contains(&k.as_str()) => 0,
        v => height(v),
    };
    1 + m.iter().map(member).max().unwrap_or(0)
}

/// Cuts every node that would reach past `levels` (the node at `level`), or whose subschemas could
/// not fit even as "any value" (two levels down: a map or array, then the subschema).
fn fit_levels(v: &mut Value, level: usize, levels: usize, any_height: usize, path: &Path, cx: &mut Cx) {
    let Value::Object(node) = v else { return };
    let fits = level + own_height(node) <= levels + 1 && (!has_subschemas(node) || level + 2 + any_height <= levels + 1);
    if !fits {
        cx.record(path, Kind::BoundsExceeded, format!("JSON nested deeper than {levels} levels: subtree replaced by any value"));
        *v = Value::Object(cx.target.any(cx.context, if level == 0 { Place::Root } else { Place::Inside }));
        return;
    }
    children_mut(node, |seg, child| {
        let step = if seg.slot() == Slot::Single { 1 } else { 2 };
        fit_levels(child, level + step, levels, any_height, &path.child(seg), cx);
    });
}

/// Whether the schema has more than `max` object nodes outside data keywords; stops counting there,
/// and looks no deeper than the walker's hard depth.
fn over(root: &Value, max: usize) -> bool {
    let mut n = 0usize;
    let mut stack: Vec<(&Value, usize)> = vec![(root, 0)];
    while let Some((v, depth)) = stack.pop() {
        let Value::Object(m) = v else { continue };
        n += 1;
        if n > max {
            return true;
        }
        if depth < crate::schema::walk::HARD_DEPTH {
            for (k, c) in m {
                push_children(k, c, depth, &mut stack);
            }
        }
    }
    false
}

/// Whether a node holds subschemas in an array keyword (`anyOf`, `prefixItems`, ...).
fn has_array_subschemas(m: &Map<String, Value>) -> bool {
    use crate::schema::walk::ARRAY;
    m.iter().any(|(k, v)| ARRAY.contains(&k.as_str()) && v.as_array().is_some_and(|a| !a.is_empty()))
}

/// Whether a node holds any subschema.
fn has_subschemas(m: &Map<String, Value>) -> bool {
    let mut found = false;
    crate::schema::walk::children(m, |_, _| found = true);
    found
}

fn push_children<'a>(k: &str, c: &'a Value, depth: usize, stack: &mut Vec<(&'a Value, usize)>) {
    use crate::schema::walk::{ARRAY, SINGLE};
    if MAP.contains(&k) {
        if let Value::Object(m) = c {
            stack.extend(m.values().map(|x| (x, depth + 1)));
        }
    } else if ARRAY.contains(&k) && c.is_array() {
        if let Value::Array(a) = c {
            stack.extend(a.iter().map(|x| (x, depth + 1)));
        }
    } else if SINGLE.contains(&k) {
        stack.push((c, depth + 1));
    }
}

fn visit(v: &mut Value, depth: usize, nodes: &mut usize, path: &Path, cx: &mut Cx) {
    let max_depth = cx.opts.limits.max_depth;
    let max_nodes = cx.opts.limits.max_nodes;
    if !v.is_object() {
        return;
    }
    *nodes += 1;
    // a leaf one level past the bound stays: the `{}` a cut leaves there (typed by a later pass, or
    // not) must not be cut again in the next round
    if depth == max_depth + 1 && *nodes <= max_nodes && v.as_object().is_some_and(|m| !has_subschemas(m)) {
        return;
    }
    // at the bound itself, subschemas in an array keyword (`anyOf`) would sit two levels below it
    let arrays_past = depth == max_depth && v.as_object().is_some_and(has_array_subschemas);
    if depth > max_depth || *nodes > max_nodes || arrays_past {
        let why = if depth > max_depth { format!("nesting deeper than {max_depth}") } else { format!("more than {max_nodes} schema nodes") };
        cx.record(path, Kind::BoundsExceeded, format!("{why}: subtree replaced by any value"));
        *v = Value::Object(cx.target.any(cx.context, Place::Inside));
        return;
    }
    let Value::Object(node) = v else { return };
    children_mut(node, |seg, child| {
        // a map keyword's own object is skipped (properties/a is one level below its schema); an array
        // keyword's array is a level of its own
        let step = if seg.slot() == Slot::Array { 2 } else { 1 };
        visit(child, depth + step, nodes, &path.child(seg), cx);
    });
}
