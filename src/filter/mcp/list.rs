//! A `tools/list` result as it goes to the client: each `inputSchema` rewritten for the client's
//! profile, an `outputSchema` only where it widens, names the profile refuses listed under names that
//! carry their way back, and what the route's `unfit` says for a tool whose rewrite loses meaning.

use super::*;
use crate::api::raw;
use crate::api::{self, Format};
use crate::api::{splice, Edit};
use crate::filter::config::Unfit;
use crate::filter::host::Env;
use crate::filter::log::{clip, Line};
use crate::filter::stats::{self, Stat};
use crate::schema::{Context, Kind, Record, Report};
use std::sync::Arc;

/// Counts and logs what a list's rewrite did; the message the client gets (`None`: as it came), of
/// `text`, the message rewritten (`None`: nothing changed).
pub(super) fn settle(env: &mut Env, leg: &Leg, listed: &List, text: Option<String>, id: &str) -> Option<String> {
    let m = &mut *env.metrics;
    leg.count(m, Stat::ToolsSeen, listed.tools as u64);
    leg.count(m, Stat::SchemasUnparsed, listed.unparsed as u64);
    leg.count_client(m, Stat::McpToolsListed, listed.tools.saturating_sub(listed.dropped) as u64);
    leg.count_client(m, Stat::McpToolsDropped, listed.dropped as u64);
    leg.count_client(m, Stat::McpOutputsKept, listed.outputs_kept as u64);
    stats::count_report(m, &leg.route, leg.profile.name, &listed.report);
    if let Some(line) = listed.line(leg) {
        env.say(&leg.route, line);
    }
    if let Some(err) = &listed.refused {
        leg.count_client(env.metrics, Stat::McpListsRefused, 1);
        if !leg.settings.observe() {
            return Some(refusal(id, err, leg));
        }
    }
    if leg.settings.observe() {
        return None;
    }
    text
}

/// Why a tool cannot be listed as its client needs it (`unfit: error`).
pub(super) struct Unfitting {
    tool: String,
    path: String,
    why: String,
}

/// The JSON-RPC error that answers a `tools/list` in place of its result.
pub(super) fn refusal(id: &str, u: &Unfitting, leg: &Leg) -> String {
    let path = if u.path.is_empty() { "/" } else { &u.path };
    let message = format!(
        "toolfit: tool {:?} of MCP server {} cannot be listed for {} (profile {}): its inputSchema at {path} {}",
        u.tool, leg.server, leg.client, leg.profile.name, u.why
    );
    // written out rather than built as a `Value`: the id goes back as the request wrote it (its text,
    // checked to be JSON), every string escaped by serde_json
    let q = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    let id = if serde_json::from_str::<serde_json::Value>(id).is_ok() { id } else { "null" };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":{},"data":{{"tool":{},"server":{},"path":{},"profile":{},"client":{},"reason":{}}}}}}}"#,
        q(&message),
        q(&u.tool),
        q(&leg.server),
        q(path),
        q(leg.profile.name),
        q(&leg.client),
        q(&u.why)
    )
}

/// Changes that keep or widen what a schema accepts: the only ones an `outputSchema` gets.
pub fn widens(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::RefsInlined
            | Kind::RefsRetargeted
            | Kind::RefsListed
            | Kind::DefinitionRenamed
            | Kind::RefWrapped
            | Kind::RefSiblingsDropped
            | Kind::AllofMerged
            | Kind::AnyofDistributed
            | Kind::OneofAsAnyof
            | Kind::OneofDisjoint
            | Kind::NeverDropped
            | Kind::NotDropped
            | Kind::KeywordRemoved
            | Kind::DialectNormalized
            | Kind::BooleanSchema
            | Kind::PatternRewritten
            | Kind::PatternRemoved
            | Kind::ObjectOpened
            | Kind::AnnotationMoved
            | Kind::DescriptionAdded
            | Kind::ParametersAdded
    )
}

