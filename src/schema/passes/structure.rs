//! Arrays and objects in the shape the API demands ([`crate::schema::Target::structure`]), where JSON
//! Schema lets a schema leave things out or say things that cannot apply:
//! - `items: {}` written on an array without it (OpenAI: 400 "array schema missing items"; Gemini:
//!   "items: missing field");
//! - `properties: {}` written on an object without it (OpenAI: "object schema missing properties"), or
//!   an empty `properties` removed (Gemini: "properties: should be non-empty for OBJECT type", the
//!   shape of an MCP tool without arguments);
//! - object keywords removed from a node whose `type` excludes objects, array keywords from one whose
//!   `type` excludes arrays (Gemini: "properties: only allowed for OBJECT type").
//!
//! Exact: `items: {}` and `properties: {}` mean what their absence means, and a keyword of one type
//! constrains nothing on a node that cannot hold that type.

use crate::schema::lookup::Lookup;
use crate::schema::target::ObjectProperties;
use crate::schema::types::{keyword_type, Types};
use crate::schema::walk::post_order_cx;
use crate::schema::{Cx, Kind};
use serde_json::{json, Value};

/// Passes that must run before this one in a profile's list: nothing (it reads `type` as given).
pub const AFTER: &[&str] = &[];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let want = cx.target.structure;
    if want == crate::schema::target::Structure::AS_SENT {
        return;
    }
    post_order_cx(root, cx, &mut |node, path, cx| {
        if want.properties == ObjectProperties::BesideRequired {
            declare_required(node, path, cx);
        }
        let Some(t) = Types::of(node) else { return };
        if want.own_type_only {
            let vacuous: Vec<String> = node
                .keys()
                .filter(|k| keyword_type(k).is_some_and(|kt| (kt == Types::OBJECT || kt == Types::ARRAY) && t.inter(kt).is_empty()))
                .cloned()
                .collect();
            for k in vacuous {
                node.remove(&k);
                cx.record(path, Kind::StructureSpelled, format!("{k} removed: it applies only to {}, which type {} excludes", kind_name(&k), t.to_json()));
            }
        }
        if want.items && t.contains(Types::ARRAY) && !node.has("items") && !node.has("prefixItems") {
            node.insert("items".into(), json!({}));
            cx.record(path, Kind::StructureSpelled, "items: {} (any item) written out");
        }
        if !t.contains(Types::OBJECT) {
            return;
        }
        match want.properties {
            ObjectProperties::Written if !node.has("properties") => {
                node.insert("properties".into(), json!({}));
                cx.record(path, Kind::StructureSpelled, "properties: {} written out");
            }
            ObjectProperties::NonEmpty if node.get("properties").and_then(Value::as_object).is_some_and(|p| p.is_empty()) => {
                node.remove("properties");
                cx.record(path, Kind::StructureSpelled, "properties: {} removed (no property declared)");
            }
            _ => {}
        }
    });
}

/// `required` beside missing or empty `properties` (Groq refuses it): an empty `required` removed, and
/// each name it lists declared with the schema `additionalProperties` gives it (`{}` without one), which
/// is what held for it before. Left where `patternProperties` may also hold for a name.
fn declare_required(node: &mut serde_json::Map<String, Value>, path: &str, cx: &mut Cx) {
    let Some(Value::Array(required)) = node.get("required") else { return };
    if node.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) {
        return;
    }
    if required.is_empty() {
        node.remove("required");
        cx.record(path, Kind::StructureSpelled, "required: [] removed (it names nothing)");
        return;
    }
    if node.has("patternProperties") {
        return;
    }
    let each = node.get("additionalProperties").cloned().unwrap_or_else(|| json!({}));
    let declared: serde_json::Map<String, Value> = required.iter().filter_map(Value::as_str).map(|n| (n.to_string(), each.clone())).collect();
    node.insert("properties".into(), Value::Object(declared));
    cx.record(path, Kind::StructureSpelled, "properties written out for the names required lists");
}

fn kind_name(keyword: &str) -> &'static str {
    if keyword_type(keyword) == Some(Types::OBJECT) {
        "objects"
    } else {
        "arrays"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, count};
    use crate::schema::Target;

    fn run_on(v: Value, target: &Target) -> (Value, u64) {
        let (v, r) = apply(run, v, target);
        (v, count(&r, Kind::StructureSpelled))
    }

    const MCP_SHAPES: &str = r#"{"type": "object", "properties": {
        "paths": {"type": "array"},
        "m": {"type": "object"},
        "none": {"type": "object", "properties": {}},
        "q": {"type": "string", "properties": {"x": {}}, "required": ["x"], "items": {}, "maxItems": 2},
        "tuple": {"type": "array", "prefixItems": [{}]}}}"#;

    #[test]
    fn openai_writes_items_and_properties() {
        let (v, n) = run_on(serde_json::from_str(MCP_SHAPES).unwrap_or_default(), &Target::OPENAI);
        assert_eq!(v["properties"]["paths"]["items"], json!({}));
        assert_eq!(v["properties"]["m"]["properties"], json!({}));
        assert_eq!(v["properties"]["none"]["properties"], json!({}), "empty properties stay");
        assert_eq!(v["properties"]["q"]["properties"], json!({"x": {}}), "OpenAI takes keywords of another type");
        assert!(v["properties"]["tuple"].get("items").is_none(), "prefixItems says the items");
        assert_eq!(n, 2);
    }

    #[test]
    fn gemini_writes_items_removes_empty_properties_and_keywords_of_other_types() {
        let (v, n) = run_on(serde_json::from_str(MCP_SHAPES).unwrap_or_default(), &Target::GEMINI);
        assert_eq!(v["properties"]["paths"]["items"], json!({}));
        assert!(v["properties"]["m"].get("properties").is_none(), "no empty properties written: {v}");
        assert_eq!(v["properties"]["none"], json!({"type": "object"}));
        assert_eq!(v["properties"]["q"], json!({"type": "string"}));
        assert_eq!(n, 6);
        // a tool without arguments: the root keeps its type, loses the empty properties
        let (v, _) = run_on(json!({"type": "object", "properties": {}}), &Target::GEMINI);
        assert_eq!(v, json!({"type": "object"}));
    }

    #[test]
    fn groq_declares_what_required_names() {
        let (v, n) = run_on(json!({"type": "object", "properties": {}, "required": [], "properties2": 1}), &Target::GROQ);
        assert_eq!(v, json!({"type": "object", "properties": {}, "properties2": 1}));
        assert_eq!(n, 1);
        let (v, _) = run_on(json!({"type": "object", "required": ["a"], "additionalProperties": {"type": "string"}}), &Target::GROQ);
        assert_eq!(v["properties"], json!({"a": {"type": "string"}}), "{v}");
        let (v, _) = run_on(json!({"required": ["a"]}), &Target::GROQ);
        assert_eq!(v["properties"], json!({"a": {}}));
        // control: declared properties, or patternProperties that may hold for the name, stay as they are
        for s in [json!({"properties": {"a": {}}, "required": ["a"]}), json!({"required": ["a"], "patternProperties": {"^a": {"type": "integer"}}})] {
            assert_eq!(run_on(s.clone(), &Target::GROQ), (s, 0));
        }
    }

    #[test]
    fn a_target_without_demands_changes_nothing() {
        for t in [Target::LLAMA_CPP, Target::ANTHROPIC, Target::GEMINI_JSON, Target::JSON_SCHEMA] {
            let before: Value = serde_json::from_str(MCP_SHAPES).unwrap_or_default();
            let (v, n) = run_on(before.clone(), &t);
            assert_eq!((v, n), (before, 0));
        }
    }
}
