//! Property names the API refuses in a tool's parameters.
//!
//! Gemini's `parameters` take property names of `[A-Za-z0-9_]`, a letter or `_` first, 64 at most
//! (its JSON Schema field takes any); MCP tools name properties `issue-key`, `page.size`,
//! `@timestamp`. Each such name is sent under one valid name, unique in the tool (the target's
//! rule spells it: refused characters become `_`, a cut and a hash when taken or long), everywhere
//! the schema says it: `properties`, `required`, `propertyOrdering`. The model then writes the sent
//! keys, and the response path gives every argument key its original back (the record's detail
//! carries the pair, read by [`mapping`]). Exact: the keys change, not what they hold.

use crate::schema::lookup::Lookup;
use crate::schema::walk::{post_order, push_escaped};
use crate::schema::{Context, Cx, Kind};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Passes that must run before this one in a profile's list: the ones that bring properties in
/// from elsewhere (definitions inlined, `allOf` branches merged), so every name is seen here.
pub const AFTER: &[&str] = &["refs", "all_of"];

const PREFIX: &str = "property ";
const SENT_AS: &str = " sent as ";

/// Every name the schema gives a property, in order of first appearance.
fn names(root: &mut Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    post_order(root, "", &mut |node, _| {
        let keys = node.at("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        let listed = ["required", "propertyOrdering"].iter().flat_map(|k| node.at(k).and_then(Value::as_array).into_iter().flatten());
        let listed: Vec<String> = listed.filter_map(Value::as_str).map(str::to_string).collect();
        for k in keys.into_iter().chain(listed) {
            if seen.insert(k.clone()) {
                out.push(k);
            }
        }
    });
    out
}

fn rename_list(node: &mut Map<String, Value>, key: &str, map: &HashMap<String, String>) {
    if let Some(Value::Array(list)) = node.at_mut(key) {
        for v in list.iter_mut() {
            if let Some(new) = v.as_str().and_then(|s| map.get(s)) {
                *v = Value::String(new.clone());
            }
        }
    }
}

pub fn run(root: &mut Value, cx: &mut Cx) {
    let Some(rule) = cx.target.property_names else { return };
    if cx.context != Context::Tool || !cx.opts.rename_properties {
        return;
    }
    let all = names(root);
    if all.iter().all(|n| rule.allows(n)) {
        return;
    }
    let mut taken: HashSet<String> = all.iter().filter(|n| rule.allows(n)).cloned().collect();
    let mut map: HashMap<String, String> = HashMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for n in all.iter().filter(|n| !rule.allows(n)) {
        let sent = rule.assign(n, &taken);
        taken.insert(sent.clone());
        map.insert(n.clone(), sent.clone());
        order.push((n.clone(), sent));
    }
    let mut first_at: HashMap<String, String> = HashMap::new();
    post_order(root, "", &mut |node, path| {
        if let Some(Value::Object(props)) = node.at_mut("properties") {
            if props.keys().any(|k| map.contains_key(k)) {
                // rebuilt in order: a key keeps its place among the others
                let old = std::mem::take(props);
                for (k, v) in old {
                    match map.get(&k) {
                        Some(new) => {
                            let mut p = format!("{path}/properties/");
                            push_escaped(&mut p, &k);
                            first_at.entry(k.clone()).or_insert(p);
                            props.insert(new.clone(), v);
                        }
                        None => {
                            props.insert(k, v);
                        }
                    }
                }
            }
        }
        rename_list(node, "required", &map);
        rename_list(node, "propertyOrdering", &map);
    });
    for (original, sent) in order {
        let at = first_at.get(&original).cloned().unwrap_or_default();
        cx.record(&at, Kind::PropertyMapped, format!("{PREFIX}{}{SENT_AS}{}", Value::String(original), Value::String(sent)));
    }
}

/// The (sent, original) pair a `property_mapped` record's detail carries.
pub fn mapping(detail: &str) -> Option<(String, String)> {
    let rest = detail.strip_prefix(PREFIX)?;
    let mut it = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    let original = it.next()?.ok()?;
    let after = rest.get(it.byte_offset()..)?.strip_prefix(SENT_AS)?;
    let sent: String = serde_json::from_str(after).ok()?;
    Some((sent, original))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Options, Target};
    use serde_json::json;

    fn cx<'a>(opts: &'a Options, target: &'a Target, context: Context) -> Cx<'a> {
        Cx::new("t", context, opts, target)
    }

    #[test]
    fn refused_names_are_sent_valid_and_unique_and_the_records_give_them_back() {
        let mut v = json!({"type": "object", "properties": {
            "issue-key": {"type": "string"}, "issue_key": {"type": "string"}, "ok": {"type": "string"},
            "nested": {"type": "object", "properties": {"page.size": {"type": "integer"}, "9lives": {}}, "required": ["page.size"]}
        }, "required": ["issue-key", "ok"], "propertyOrdering": ["issue-key", "issue_key", "ok", "nested"]});
        let opts = Options::default();
        let mut c = cx(&opts, &Target::GEMINI, Context::Tool);
        run(&mut v, &mut c);
        let props: Vec<&str> = v["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(props.len(), 4);
        assert_eq!(props[1], "issue_key", "a valid name stays");
        assert!(props[0].starts_with("issue_key_") && props[0].len() == "issue_key_".len() + 8, "taken: a hash makes it unique: {props:?}");
        assert_eq!(v["required"], json!([props[0], "ok"]));
        assert_eq!(v["propertyOrdering"][0], json!(props[0]));
        assert_eq!(v["properties"]["nested"]["required"], json!(["page_size"]));
        assert!(v["properties"]["nested"]["properties"].get("_9lives").is_some());
        let pairs: Vec<(String, String)> = c.report.records.iter().filter(|r| r.kind == Kind::PropertyMapped).filter_map(|r| mapping(&r.detail)).collect();
        assert_eq!(pairs.len(), 3);
        assert!(pairs.contains(&("page_size".into(), "page.size".into())) && pairs.contains(&("_9lives".into(), "9lives".into())));
        assert_eq!(c.report.lossy_count(), 0);
        // each record sits at the property's JSON pointer where the name first appears
        let mut at: Vec<&str> = c.report.records.iter().map(|r| r.path.as_str()).collect();
        at.sort_unstable();
        assert_eq!(at, ["/properties/issue-key", "/properties/nested/properties/9lives", "/properties/nested/properties/page.size"]);
    }

    #[test]
    fn other_targets_outputs_and_valid_names_are_left_alone() {
        let v0 = json!({"type": "object", "properties": {"a-b": {"type": "string"}}});
        let opts = Options::default();
        for (target, context) in [(Target::GEMINI_JSON, Context::Tool), (Target::GEMINI, Context::Output), (Target::OPENAI, Context::Tool)] {
            let mut v = v0.clone();
            run(&mut v, &mut cx(&opts, &target, context));
            assert_eq!(v, v0);
        }
        assert_eq!(mapping(r#"property "a \" sent as b" sent as "a__sent_as_b""#), Some(("a__sent_as_b".into(), "a \" sent as b".into())));
    }
}
