//! Tools inside a Responses API namespace, lifted into the top-level list for a server that reads
//! none there ([`Namespaces::Lift`]).
//!
//! Codex sends every MCP server's tools inside `{"type": "namespace", "name": "mcp__<server>",
//! "tools": [...]}`; llama-server 2026-10 keeps only top-level `function` tools, so its model never
//! sees them and Codex cannot have them called. Each namespace's list is spliced into the top-level
//! list in its place by two deletions (the namespace's head up to its list's `[`, and from the `]` to
//! its closing `}`), so the schema edits inside stand; each of its tools is renamed
//! `<namespace>__<name>` (Claude Code's spelling of an MCP tool), and each earlier call in `input` that
//! names that namespace is renamed alike. The response gets `name` and `namespace` back
//! (`filter::response`), which is how Codex finds the MCP tool to run.
//!
//! A namespace is left as it came when lifting it could mislead: a tool in it that is not a function
//! tool (a `custom` tool has no top-level spelling the server reads either), a tool without a name,
//! or a lifted name another tool already has.

use super::namemap::{Lifted, NameMap};
use super::raw::{self, values_at, Raw};
use super::{Edit, Format};
use crate::schema::target::Namespaces;
use crate::schema::{Kind, Record, Report};

/// The top-level name of tool `name` of `namespace`.
pub fn sent_name(namespace: &str, name: &str) -> String {
    format!("{namespace}__{name}")
}

/// One namespace of the request: its whole value, its name, its list, and its tools as
/// (name value, name, whole tool).
struct Space<'a> {
    whole: Raw<'a>,
    name: String,
    list: Raw<'a>,
    tools: Vec<(Raw<'a>, String, Raw<'a>)>,
}

/// The namespaces of `text`'s tool lists that can be lifted, and the names of the other tools.
fn spaces(text: &str, format: Format) -> (Vec<Space<'_>>, Vec<String>) {
    let mut out = Vec::new();
    let mut taken = Vec::new();
    let (Some(d), Some(top)) = (format.descriptor(), raw::object(text)) else { return (out, taken) };
    let Some(nested) = d.tools.nested else { return (out, taken) };
    for path in d.tools.lists {
        for list in values_at(&top, path) {
            let Some(items) = raw::array(list.get()) else { continue };
            for item in items.0 {
                let Some(o) = raw::object(item.get()) else { continue };
                if o.str("type").as_deref() != Some(nested.kind) {
                    taken.extend(o.str("name"));
                    continue;
                }
                let (Some(name), Some(inner)) = (o.str("name"), o.get(nested.key)) else { continue };
                let Some(inner_items) = raw::array(inner.get()) else { continue };
                let mut tools = Vec::new();
                for t in &inner_items.0 {
                    let Some(to) = raw::object(t.get()) else { break };
                    let (Some(v), Some(n), Some("function")) = (to.get("name"), to.str("name"), to.str("type").as_deref()) else { break };
                    tools.push((v, n, *t));
                }
                if !tools.is_empty() && tools.len() == inner_items.0.len() {
                    out.push(Space { whole: item, name, list: inner, tools });
                }
            }
        }
    }
    (out, taken)
}

/// The edits that lift every namespace of `text` (the request as it goes, schemas rewritten), the
/// tools lifted and one record each. `None` when the format has no namespaces or there is none.
// not inlined: the request path's one caller would carry a copy of it (Wasm size)
#[inline(never)]
pub fn plan(text: &str, format: Format, how: Namespaces) -> Option<(Vec<Edit>, NameMap, Report)> {
    if how == Namespaces::Read {
        return None;
    }
    let (spaces, mut taken) = spaces(text, format);
    if spaces.is_empty() {
        return None;
    }
    let mut edits = Vec::new();
    let mut lifted = Vec::new();
    let mut report = Report::default();
    for s in spaces {
        let sent: Vec<String> = s.tools.iter().map(|(_, n, _)| sent_name(&s.name, n)).collect();
        // each name once: among the lifted ones and the rest
        if sent.iter().enumerate().any(|(i, n)| taken.contains(n) || sent.get(..i).is_some_and(|b| b.contains(n))) {
            continue;
        }
        let (Some(at), Some(list_at)) = (raw::offset(text, s.whole.get()), raw::offset(text, s.list.get())) else { continue };
        let (end, list_end) = (at + s.whole.get().len(), list_at + s.list.get().len());
        let mut mine = vec![Edit::new(at, list_at + 1, ""), Edit::new(list_end.saturating_sub(1), end, "")];
        for ((v, name, _), new) in s.tools.iter().zip(&sent) {
            let Some(v_at) = raw::offset(text, v.get()) else { continue };
            mine.push(Edit::new(v_at, v_at + v.get().len(), serde_json::Value::String(new.clone()).to_string()));
            report.push(Record {
                tool: name.clone(),
                path: String::new(),
                kind: Kind::NamespaceLifted,
                detail: format!("sent as {new}, a top-level function tool: the server reads no tool inside namespace {}", s.name),
            });
            lifted.push(Lifted { sent: new.clone(), name: name.clone(), namespace: s.name.clone() });
        }
        taken.extend(sent);
        edits.extend(mine);
    }
    edits.extend(earlier_calls(text, &lifted));
    (!lifted.is_empty()).then_some((edits, NameMap { renamed: Vec::new(), lifted }, report))
}

