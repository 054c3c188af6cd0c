//! Types as an OpenAPI 3.0 `Schema` spells them ([`crate::schema::Target::openapi`]: Gemini's
//! `parameters` and `responseSchema`, which answer 400 on a type list, "Proto field is not repeating").
//! A type list with `null` becomes one type and `nullable: true`; several types an `anyOf` of one
//! branch per type, each with its own keywords; a `null` branch of an `anyOf` becomes `nullable` on
//! the others; keywords beside an `anyOf` go into its branches (the API refuses them there). These
//! are exact. An `enum` of other values than strings cannot be written (the API's enums are strings):
//! it is removed and said in the description (lossy), as is an empty string in an enum.

use crate::schema::lookup::Lookup;
use crate::schema::types::per_type_branches;
use crate::schema::walk::{is_annotation, post_order_cx};
use crate::schema::{compact, removed_text, Cx, Kind};
use serde_json::{json, Map, Value};

/// Passes that must run before this one in a profile's list: unions with their constraints already in the branches, and no refs.
pub const AFTER: &[&str] = &["unions", "unroll"];

const ORDER: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    if !cx.target.openapi {
        return;
    }
    post_order_cx(root, cx, &mut |node, path, cx| {
        // enums: strings only, none empty; `null` is `nullable`
        if let Some(Value::Array(e)) = node.at("enum") {
            let e = e.clone();
            let null = e.contains(&Value::Null);
            let values: Vec<Value> = e.iter().filter(|v| !v.is_null()).cloned().collect();
            if values.iter().any(|v| !v.is_string()) || values.iter().any(|v| v.as_str() == Some("")) {
                node.remove("enum");
                let text = removed_text(&[("enum".to_string(), Value::Array(e.clone()))], 120);
                cx.lost(node, path, Kind::KeywordRemoved, &text, format!("removed {text} (the API's enums are non-empty strings)"));
            } else if null {
                node.insert("enum".into(), Value::Array(values));
                node.insert("nullable".into(), Value::Bool(true));
                cx.record(path, Kind::OpenapiTypes, "null in enum as nullable: true");
            }
        }
        // a type list
        if let Some(Value::Array(list)) = node.at("type") {
            let names: Vec<String> = list.iter().filter_map(Value::as_str).map(String::from).collect();
            let null = names.iter().any(|n| n == "null");
            let rest: Vec<&String> = names.iter().filter(|n| *n != "null").collect();
            match rest.as_slice() {
                [] => {
                    node.insert("type".into(), json!("null"));
                }
                [one] => {
                    node.insert("type".into(), json!(one));
                }
                many => {
                    let many: Vec<String> = many.iter().map(|s| s.to_string()).collect();
                    split(node, &many);
                }
            }
            if null && !rest.is_empty() {
                set_nullable(node);
            }
            cx.record(path, Kind::OpenapiTypes, format!("type list {} as OpenAPI types", compact(&json!(names), 80)));
        }
        // a null branch, and keywords beside the union
        if let Some(Value::Array(u)) = node.at("anyOf") {
            let null_branch = |b: &Value| {
                b.get("type").and_then(Value::as_str) == Some("null") && b.as_object().is_some_and(|m| m.keys().all(|k| k == "type" || is_annotation(k)))
            };
            let had_null = u.iter().any(null_branch);
            let mut branches: Vec<Value> = u.iter().filter(|b| !null_branch(b)).cloned().collect();
            let siblings: Map<String, Value> = node.iter().filter(|(k, _)| k.as_str() != "anyOf").map(|(k, v)| (k.clone(), v.clone())).collect();
            if !had_null && siblings.is_empty() {
                return;
            }
            for b in branches.iter_mut() {
                if let Value::Object(bm) = b {
                    for (k, v) in &siblings {
                        if !bm.contains_key(k) {
                            bm.insert(k.clone(), v.clone());
                        }
                    }
                    if had_null {
                        set_nullable(bm);
                    }
                }
            }
            node.clear();
            match branches.len() {
                1 => {
                    if let Some(Value::Object(b)) = branches.pop() {
                        *node = b;
                    }
                }
                _ => {
                    node.insert("anyOf".into(), Value::Array(branches));
                }
            }
            cx.record(path, Kind::OpenapiTypes, "anyOf with nothing beside it, null as nullable");
        }
    });
}

