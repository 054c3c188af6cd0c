//! Property names that llama.cpp up to 2025-08 cannot write into a grammar.
//!
//! Those versions paste a property's JSON-quoted name into a grammar literal without escaping it
//! again: a name with `"` or a form feed makes the grammar unparsable (the request fails), and a
//! backslash or another control character gives a literal that never matches the name (the property
//! can never be sent). A property named `$ref` is taken for a reference and the converter throws.
//! Such properties are removed from `properties` and `required`, and a closed object is opened so the
//! value can still be sent as any other property (lossy, recorded).

use super::Probe;
use crate::schema::lookup::Lookup;
use crate::schema::walk::{post_order_cx, push_escaped};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};

fn unspellable(name: &str) -> bool {
    // bytes, not chars: every character asked about is ASCII, and no byte of a longer one is below 0x80
    name == "$ref" || name.bytes().any(|c| c == b'"' || c == b'\\' || c < b' ')
}

/// Whether the pass may change `node` ([`super::Pass::acts`]): a property or a required name it
/// removes.
pub fn acts(node: &Map<String, Value>, _: &Probe, _: &crate::schema::walk::Place) -> bool {
    node.at("properties").and_then(Value::as_object).is_some_and(|p| p.keys().any(|k| unspellable(k)))
        || node.at("required").and_then(Value::as_array).is_some_and(|r| r.iter().filter_map(Value::as_str).any(unspellable))
}

/// Passes that must run before this one in a profile's list: nothing: it reads `properties` as written.
pub const AFTER: &[&str] = &[];

pub fn run(root: &mut Value, cx: &mut Cx) {
    post_order_cx(root, cx, &mut |node, path, cx| {
        let mut gone: Vec<String> = Vec::new();
        if let Some(Value::Object(props)) = node.at_mut("properties") {
            gone = props.keys().filter(|k| unspellable(k)).cloned().collect();
            for k in &gone {
                props.shift_remove(k);
            }
        }
        if let Some(Value::Array(req)) = node.at_mut("required") {
            for r in req.iter().filter_map(Value::as_str) {
                if unspellable(r) && !gone.iter().any(|g| g == r) {
                    gone.push(r.to_string());
                }
            }
            req.retain(|r| !r.as_str().is_some_and(unspellable));
        }
        if gone.is_empty() {
            return;
        }
        if node.at("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            node.remove("required");
        }
        if node.at("additionalProperties").is_some_and(|a| a != &Value::Bool(true)) {
            node.remove("additionalProperties");
        }
        for g in gone {
            let mut p = format!("{path}/properties/");
            push_escaped(&mut p, &g);
            cx.record(&p, Kind::PropertyUnspellable, format!("property {} cannot be written in every llama.cpp grammar; removed", Value::String(g)));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Context, Options};
    use serde_json::json;

    #[test]
    fn quotes_backslashes_controls_and_ref_go_ordinary_names_stay() {
        let mut v = json!({"type": "object", "properties": {"a\"b": {}, "a\\b": {}, "a\nb": {}, "$ref": {"type": "string"}, "ok-é b": {}},
                           "required": ["a\"b", "ok-é b"], "additionalProperties": false});
        let opts = Options::default();
        let mut cx = Cx::new("t", Context::Tool, &opts, &crate::schema::profile::LLAMA_CPP.target);
        run(&mut v, &mut cx);
        assert_eq!(v, json!({"type": "object", "properties": {"ok-é b": {}}, "required": ["ok-é b"]}));
        assert_eq!(cx.report.lossy_count(), 4);
        // each record's path is the removed property's JSON pointer (`~1` for a slash in its name)
        let mut v = json!({"properties": {"o": {"type": "object", "properties": {"a\"/b": {}}}}});
        let mut cx = Cx::new("t", Context::Tool, &opts, &crate::schema::profile::LLAMA_CPP.target);
        run(&mut v, &mut cx);
        let paths: Vec<&str> = cx.report.records.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["/properties/o/properties/a\"~1b"]);
    }
}
