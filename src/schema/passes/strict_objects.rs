//! Strict modes ([`crate::schema::Target::strict`]) compile the whole schema, so every object must be
//! closed (`additionalProperties: false`) and, where the mode says so, list every property in
//! `required` (an optional one then accepts `null`, which the model sends for "absent").
//!
//! Some schemas cannot be made strict without changing what a caller can send: an object that is a
//! map (closing it would allow only `{}`), a value of any type, a tuple, recursion where the mode
//! refuses it, a limit passed. For those one `strict_declined` record names the reason and the place,
//! nothing else is changed, and the caller sends the schema non-strict (see `api`): a non-strict tool
//! loses the enforcement, never the meaning.

use crate::schema::definitions::{is_recursive_ref, root_defs};
use crate::schema::lookup::Lookup;
use crate::schema::merge::is_never;
use crate::schema::types::Types;
use crate::schema::walk::{children, post_order_cx, Path, Seg, HARD_DEPTH};
use crate::schema::{compact, removed_text, Context, Cx, Kind, Strict, Target};
use serde_json::{json, Map, Value};

/// Passes that must run before this one in a profile's list: refs in their final form, unions with
/// nothing beside them, every value typed.
pub const AFTER: &[&str] = &["refs", "unions", "explicit_types"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let Some(strict) = cx.target.strict else { return };
    if let Some((path, why)) = blocker(root, &strict, cx.target, cx.context) {
        cx.record(&path, Kind::StrictDeclined, why);
        return;
    }
    post_order_cx(root, cx, &mut |node, path, cx| {
        if let Some(max) = strict.max_min_items {
            if node.at("minItems").and_then(Value::as_u64).is_some_and(|n| n > max) {
                if let Some(v) = node.remove("minItems") {
                    let text = removed_text(&[("minItems".to_string(), v)], 120);
                    cx.lost(node, path, Kind::KeywordRemoved, &text, format!("removed {text} (strict mode compiles minItems up to {max})"));
                }
            }
        }
        close(node, path, &strict, cx);
        if strict.single_types {
            single_types(node, path, cx);
        }
    });
}

/// Closes an object (and requires every property where the mode says so).
fn close(node: &mut Map<String, Value>, path: &Path, strict: &Strict, cx: &mut Cx) {
    if !objecty(node) || is_never(node) {
        return;
    }
    if node.at("additionalProperties") != Some(&Value::Bool(false)) {
        node.insert("additionalProperties".into(), Value::Bool(false));
        cx.record(path, Kind::ObjectClosed, "additionalProperties: false");
    }
    if !node.has("properties") {
        node.insert("properties".into(), json!({}));
    }
    if !strict.all_required {
        return;
    }
    let names: Vec<String> = node.at("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect()).unwrap_or_default();
    let required: Vec<String> =
        node.at("required").and_then(Value::as_array).map(|r| r.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default();
    let optional: Vec<String> = names.iter().filter(|n| !required.contains(n)).cloned().collect();
    if optional.is_empty() && required != names && required.len() == names.len() {
        // the same names in the properties' order, as strict-mode writers (openai-agents) list them
        node.insert("required".into(), Value::Array(names.iter().cloned().map(Value::String).collect()));
    }
    if optional.is_empty() {
        // the mode reads a missing `required` as wrong, even with no properties; an API that refuses
        // `required` beside no properties (Groq) gets none there
        let refused = cx.target.structure.properties == crate::schema::target::ObjectProperties::BesideRequired && names.is_empty();
        if !node.has("required") && !refused {
            node.insert("required".into(), Value::Array(Vec::new()));
            cx.record(path, Kind::StructureSpelled, "required: [] written out");
        }
        return;
    }
    if let Some(Value::Object(props)) = node.at_mut("properties") {
        for n in &optional {
            if let Some(p) = props.get_mut(n) {
                nullable(p);
            }
        }
    }
    node.insert("required".into(), Value::Array(names.into_iter().map(Value::String).collect()));
    cx.record(path, Kind::OptionalNullable, format!("optional {} required, null allowed", optional.join(", ")));
}

/// Whether a node describes objects (a type that allows them, or properties without a type).
fn objecty(node: &Map<String, Value>) -> bool {
    match Types::of(node) {
        Some(t) => t.contains(Types::OBJECT),
        None => node.has("properties") && !node.has("$ref") && !node.has("anyOf"),
    }
}

/// Makes a schema also accept `null`, in the spelling it already uses.
fn nullable(v: &mut Value) {
    let Value::Object(m) = v else { return };
    if accepts_null(m) {
        return;
    }
    if let Some(c) = m.remove("const") {
        m.insert("enum".into(), json!([c, null]));
    } else if let Some(Value::Array(e)) = m.at_mut("enum") {
        e.push(Value::Null);
    }
    match m.at_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            m.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(a)) => a.push(json!("null")),
        _ => {
            if let Some(Value::Array(u)) = m.at_mut("anyOf") {
                u.push(json!({"type": "null"}));
            } else if m.has("enum") {
            } else {
                // a ref (or anything typed elsewhere): a union with null, its annotations kept outside
                let inner: Map<String, Value> =
                    m.iter().filter(|(k, _)| k.as_str() != "description" && k.as_str() != "title").map(|(k, v)| (k.clone(), v.clone())).collect();
                m.retain(|k, _| k == "description" || k == "title");
                m.insert("anyOf".into(), json!([Value::Object(inner), {"type": "null"}]));
            }
        }
    }
}

