//! What a response needs from its request, and the repair and check of one call or one document.

use super::tally::{Call, Tally};
use crate::api::format::{Args, CallPath, ErrorShape};
use crate::api::raw;
use crate::api::NameMap;
use crate::api::{self, Format};
use crate::filter::config::OnInvalid;
use crate::schema::passes::property_names;
use crate::schema::validate::{self, Violation};
use crate::schema::{Kind, Report};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// A tool as the client declared it.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The name the model saw.
    pub sent: String,
    /// The client's name.
    pub name: String,
    /// The client's schema, as it came.
    pub schema: String,
    /// Whether the rewrite made optional properties required-and-nullable.
    pub nulls: bool,
    /// Schema paths of the lossy changes made to it.
    pub lossy: Vec<String>,
    /// Property names sent in place of ones the API refuses: (sent, original), unique in the tool.
    pub keys: Vec<(String, String)>,
    /// The namespace the client declared it in, where it was sent lifted out of it (`api::lift`):
    /// its calls get `namespace` back beside the name.
    pub namespace: Option<String>,
}

/// Everything the response needs from its request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub format: Format,
    pub validate: bool,
    pub on_invalid: OnInvalid,
    /// The most bytes held at once (a stream event, a plain body); past it the rest goes on unrepaired.
    pub max_bytes: usize,
    /// Route label and profile of the request's counters.
    pub route: String,
    pub profile: &'static str,
    /// Whether the request's rewrite mapped a name or made a null the response must undo.
    repairs: bool,
    /// The declared tools, read from `source` when a response first carries a call: most responses
    /// carry none, and the request path does not pay for reading them.
    tools: std::cell::OnceCell<Vec<Tool>>,
    source: Option<Source>,
}

/// What the tools are read from.
#[derive(Debug, Clone)]
struct Source {
    /// The request's tool lists, as the client sent them (`{"tools": [...]}`), or the whole request
    /// when it is mostly its lists (see [`api::BodyOutcome::tool_lists_of`]); read at the first call.
    lists: Vec<u8>,
    names: NameMap,
    /// The tools whose rewrite made nulls (`None`: all may have, the report lost count).
    nullable: Option<HashSet<String>>,
    lossy: HashMap<String, Vec<String>>,
    keys: HashMap<String, Vec<(String, String)>>,
}

impl Source {
    fn read(&self, format: Format) -> Vec<Tool> {
        let sent: HashMap<&str, &str> = self.names.renamed.iter().map(|(s, o)| (o.as_str(), s.as_str())).collect();
        let text = api::skim::text(&self.lists);
        let sites = text.map(|t| api::locate_tools(t, format)).unwrap_or_default();
        let mut tools: Vec<Tool> = sites.iter().map(|s| self.tool(sent.get(s.tool.as_str()).copied().unwrap_or(&s.tool), &s.tool, s.raw.get(), None)).collect();
        // a lifted tool is known by its namespace too: two namespaces may each have a `search`
        if let (false, Some(t)) = (self.names.lifted.is_empty(), text) {
            let schemas = api::lift::schemas(t, format);
            for l in &self.names.lifted {
                let schema = schemas.iter().find(|(ns, n, _)| *ns == l.namespace && *n == l.name).map_or("{}", |(_, _, s)| s.as_str());
                tools.push(self.tool(&l.sent, &l.name, schema, Some(l.namespace.clone())));
            }
        }
        tools
    }

    fn tool(&self, sent: &str, name: &str, schema: &str, namespace: Option<String>) -> Tool {
        Tool {
            sent: sent.to_string(),
            name: name.to_string(),
            schema: schema.to_string(),
            nulls: self.nullable.as_ref().is_none_or(|n| n.contains(name)),
            lossy: self.lossy.get(name).cloned().unwrap_or_default(),
            keys: self.keys.get(name).cloned().unwrap_or_default(),
            namespace,
        }
    }
}

/// Whether a call is seen for the first time (checked and counted) or said again whole (a stream's
/// closing summary: repaired the same, counted once already).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seen {
    First,
    Again,
}

/// A call's repaired name and arguments (`None`: as the model wrote them).
#[derive(Debug, Clone, Default)]
pub(super) struct Fixed {
    pub(super) name: Option<String>,
    pub(super) args: Option<String>,
    /// The namespace the name goes back into (a tool lifted out of one).
    pub(super) namespace: Option<String>,
}

