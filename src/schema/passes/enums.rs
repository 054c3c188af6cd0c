//! `enum` and `const`. Values of a type the node does not allow are dropped (they never validated);
//! `const` beside `enum` wins in llama.cpp, so the two are intersected. Strings with `"`, `\` or control
//! characters are escaped wrongly by llama.cpp before 2026 and fail its grammar parser: such a value is
//! written as an anchored pattern over its JSON spelling, which every version compiles exactly.

use super::primary_type;
use crate::schema::lookup::Lookup;
use crate::schema::merge::never_map;
use crate::schema::types::Types;
use crate::schema::walk::{is_constraint, post_order_cx};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

fn needs_pattern(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.chars().any(|c| c == '"' || c == '\\' || (c as u32) < 0x20))
}

/// `^...$` matching exactly the JSON text of the string (without its quotes).
pub fn literal_pattern(s: &str) -> String {
    let json = Value::String(s.to_string()).to_string();
    let inner = json.get(1..json.len().saturating_sub(1)).unwrap_or("");
    let mut out = String::from("^");
    for c in inner.chars() {
        if "^$.[]()|{}*+?\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('$');
    out
}

fn string_branch(s: &str) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("string".into()));
    m.insert("pattern".into(), Value::String(literal_pattern(s)));
    Value::Object(m)
}

/// Passes that must run before this one in a profile's list: nothing: values are read as written.
pub const AFTER: &[&str] = &[];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["enum", "const"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    post_order_cx(root, cx, &mut |node, path, cx| {
        if let (Some(c), Some(Value::Array(e))) = (node.at("const").cloned(), node.at("enum").cloned()) {
            node.remove("enum");
            if !e.contains(&c) {
                *node = never_map();
                cx.record(path, Kind::NeverDropped, "const is not among the enum values");
                return;
            }
            cx.record(path, Kind::KeywordNormalized, "enum beside const removed");
        }
        let t = primary_type(node).map(|t| t.union(Types::of(node).unwrap_or(Types::NONE).inter(Types::NULL)));
        if let (Some(t), Some(Value::Array(e))) = (t, node.at("enum")) {
            let fits = |v: &Value| {
                let vt = Types::of_value(v);
                t.contains(vt) || (vt == Types::INTEGER && t.contains(Types::FRACTION))
            };
            if e.iter().any(|v| !fits(v)) {
                let kept: Vec<Value> = e.iter().filter(|v| fits(v)).cloned().collect();
                let n = e.len() - kept.len();
                node.insert("enum".into(), Value::Array(kept));
                cx.record(path, Kind::KeywordNormalized, format!("{n} enum value(s) of another type dropped"));
            }
        }
        if let (Some(t), Some(c)) = (t, node.at("const")) {
            if !(t.contains(Types::of_value(c)) || Types::of_value(c) == Types::INTEGER && t.contains(Types::FRACTION)) {
                *node = never_map();
                cx.record(path, Kind::NeverDropped, "const is not of the node's type");
                return;
            }
        }
        if node.at("const").is_some_and(needs_pattern) {
            let s = node.remove("const").and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            node.remove("type");
            if let Value::Object(b) = string_branch(&s) {
                for (k, v) in b {
                    node.insert(k, v);
                }
            }
            cx.record(path, Kind::EnumRewritten, "const string with escapes written as a pattern");
        }
        if let Some(Value::Array(e)) = node.at("enum") {
            if e.iter().any(needs_pattern) {
                let plain: Vec<Value> = e.iter().filter(|v| !needs_pattern(v)).cloned().collect();
                let mut branches: Vec<Value> = Vec::new();
                if !plain.is_empty() {
                    let mut m = Map::new();
                    m.insert("enum".into(), Value::Array(plain));
                    branches.push(Value::Object(m));
                }
                for v in e.iter().filter(|v| needs_pattern(v)) {
                    branches.push(string_branch(v.as_str().unwrap_or("")));
                }
                node.remove("enum");
                node.remove("type");
                // keywords beside the new union go into its branches, as `unions` would put them
                let siblings: Vec<String> = node.keys().filter(|k| is_constraint(k) && k.as_str() != "pattern").cloned().collect();
                for k in siblings {
                    if let Some(v) = node.remove(&k) {
                        for b in branches.iter_mut().filter_map(Value::as_object_mut) {
                            b.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
                node.insert("anyOf".into(), Value::Array(branches));
                cx.record(path, Kind::EnumRewritten, "enum strings with escapes written as patterns");
            }
        }
    });
}