fn accepts_null(m: &Map<String, Value>) -> bool {
    Types::of(m).is_some_and(|t| t.contains(Types::NULL))
        || m.at("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::Null))
        || m.at("const") == Some(&Value::Null)
        || m.at("anyOf").and_then(Value::as_array).is_some_and(|u| u.iter().any(|b| b.as_object().is_some_and(accepts_null)))
}

/// The first reason the schema cannot be strict, with its place.
fn blocker(root: &Value, strict: &Strict, target: &Target, context: Context) -> Option<(String, String)> {
    let defs = root_defs(root);
    if context == Context::Output && !root.as_object().and_then(Types::of).is_some_and(|t| t == Types::OBJECT) {
        return Some((String::new(), "the root is not an object".into()));
    }
    let mut st = Scan { strict, target, defs: &defs, properties: 0, enums: 0, found: None };
    st.node(root, &mut String::new(), 0, 0, if context == Context::Tool { At::ToolParameters } else { At::Inside });
    if st.found.is_none() {
        if let Some(max) = strict.max_properties.filter(|m| st.properties > *m) {
            st.found = Some((String::new(), format!("{} properties, more than the {max} strict mode compiles", st.properties)));
        }
        if let Some(max) = strict.max_enum_values.filter(|m| st.enums > *m) {
            st.found = Some((String::new(), format!("{} enum values, more than the {max} strict mode compiles", st.enums)));
        }
    }
    st.found
}

struct Scan<'a> {
    strict: &'a Strict,
    /// Subschemas under keywords the mode removes (`if`, `not`, `propertyNames`, ...) are not judged.
    target: &'a Target,
    defs: &'a Value,
    properties: usize,
    enums: usize,
    found: Option<(String, String)>,
}

/// Where a scanned schema stands: a tool's parameters (which may be an object of no properties: a tool
/// without parameters) or anywhere else (an output's root included).
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    ToolParameters,
    Inside,
}

