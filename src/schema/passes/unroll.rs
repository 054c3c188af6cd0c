//! APIs that read refs only in part ([`crate::schema::Target::refs`]). Where no `$ref` may stay
//! (Gemini's `parameters`, Cohere), every ref is replaced by a copy of its definition; a recursive one
//! is unrolled a fixed number of times along each path and then cut to its type (lossy, said in the
//! description), and the definitions go. Where a recursive ref may stand only inside an optional
//! property (Gemini's `parametersJsonSchema`), a required property holding one is made optional.

use crate::schema::definitions::{count_objects, is_recursive_ref, root_defs};
use crate::schema::lookup::Lookup;
use crate::schema::walk::{children_at, collect_refs, has_ref, post_order_cx, HARD_DEPTH};
use crate::schema::{note, Cx, Kind, Refs};
use serde_json::{json, Map, Value};

/// Passes that must run before this one in a profile's list: every ref is a plain root definition's.
pub const AFTER: &[&str] = &["refs"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    match cx.target.refs {
        Refs::Defs => {}
        Refs::Unrolled(times) => unroll(root, times, cx),
        Refs::OptionalCycles => optional_cycles(root, cx),
    }
}

fn unroll(root: &mut Value, times: usize, cx: &mut Cx) {
    let defs = root_defs(root);
    let Value::Object(top) = root else { return };
    let had_defs = top.remove("$defs").is_some() | top.remove("definitions").is_some();
    if !has_ref(root, 0) {
        if had_defs {
            cx.record("", Kind::KeywordNormalized, "definitions no ref uses removed");
        }
        return;
    }
    let mut st = Unroll { defs: &defs, times, budget: cx.opts.limits.inline_budget, stack: Vec::new(), inlined: 0, cut: Vec::new() };
    st.walk(root, &mut String::new(), 0);
    if st.inlined > 0 {
        cx.record("", Kind::RefsInlined, format!("{} refs replaced by their definitions (the API reads no $ref)", st.inlined));
    }
    for (path, name) in st.cut {
        cx.record(&path, Kind::RecursionCut, format!("recursive {name} unrolled {times} times, cut to its type below"));
    }
}

struct Unroll<'a> {
    defs: &'a Value,
    times: usize,
    budget: usize,
    stack: Vec<String>,
    inlined: usize,
    cut: Vec<(String, String)>,
}

impl Unroll<'_> {
    fn walk(&mut self, v: &mut Value, path: &mut String, depth: usize) {
        if depth > HARD_DEPTH {
            return;
        }
        let Value::Object(m) = v else { return };
        if let Some(r) = m.at("$ref").and_then(Value::as_str).map(String::from) {
            let target = r.strip_prefix('#').and_then(|p| self.defs.pointer(p)).cloned();
            let seen = self.stack.iter().filter(|s| **s == r).count();
            let size = target.as_ref().map_or(0, count_objects);
            let Some(target) = target.filter(|_| seen < self.times && size <= self.budget) else {
                // cut: the definition's type, nothing more
                let t = self.defs.pointer(r.trim_start_matches('#')).and_then(|d| d.get("type")).cloned();
                let siblings: Map<String, Value> = m.iter().filter(|(k, _)| *k != "$ref").map(|(k, v)| (k.clone(), v.clone())).collect();
                *m = siblings;
                if let Some(t) = t {
                    m.insert("type".into(), t);
                }
                let name = r.rsplit('/').next().unwrap_or("").to_string();
                note(m, &format!("(A {name} again, as above; its members are not checked here.)"));
                self.cut.push((path.clone(), name));
                return;
            };
            self.budget -= size;
            self.inlined += 1;
            let mut copy = match target {
                Value::Object(t) => t,
                Value::Bool(false) => crate::schema::merge::never_map(),
                _ => Map::new(),
            };
            for (k, val) in m.iter() {
                if k != "$ref" {
                    copy.insert(k.clone(), val.clone());
                }
            }
            *m = copy;
            self.stack.push(r);
            self.walk(v, path, depth + 1);
            self.stack.pop();
            return;
        }
        children_at(m, path, |p, _, c| self.walk(c, p, depth + 1));
    }
}

