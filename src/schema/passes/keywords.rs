//! The keywords a hosted API accepts ([`crate::schema::Target::keywords`]) and what may stand beside a
//! `$ref` ([`crate::schema::Target::ref_siblings`]). Such an API answers 400 on any other keyword, so
//! the rest goes: a `const` the API lacks becomes a one-value `enum` (exact); another constraint is
//! removed and said in the description (lossy); a `default` or `examples` value is said in the
//! description and other annotations and vendor keys are dropped (no value's validity changes). A
//! `$ref` with siblings the API refuses is wrapped as `{"anyOf": [{"$ref": ..}], ..siblings}`, which
//! means the same.

use crate::schema::lookup::Lookup;
use crate::schema::walk::{is_constraint, post_order_cx};
use crate::schema::{compact, note, removed_text, Cx, Kind};
use serde_json::{json, Value};

/// Passes that must run before this one in a profile's list: keywords are in their 2020-12 spelling, and refs in their final form.
pub const AFTER: &[&str] = &["dialect", "refs"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let (allowed, ref_ok) = (cx.target.keywords, cx.target.ref_siblings);
    if allowed.is_none() && ref_ok.is_none() {
        return;
    }
    post_order_cx(root, cx, &mut |node, path, cx| {
        if let Some(ok) = allowed {
            // a literal the API cannot spell as `const` is the same as a one-value enum
            if !ok.contains(&"const") && ok.contains(&"enum") {
                if let Some(c) = node.remove("const") {
                    let kept = match node.at("enum").and_then(Value::as_array) {
                        Some(e) => e.contains(&c),
                        None => true,
                    };
                    let values = if kept { vec![c.clone()] } else { Vec::new() };
                    node.insert("enum".into(), Value::Array(values));
                    cx.record(path, Kind::DialectNormalized, format!("const {} as a one-value enum", compact(&c, 60)));
                }
            }
            let keep = cx.opts.keep_keywords;
            let refused: Vec<String> = node.keys().filter(|k| !ok.contains(&k.as_str()) && !keep.contains(&k.as_str())).cloned().collect();
            let mut removed = Vec::new();
            let mut moved = Vec::new();
            for k in refused {
                let Some(v) = node.remove(&k) else { continue };
                if is_constraint(&k) {
                    removed.push((k, v));
                } else {
                    moved.push((k, v));
                }
            }
            for (k, v) in &moved {
                match k.as_str() {
                    "default" => note(node, &format!("(Default: {}.)", compact(v, 120))),
                    "examples" => note(node, &format!("(Examples: {}.)", compact(v, 120))),
                    _ => {}
                }
            }
            if !moved.is_empty() {
                let names: Vec<&str> = moved.iter().map(|(k, _)| k.as_str()).collect();
                cx.record(path, Kind::AnnotationMoved, format!("removed {} (refused by the API)", names.join(", ")));
            }
            if !removed.is_empty() {
                let text = removed_text(&removed, 120);
                cx.lost(node, path, Kind::KeywordRemoved, &text, format!("removed {text} (refused by the API)"));
            }
        }
        if let Some(ok) = ref_ok {
            let wrap = node.at("$ref").is_some_and(Value::is_string) && !node.has("anyOf");
            if wrap && node.keys().any(|k| k != "$ref" && !ok.contains(&k.as_str())) {
                if let Some(r) = node.remove("$ref") {
                    let rest = std::mem::take(node);
                    node.insert("anyOf".into(), json!([{ "$ref": r }]));
                    node.extend(rest);
                    cx.record(path, Kind::RefWrapped, "keywords beside $ref moved beside a one-branch anyOf around it");
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, count, keywords};
    use crate::schema::Target;

    /// A property with a bit of everything MCP servers send.
    fn busy() -> Value {
        json!({"type": "object", "properties": {
            "q": {"type": "string", "title": "Q", "minLength": 1, "maxLength": 9, "pattern": "^a", "format": "email",
                  "default": "a@b", "examples": ["a@c"], "x-vendor": true, "deprecated": false, "contentMediaType": "text/plain"},
            "n": {"type": "integer", "minimum": 0, "exclusiveMaximum": 9, "multipleOf": 3, "const": 3},
            "l": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4, "uniqueItems": true}},
            "required": ["q"], "additionalProperties": false})
    }

    #[test]
    fn every_keyword_left_is_one_the_api_accepts() {
        for t in [&Target::OPENAI_STRICT, &Target::ANTHROPIC_STRICT, &Target::GEMINI, &Target::GEMINI_JSON, &Target::COHERE] {
            let ok = t.keywords.unwrap_or_default();
            let (v, r) = apply(run, busy(), t);
            let refused: Vec<String> = keywords(&v).into_iter().filter(|k| !ok.contains(&k.as_str())).collect();
            assert!(refused.is_empty(), "{refused:?} left in {v}");
            assert!(count(&r, Kind::KeywordRemoved) > 0, "constraints the API refuses are recorded as lost");
            assert_eq!(v["required"], json!(["q"]), "required is kept everywhere");
        }
    }

    #[test]
    fn removed_constraints_are_said_and_annotations_moved_to_the_description() {
        let (v, r) = apply(run, busy(), &Target::COHERE);
        let q = v["properties"]["q"]["description"].as_str().unwrap_or_default();
        assert!(q.contains("(Default: \"a@b\".)") && q.contains("(Examples: [\"a@c\"].)"), "{q}");
        assert!(q.contains("minLength: 1") && q.contains("pattern: \"^a\""), "{q}");
        assert!(!q.contains("x-vendor"), "vendor keys are dropped, not said: {q}");
        assert_eq!(count(&r, Kind::AnnotationMoved), 1);
    }

    #[test]
    fn const_is_a_one_value_enum_where_the_api_lacks_const() {
        let (v, r) = apply(run, busy(), &Target::GEMINI);
        assert_eq!(v["properties"]["n"]["enum"], json!([3]));
        assert_eq!(count(&r, Kind::DialectNormalized), 1);
        // an enum that does not hold the const allows nothing
        let (v, _) = apply(run, json!({"const": 1, "enum": [2]}), &Target::COHERE);
        assert_eq!(v["enum"], json!([]));
        // OpenAI strict spells const itself
        let (v, _) = apply(run, busy(), &Target::OPENAI_STRICT);
        assert_eq!(v["properties"]["n"]["const"], json!(3));
    }

    #[test]
    fn a_ref_with_siblings_the_api_refuses_is_wrapped() {
        let s = json!({"$ref": "#/$defs/A", "description": "d", "minItems": 1, "$defs": {"A": {"type": "array"}}});
        let (v, r) = apply(run, s, &Target::GEMINI_JSON);
        assert_eq!(v["anyOf"], json!([{"$ref": "#/$defs/A"}]));
        assert_eq!(v["minItems"], json!(1));
        assert_eq!(count(&r, Kind::RefWrapped), 1);
        // only a description beside it is fine there
        let s = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "d"}}, "$defs": {"A": {"type": "array"}}});
        let (v, r) = apply(run, s.clone(), &Target::GEMINI_JSON);
        assert_eq!(v, s);
        assert_eq!(count(&r, Kind::RefWrapped), 0);
    }

    #[test]
    fn a_target_without_a_list_is_left_alone() {
        let (v, r) = apply(run, busy(), &Target::LLAMA_CPP);
        assert_eq!(v, busy());
        assert!(r.records.is_empty());
    }
}
