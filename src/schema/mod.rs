//! The schema engine: a profile's passes, run in order over one schema.
//!
//! Host-agnostic: no proxy-wasm here. The filter and the CLI both call [`normalize`].

pub mod arrays;
pub mod definitions;
pub mod kind;
pub mod lookup;
pub mod merge;
pub mod nesting;
pub mod passes;
pub mod pattern;
pub mod profile;
pub mod python_re;
pub mod report;
pub mod target;
pub mod types;
pub mod unicode;
pub mod validate;
pub mod walk;

pub use kind::Kind;
pub use profile::Profile;
pub use report::{Record, Report};
pub use target::{LlamaCpp, Never, Refs, Strict, Target, ToolFields};

use crate::schema::lookup::Lookup;
use serde_json::{Map, Value};

/// Where a schema sits: a tool's parameters must stay an object; a structured output may be anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Tool,
    Output,
}

/// Bounds on the work one schema may cause (MCP SEP-2106 defaults for depth and nodes).
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Limits {
    /// Deepest nesting of JSON containers kept (arrays count; schema maps such as `properties` do not).
    pub max_depth: usize,
    /// Most object nodes kept, outside data keywords.
    pub max_nodes: usize,
    /// Most object nodes that inlining `$ref` targets may add to one schema.
    pub inline_budget: usize,
    /// Most branches a union distribution or `allOf` merge may produce for one node.
    pub max_branches: usize,
    /// Largest repetition count (`maxLength`, `maxItems`, regex `{n}`) emitted.
    pub max_repetition: u64,
    /// Most declared properties an object may have and still be opened (`open_objects`): llama.cpp's
    /// grammar for "any other key" grows with them and fails to parse past about 150.
    pub max_open_properties: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_depth: 64, max_nodes: 10_000, inline_budget: 5_000, max_branches: 64, max_repetition: 1_000, max_open_properties: 64 }
    }
}

/// Engine options, set per profile and overridable per filter route. `Hash`: every field is part of
/// the rewrite cache's scope ([`crate::api::cache::scope`]).
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Options {
    pub limits: Limits,
    /// Write each removed constraint into the node's `description`, so the model still reads it.
    pub promote_to_description: bool,
    /// Open objects JSON Schema leaves open (no `additionalProperties`), which llama.cpp closes. Off by
    /// default: a grammar without undeclared keys only narrows what the model may write (every call it
    /// allows is valid for the original schema), while opening lets the model invent arguments, grows
    /// every grammar and turns nearly every request into a rewrite.
    pub open_objects: bool,
    /// The oldest llama.cpp release the route serves: what later releases fixed is relied on, what
    /// earlier ones break on is worked around. Read only through [`Target::release`] (or
    /// [`Cx::release`]), which answers only for a versioned target.
    pub llama_cpp: LlamaCpp,
    /// Send property names the API refuses under names it takes ([`Target::property_names`]): the
    /// response path gives each argument key its original back. The MCP leg keeps no state between a
    /// list and a call, so it could not: it lists the server's keys as they are (off), and the
    /// inference leg renames them where the model's API refuses them.
    pub rename_properties: bool,
    /// Keywords kept whatever the target's list of keywords says: those the client reads, not the
    /// model's API (the MCP leg's `x-mcp-header`, [`crate::api::format::Descriptor::client_keywords`]).
    pub keep_keywords: &'static [&'static str],
    /// Declare 2020-12: a schema stamped with an older draft (`$schema` draft-04 to 2019-09) is stamped
    /// 2020-12, its `definitions` moved to `$defs`, wherever the profile's passes translate its
    /// keywords (for clients that validate with 2020-12 only: the MCP leg's `declare_2020_12`). A schema
    /// whose keywords the translation changed is stamped so in any case.
    pub declare_2020_12: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            limits: Limits::default(),
            promote_to_description: true,
            open_objects: false,
            llama_cpp: LlamaCpp::default(),
            rename_properties: true,
            keep_keywords: &[],
            declare_2020_12: false,
        }
    }
}

/// The state one pass sees: where it is, and where its records go.
pub struct Cx<'a> {
    pub tool: &'a str,
    pub context: Context,
    pub opts: &'a Options,
    /// What the profile's backend does with a schema.
    pub target: &'a Target,
    pub report: Report,
}

impl<'a> Cx<'a> {
    pub fn new(tool: &'a str, context: Context, opts: &'a Options, target: &'a Target) -> Self {
        Cx { tool, context, opts, target, report: Report::default() }
    }

