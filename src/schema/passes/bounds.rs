//! Bounds the work a schema can cause before any other pass looks at it (MCP SEP-2106 semantics):
//! nesting depth (every container counts, except the map objects of `properties`, `$defs`, ...) and the
//! number of object nodes outside data keywords. What lies past a bound becomes "any value" (as the
//! target spells it): no node deeper than `max_depth` has subschemas (a leaf one level below, such as
//! what a cut leaves, is within the bound), and no node at it has subschemas in an array keyword.
//! Runs first, so every pass works within the bounds, and last, because inlined refs and type splits
//! nest deeper.

use crate::schema::walk::{children_at, Slot, MAP};
use crate::schema::{Context, Cx, Kind};
use serde_json::{Map, Value};

pub fn run(root: &mut Value, cx: &mut Cx) {
    let max_nodes = cx.opts.limits.max_nodes;
    if over(root, max_nodes) {
        // Too many nodes to rewrite within bounded time and memory: the schema as a whole is replaced
        // (cutting off only the excess would still leave, say, a million properties to walk and emit).
        let what = if cx.context == Context::Tool { "any object" } else { "any value" };
        *root = Value::Object(cx.target.any(cx.context, true));
        cx.record("", Kind::BoundsExceeded, format!("more than {max_nodes} schema nodes: schema replaced by {what}"));
        return;
    }
    let mut nodes = 0usize;
    let mut path = String::new();
    visit(root, 0, &mut nodes, &mut path, cx);
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

fn visit(v: &mut Value, depth: usize, nodes: &mut usize, path: &mut String, cx: &mut Cx) {
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
        *v = Value::Object(cx.target.any(cx.context, false));
        return;
    }
    let Value::Object(node) = v else { return };
    children_at(node, path, |path, slot, child| {
        // a map keyword's own object is skipped (properties/a is one level below its schema); an array
        // keyword's array is a level of its own
        let step = if slot == Slot::Array { 2 } else { 1 };
        visit(child, depth + step, nodes, path, cx);
    });
}
