//! A tool's parameters in the fixed fields a server reads them into ([`crate::schema::Target::tool_fields`]).
//!
//! Ollama parses tools into typed structs and drops every other keyword without a word: a property
//! keeps `type`, `items`, `description` and `enum`, the root `type`, `$defs`, `items`, `required` and
//! `properties`. Nothing of a tool is enforced there (tools are text in the prompt), so what matters is
//! what the model reads: every keyword the struct would drop is written into the property's
//! `description` instead (a nested object's `properties` and `required` included), and what has an exact
//! spelling in the kept fields gets it (`const` as a one-value `enum`, a union of bare types as a `type`
//! list). `items` is kept whole: the struct holds it as raw JSON.

use crate::schema::lookup::Lookup;
use crate::schema::walk::{is_constraint, push_escaped, ARRAY, MAP, SINGLE};
use crate::schema::{note, removed_text, Context, Cx, Kind, Removed, ToolFields};
use serde_json::{Map, Value};

/// Longest text one moved keyword adds to a description (a nested object's whole `properties`).
const MAX_MOVED: usize = 2_000;

/// Passes that must run before this one in a profile's list: refs are inlined where they can be and the root is an object.
pub const AFTER: &[&str] = &["refs", "tool_root"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let Some(fields) = cx.target.tool_fields else { return };
    if cx.context != Context::Tool {
        return;
    }
    let Value::Object(node) = root else { return };
    let (lossy, other) = take_others(node, fields.root, cx.opts.keep_keywords);
    // the root has no description field: what it loses is recorded only
    record(cx, "", &lossy, &other, None);
    let Some(Value::Object(props)) = node.at_mut("properties") else { return };
    let mut path = String::from("/properties/");
    let base = path.len();
    for (name, p) in props.iter_mut() {
        path.truncate(base);
        push_escaped(&mut path, name);
        property(p, &path, fields, cx);
    }
}

fn property(v: &mut Value, path: &str, fields: ToolFields, cx: &mut Cx) {
    let Value::Object(node) = v else { return };
    let keeps = |k: &str| fields.property.contains(&k);
    if let Some(c) = keeps("enum").then(|| node.remove("const")).flatten() {
        let kept = match node.remove("enum") {
            Some(Value::Array(e)) => e.into_iter().filter(|x| x == &c).collect(),
            _ => vec![c],
        };
        node.insert("enum".into(), Value::Array(kept));
        cx.record(path, Kind::KeywordNormalized, "const written as a one-value enum");
    }
    if keeps("type") && !node.has("type") {
        if let Some(types) = bare_type_union(node) {
            node.remove("anyOf");
            node.insert("type".into(), Value::Array(types));
            cx.record(path, Kind::KeywordNormalized, "anyOf of bare types written as a type list");
        }
    }
    let (lossy, other) = take_others(node, fields.property, cx.opts.keep_keywords);
    record(cx, path, &lossy, &other, keeps("description").then_some(node));
}