fn set_nullable(node: &mut Map<String, Value>) {
    if let Some(Value::Array(u)) = node.at_mut("anyOf") {
        for b in u.iter_mut() {
            if let Value::Object(bm) = b {
                bm.insert("nullable".into(), Value::Bool(true));
            }
        }
    } else {
        node.insert("nullable".into(), Value::Bool(true));
    }
}

/// One branch per type, each with the keywords that apply to it; annotations go into every branch.
fn split(node: &mut Map<String, Value>, types: &[String]) {
    let names: Vec<&str> = ORDER.iter().copied().filter(|n| types.iter().any(|x| x == n)).collect();
    let branches = per_type_branches(node, &names, &[]);
    node.clear();
    node.insert("anyOf".into(), Value::Array(branches));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, count};
    use crate::schema::Target;

    #[test]
    fn a_type_list_with_null_is_one_type_and_nullable() {
        let (v, r) = apply(run, json!({"type": ["string", "null"], "maxLength": 5}), &Target::GEMINI);
        assert_eq!(v, json!({"type": "string", "maxLength": 5, "nullable": true}));
        assert_eq!(count(&r, Kind::OpenapiTypes), 1);
    }

    #[test]
    fn several_types_are_one_branch_each_with_its_own_keywords() {
        let (v, r) = apply(run, json!({"type": ["integer", "string", "null"], "minLength": 2, "minimum": 1, "description": "d"}), &Target::GEMINI);
        assert_eq!(
            v,
            json!({"anyOf": [
                {"type": "string", "minLength": 2, "description": "d", "nullable": true},
                {"type": "integer", "minimum": 1, "description": "d", "nullable": true}]})
        );
        assert_eq!(count(&r, Kind::OpenapiTypes), 1);
    }

    #[test]
    fn a_null_branch_becomes_nullable_and_siblings_go_into_the_branches() {
        let (v, r) = apply(run, json!({"description": "when", "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}), &Target::GEMINI);
        assert_eq!(v, json!({"type": "string", "format": "date-time", "description": "when", "nullable": true}));
        assert_eq!(count(&r, Kind::OpenapiTypes), 1);
        // a union already as the API spells it is left alone
        let plain = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        let (v, r) = apply(run, plain.clone(), &Target::GEMINI);
        assert_eq!(v, plain);
        assert!(r.records.is_empty());
    }

    #[test]
    fn enums_are_strings_null_in_one_is_nullable_and_others_are_removed_and_said() {
        let (v, r) = apply(run, json!({"type": "string", "enum": ["a", null]}), &Target::GEMINI);
        assert_eq!(v, json!({"type": "string", "enum": ["a"], "nullable": true}));
        assert_eq!(count(&r, Kind::OpenapiTypes), 1);
        let (v, r) = apply(run, json!({"type": "integer", "enum": [1, 2]}), &Target::GEMINI);
        assert!(v.get("enum").is_none());
        assert!(v["description"].as_str().is_some_and(|d| d.contains("enum: [1,2]")), "{v}");
        assert_eq!(count(&r, Kind::KeywordRemoved), 1);
        let (v, _) = apply(run, json!({"enum": ["", "x"]}), &Target::GEMINI);
        assert!(v.get("enum").is_none(), "an empty string in an enum: {v}");
    }

    #[test]
    fn only_an_openapi_target_is_rewritten() {
        let s = json!({"type": ["string", "null"], "enum": [1, "a"]});
        for t in [&Target::GEMINI_JSON, &Target::OPENAI, &Target::LLAMA_CPP] {
            let (v, r) = apply(run, s.clone(), t);
            assert_eq!(v, s);
            assert!(r.records.is_empty());
        }
    }
}
