//! A tool's parameters end with `type: object` at the root (chat templates and llama.cpp's tool
//! parsers expect one), including tools without parameters. Structured output keeps any root.

use crate::schema::lookup::Lookup;
use crate::schema::types::Types;
use crate::schema::{Context, Cx, Kind};
use serde_json::{json, Value};

/// Passes that must run before this one in a profile's list: nothing: it looks at the root only.
pub const AFTER: &[&str] = &[];

pub fn run(root: &mut Value, cx: &mut Cx) {
    if cx.context != Context::Tool {
        return;
    }
    let Value::Object(node) = root else {
        *root = json!({"type": "object"});
        cx.record("", Kind::SchemaReplaced, "parameters were not a schema object; any object allowed");
        return;
    };
    match Types::of(node) {
        None if node.at("type").and_then(Value::as_str).is_some_and(|t| t.eq_ignore_ascii_case("object")) => {
            // OpenAPI's `"OBJECT"`: the spelling every API reads
            node.insert("type".into(), Value::String("object".into()));
            cx.record("", Kind::ToolRootFixed, "type: object spelled as every API reads it");
        }
        None if node.has("type") => {}
        None => {
            // a root union: every branch must be an object too, or a later run would move the type in
            objectify_branches(node, 0);
            node.insert("type".into(), Value::String("object".into()));
            cx.record("", Kind::ToolRootFixed, "type: object added at the root");
        }
        Some(t) if t == Types::OBJECT => {
            if node.at("type").and_then(Value::as_str) != Some("object") {
                // `"OBJECT"` or `["object"]`: the spelling every API reads
                node.insert("type".into(), Value::String("object".into()));
                cx.record("", Kind::ToolRootFixed, "type: object spelled as every API reads it");
            }
        }
        Some(t) if t.contains(Types::OBJECT) => {
            node.insert("type".into(), Value::String("object".into()));
            cx.record("", Kind::ToolRootFixed, "tool arguments are an object: other root types dropped");
        }
        Some(_) => {
            *root = json!({"type": "object"});
            cx.record("", Kind::SchemaReplaced, "root type cannot hold tool arguments; any object allowed");
        }
    }
}

/// Every branch of a root union (and of unions nested in them) is made an object too, or a later run
/// would move the root's `type: object` into them.
fn objectify_branches(node: &mut serde_json::Map<String, Value>, depth: usize) {
    if depth > 16 {
        return;
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = node.at_mut(key) else { continue };
        for b in branches.iter_mut() {
            let Value::Object(bm) = b else { continue };
            if bm.has("$ref") {
                continue;
            }
            if Types::of(bm).is_none_or(|t| t != Types::OBJECT) {
                let t = Types::of(bm).unwrap_or(Types::ALL).inter(Types::OBJECT);
                bm.insert("type".into(), if t.is_empty() { json!([]) } else { json!("object") });
            }
            objectify_branches(bm, depth + 1);
        }
    }
}
