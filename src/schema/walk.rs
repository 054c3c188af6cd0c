//! Which keywords hold schemas, and a traversal that visits only those.
//!
//! Keywords that hold data (`const`, `default`, `enum`, `examples`) are never entered, and the maps
//! (`properties`, `$defs`, ...) are entered as maps: a property *named* `not` or `$ref` is a property.

use serde_json::{Map, Value};

/// Keywords whose value is one schema.
pub const SINGLE: &[&str] = &[
    "additionalProperties", "items", "contains", "propertyNames", "not", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema",
];
/// Keywords whose value is an array of schemas (`items` in its draft-07 array form too).
pub const ARRAY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to schemas.
pub const MAP: &[&str] = &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];
/// Keywords whose value is data, never a schema.
pub const DATA: &[&str] = &["const", "default", "enum", "examples"];
/// Keywords that describe and never constrain.
pub const ANNOTATIONS: &[&str] = &[
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment",
    "$schema", "$id", "$anchor", "$dynamicAnchor", "discriminator", "x-nullable",
];

/// Keywords that constrain a value (2020-12 and the older spellings `dialect` rewrites). Anything else,
/// unknown keywords included, is not a constraint: it is never moved into union branches or merged.
pub const CONSTRAINTS: &[&str] = &[
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "format", "items", "prefixItems", "additionalItems", "contains",
    "maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "properties", "patternProperties",
    "additionalProperties", "propertyNames", "required", "dependentRequired", "dependentSchemas",
    "dependencies", "maxProperties", "minProperties", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "$ref", "$dynamicRef", "$recursiveRef", "unevaluatedItems", "unevaluatedProperties", "nullable",
];

pub fn is_constraint(k: &str) -> bool {
    CONSTRAINTS.contains(&k)
}

pub fn is_annotation(k: &str) -> bool {
    ANNOTATIONS.contains(&k) || k.starts_with("x-")
}

/// The body of [`children_mut`] and [`children`]: the same walk over a node's subschemas, once with
/// `iter_mut` and once with `iter`.
macro_rules! each_child {
    ($node:expr, $f:expr, $iter:ident) => {{
        let mut seg = String::with_capacity(64);
        for (k, v) in $node.$iter() {
            let key = k.as_str();
            if MAP.contains(&key) {
                if let Value::Object(m) = v {
                    for (name, child) in m.$iter() {
                        if key == "dependencies" && !(child.is_object() || child.is_boolean()) {
                            continue; // draft-07 dependencies: arrays of names are not schemas
                        }
                        start_segment(&mut seg, key);
                        seg.push('/');
                        push_escaped(&mut seg, name);
                        $f(&seg, child);
                    }
                }
            } else if ARRAY.contains(&key) && v.is_array() {
                if let Value::Array(a) = v {
                    for (i, child) in a.$iter().enumerate() {
                        start_segment(&mut seg, key);
                        push_index(&mut seg, i);
                        $f(&seg, child);
                    }
                }
            } else if SINGLE.contains(&key) {
                start_segment(&mut seg, key);
                $f(&seg, v);
            }
        }
    }};
}

/// Calls `f(segment_path, child)` for every direct subschema of `node`, in document order.
/// `segment_path` is the JSON-pointer suffix from `node` to the child ("/properties/a").
pub fn children_mut(node: &mut Map<String, Value>, mut f: impl FnMut(&str, &mut Value)) {
    each_child!(node, f, iter_mut)
}

/// Read-only [`children_mut`]: the same subschemas, in the same order.
pub fn children<'a>(node: &'a Map<String, Value>, mut f: impl FnMut(&str, &'a Value)) {
    each_child!(node, f, iter)
}

/// `seg` becomes `/key`, reusing its allocation.
fn start_segment(seg: &mut String, key: &str) {
    seg.clear();
    seg.push('/');
    seg.push_str(key);
}

/// Appends `/i` without a temporary string.
fn push_index(seg: &mut String, i: usize) {
    use std::fmt::Write;
    let _ = write!(seg, "/{i}");
}

/// Appends a JSON-pointer reference token (RFC 6901: `~` is `~0`, `/` is `~1`).
pub fn push_escaped(out: &mut String, token: &str) {
    if !token.bytes().any(|b| b == b'~' || b == b'/') {
        out.push_str(token); // almost every name: no character to escape
        return;
    }
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// Depth at which every traversal stops descending. The bounds pass cuts schemas far shallower
/// (64 by default); this is the backstop that keeps recursion off the end of the stack whatever a
/// later pass builds.
pub const HARD_DEPTH: usize = 512;

/// Post-order traversal: children first, then `f(node, path)`. Only object nodes are passed to `f`;
/// booleans were turned into objects by an earlier pass, and other values are not schemas.
pub fn post_order(root: &mut Value, path: &str, f: &mut dyn FnMut(&mut Map<String, Value>, &str)) {
    traverse(root, path, false, f);
}

/// Pre-order traversal: `f(node, path)` first, then the children of what `f` left behind.
pub fn pre_order(root: &mut Value, path: &str, f: &mut dyn FnMut(&mut Map<String, Value>, &str)) {
    traverse(root, path, true, f);
}

fn traverse(root: &mut Value, path: &str, pre: bool, f: &mut dyn FnMut(&mut Map<String, Value>, &str)) {
    fn go(v: &mut Value, path: &mut String, depth: usize, pre: bool, f: &mut dyn FnMut(&mut Map<String, Value>, &str)) {
        let Value::Object(node) = v else { return };
        if pre {
            f(node, path);
        }
        if depth < HARD_DEPTH {
            let base = path.len();
            children_mut(node, |seg, child| {
                path.push_str(seg);
                go(child, path, depth + 1, pre, f);
                path.truncate(base);
            });
        }
        if !pre {
            f(node, path);
        }
    }
    let mut p = String::with_capacity(path.len() + 128); // one allocation for the deepest path, not one per level
    p.push_str(path);
    go(root, &mut p, 0, pre, f);
}