impl Scan<'_> {
    fn node(&mut self, v: &Value, path: &mut String, depth: usize, objects: usize, at: At) {
        if self.found.is_some() || depth > HARD_DEPTH {
            return;
        }
        let Value::Object(m) = v else {
            // `false` is "no value" (a closed object's rest); `true` beside properties is judged with
            // its object
            if v == &Value::Bool(true) && !path.ends_with("/additionalProperties") {
                self.found = Some((path.clone(), "a value of any type (true)".into()));
            }
            return;
        };
        let objects = if objecty(m) { objects + 1 } else { objects };
        if let Some(why) = self.why(m, objects, at) {
            self.found = Some((path.clone(), why));
            return;
        }
        self.properties += m.at("properties").and_then(Value::as_object).map_or(0, Map::len);
        self.enums += m.at("enum").and_then(Value::as_array).map_or(0, Vec::len);
        let mut kids: Vec<(Seg, &Value)> = Vec::new();
        children(m, |seg, c| kids.push((seg, c)));
        for (seg, c) in kids {
            let key = seg.key();
            if self.target.unenforced(key) || self.target.keywords.is_some_and(|k| !k.contains(&key)) {
                continue;
            }
            let len = path.len();
            seg.push_to(path);
            self.node(c, path, depth + 1, objects, At::Inside);
            path.truncate(len);
        }
    }

    fn why(&self, m: &Map<String, Value>, objects: usize, at: At) -> Option<String> {
        if is_never(m) {
            return None;
        }
        if let Some(max) = self.strict.max_object_depth.filter(|max| objects > *max) {
            return Some(format!("objects nested {objects} deep, more than the {max} strict mode compiles"));
        }
        if m.has("prefixItems") {
            return Some("a tuple (prefixItems)".into());
        }
        if m.has("patternProperties") {
            return Some("an object whose keys are given by patternProperties".into());
        }
        if !self.strict.recursion && m.has("$ref") && is_recursive_ref(&Value::Object(m.clone()), self.defs) {
            return Some(format!("a recursive type ({})", m.at("$ref").map(|r| compact(r, 80)).unwrap_or_default()));
        }
        let t = Types::of(m);
        if t.is_none() && !["$ref", "anyOf", "enum", "const", "properties"].iter().any(|k| m.has(k)) {
            return Some("a value of any type".into());
        }
        if let Some(t) = t {
            if t.contains(Types::ARRAY) && !m.has("items") {
                return Some("an array of any items".into());
            }
        }
        if objecty(m) {
            match m.at("additionalProperties") {
                Some(Value::Bool(false)) | None => {}
                Some(Value::Bool(true)) if has_properties(m) => {}
                Some(a) => {
                    if !(a.as_object().is_some_and(Map::is_empty) && has_properties(m)) {
                        return Some(format!("a map object (additionalProperties: {})", compact(a, 80)));
                    }
                }
            }
            if !has_properties(m) && at == At::Inside && m.at("additionalProperties") != Some(&Value::Bool(false)) {
                return Some("an object of any keys (no properties)".into());
            }
            let declared = m.at("properties").and_then(Value::as_object);
            if let Some(r) = m.at("required").and_then(Value::as_array) {
                if let Some(n) = r.iter().filter_map(Value::as_str).find(|n| !declared.is_some_and(|p| p.contains_key(*n))) {
                    return Some(format!("required property {n:?} is not declared"));
                }
            }
        }
        None
    }
}