/// A `tools/list` result as it goes to the client.
pub(super) struct List {
    /// The message rewritten (`None`: nothing changed).
    pub(super) text: Option<String>,
    tools: usize,
    dropped: usize,
    unparsed: usize,
    outputs_kept: usize,
    report: Report,
    /// Lossy or unreadable tools, for the line.
    unfit: Vec<(String, String, String)>,
    /// The server's names left out because they read like another tool's listed name.
    ambiguous: Vec<String>,
    pub(super) refused: Option<Unfitting>,
}

/// What the rewrite cache keeps of a list (its memo, by the `result`'s exact bytes): the result as
/// it goes to the client (`None`: unchanged) and what the rewrite said, without the message's text.
/// The cache's entry is `None` for a result that holds no list toolfit rewrites.
struct Memo {
    result: Option<String>,
    list: Arc<List>,
}

/// A list's rewrite as [`settle`] takes it: what it did, and the message rewritten.
pub(super) type Listing = (Arc<List>, Option<String>);

/// The answer to a `tools/list` whose result was rewritten before for this profile and options,
/// found without reading the message through: `Some(answer)` from the memo (`Some(None)`: as it came),
/// `None` where the memo has nothing or the message is not laid out as JSON-RPC answers are (then it
/// is read as any other). The candidate result runs from the first `"result":` to the last `}` before
/// the message's own; it is the message's result exactly when the memo holds those bytes (a whole
/// JSON value when stored) and the message with `{}` in their place is an object whose `result` is
/// that `{}`. A list of 1,409 tools then costs a hash, a compare and the bytes around it.
pub(super) fn recall(env: &mut Env, leg: &Leg, text: &str) -> Option<Option<String>> {
    env.cache.as_ref()?;
    let key = "\"result\"";
    let p = text.find(key)? + key.len();
    let p = p + text.get(p..)?.find(|c: char| !c.is_ascii_whitespace())?;
    let p = p + 1 + text.get(p..)?.strip_prefix(':')?.find(|c: char| !c.is_ascii_whitespace())?;
    let last = text.trim_end().len().checked_sub(1)?;
    let e = text.get(..last)?.rfind('}')? + 1;
    let (head, result, tail) = (text.get(..p)?, text.get(p..e)?, text.get(e..)?);
    if !result.starts_with('{') {
        return None;
    }
    let scope = memo_scope(env.config, leg);
    let memo = env.cache.as_deref_mut()?.memo::<Option<Arc<Memo>>>(scope, result)?;
    let rest = [head, "{}", tail].concat();
    let top = raw::object(&rest)?;
    let at = top.get("result").filter(|r| r.get() == "{}").and_then(|r| raw::offset(&rest, r.get()));
    if at != Some(head.len()) {
        return None;
    }
    if !leg.ids.is_empty() && !leg.ids.contains(&id_text(top.get("id"))) {
        return Some(None); // an answer to another request: as it came
    }
    let Some(m) = memo else { return Some(None) };
    let text = m.result.as_ref().map(|r| [head, r, tail].concat());
    Some(settle(env, leg, &m.list, text, top.get("id").map_or("null", |r| r.get())))
}

/// The memo's scope: the profile, the engine's options and what else a list's rewrite reads.
fn memo_scope(config: &crate::filter::config::Config, leg: &Leg) -> u64 {
    crate::api::cache::scope(&format!("mcp list {} {:?} {}", leg.profile.name, leg.unfit, leg.tailored()), &leg.options(config))
}

