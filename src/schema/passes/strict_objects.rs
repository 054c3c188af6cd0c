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
use crate::schema::walk::{children, post_order_cx, HARD_DEPTH};
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
fn close(node: &mut Map<String, Value>, path: &str, strict: &Strict, cx: &mut Cx) {
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
        if !node.has("required") {
            // the mode reads a missing `required` as wrong, even with no properties
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
    st.node(root, &mut String::new(), 0, 0, context == Context::Tool);
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

impl Scan<'_> {
    fn node(&mut self, v: &Value, path: &mut String, depth: usize, objects: usize, root: bool) {
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
        if let Some(why) = self.why(m, objects, root) {
            self.found = Some((path.clone(), why));
            return;
        }
        self.properties += m.at("properties").and_then(Value::as_object).map_or(0, Map::len);
        self.enums += m.at("enum").and_then(Value::as_array).map_or(0, Vec::len);
        let mut kids: Vec<(String, &Value)> = Vec::new();
        children(m, |seg, c| kids.push((seg.to_string(), c)));
        for (seg, c) in kids {
            let key = seg.split('/').nth(1).unwrap_or("");
            if self.target.unenforced(key) || self.target.keywords.is_some_and(|k| !k.contains(&key)) {
                continue;
            }
            let len = path.len();
            path.push_str(&seg);
            self.node(c, path, depth + 1, objects, false);
            path.truncate(len);
        }
    }

    fn why(&self, m: &Map<String, Value>, objects: usize, root: bool) -> Option<String> {
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
        if !self.strict.recursion && is_recursive_ref(&Value::Object(m.clone()), self.defs) {
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
            if !has_properties(m) && !root && m.at("additionalProperties") != Some(&Value::Bool(false)) {
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
fn single_types(node: &mut Map<String, Value>, path: &str, cx: &mut Cx) {
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