fn has_properties(m: &Map<String, Value>) -> bool {
    m.at("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty())
}

/// One `type` per node, none beside a literal (see [`Strict::single_types`]). Exact: a literal's values
/// outside the type are dropped with it, a type list becomes one branch per type with every keyword
/// (each applies to its own type only).
fn single_types(node: &mut Map<String, Value>, path: &Path, cx: &mut Cx) {
    if node.has("enum") || node.has("const") {
        if let Some(t) = node.remove("type").as_ref().and_then(Types::of_value_type) {
            if let Some(Value::Array(e)) = node.at_mut("enum") {
                e.retain(|v| t.contains(Types::of_value(v)));
            }
            if node.at("const").is_some_and(|c| !t.contains(Types::of_value(c))) {
                node.insert("enum".into(), json!([]));
                node.remove("const");
            }
            cx.record(path, Kind::TypesExplicit, "type beside a literal taken into its values");
        }
        return;
    }
    let Some(Value::Array(list)) = node.at("type").cloned() else { return };
    if list.len() < 2 {
        if let Some(t) = list.first().cloned() {
            node.insert("type".into(), t);
        }
        return;
    }
    const OUTSIDE: &[&str] = &["description", "title"];
    let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    let branches = crate::schema::types::per_type_branches(node, &names, OUTSIDE);
    let annotations: Map<String, Value> = node.iter().filter(|(k, _)| OUTSIDE.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    *node = annotations;
    node.insert("anyOf".into(), Value::Array(branches));
    cx.record(path, Kind::TypesExplicit, "type list as one branch per type");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, apply_with, count};
    use crate::schema::Options;

    fn tool() -> Value {
        json!({"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer"},
            "c": {"$ref": "#/$defs/X", "description": "an x"},
            "e": {"enum": ["p", "q"]}},
            "required": ["a"],
            "$defs": {"X": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}})
    }

    #[test]
    fn openai_strict_closes_objects_and_makes_optional_properties_required_and_nullable() {
        let (v, r) = apply(run, tool(), &Target::OPENAI_STRICT);
        assert_eq!(v["additionalProperties"], json!(false));
        assert_eq!(v["required"], json!(["a", "b", "c", "e"]), "every property, in the properties' order");
        assert_eq!(v["properties"]["a"], json!({"type": "string"}), "a required property keeps refusing null");
        assert_eq!(v["properties"]["b"]["type"], json!(["integer", "null"]));
        assert_eq!(v["properties"]["c"], json!({"description": "an x", "anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]}));
        assert_eq!(v["properties"]["e"]["enum"], json!(["p", "q", null]));
        assert_eq!(v["$defs"]["X"]["additionalProperties"], json!(false), "definitions are closed too");
        assert_eq!(count(&r, Kind::OptionalNullable), 1);
        assert_eq!(count(&r, Kind::ObjectClosed), 2);
        assert_eq!(count(&r, Kind::StrictDeclined), 0);
    }

    #[test]
    fn openai_strict_writes_out_an_empty_required() {
        let (v, r) = apply(run, json!({"type": "object", "properties": {}}), &Target::OPENAI_STRICT);
        assert_eq!(v, json!({"type": "object", "properties": {}, "additionalProperties": false, "required": []}));
        assert_eq!(count(&r, Kind::StructureSpelled), 1);
    }

    #[test]
    fn anthropic_strict_keeps_optional_properties_and_spells_one_type_per_node() {
        let schema = json!({"type": "object", "properties": {
            "ids": {"type": "array", "items": {"type": "string"}, "minItems": 3},
            "n": {"type": ["string", "integer"], "minLength": 2, "minimum": 1},
            "k": {"type": "string", "enum": ["a", 1]}},
            "required": ["ids"]});
        let (v, r) = apply(run, schema, &Target::ANTHROPIC_STRICT);
        assert_eq!(v["required"], json!(["ids"]), "optional stays optional");
        assert_eq!(count(&r, Kind::OptionalNullable), 0);
        assert!(v["properties"]["ids"].get("minItems").is_none(), "minItems over 1 removed: {v}");
        assert!(v["properties"]["ids"]["description"].as_str().is_some_and(|d| d.contains("minItems: 3")), "and said: {v}");
        assert_eq!(v["properties"]["n"]["anyOf"], json!([{"type": "string", "minLength": 2}, {"type": "integer", "minimum": 1}]));
        assert_eq!(v["properties"]["k"], json!({"enum": ["a"]}), "the type is taken into the literal's values");
        assert_eq!(count(&r, Kind::KeywordRemoved), 1);
        assert_eq!(count(&r, Kind::TypesExplicit), 2);
    }

    #[test]
    fn a_removal_is_not_said_when_promotion_is_off() {
        let opts = Options { promote_to_description: false, ..Options::default() };
        let schema = json!({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}, "minItems": 3}}});
        let (v, r) = apply_with(run, schema, &Target::ANTHROPIC_STRICT, Context::Tool, &opts);
        assert_eq!(v["properties"]["ids"], json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(count(&r, Kind::KeywordRemoved), 1, "still recorded");
    }

    #[test]
    fn what_cannot_be_strict_is_declined_with_its_place_and_left_as_it_was() {
        let cases = [
            (json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}), "/properties/m", "map object"),
            (json!({"type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}]}}}), "/properties/t", "tuple"),
            (json!({"type": "object", "properties": {"any": {}}}), "/properties/any", "any type"),
            (json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]}), "", "not declared"),
        ];
        for target in [&Target::OPENAI_STRICT, &Target::ANTHROPIC_STRICT] {
            for (schema, at, why) in &cases {
                let (v, r) = apply(run, schema.clone(), target);
                assert_eq!(&v, schema, "unchanged");
                assert_eq!(count(&r, Kind::StrictDeclined), 1, "{schema}");
                let rec = r.records.first().map(|x| (x.path.as_str(), x.detail.as_str()));
                assert!(rec.is_some_and(|(p, d)| p == *at && d.contains(why)), "{rec:?} for {schema}");
            }
        }
    }

    #[test]
    fn recursion_is_declined_only_where_the_mode_refuses_it() {
        let tree = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/N"}}, "required": ["root"],
            "$defs": {"N": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/N"}}}, "required": ["kids"]}}});
        let (_, r) = apply(run, tree.clone(), &Target::OPENAI_STRICT);
        assert_eq!(count(&r, Kind::StrictDeclined), 0);
        let (v, r) = apply(run, tree.clone(), &Target::ANTHROPIC_STRICT);
        assert_eq!(count(&r, Kind::StrictDeclined), 1);
        assert_eq!(v, tree);
    }

    #[test]
    fn an_output_format_must_be_an_object() {
        let opts = Options::default();
        let (v, r) = apply_with(run, json!({"type": "array", "items": {"type": "string"}}), &Target::OPENAI_STRICT, Context::Output, &opts);
        assert_eq!(count(&r, Kind::StrictDeclined), 1);
        assert_eq!(v, json!({"type": "array", "items": {"type": "string"}}));
    }

    #[test]
    fn a_target_without_a_strict_mode_is_left_alone() {
        let (v, r) = apply(run, tool(), &Target::OPENAI);
        assert_eq!(v, tool());
        assert!(r.records.is_empty());
    }
}