impl List {
    /// [`List::rewrite`] of a message whose `result` is the text `result`, kept in the rewrite cache
    /// as its memo (see [`recall`], which answers from it): agents list the same tools in every
    /// session, and a list of 1,409 tools sent again then costs a hash and a compare, not a rewrite.
    pub(super) fn cached(env: &mut Env, leg: &Leg, text: &str, result: &str) -> Option<Listing> {
        let listed = List::rewrite(env, leg, text).map(|mut l| {
            let new = l.text.take();
            (Arc::new(l), new)
        });
        let at = raw::offset(text, result).filter(|_| env.cache.is_some());
        let (Some(head), Some(tail)) = (at.and_then(|at| text.get(..at)), at.and_then(|at| text.get(at + result.len()..))) else { return listed };
        // only a rewrite that changed nothing outside the result is kept (always so today: the list
        // and its hint are inside it)
        let memo = match &listed {
            None => Some(None),
            Some((_, None)) => Some(Some(None)),
            Some((_, Some(t))) if t.starts_with(head) && t.ends_with(tail) && t.len() >= head.len() + tail.len() => {
                t.get(head.len()..t.len() - tail.len()).map(|r| Some(Some(r.to_string())))
            }
            Some(_) => None,
        };
        if let (Some(memo), Some(c)) = (memo, env.cache.as_deref_mut()) {
            let scope = memo_scope(env.config, leg);
            let memo = memo.zip(listed.as_ref()).map(|(result, (list, _))| Arc::new(Memo { result, list: list.clone() }));
            let size = memo.as_ref().map_or(0, |m| m.result.as_ref().map_or(0, String::len) + m.list.report.records.len() * 96 + m.list.unfit.len() * 128);
            c.remember(scope, result, memo, size);
        }
        listed
    }

    /// What the engine's rewrite of a list says, before its elements are seen to (its report taken).
    fn of(outcome: &mut api::BodyOutcome) -> List {
        List {
            text: None,
            tools: outcome.tools,
            dropped: 0,
            unparsed: outcome.unparsed.len(),
            outputs_kept: 0,
            unfit: unfitting(outcome),
            report: std::mem::take(&mut outcome.report),
            ambiguous: Vec::new(),
            refused: None,
        }
    }

