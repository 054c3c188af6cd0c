//! A union at the root of a tool's parameters, for APIs that refuse one there
//! ([`crate::schema::Target::root_union`]: Anthropic answers 400 "input_schema does not support oneOf,
//! allOf, or anyOf at the top level", OpenAI strict mode the same). The branches become one object:
//! every property any branch declares (a name declared differently by several becomes a union of its
//! declarations), required only where the root or every branch requires it. That accepts every call
//! the union accepted and some it did not, so the alternatives are said in the description (lossy).

use crate::schema::definitions::{deref, root_defs};
use crate::schema::lookup::Lookup;
use crate::schema::{compact, Context, Cx, Kind};
use serde_json::{json, Map, Value};

/// Passes that must run before this one in a profile's list: nothing: it looks at the root only, and
/// reads branches that are refs through the root definitions.
pub const AFTER: &[&str] = &[];

pub fn run(root: &mut Value, cx: &mut Cx) {
    if cx.context != Context::Tool || cx.target.root_union {
        return;
    }
    let defs = root_defs(root);
    let Value::Object(node) = root else { return };
    let mut branches: Vec<Value> = Vec::new();
    let mut said: Vec<(String, Value)> = Vec::new();
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(v) = node.remove(key) {
            if key == "allOf" {
                // an intersection: every branch's properties and requirements hold together
                for b in v.as_array().into_iter().flatten() {
                    absorb(node, &deref(b.clone(), &defs), Branch::AllOf);
                }
                said.push((key.to_string(), v));
                continue;
            }
            branches.extend(v.as_array().cloned().unwrap_or_default());
            said.push((key.to_string(), v));
        }
    }
    if said.is_empty() {
        return;
    }
    let branches: Vec<Value> = branches.into_iter().map(|b| deref(b, &defs)).collect();
    // required only where every branch requires it
    let mut common: Option<Vec<Value>> = None;
    for b in &branches {
        let r: Vec<Value> = b.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
        common = Some(match common {
            None => r,
            Some(c) => c.into_iter().filter(|x| r.contains(x)).collect(),
        });
    }
    for b in &branches {
        let mut one = b.clone();
        if let Value::Object(m) = &mut one {
            m.remove("required");
        }
        absorb(node, &one, Branch::Union);
    }
    if let Some(c) = common.filter(|c| !c.is_empty()) {
        let req = node.entry("required").or_insert_with(|| json!([]));
        if let Value::Array(r) = req {
            for x in c {
                if !r.contains(&x) {
                    r.push(x);
                }
            }
        }
    }
    node.insert("type".into(), json!("object"));
    let text = said.iter().map(|(k, v)| format!("{k}: {}", compact(v, 200))).collect::<Vec<_>>().join("; ");
    cx.lost(
        node,
        "",
        Kind::RootUnionMerged,
        &format!("one of the shapes {text}"),
        format!("root union made one object; removed {}", compact(&Value::String(text), 200)),
    );
}

/// What a root branch is: one of an intersection (`allOf`: every branch holds) or of a union.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Branch {
    AllOf,
    Union,
}

/// Adds a branch's properties (and, for an `allOf` branch, its requirements) to the root. A name the
/// root or an earlier branch declares otherwise becomes a union of both declarations.
fn absorb(node: &mut Map<String, Value>, branch: &Value, of: Branch) {
    let all = of == Branch::AllOf;
    let Value::Object(b) = branch else { return };
    if let Some(Value::Object(props)) = b.at("properties") {
        let root_props = node.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(rp) = root_props {
            for (k, v) in props {
                match rp.get_mut(k) {
                    None => {
                        rp.insert(k.clone(), v.clone());
                    }
                    Some(old) if old == v => {}
                    // both hold: the root's stays, the branch's is said with the rest
                    Some(_) if all => {}
                    Some(old) => {
                        let prev = std::mem::take(old);
                        let mut alts = match prev {
                            Value::Object(m) if m.len() == 1 && m.contains_key("anyOf") => {
                                m.get("anyOf").and_then(Value::as_array).cloned().unwrap_or_default()
                            }
                            p => vec![p],
                        };
                        if !alts.contains(v) {
                            alts.push(v.clone());
                        }
                        *old = json!({ "anyOf": alts });
                    }
                }
            }
        }
    }
    if all {
        if let Some(Value::Array(r)) = b.at("required") {
            let req = node.entry("required").or_insert_with(|| json!([]));
            if let Value::Array(rr) = req {
                for x in r {
                    if !rr.contains(x) {
                        rr.push(x.clone());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, apply_with, count};
    use crate::schema::{Options, Target};

    fn by_id_or_name() -> Value {
        json!({"type": "object", "properties": {"verbose": {"type": "boolean"}}, "anyOf": [
            {"properties": {"id": {"type": "integer"}, "kind": {"type": "string"}}, "required": ["id", "kind"]},
            {"$ref": "#/$defs/ByName"}],
            "$defs": {"ByName": {"properties": {"name": {"type": "string"}, "kind": {"type": "integer"}}, "required": ["name", "kind"]}}})
    }

    #[test]
    fn a_root_union_becomes_one_object_required_where_every_branch_requires() {
        for t in [&Target::ANTHROPIC, &Target::OPENAI_STRICT, &Target::GEMINI, &Target::COHERE] {
            let (v, r) = apply(run, by_id_or_name(), t);
            assert!(v.get("anyOf").is_none());
            assert_eq!(v["type"], json!("object"));
            let props = v["properties"].as_object().map(|p| p.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
            assert_eq!(props, ["verbose", "id", "kind", "name"]);
            assert_eq!(v["properties"]["kind"], json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}), "declared two ways: both");
            assert_eq!(v["required"], json!(["kind"]));
            assert!(v["description"].as_str().is_some_and(|d| d.starts_with("(Also required, not enforced: one of the shapes anyOf:")), "{v}");
            assert_eq!(count(&r, Kind::RootUnionMerged), 1);
        }
    }

    #[test]
    fn an_all_of_at_the_root_adds_every_branch_requirement() {
        let s = json!({"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"b": {"type": "string"}}, "required": ["b"]}]});
        let (v, _) = apply(run, s, &Target::ANTHROPIC);
        assert_eq!(v["required"], json!(["a", "b"]));
    }

    #[test]
    fn left_alone_where_a_root_union_is_fine_or_the_schema_is_not_a_tool() {
        let (v, r) = apply(run, by_id_or_name(), &Target::LLAMA_CPP);
        assert_eq!(v, by_id_or_name());
        assert!(r.records.is_empty());
        let (v, _) = apply_with(run, by_id_or_name(), &Target::ANTHROPIC, Context::Output, &Options::default());
        assert_eq!(v, by_id_or_name());
    }
}