impl Fixed {
    /// What the name's JSON string is replaced with: the client's name and, for a tool lifted out
    /// of a namespace, a `namespace` member after it (the call's object, or the stream event's).
    pub(super) fn name_text(&self) -> Option<String> {
        let mut name = quoted(self.name.as_ref()?);
        if let Some(ns) = &self.namespace {
            name.push_str(",\"namespace\":");
            name.push_str(&quoted(ns));
        }
        Some(name)
    }
}

/// Gives every object key in `v` that is a sent property name its original back (the names are
/// unique in the tool and never a valid original, so any depth is safe); returns how many.
fn restore_keys(v: &mut Value, keys: &[(String, String)]) -> usize {
    let mut n = 0;
    match v {
        Value::Object(m) => {
            if m.keys().any(|k| keys.iter().any(|(s, _)| s == k)) {
                let old = std::mem::take(m);
                for (k, val) in old {
                    match keys.iter().find(|(s, _)| *s == k) {
                        Some((_, original)) => {
                            n += 1;
                            m.insert(original.clone(), val);
                        }
                        None => {
                            m.insert(k, val);
                        }
                    }
                }
            }
            for val in m.values_mut() {
                n += restore_keys(val, keys);
            }
        }
        Value::Array(a) => {
            for val in a {
                n += restore_keys(val, keys);
            }
        }
        _ => {}
    }
    n
}

/// A JSON string's value.
fn text_of(v: raw::Raw<'_>) -> Option<String> {
    serde_json::from_str::<String>(v.get()).ok()
}

pub(super) fn quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Whether a schema path lies at or under one of `lossy`.
fn under(path: &str, lossy: &[String]) -> bool {
    lossy.iter().any(|p| p.is_empty() || p == "/" || path == p || path.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with('/')))
}

impl Reply {
    /// The reply for a request: its tool lists as the client sent them (see
    /// [`api::BodyOutcome::tool_lists_of`]), the names the rewrite changed and its report.
    pub fn of(lists: Vec<u8>, format: Format, names: NameMap, report: &Report, validate: bool, on_invalid: OnInvalid, max_bytes: usize) -> Reply {
        // a report past its record cap may not name every tool made nullable: then every tool is taken
        // as one (only nulls the client's schema refuses for an optional property are removed, and
        // those the MCP server would refuse anyway)
        let made = report.counters.contains_key(&Kind::OptionalNullable);
        let mut nullable = HashSet::new();
        let mut lossy: HashMap<String, Vec<String>> = HashMap::new();
        let mut keys: HashMap<String, Vec<(String, String)>> = HashMap::new();
        for r in &report.records {
            if r.kind == Kind::OptionalNullable {
                nullable.insert(r.tool.clone());
            }
            if let Some(pair) = (r.kind == Kind::PropertyMapped).then(|| property_names::mapping(&r.detail)).flatten() {
                keys.entry(r.tool.clone()).or_default().push(pair);
            }
            if r.kind.lossy() {
                lossy.entry(r.tool.clone()).or_default().push(r.path.clone());
            }
        }
        let nullable = (!made || report.dropped_records == 0).then_some(nullable);
        let repairs = made || !names.is_empty() || !keys.is_empty();
        let source = Source { lists, names, nullable, lossy, keys };
        Reply { format, validate, on_invalid, max_bytes, route: String::new(), profile: "", repairs, tools: Default::default(), source: Some(source) }
    }

    /// A reply for tools known already (tests, benchmarks).
    pub fn with_tools(format: Format, tools: Vec<Tool>, validate: bool, on_invalid: OnInvalid, max_bytes: usize) -> Reply {
        let repairs = tools.iter().any(|t| t.sent != t.name || t.nulls || !t.keys.is_empty());
        Reply { format, validate, on_invalid, max_bytes, route: String::new(), profile: "", repairs, tools: tools.into(), source: None }
    }

    /// The tools the request declared.
    pub fn tools(&self) -> &[Tool] {
        self.tools.get_or_init(|| self.source.as_ref().map(|s| s.read(self.format)).unwrap_or_default())
    }