    /// Rewrites the message `text`, if its `result.tools` is a list of tools.
    pub(super) fn rewrite(env: &mut Env, leg: &Leg, text: &str) -> Option<List> {
        let opts = leg.options(env.config);
        // the input schemas, by the engine, as an inference request's tools
        let mut outcome = api::rewrite_body_cached(text.as_bytes(), Format::Mcp, leg.profile, &opts, env.cache.as_deref_mut()).ok()?;
        // no list of tools there (an empty one has nothing to rewrite either)
        let n = outcome.tools;
        if n == 0 {
            return None;
        }
        let rewritten: std::borrow::Cow<'_, str> = match &outcome.body {
            Some(b) => std::borrow::Cow::Owned(String::from_utf8(b.clone()).ok()?),
            None => std::borrow::Cow::Borrowed(text),
        };
        let mut list = List::of(&mut outcome);
        if leg.unfit == Unfit::Error {
            if let Some((tool, path, why)) = list.unfit.first() {
                list.refused = Some(Unfitting { tool: tool.clone(), path: path.clone(), why: why.clone() });
                return Some(list);
            }
        }
        // each element: its output schema and name seen to, as edits of the rewritten text; where a
        // tool goes as it came (unfit: pass) or not at all (unfit: drop), the list is made anew
        let (elems, range) = elements_at(&rewritten)?;
        let objs: Vec<raw::RawObject<'_>> = elems.iter().map(|e| raw::object(e)).collect::<Option<_>>()?;
        let names: Vec<String> = objs.iter().map(|o| o.str("name").unwrap_or_default()).collect();
        // a server's name spelled like a listed one that cannot be listed apart is left out: a call
        // by it would read back as the other tool
        let rule = leg.profile.target.names;
        let apart = |n: &str| rule.is_some_and(|r| names::ambiguous(n, &r));
        let whole = (matches!(leg.unfit, Unfit::Pass | Unfit::Drop) && !list.unfit.is_empty()) || names.iter().any(|n| apart(n));
        let old = if whole { elements(text)? } else { Vec::new() };
        if whole && old.len() != elems.len() {
            return None;
        }
        let mut mapped: Vec<String> = Vec::new();
        let mut edits: Vec<Edit> = Vec::new();
        let mut kept: Vec<String> = Vec::new();
        let mut changed = outcome.body.is_some();
        for (i, ((element, o), name)) in elems.iter().zip(objs.iter()).zip(names.iter()).enumerate() {
            let lossy = whole && list.unfit.iter().any(|(t, _, _)| t == name);
            if apart(name) || (lossy && leg.unfit == Unfit::Drop) {
                list.dropped += 1;
                list.ambiguous.extend(apart(name).then(|| name.clone()));
                changed = true;
                continue;
            }
            if lossy {
                // unfit: pass: as the server wrote it, nothing more
                let before = old.get(i).copied().unwrap_or(element);
                changed |= before != *element;
                kept.push(before.to_string());
                continue;
            }
            let own = list.element_edits(env, leg, element, o, name, &mut mapped);
            changed |= !own.is_empty();
            if whole {
                kept.push(if own.is_empty() { element.to_string() } else { splice(element, own) });
            } else if let Some(base) = raw::offset(&rewritten, element) {
                edits.extend(own.into_iter().map(|e| Edit::new(base + e.at, base + e.end, e.text)));
            }
        }
        if !changed {
            return Some(list);
        }
        let text = if whole {
            splice(&rewritten, vec![Edit::new(range.0, range.1, format!("[{}]", kept.join(",")))])
        } else if edits.is_empty() {
            rewritten.into_owned()
        } else {
            splice(&rewritten, edits)
        };
        // a list rewritten for this client alone must not be handed to another from a shared cache
        list.text = Some(if leg.tailored() { private(&text).unwrap_or(text) } else { text });
        Some(list)
    }

    /// The edits within one listed tool: its output schema (where it widens) and its name (where the
    /// client's profile refuses it, or it reads like a listed one).
    fn element_edits(&mut self, env: &mut Env, leg: &Leg, element: &str, o: &raw::RawObject<'_>, name: &str, mapped: &mut Vec<String>) -> Vec<Edit> {
        let mut own: Vec<Edit> = Vec::new();
        if let Some(out) = o.get("outputSchema") {
            if let (Some(new), Some(at)) = (output(env, leg, out.get(), name, self), raw::offset(element, out.get())) {
                own.push(Edit::new(at, at + out.get().len(), new));
            }
        }
        let Some((rule, v)) = leg.profile.target.names.zip(o.get("name")) else { return own };
        let Some(sent) = names::encode(name, &rule).filter(|s| !mapped.contains(s)) else { return own };
        if let Some(at) = raw::offset(element, v.get()) {
            self.report.push(Record {
                tool: name.to_string(),
                path: String::new(),
                kind: Kind::NameMapped,
                detail: format!("listed as {sent:?}: the client's profile refuses the name"),
            });
            own.push(Edit::new(at, at + v.get().len(), serde_json::Value::String(sent.clone()).to_string()));
            mapped.push(sent);
        }
        own
    }

    /// The line for the log: what changed, with each lossy tool and pointer.
    fn line(&self, leg: &Leg) -> Option<Line> {
        if self.report.is_empty() && self.unfit.is_empty() && self.outputs_kept == 0 && self.ambiguous.is_empty() {
            return None;
        }
        let mut text = format!("route={} profile={} client={} tools/list tools={}", leg.route, leg.profile.name, leg.client, self.tools);
        for (k, n) in &self.report.counters {
            text.push_str(&format!(" {}={n}", k.name()));
        }
        if self.outputs_kept > 0 {
            text.push_str(&format!(" outputs_kept={}", self.outputs_kept));
        }
        if !self.ambiguous.is_empty() {
            let some: Vec<String> = self.ambiguous.iter().take(5).map(|n| clip(n)).collect();
            text.push_str(&format!(" left out, named like another tool's listed name: [{}]", some.join(" ")));
        }
        let unfit: Vec<String> =
            self.unfit.iter().take(5).map(|(t, p, w)| format!("{}:{}:{w}", clip(t), if p.is_empty() { "/".into() } else { clip(p) })).collect();
        if !unfit.is_empty() {
            let what = match leg.unfit {
                Unfit::Rewrite => "rewritten with loss",
                Unfit::Pass => "listed as the server wrote them",
                Unfit::Drop => "left out",
                Unfit::Error => "list refused",
            };
            text.push_str(&format!(" unfit ({what})=[{}]", unfit.join(" ")));
        }
        Some(Line { warn: !unfit.is_empty() || !self.ambiguous.is_empty(), text })
    }
}