/// The types of an `anyOf` whose branches are only `{"type": ...}`.
fn bare_type_union(node: &Map<String, Value>) -> Option<Vec<Value>> {
    let Some(Value::Array(branches)) = node.at("anyOf") else { return None };
    let mut out: Vec<Value> = Vec::new();
    for b in branches {
        let m = b.as_object().filter(|m| m.len() == 1)?;
        match m.get("type")? {
            t @ Value::String(_) => out.push(t.clone()),
            Value::Array(ts) => out.extend(ts.iter().cloned()),
            _ => return None,
        }
    }
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// Takes out every member not in `keep` (and a kept one of the wrong JSON type): (constraints, the
/// rest), each with its value.
/// Takes out what the struct would drop: every key but `keep` (and `kept`, the keywords the client
/// reads: the MCP leg's `x-mcp-header`), and a kept key of the wrong JSON type.
fn take_others(node: &mut Map<String, Value>, keep: &[&str], kept: &[&str]) -> (Removed, Removed) {
    let wrong = |k: &str, v: &Value| match k {
        "description" => !v.is_string(),
        "enum" | "required" => !v.is_array(),
        "type" => !(v.is_string() || v.as_array().is_some_and(|a| a.iter().all(Value::is_string))),
        "properties" | "$defs" => !v.is_object(),
        _ => false,
    };
    let names: Vec<String> =
        node.iter().filter(|(k, v)| !kept.contains(&k.as_str()) && (!keep.contains(&k.as_str()) || wrong(k, v))).map(|(k, _)| k.clone()).collect();
    let (mut lossy, mut other) = (Vec::new(), Vec::new());
    for k in names {
        let Some(v) = node.remove(&k) else { continue };
        let schemas = MAP.contains(&k.as_str()) || ARRAY.contains(&k.as_str()) || SINGLE.contains(&k.as_str());
        if is_constraint(&k) || schemas || k == "$ref" {
            lossy.push((k, v));
        } else {
            other.push((k, v));
        }
    }
    (lossy, other)
}

/// Records what left a node and, where it has a description field, writes it there.
fn record(cx: &mut Cx, path: &str, lossy: &Removed, other: &Removed, describe: Option<&mut Map<String, Value>>) {
    let text = |r: &Removed| removed_text(r, MAX_MOVED);
    let where_ = if describe.is_some() { "written into the description" } else { "dropped (no description field at the root)" };
    if !lossy.is_empty() {
        cx.record(path, Kind::KeywordRemoved, format!("{}: {where_}", text(lossy)));
    }
    if !other.is_empty() {
        cx.record(path, Kind::KeywordNormalized, format!("{}: {where_}", text(other)));
    }
    let Some(node) = describe else { return };
    if !cx.opts.promote_to_description {
        return;
    }
    // annotations the model reads first (a title), then the constraints
    let mut parts: Vec<String> = Vec::new();
    if !other.is_empty() {
        parts.push(format!("({}.)", text(other)));
    }
    if !lossy.is_empty() {
        parts.push(format!("(Also required, not enforced: {}.)", text(lossy)));
    }
    if !parts.is_empty() {
        note(node, &parts.join(" "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, apply_with, count};
    use crate::schema::{Options, Target};
    use serde_json::json;

    fn tool() -> Value {
        json!({"type": "object", "title": "T", "additionalProperties": false, "required": ["mode"], "properties": {
            "mode": {"const": "fast", "title": "Mode"},
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "minimum": 1},
            "opts": {"type": "object", "properties": {"a": {"type": "string"}}, "description": "options"}}})
    }

    #[test]
    fn ollama_keeps_its_fields_and_writes_the_rest_into_descriptions() {
        let (v, r) = apply(run, tool(), &Target::OLLAMA);
        let mut root: Vec<&String> = v.as_object().map(|m| m.keys().collect()).unwrap_or_default();
        root.sort();
        assert_eq!(root, ["properties", "required", "type"], "root keeps only its fields");
        assert_eq!(v["properties"]["mode"], json!({"enum": ["fast"], "description": "(title: \"Mode\".)"}));
        assert_eq!(v["properties"]["n"]["type"], json!(["integer", "null"]), "a union of bare types as a type list");
        assert_eq!(v["properties"]["n"]["description"], json!("(Also required, not enforced: minimum: 1.)"));
        let opts = v["properties"]["opts"]["description"].as_str().unwrap_or_default();
        assert!(opts.starts_with("options (Also required, not enforced: properties: {\"a\":"), "{opts}");
        assert!(v["properties"]["opts"].get("properties").is_none());
        // root: additionalProperties lossy, title not; the properties: n's minimum, opts' properties
        assert_eq!(count(&r, Kind::KeywordRemoved), 3);
        assert_eq!(count(&r, Kind::KeywordNormalized), 4);
    }

    #[test]
    fn with_promotion_off_the_loss_is_recorded_only() {
        let opts = Options { promote_to_description: false, ..Options::default() };
        let (v, r) = apply_with(run, tool(), &Target::OLLAMA, Context::Tool, &opts);
        assert!(v["properties"]["n"].get("description").is_none());
        assert_eq!(count(&r, Kind::KeywordRemoved), 3);
    }

    #[test]
    fn only_a_tool_on_a_target_with_fixed_fields_is_rewritten() {
        let (v, _) = apply(run, tool(), &Target::LLAMA_CPP);
        assert_eq!(v, tool());
        let (v, _) = apply_with(run, tool(), &Target::OLLAMA, Context::Output, &Options::default());
        assert_eq!(v, tool());
    }
}