    /// The llama.cpp release whose behaviour the backend has, for a versioned target (see
    /// [`Target::release`]); `None`: no release workaround applies.
    pub fn release(&self) -> Option<LlamaCpp> {
        self.target.release(self.opts)
    }

    /// `path`: a `&str`, or a traversal's [`walk::Path`], written out only here.
    pub fn record(&mut self, path: &(impl AsRef<str> + ?Sized), kind: Kind, detail: impl Into<String>) {
        self.report.push(Record { tool: self.tool.to_string(), path: path.as_ref().to_string(), kind, detail: detail.into() });
    }

    /// The one way a lossy change is said: records `detail` and, when `promote_to_description` is on,
    /// writes `said` (the constraints the backend no longer enforces) in the node's description.
    pub fn lost(&mut self, node: &mut Map<String, Value>, path: &(impl AsRef<str> + ?Sized), kind: Kind, said: &str, detail: impl Into<String>) {
        self.say(node, said);
        self.record(path, kind, detail);
    }

    /// The description half of [`Cx::lost`], for a pass whose one sentence covers several records.
    pub fn say(&self, node: &mut Map<String, Value>, said: &str) {
        if self.opts.promote_to_description && !said.is_empty() {
            promote(node, said);
        }
    }

    /// Records the removal of keywords from `node` (`removed k: v; ...`) and says them (see [`Cx::lost`]).
    pub fn removed(&mut self, node: &mut Map<String, Value>, path: &(impl AsRef<str> + ?Sized), kind: Kind, removed: &[(String, Value)]) {
        if removed.is_empty() {
            return;
        }
        let text = removed_text(removed, 120);
        self.lost(node, path, kind, &text, format!("removed {text}"));
    }
}

/// Removed keywords as `k: v; ...`, each value cut to `max` bytes.
pub fn removed_text(removed: &[(String, Value)], max: usize) -> String {
    removed.iter().map(|(k, v)| format!("{k}: {}", compact(v, max))).collect::<Vec<_>>().join("; ")
}

/// Appends a sentence naming constraints the grammar does not enforce to a node's description (only
/// through [`Cx::say`], which asks the configuration).
fn promote(node: &mut Map<String, Value>, text: &str) {
    note(node, &format!("(Also required, not enforced: {text}.)"));
}

/// Appends `sentence` to a node's description (once).
pub fn note(node: &mut Map<String, Value>, sentence: &str) {
    match node.at_mut("description") {
        Some(Value::String(d)) if !d.contains(sentence) => {
            if !d.is_empty() {
                d.push(' ');
            }
            d.push_str(sentence);
        }
        Some(Value::String(_)) => {}
        _ => {
            node.insert("description".into(), Value::String(sentence.to_string()));
        }
    }
}

/// Keywords taken out of a node, with their values: what a lossy record names.
pub type Removed = Vec<(String, Value)>;

/// A JSON value as short text for logs and descriptions.
pub fn compact(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", s.get(..end).unwrap_or(""))
}

/// A number as text for records, descriptions and messages: a whole number as an integer ("5", as
/// Rust prints 5.0), any other in the shortest form that reads back the same (serde_json's, with an
/// exponent where the number is very large or small). Core's float formatting is kept out of the wasm
/// this way (about 12 KB).
pub fn number_text(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
        return (x as i64).to_string();
    }
    match serde_json::Number::from_f64(x) {
        Some(n) => n.to_string(),
        None if x.is_nan() => "NaN".into(),
        None if x > 0.0 => "inf".into(),
        None => "-inf".into(),
    }
}

/// Parses one schema's text. A schema nested too deep for the parser (serde_json stops at 128
/// containers) is first cut to the nesting bounds at the byte level ([`nesting::bound`]), each cut
/// recorded in `report` as `bounds_exceeded`: it must not reach the backend as it came (llama.cpp's
/// converter overflows its stack on it), and everything else in it can still be kept. `Err` only for
/// text that is not JSON.
pub fn parse(src: &str, opts: &Options, context: Context, tool: &str, report: &mut Report) -> Result<Value, String> {
    let err = match serde_json::from_str(src) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let Some((cut, cuts)) = nesting::bound(src, opts.limits.max_depth, context) else { return Err(err.to_string()) };
    let v = serde_json::from_str(&cut).map_err(|e| e.to_string())?;
    for c in cuts {
        report.push(Record { tool: tool.to_string(), path: c.path, kind: Kind::BoundsExceeded, detail: c.detail });
    }
    Ok(v)
}