/// A list result's caching hint (2026-07-28's `cacheScope`) made `private`, its `ttlMs` kept: the
/// message with the change, `None` where it needs none (already private, or a result with no hints,
/// which no client caches).
pub(super) fn private(text: &str) -> Option<String> {
    let top = raw::object(text)?;
    let result = match top.get("result") {
        Some(r) => r.get(),
        None => text,
    };
    let o = raw::object(result)?;
    let base = raw::offset(text, result)?;
    let edit = match o.get("cacheScope") {
        Some(v) if v.get() == r#""private""# => return None,
        Some(v) => {
            let at = base + raw::offset(result, v.get())?;
            Edit::new(at, at + v.get().len(), r#""private""#.to_string())
        }
        None if o.get("ttlMs").is_some() => {
            let at = base + result.find('{')? + 1;
            Edit::new(at, at, r#""cacheScope":"private","#.to_string())
        }
        None => return None,
    };
    Some(splice(text, vec![edit]))
}

/// The tools a list's rewrite could not keep whole: (tool, JSON pointer, why), one per tool, the
/// unparsed ones first.
fn unfitting(outcome: &api::BodyOutcome) -> Vec<(String, String, String)> {
    let mut unfit: Vec<(String, String, String)> =
        outcome.unparsed.iter().map(|u| (u.tool.clone(), String::new(), format!("could not be parsed: {}", u.reason))).collect();
    for r in outcome.report.records.iter().filter(|r| r.lossy()) {
        if !unfit.iter().any(|(t, _, _)| *t == r.tool) {
            unfit.push((r.tool.clone(), r.path.clone(), format!("{}: {}", r.kind.name(), r.detail)));
        }
    }
    unfit
}

/// The element texts of `result.tools` in a message.
pub(super) fn elements(text: &str) -> Option<Vec<&str>> {
    elements_at(text).map(|(e, _)| e)
}

/// The listed tools' texts, where the `mcp` descriptor says they are (a JSON-RPC answer's
/// `result.tools`, a result's `tools`), and the list's byte range in `text`.
pub(super) fn elements_at(text: &str) -> Option<(Vec<&str>, (usize, usize))> {
    let l = api::tool_lists_in(text, Format::Mcp).into_iter().next()?;
    let list = raw::array(text.get(l.at..l.end)?)?;
    Some((list.0.iter().map(|r| r.get()).collect(), (l.at, l.end)))
}

/// An `outputSchema` (its text) rewritten, where every change keeps or widens what it accepts.
pub(super) fn output(env: &mut Env, leg: &Leg, text: &str, tool: &str, list: &mut List) -> Option<String> {
    let opts = leg.options(env.config);
    let (new, report) = api::rewrite_schema(text, (tool, Context::Output), leg.profile, &opts, env.cache.as_deref_mut()).ok()?;
    if report.is_empty() {
        return None;
    }
    if !report.counters.keys().all(|k| widens(*k)) {
        list.outputs_kept += 1;
        return None;
    }
    list.report.extend(report);
    new
}