    /// Whether a response may need changing (else it is only read).
    /// Bytes this reply keeps, as the memory of the requests in flight counts them: its tool lists,
    /// twice (the tools are read from them when a response first carries a call).
    pub fn held_bytes(&self) -> usize {
        self.source.as_ref().map_or(0, |s| s.lists.len().saturating_mul(2))
    }

    pub fn repairs(&self) -> bool {
        self.repairs
    }

    /// Whether the response is worth reading at all.
    pub fn wanted(&self) -> bool {
        self.validate || self.repairs()
    }

    fn tool(&self, sent: &str) -> Option<&Tool> {
        self.tools().iter().find(|t| t.sent == sent)
    }

    /// Repairs and checks one call: `name` as the model wrote it, `args` the arguments' JSON text.
    pub(super) fn fix(&self, name: &str, args: &str, seen: Seen, tally: &mut Tally) -> Fixed {
        let count = seen == Seen::First;
        let mut out = Fixed::default();
        let Some(tool) = self.tool(name) else {
            if count && self.validate {
                let v =
                    Violation { instance: "/".into(), schema: String::new(), reason: format!("the model called {name:?}, which the request does not declare") };
                tally.calls.push(Call { tool: name.to_string(), violation: Some(v), lossy: false });
            }
            return out;
        };
        if tool.sent != tool.name {
            out.name = Some(tool.name.clone());
            out.namespace = tool.namespace.clone();
            tally.names_restored += 1;
        }
        let args = if args.trim().is_empty() { "{}" } else { args };
        let mut value = serde_json::from_str::<Value>(args).ok();
        let schema = serde_json::from_str::<Value>(&tool.schema).ok();
        if let (Some(v), false) = (value.as_mut(), tool.keys.is_empty()) {
            let n = restore_keys(v, &tool.keys);
            if n > 0 {
                tally.properties_restored += n as u64;
                out.args = Some(v.to_string());
            }
        }
        if let (Some(v), Some(s), true) = (value.as_mut(), schema.as_ref(), tool.nulls) {
            let n = validate::strip_injected_nulls(s, v);
            if n > 0 {
                tally.nulls_removed += n as u64;
                out.args = Some(v.to_string());
            }
        }
        if count && self.validate {
            let violation = match (&value, &schema) {
                (None, _) => Some(Violation { instance: "/".into(), schema: String::new(), reason: "the arguments are not JSON".into() }),
                (Some(v), Some(s)) => validate::validate(s, v).err(),
                (Some(_), None) => None,
            };
            let lossy = violation.as_ref().is_some_and(|v| under(&v.schema, &tool.lossy));
            tally.calls.push(Call { tool: tool.name.clone(), violation, lossy });
        }
        out
    }

    /// The calls of a complete JSON document at `paths`, repaired: the new text if anything changed.
    pub(super) fn repair_doc(&self, text: &str, paths: &[CallPath], seen: Seen, tally: &mut Tally) -> Option<String> {
        let top = raw::value(text)?;
        let mut edits: Vec<api::Edit> = Vec::new();
        for p in paths {
            let mut found = Vec::new();
            raw::walk(top, p.at, &mut found);
            for c in found {
                let Some(o) = raw::object(c.get()) else { continue };
                if p.kind.is_some_and(|k| o.str("type").as_deref() != Some(k)) {
                    continue;
                }
                let (Some(name_v), Some(name)) = (o.get(p.name), o.str(p.name)) else { continue };
                let args_v = o.get(p.args);
                let args = match (args_v, p.spelled) {
                    (Some(a), Args::Text) => text_of(a).unwrap_or_else(|| a.get().to_string()),
                    (Some(a), Args::Object) => a.get().to_string(),
                    (None, _) => "{}".to_string(),
                };
                let fixed = self.fix(&name, &args, seen, tally);
                if let (Some(new), Some(at)) = (fixed.name_text(), raw::offset(text, name_v.get())) {
                    edits.push(api::Edit::new(at, at + name_v.get().len(), new));
                }
                if let (Some(new), Some(a)) = (fixed.args, args_v) {
                    if let Some(at) = raw::offset(text, a.get()) {
                        edits.push(api::Edit::new(at, at + a.get().len(), if p.spelled == Args::Text { quoted(&new) } else { new }));
                    }
                }
            }
        }
        (!edits.is_empty()).then(|| api::splice(text, edits))
    }