/// Earlier calls in `input` (`{"type": "function_call", "name", "namespace"}`) to lifted tools,
/// renamed to the names the tools were sent under.
fn earlier_calls(text: &str, lifted: &[Lifted]) -> Vec<Edit> {
    let mut out = Vec::new();
    let Some(top) = raw::object(text) else { return out };
    for input in top.all("input") {
        let Some(items) = raw::array(input.get()) else { continue };
        for item in items.0 {
            let Some(o) = raw::object(item.get()) else { continue };
            if o.str("type").as_deref() != Some("function_call") {
                continue;
            }
            let (Some(v), Some(name), Some(ns)) = (o.get("name"), o.str("name"), o.str("namespace")) else { continue };
            let Some(l) = lifted.iter().find(|l| l.name == name && l.namespace == ns) else { continue };
            if let Some(at) = raw::offset(text, v.get()) {
                out.push(Edit::new(at, at + v.get().len(), serde_json::Value::String(l.sent.clone()).to_string()));
            }
        }
    }
    out
}

/// The schema text of each tool of each namespace in `lists` (the request's tool lists as the client
/// sent them), by (namespace, name): what a lifted tool's calls are checked against.
pub fn schemas(lists: &str, format: Format) -> Vec<(String, String, String)> {
    let (spaces, _) = spaces(lists, format);
    let mut out = Vec::new();
    for s in spaces {
        for (_, name, tool) in s.tools {
            let schema = raw::object(tool.get()).and_then(|o| o.get("parameters")).map_or_else(|| "{}".to_string(), |p| p.get().to_string());
            out.push((s.name.clone(), name, schema));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const BODY: &str = r#"{"model":"m","input":[{"type":"message","role":"user","content":"t"},
        {"type":"function_call","name":"now","namespace":"mcp__time","arguments":"{}","call_id":"c1"},
        {"type":"function_call_output","call_id":"c1","output":"12:00"}],
      "tools":[{"type":"function","name":"exec","parameters":{"type":"object"}},
        {"type":"namespace","name":"mcp__time","description":"d","tools":[
          {"type":"function","name":"now","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}},
          {"type":"function","name":"convert","parameters":{"type":"object"}}]},
        {"type":"web_search"}]}"#;

    #[test]
    fn namespace_tools_become_top_level_function_tools_and_earlier_calls_follow() {
        let (edits, lifted, report) = plan(BODY, Format::OpenAiResponses, Namespaces::Lift).unwrap_or_default();
        let out: Value = serde_json::from_str(&super::super::splice(BODY, edits)).unwrap_or_default();
        let names: Vec<&str> = out["tools"].as_array().into_iter().flatten().map(|t| t["name"].as_str().unwrap_or("-")).collect();
        assert_eq!(names, ["exec", "mcp__time__now", "mcp__time__convert", "-"]);
        assert_eq!(out["tools"][1]["parameters"], json!({"type":"object","properties":{"tz":{"type":"string"}}}));
        assert_eq!(out["tools"][3], json!({"type": "web_search"}));
        assert_eq!(out["input"][1]["name"], "mcp__time__now");
        assert_eq!(lifted.lifted[0], Lifted { sent: "mcp__time__now".into(), name: "now".into(), namespace: "mcp__time".into() });
        assert_eq!(report.records.len(), 2);
        assert!(report.records.iter().all(|r| r.kind == Kind::NamespaceLifted));
        assert_eq!(schemas(BODY, Format::OpenAiResponses)[0].2, r#"{"type":"object","properties":{"tz":{"type":"string"}}}"#);
    }

    #[test]
    fn a_target_that_reads_namespaces_and_other_formats_are_left_alone() {
        assert!(plan(BODY, Format::OpenAiResponses, Namespaces::Read).is_none());
        assert!(plan(BODY, Format::OpenAiChat, Namespaces::Lift).is_none());
        let flat = r#"{"model":"m","input":"x","tools":[{"type":"function","name":"a","parameters":{}}]}"#;
        assert!(plan(flat, Format::OpenAiResponses, Namespaces::Lift).is_none());
    }

    #[test]
    fn a_namespace_that_cannot_be_lifted_faithfully_stays() {
        // a custom tool inside, an empty list, and a lifted name another tool has
        for body in [
            r#"{"input":[],"tools":[{"type":"namespace","name":"n","tools":[{"type":"custom","name":"g"}]}]}"#,
            r#"{"input":[],"tools":[{"type":"namespace","name":"n","tools":[]}]}"#,
            r#"{"input":[],"tools":[{"type":"function","name":"n__a","parameters":{}},{"type":"namespace","name":"n","tools":[{"type":"function","name":"a"}]}]}"#,
        ] {
            assert!(plan(body, Format::OpenAiResponses, Namespaces::Lift).is_none(), "{body}");
        }
    }
}
