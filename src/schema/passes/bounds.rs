//! Bounds the work a schema can cause before any other pass looks at it (MCP SEP-2106 semantics):
//! nesting depth (every container counts, except the map objects of `properties`, `$defs`, ...) and the
//! number of object nodes outside data keywords. What lies past a bound becomes "any value".

use crate::schema::walk::{children_mut, MAP};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

pub fn run(root: &mut Value, cx: &mut Cx) {
    let mut nodes = 0usize;
    let mut path = String::new();
    visit(root, 0, &mut nodes, &mut path, cx);
}

fn visit(v: &mut Value, depth: usize, nodes: &mut usize, path: &mut String, cx: &mut Cx) {
    let max_depth = cx.opts.limits.max_depth;
    let max_nodes = cx.opts.limits.max_nodes;
    if !v.is_object() {
        return;
    }
    *nodes += 1;
    if depth > max_depth || *nodes > max_nodes {
        let why = if depth > max_depth { format!("nesting deeper than {max_depth}") } else { format!("more than {max_nodes} schema nodes") };
        cx.record(path, Kind::BoundsExceeded, format!("{why}: subtree replaced by any value"));
        *v = Value::Object(Map::new());
        return;
    }
    let Value::Object(node) = v else { return };
    let base = path.len();
    children_mut(node, |seg, child| {
        // a map keyword's own object is skipped: properties/a is one level below its schema
        let top = seg.split('/').nth(1).unwrap_or("");
        let step = if MAP.contains(&top) { 1 } else if seg.matches('/').count() == 2 && !MAP.contains(&top) { 2 } else { 1 };
        path.push_str(seg);
        visit(child, depth + step, nodes, path, cx);
        path.truncate(base);
    });
}