    /// Where a whole response of the request's format carries calls.
    pub(super) fn calls(&self) -> &'static [CallPath] {
        self.format.descriptor().map_or(&[], |d| d.calls)
    }

    /// Repairs a whole JSON response body. `None`: forward it as it is.
    pub fn repair_json(&self, body: &[u8], tally: &mut Tally) -> Option<Vec<u8>> {
        let text = crate::api::skim::text(body)?;
        let before = tally.clone();
        let (out, placed) = crate::api::raw::placed(|| self.repair_doc(text, self.calls(), Seen::First, tally));
        if !placed {
            // toolfit's own mistake: the body goes on as it came, said as unrepaired
            *tally = Tally { unrepaired: before.unrepaired + 1, ..before };
            return None;
        }
        out.map(String::into_bytes)
    }

    /// The error a rejected response answers with: the format's error shape where it has one.
    pub fn rejection(&self, call: &Call) -> Vec<u8> {
        let (path, why) = call.violation.as_ref().map(|v| (v.instance.as_str(), v.reason.as_str())).unwrap_or(("/", ""));
        let message = format!("the model's call to tool {:?} does not match the tool's schema at {path}: {why}", call.tool);
        ErrorShape::of(self.format).body(502, "toolfit_invalid_tool_call", &message, &call.tool, path)
    }
}

/// The most one compressed chunk may decode to: the body limit, and never less than 1 MiB (a
/// chunk of a long stream is small, but compresses well).
pub fn decode_limit(reply: &Reply) -> usize {
    reply.max_bytes.max(1 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_come_back_at_any_depth_and_are_counted() {
        let keys = [("a_b".to_string(), "a.b".to_string())];
        let mut v = json!({"a_b": 1, "x": [{"a_b": 2}, {"y": {"a_b": 3}}], "z": 0});
        assert_eq!(restore_keys(&mut v, &keys), 3);
        assert_eq!(v, json!({"a.b": 1, "x": [{"a.b": 2}, {"y": {"a.b": 3}}], "z": 0}));
        let mut list = json!([{"a_b": 1}, {"a_b": 2}]);
        assert_eq!(restore_keys(&mut list, &keys), 2, "the items of a top-level array");
        let mut none = json!({"c": [1]});
        assert_eq!(restore_keys(&mut none, &keys), 0);
    }

    #[test]
    fn a_path_is_under_a_lossy_place_at_or_below_it() {
        let lossy = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(under("/properties/a", &lossy(&[""])), "the root");
        assert!(under("/properties/a", &lossy(&["/"])), "the root, spelled /");
        assert!(under("/properties/a", &lossy(&["/x", "/properties/a"])));
        assert!(under("/properties/a/items", &lossy(&["/properties/a"])));
        assert!(!under("/properties/ab", &lossy(&["/properties/a"])), "a sibling with a longer name");
        assert!(!under("/properties/a", &lossy(&["/properties/a/items"])));
        assert!(!under("/properties/a", &lossy(&[])));
    }

    #[test]
    fn a_chunk_may_decode_to_the_body_limit_and_at_least_a_mebibyte() {
        let r = |max| Reply::with_tools(Format::OpenAiChat, Vec::new(), true, OnInvalid::Count, max);
        assert_eq!(decode_limit(&r(1000)), 1 << 20);
        assert_eq!(decode_limit(&r(8 << 20)), 8 << 20);
    }

    #[test]
    fn rejections_take_the_format_error_shape() {
        let call = Call { tool: "t".into(), violation: None, lossy: false };
        let of = |f| serde_json::from_slice::<Value>(&Reply::with_tools(f, Vec::new(), true, OnInvalid::Reject, 1).rejection(&call)).ok();
        let typed = of(Format::Anthropic).unwrap_or_default();
        assert_eq!((typed["type"].as_str(), typed["error"]["type"].as_str()), (Some("error"), Some("toolfit_invalid_tool_call")));
        let plain = of(Format::OpenAiChat).unwrap_or_default();
        assert_eq!((plain.get("type"), plain["error"]["tool"].as_str()), (None, Some("t")));
    }
}
