//! One namespace of definitions for all the tools of a request, for servers that build one schema
//! from every tool (see [`crate::schema::Target::shared_defs`]).
//!
//! vLLM answers `tool_choice: "required"` by hoisting every tool's root `$defs` into one wrapper and
//! refuses the request (400) when two tools define the same name differently, which happens as soon as
//! two MCP servers each have a `Config` or the engine gave two recursive roots the same entry name. The
//! later tool's entry is renamed and its refs follow, so each tool means what it meant and the request
//! compiles. A request without such a clash is not touched.

use super::edit::SiteResult;
use crate::schema::walk::{pre_order, push_escaped};
use crate::schema::{Kind, Record};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Most renaming rounds for one tool: each round renames at least one entry, and renaming can make a
/// clash only in the entries that refer to a renamed one.
const MAX_ROUNDS: usize = 64;

/// Renames, in tool order, every root `$defs` entry a previous tool defines differently; `text` is the
/// body the results point into.
pub(super) fn share(text: &str, results: &mut [SiteResult]) {
    let mut seen: HashMap<String, Value> = HashMap::new();
    for r in results.iter_mut() {
        if !(r.tool && r.schema) {
            continue;
        }
        let src = match &r.output {
            Some(o) => o.as_str(),
            None => text.get(r.at..r.at + r.len).unwrap_or(""),
        };
        if !src.contains("\"$defs\"") {
            continue;
        }
        let Ok(mut v) = serde_json::from_str::<Value>(src) else { continue };
        let renamed = unclash(&mut v, &seen);
        if let Some(Value::Object(d)) = v.get("$defs") {
            for (k, def) in d {
                seen.entry(k.clone()).or_insert_with(|| def.clone());
            }
        }
        if renamed.is_empty() {
            continue;
        }
        for (from, to) in renamed {
            let detail = format!("definition {from} renamed {to}: another tool of the request defines {from} differently");
            r.report.push(Record { tool: r.name.clone(), path: format!("/$defs/{to}"), kind: Kind::DefinitionRenamed, detail });
        }
        if let Ok(o) = serde_json::to_string(&v) {
            r.output = Some(o);
        }
    }
}

/// Renames the entries of `schema`'s root `$defs` that clash with `seen` until none does; returns
/// (old name, new name) pairs.
fn unclash(schema: &mut Value, seen: &HashMap<String, Value>) -> Vec<(String, String)> {
    let mut renamed = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let Some(Value::Object(defs)) = schema.get("$defs") else { break };
        let Some(from) = defs.iter().find(|(k, v)| seen.get(*k).is_some_and(|s| s != *v)).map(|(k, _)| k.clone()) else { break };
        let to = free_name(&from, defs, seen);
        rename(schema, &from, &to);
        renamed.push((from, to));
    }
    renamed
}

/// `base2`, `base3`, ...: the first no tool uses yet.
fn free_name(base: &str, own: &Map<String, Value>, seen: &HashMap<String, Value>) -> String {
    (2..).map(|i| format!("{base}{i}")).find(|n| !own.contains_key(n) && !seen.contains_key(n)).unwrap_or_default()
}

/// Moves entry `from` to `to` and points every ref to it (or into it) there.
fn rename(schema: &mut Value, from: &str, to: &str) {
    let Some(Value::Object(defs)) = schema.get_mut("$defs") else { return };
    let Some(def) = defs.remove(from) else { return };
    defs.insert(to.to_string(), def);
    let (mut old, mut new) = (String::from("#/$defs/"), String::from("#/$defs/"));
    push_escaped(&mut old, from);
    push_escaped(&mut new, to);
    pre_order(schema, "", &mut |node, _| {
        if let Some(Value::String(r)) = node.get_mut("$ref") {
            if let Some(rest) = r.strip_prefix(old.as_str()).filter(|rest| rest.is_empty() || rest.starts_with('/')) {
                *r = format!("{new}{rest}");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_clash_is_renamed_with_its_refs_and_equal_entries_are_shared() {
        let mut seen = HashMap::new();
        seen.insert("Item".to_string(), json!({"type": "string"}));
        seen.insert("Same".to_string(), json!({"type": "integer"}));
        seen.insert("Item2".to_string(), json!({"type": "boolean"}));
        let mut s = json!({
            "properties": {"a": {"$ref": "#/$defs/Item"}, "b": {"$ref": "#/$defs/Same"}, "c": {"$ref": "#/$defs/Item/properties/x"}},
            "$defs": {"Item": {"type": "object", "properties": {"x": {"type": "null"}}}, "Same": {"type": "integer"}},
            "enum": [{"$ref": "#/$defs/Item"}]
        });
        let renamed = unclash(&mut s, &seen);
        assert_eq!(renamed, vec![("Item".to_string(), "Item3".to_string())]);
        assert_eq!(s["properties"]["a"]["$ref"], "#/$defs/Item3");
        assert_eq!(s["properties"]["c"]["$ref"], "#/$defs/Item3/properties/x");
        assert_eq!(s["properties"]["b"]["$ref"], "#/$defs/Same");
        assert!(s["$defs"].get("Item").is_none() && s["$defs"]["Item3"]["type"] == "object");
        assert_eq!(s["enum"][0]["$ref"], "#/$defs/Item", "data is not a ref");
    }

    #[test]
    fn renaming_follows_entries_that_change_because_a_ref_in_them_moved() {
        // Outer is the same text in both tools, but refers to a different Inner
        let mut seen = HashMap::new();
        seen.insert("Outer".to_string(), json!({"$ref": "#/$defs/Inner"}));
        seen.insert("Inner".to_string(), json!({"type": "string"}));
        let mut s = json!({"$ref": "#/$defs/Outer", "$defs": {"Outer": {"$ref": "#/$defs/Inner"}, "Inner": {"type": "integer"}}});
        let renamed = unclash(&mut s, &seen);
        assert_eq!(renamed.len(), 2, "{renamed:?}");
        assert_eq!(s["$ref"], "#/$defs/Outer2");
        assert_eq!(s["$defs"]["Outer2"]["$ref"], "#/$defs/Inner2");
    }
}
