//! Definitions read whole by llama.cpp 2024-08 and 2024-12. Their converter stores, for each `$ref`,
//! a copy of the document taken at the last `$ref` to the same target in document order, before that
//! `$ref` itself is rewritten; a definition whose last reference sits inside itself (a recursive type)
//! or before a definition it uses is copied with refs it cannot resolve, and those compile as "any
//! object". A root member `x-toolfit-refs`, last in the document, refers to every definition once more,
//! so each copy is taken after every ref was rewritten. Annotations (`x-`) are not part of the grammar
//! and change no value's validity. Exact.

use crate::schema::lookup::Lookup;
use crate::schema::walk::{collect_refs, has_ref};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

/// The root member that lists the definitions.
pub const MEMBER: &str = "x-toolfit-refs";

/// Passes that must run before this one in a profile's list: refs are plain root definitions.
pub const AFTER: &[&str] = &["refs"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    // only a versioned target's older releases copy definitions before their refs are rewritten
    if cx.release().is_none_or(|r| r.refs_read_whole()) {
        return;
    }
    let Value::Object(r) = root else { return };
    let mut inner_refs = false;
    for k in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = r.at(k) {
            inner_refs |= defs.values().any(|d| has_ref(d, 0));
        }
    }
    if !inner_refs {
        // copies without refs in them are whole already (a listing left from a round whose refs
        // have gone since is removed); most schemas end here, before any walk
        if r.remove(MEMBER).is_some() {
            cx.record("", Kind::RefsListed, format!("{MEMBER} removed: no definition holds a ref any more"));
        }
        return;
    }
    // every ref of the schema (the listing is an `x-` member, never read as a schema)
    let mut all = Vec::new();
    collect_refs(root, &mut all, 0);
    let Value::Object(r) = root else { return };
    // the definitions some ref uses, in the order first used (others are never read)
    let mut used: Vec<String> = Vec::new();
    for target in all {
        let Some(rest) = target.strip_prefix("#/$defs/").map(|n| ("$defs", n)).or_else(|| target.strip_prefix("#/definitions/").map(|n| ("definitions", n)))
        else {
            continue;
        };
        let name = rest.1.split('/').next().unwrap_or("");
        let mut p = format!("#/{}/", rest.0);
        p.push_str(name);
        if !name.is_empty() && !used.contains(&p) {
            used.push(p);
        }
    }
    let list: Vec<Value> = used
        .into_iter()
        .map(|p| {
            let mut m = Map::new();
            m.insert("$ref".into(), Value::String(p));
            Value::Object(m)
        })
        .collect();
    let want = Value::Array(list);
    if r.iter().next_back().is_some_and(|(k, v)| k == MEMBER && *v == want) {
        return;
    }
    r.remove(MEMBER);
    r.insert(MEMBER.into(), want);
    cx.record("", Kind::RefsListed, format!("definitions listed last ({MEMBER}) so llama.cpp before 2025-05 reads each whole"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Context, LlamaCpp, Options};
    use serde_json::json;

    fn run_on(mut v: Value, since: LlamaCpp) -> (Value, usize) {
        let opts = Options { llama_cpp: since, ..Options::default() };
        let mut cx = Cx::new("t", Context::Tool, &opts, &crate::schema::profile::LLAMA_CPP.target);
        run(&mut v, &mut cx);
        (v, cx.report.records.len())
    }

    #[test]
    fn recursive_definitions_are_listed_last_for_old_releases() {
        // `a/b` is used by no ref: never read, so not listed (old releases cannot resolve its name)
        let tree = json!({"type": "object", "properties": {"t": {"$ref": "#/$defs/N"}, "u": {"anyOf": [{"$ref": "#/definitions/M"}]}}, "$defs": {"N": {"type": "array", "items": {"$ref": "#/$defs/N"}}, "a/b": {"type": "string"}}, "definitions": {"M": {"type": "string"}}});
        let (v, n) = run_on(tree.clone(), LlamaCpp::V2024_12);
        assert_eq!(n, 1);
        assert_eq!(v.as_object().and_then(|m| m.keys().next_back()).map(String::as_str), Some(MEMBER));
        assert_eq!(v[MEMBER], json!([{"$ref": "#/$defs/N"}, {"$ref": "#/definitions/M"}]));
        // a second run changes nothing; 2025-05 on, and definitions without refs, need nothing
        assert_eq!(run_on(v.clone(), LlamaCpp::V2024_12), (v, 0));
        assert_eq!(run_on(tree.clone(), LlamaCpp::V2025_05), (tree, 0));
        let flat = json!({"properties": {"a": {"$ref": "#/$defs/S"}}, "$defs": {"S": {"type": "string"}}});
        assert_eq!(run_on(flat.clone(), LlamaCpp::V2024_08), (flat, 0));
    }
}