/// The result of normalizing one schema.
pub struct Outcome {
    /// Whether the schema changed at all. When false, callers keep the original bytes.
    pub changed: bool,
    pub report: Report,
}

/// Most times the pipeline runs on one schema. One run settles almost every schema; a change that
/// creates a shape an earlier pass handles (a union flattened into a branch that holds another) is
/// settled by the next, so the output is a fixed point: running toolfit on it again changes nothing.
/// A round whose only changes are kinds that [`Kind::settles`] is known to be the fixed point already.
const MAX_ROUNDS: usize = 4;

/// Rewrites `schema` in place with the profile's passes. Never panics on any input.
pub fn normalize(schema: &mut Value, profile: &Profile, opts: &Options, context: Context, tool: &str) -> Outcome {
    let mut report = Report::default();
    let passes = profile.passes_for(context);
    if opts.declare_2020_12 && !passes.iter().any(|p| p.name == "dialect") {
        // a client that validates with 2020-12 only gets every schema in it, whatever the profile's
        // backend would take as it is
        let mut cx = Cx::new(tool, context, opts, &profile.target);
        passes::dialect::run(schema, &mut cx);
        report.extend(cx.report);
    }
    let plan = profile.plan(context);
    let (tracked, tested, tests) = (&plan.tracked, &plan.tested, &plan.tests);
    let probe = passes::Probe { target: &profile.target, opts, unenforced: &plan.unenforced };
    let test = |i: usize, node: &Map<String, Value>, place: &walk::Place| tests.get(i).is_some_and(|acts| acts(node, &probe, place));
    // the last pass of the previous round that changed what no pass may react to (`None`: this is the
    // first round)
    let mut last_change: Option<usize> = None;
    for _ in 0..MAX_ROUNDS {
        let mut cx = Cx::new(tool, context, opts, &profile.target);
        // the census and the node tests, taken again only after a pass changed something
        let mut survey: Option<walk::Survey> = None;
        let mut changed_at: Option<usize> = None;
        for (i, pass) in passes.iter().enumerate() {
            // Past the previous round's last change with nothing changed in this one, every pass left
            // sees the tree it saw then (but for changes that settle), on which it changed nothing: the
            // round is settled without running them.
            if changed_at.is_none() && last_change.is_some_and(|k| i > k) {
                break;
            }
            if !pass.wants.is_empty() || pass.acts.is_some() {
                let s = survey.get_or_insert_with(|| walk::survey(schema, tracked, tests.len(), &test));
                let skip = match tested.iter().position(|t| *t == i) {
                    Some(bit) => bit < 64 && s.acting & (1 << bit) == 0,
                    None => !pass.wants.iter().any(|w| s.found.contains(w)),
                };
                if skip {
                    continue;
                }
            }
            let before = cx.report.unsettled();
            let records = cx.report.counters.values().sum::<u64>();
            (pass.run)(schema, &mut cx);
            if cx.report.counters.contains_key(&Kind::StrictDeclined) {
                // the caller sends this schema non-strict, rewritten by the other profile
                report.extend(cx.report);
                return Outcome { changed: true, report };
            }
            if cx.report.counters.values().sum::<u64>() != records {
                // any change may answer a node test otherwise
                survey = None;
            }
            if cx.report.unsettled() != before {
                changed_at = Some(i);
            }
        }
        last_change = changed_at;
        // a round that changed nothing, or only what no pass reacts to, is the fixed point
        let settled = cx.report.counters.keys().all(|k| k.settles());
        report.extend(cx.report);
        if settled {
            break;
        }
    }
    Outcome { changed: !report.is_empty(), report }
}

/// [`normalize`] for a profile whose strict attempt may be declined ([`Kind::StrictDeclined`]): the
/// schema then gets the non-strict profile's rewrite of the original, and the report keeps only the
/// declined records of the attempt. What the request path does for one schema, for callers without a
/// request (the CLI's `--schema`, the fuzz targets).
pub fn normalize_or_loose(schema: &mut Value, profile: &Profile, opts: &Options, context: Context, tool: &str) -> Outcome {
    let original = schema.clone();
    let first = normalize(schema, profile, opts, context, tool);
    let Some(loose) = profile.modes.map(|m| m.loose).filter(|_| first.report.counters.contains_key(&Kind::StrictDeclined)) else { return first };
    *schema = original;
    let second = normalize(schema, loose, opts, context, tool);
    let report = Report::declined(first.report, second.report);
    Outcome { changed: second.changed, report }
}
