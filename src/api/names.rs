//! Function names the API refuses, sent under names it takes.
//!
//! MCP allows `.`, `/` and 64 characters (and clients prefix server names); OpenAI takes
//! `[a-zA-Z0-9_-]{1,64}`, Anthropic the same up to 128, Gemini wants a letter or `_` first. A tool
//! whose name the profile's [`Names`] rule refuses gets a readable, deterministic name: refused
//! characters become `_`, and where that is too long or taken, a cut with a hash of the original.
//! Every place the request names the tool is renamed alike (tool choice, earlier calls in the
//! conversation), and the map goes with the request so the response can say the original again.

use super::namemap::NameMap;
use super::raw::{self, Step};
use super::{Edit, Format};
use crate::api::raw::Raw;
use crate::schema::target::Names;
use crate::schema::{Kind, Record, Report};
use std::collections::{HashMap, HashSet};

fn values<'a>(top: Raw<'a>, paths: &[&[Step]]) -> Vec<Raw<'a>> {
    let mut out = Vec::new();
    for p in paths {
        raw::walk(top, p, &mut out);
    }
    out
}

fn string(v: Raw<'_>) -> Option<String> {
    serde_json::from_str::<String>(v.get()).ok()
}

/// The renames `text` needs under `rule`: the edits (byte range, new JSON string), the map and one
/// record per renamed tool. `None` when every declared name is valid (or the text is not JSON).
pub fn plan(text: &str, format: Format, rule: &Names) -> Option<(Vec<Edit>, NameMap, Report)> {
    let top = raw::value(text)?;
    let d = format.descriptor()?;
    let decls = values(top, d.declared);
    let names: Vec<(usize, Raw<'_>, String)> = decls.iter().filter_map(|v| Some((raw::offset(text, v.get())?, *v, string(*v)?))).collect();
    if names.iter().all(|(_, _, n)| rule.allows(n)) {
        return None;
    }
    let mut taken: HashSet<String> = names.iter().filter(|(_, _, n)| rule.allows(n)).map(|(_, _, n)| n.clone()).collect();
    let mut map = NameMap::default();
    let mut by_original: HashMap<String, String> = HashMap::new();
    let mut report = Report::default();
    for (_, _, n) in &names {
        if rule.allows(n) || by_original.contains_key(n) {
            continue;
        }
        let sent = rule.assign(n, &taken);
        taken.insert(sent.clone());
        report.push(Record { tool: n.clone(), path: String::new(), kind: Kind::NameMapped, detail: format!("sent as {sent:?}: the API refuses the name") });
        by_original.insert(n.clone(), sent.clone());
        map.renamed.push((sent, n.clone()));
    }
    let mut edits = Vec::new();
    let again = values(top, d.mentioned);
    for v in decls.iter().chain(again.iter()) {
        let (Some(at), Some(n)) = (raw::offset(text, v.get()), string(*v)) else { continue };
        if let Some(sent) = by_original.get(&n) {
            edits.push(Edit::new(at, at + v.get().len(), serde_json::Value::String(sent.to_string()).to_string()));
        }
    }
    Some((edits, map, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(text: &str, edits: &[Edit]) -> String {
        super::super::splice(text, edits.to_vec())
    }

    #[test]
    fn refused_names_are_mapped_everywhere_the_request_names_them() {
        let body = r#"{"tools":[{"type":"function","function":{"name":"github.create_issue","parameters":{}}},{"type":"function","function":{"name":"ok_name"}}],
            "tool_choice":{"type":"function","function":{"name":"github.create_issue"}},
            "messages":[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"github.create_issue","arguments":"{}"}}]}]}"#;
        let (edits, map, report) = plan(body, Format::OpenAiChat, &Names::OPENAI).unwrap();
        assert_eq!(map.renamed, vec![("github_create_issue".to_string(), "github.create_issue".to_string())]);
        assert_eq!(edits.len(), 3);
        let out = apply(body, &edits);
        assert!(!out.contains("github.create_issue") && out.matches("github_create_issue").count() == 3, "{out}");
        assert!(out.contains("\"ok_name\""));
        assert_eq!(report.records[0].kind, Kind::NameMapped);
        assert!(plan(&out, Format::OpenAiChat, &Names::OPENAI).is_none(), "the output needs nothing more");
    }

    #[test]
    fn names_are_unique_valid_and_deterministic() {
        let long = "x".repeat(100);
        let body = serde_json::json!({"tools": [
            {"name": "a.b"}, {"name": "a_b"}, {"name": "a/b"}, {"name": long}, {"name": format!("{long}y")}, {"name": "ünï"}, {"name": ""}
        ]})
        .to_string();
        for rule in [Names::OPENAI, Names::ANTHROPIC, Names::GEMINI] {
            let (_, map, _) = plan(&body, Format::Anthropic, &rule).unwrap();
            let (_, again, _) = plan(&body, Format::Anthropic, &rule).unwrap();
            assert_eq!(map, again);
            let mut sent: Vec<&str> = map.renamed.iter().map(|(s, _)| s.as_str()).collect();
            sent.push("a_b");
            assert!(sent.iter().all(|s| rule.allows(s)), "{sent:?}");
            let unique: HashSet<&&str> = sent.iter().collect();
            assert_eq!(unique.len(), sent.len(), "{sent:?}");
        }
        let (_, map, _) = plan(&body, Format::Anthropic, &Names::ANTHROPIC).unwrap();
        assert!(map.sent(&long).is_none(), "100 characters fit Anthropic's 128");
        let (_, map, _) = plan(&body, Format::Anthropic, &Names::OPENAI).unwrap();
        let sent = map.sent(&long).unwrap();
        assert!(sent.len() == 64 && sent.starts_with("xxxx"), "{sent}");
        assert_eq!(map.original(sent), Some(long.as_str()));
    }

    #[test]
    fn gemini_names_start_with_a_letter_and_keep_dots() {
        let body = r#"{"tools":[{"functionDeclarations":[{"name":"9lives"},{"name":"ns:tool.v1"}]}],"contents":[{"parts":[{"functionCall":{"name":"9lives","args":{}}}]}]}"#;
        let (edits, map, _) = plan(body, Format::Gemini, &Names::GEMINI).unwrap();
        assert_eq!(map.renamed, vec![("_9lives".to_string(), "9lives".to_string())]);
        assert_eq!(edits.len(), 2);
    }
}