fn optional_cycles(root: &mut Value, cx: &mut Cx) {
    if !has_ref(root, 0) {
        return;
    }
    let defs = root_defs(root);
    let promote_on = cx.opts.promote_to_description;
    post_order_cx(root, cx, &mut |node, path, cx| {
        let Some(Value::Object(props)) = node.at("properties") else { return };
        let Some(Value::Array(required)) = node.at("required") else { return };
        let cyclic: Vec<String> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|n| {
                props.get(*n).is_some_and(|p| {
                    let mut refs = Vec::new();
                    collect_refs(p, &mut refs, 0);
                    refs.iter().any(|r| is_recursive_ref(&json!({ "$ref": r }), &defs))
                })
            })
            .map(String::from)
            .collect();
        if cyclic.is_empty() {
            return;
        }
        if let Some(Value::Array(r)) = node.at_mut("required") {
            r.retain(|x| x.as_str().is_none_or(|x| !cyclic.iter().any(|c| c == x)));
        }
        if let Some(Value::Object(p)) = node.at_mut("properties") {
            for n in &cyclic {
                if let (Some(Value::Object(pm)), true) = (p.get_mut(n), promote_on) {
                    note(pm, "(Required.)");
                }
            }
        }
        cx.record(path, Kind::RecursionCut, format!("required {} made optional: it holds a recursive type", cyclic.join(", ")));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, count, keywords};
    use crate::schema::Target;

    fn tree() -> Value {
        json!({"type": "object", "properties": {
            "root": {"$ref": "#/$defs/Node"},
            "when": {"$ref": "#/$defs/Date", "description": "start"}},
            "required": ["root"],
            "$defs": {
                "Date": {"type": "string", "format": "date"},
                "Node": {"type": "object", "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["name"]}}})
    }

    /// How many `kids` levels the unrolled tree has.
    fn levels(mut v: &Value) -> usize {
        let mut n = 0;
        while let Some(k) = v.pointer("/properties/kids/items") {
            n += 1;
            v = k;
        }
        n
    }

    #[test]
    fn where_no_ref_may_stay_refs_are_copied_and_recursion_cut_after_three_rounds() {
        for t in [&Target::GEMINI, &Target::COHERE] {
            let (v, r) = apply(run, tree(), t);
            let kw = keywords(&v);
            assert!(!kw.iter().any(|k| k == "$ref" || k == "$defs"), "{v}");
            assert_eq!(v["properties"]["when"], json!({"type": "string", "format": "date", "description": "start"}), "siblings kept");
            assert_eq!(levels(&v["properties"]["root"]), 3);
            let cut = v.pointer("/properties/root/properties/kids/items/properties/kids/items/properties/kids/items").cloned().unwrap_or_default();
            assert_eq!(cut["type"], json!("object"), "the cut keeps the definition's type: {cut}");
            assert!(cut["description"].as_str().is_some_and(|d| d.contains("Node again")));
            assert_eq!(count(&r, Kind::RecursionCut), 1);
            assert_eq!(count(&r, Kind::RefsInlined), 1);
        }
    }

    #[test]
    fn definitions_no_ref_uses_are_removed() {
        let (v, r) = apply(run, json!({"type": "object", "$defs": {"A": {}}}), &Target::COHERE);
        assert_eq!(v, json!({"type": "object"}));
        assert_eq!(count(&r, Kind::KeywordNormalized), 1);
    }

    #[test]
    fn where_recursion_may_stand_in_an_optional_property_a_required_one_is_made_optional() {
        let s = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}, "name": {"type": "string"}}, "required": ["root", "name"],
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}, "required": ["next"]}}});
        let (v, r) = apply(run, s, &Target::GEMINI_JSON);
        assert_eq!(v["required"], json!(["name"]));
        assert_eq!(v["properties"]["root"]["$ref"], json!("#/$defs/Node"), "refs stay");
        assert_eq!(v["properties"]["root"]["description"], json!("(Required.)"));
        assert_eq!(v["$defs"]["Node"]["required"], json!([]), "inside the definition too");
        assert_eq!(count(&r, Kind::RecursionCut), 2);
    }

    #[test]
    fn a_target_that_reads_refs_is_left_alone() {
        let (v, r) = apply(run, tree(), &Target::OPENAI_STRICT);
        assert_eq!(v, tree());
        assert!(r.records.is_empty());
    }
}
