//! Definitions read whole by llama.cpp 2024-08 and 2024-12. Their converter stores, for each `$ref`,
//! a copy of the document taken at the last `$ref` to the same target in document order, before that
//! `$ref` itself is rewritten; a definition whose last reference sits inside itself (a recursive type)
//! or before a definition it uses is copied with refs it cannot resolve, and those compile as "any
//! object". A root member `x-toolfit-refs`, last in the document, refers to every definition once more,
//! so each copy is taken after every ref was rewritten. Annotations (`x-`) are not part of the grammar
//! and change no value's validity. Exact.

use crate::schema::lookup::Lookup;
use crate::schema::walk::{children, push_escaped};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

/// The root member that lists the definitions.
pub const MEMBER: &str = "x-toolfit-refs";

pub fn run(root: &mut Value, cx: &mut Cx) {
    if cx.opts.llama_cpp.refs_read_whole() {
        return;
    }
    let Value::Object(r) = root else { return };
    let mut list = Vec::new();
    let mut inner_refs = false;
    for k in ["$defs", "definitions"] {
        let Some(Value::Object(defs)) = r.at(k) else { continue };
        for (name, def) in defs {
            inner_refs |= has_ref(def, 0);
            let mut p = format!("#/{k}/");
            push_escaped(&mut p, name);
            let mut m = Map::new();
            m.insert("$ref".into(), Value::String(p));
            list.push(Value::Object(m));
        }
    }
    if !inner_refs {
        return; // copies without refs in them are whole already
    }
    let want = Value::Array(list);
    if r.iter().next_back().is_some_and(|(k, v)| k == MEMBER && *v == want) {
        return;
    }
    r.remove(MEMBER);
    r.insert(MEMBER.into(), want);
    cx.record("", Kind::RefsListed, format!("definitions listed last ({MEMBER}) so llama.cpp before 2025-05 reads each whole"));
}

fn has_ref(v: &Value, depth: usize) -> bool {
    let Value::Object(m) = v else { return false };
    if m.has("$ref") {
        return true;
    }
    let mut found = false;
    if depth < crate::schema::walk::HARD_DEPTH {
        children(m, |_, c| found = found || has_ref(c, depth + 1));
    }
    found
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
        let tree = json!({"type": "object", "properties": {"t": {"$ref": "#/$defs/N"}}, "$defs": {"N": {"type": "array", "items": {"$ref": "#/$defs/N"}}, "a/b": {"type": "string"}}});
        let (v, n) = run_on(tree.clone(), LlamaCpp::V2024_12);
        assert_eq!(n, 1);
        assert_eq!(v.as_object().and_then(|m| m.keys().last()).map(String::as_str), Some(MEMBER));
        assert_eq!(v[MEMBER], json!([{"$ref": "#/$defs/N"}, {"$ref": "#/$defs/a~1b"}]));
        // a second run changes nothing; 2025-05 on, and definitions without refs, need nothing
        assert_eq!(run_on(v.clone(), LlamaCpp::V2024_12), (v, 0));
        assert_eq!(run_on(tree.clone(), LlamaCpp::V2025_05), (tree, 0));
        let flat = json!({"properties": {"a": {"$ref": "#/$defs/S"}}, "$defs": {"S": {"type": "string"}}});
        assert_eq!(run_on(flat.clone(), LlamaCpp::V2024_08), (flat, 0));
    }
}
