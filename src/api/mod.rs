//! Where the schemas are in each API's body, and how rewritten ones go back in.
//!
//! Only the schema subtrees are parsed into values; everything else (messages can be megabytes) is
//! scanned once and copied through as the original bytes.

pub mod cache;
pub mod convert;
mod defs;
pub mod format;
pub mod names;
pub mod raw;
pub mod skim;

use crate::api::raw::Raw;
use crate::schema::{self, Context, Kind, Options, Profile, Report};
use serde_json::Value;

/// A request or listing format: which members hold schemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenAI chat completions (also vLLM, llama-server `/v1/chat/completions`): `tools[].function.parameters`,
    /// `response_format.json_schema.schema` (and llama-server's `response_format.schema`).
    OpenAiChat,
    /// OpenAI responses: `tools[].parameters`, `text.format.schema`.
    OpenAiResponses,
    /// Anthropic messages: `tools[].input_schema`.
    Anthropic,
    /// Ollama `/api/chat` and `/api/generate`: `tools[].function.parameters`, `format` (a schema object).
    Ollama,
    /// llama-server `/completion`: `json_schema`.
    LlamaCompletion,
    /// Gemini `generateContent` (Developer API and Vertex): `tools[].functionDeclarations[].parameters`
    /// and `parametersJsonSchema`, `generationConfig.responseSchema` and `responseJsonSchema` (and
    /// their snake_case spellings).
    Gemini,
    /// Cohere v2 chat: `tools[].function.parameters`, `response_format.json_schema` (the schema itself).
    Cohere,
    /// An MCP `tools/list` result (`{"tools": [...]}`, a JSON-RPC response, or a bare array of tools):
    /// `inputSchema` (tool context) and `outputSchema` (structured output).
    McpTools,
    /// A format for tests only, unlike any real one ([`format::probe`]).
    #[cfg(test)]
    Probe,
    /// Any of the above, recognised by their members.
    Auto,
}

impl Format {
    pub fn by_name(name: &str) -> Option<Format> {
        if name == "auto" {
            return Some(Format::Auto);
        }
        format::ALL.iter().find(|d| d.name == name).map(|d| d.format)
    }

    pub fn name(self) -> &'static str {
        self.descriptor().map_or("auto", |d| d.name)
    }

    /// What the format means (see [`format`]); `None` for `auto`, which reads every format's sites.
    pub fn descriptor(self) -> Option<&'static format::Descriptor> {
        format::ALL.iter().copied().find(|d| d.format == self)
    }
}

/// One schema inside a body.
pub struct Site<'a> {
    pub raw: Raw<'a>,
    pub tool: String,
    pub context: Context,
    /// The `strict` member beside it, for APIs with a strict mode.
    pub strict: StrictAt<'a>,
    /// Whether it is an API's JSON Schema field (Gemini's `parametersJsonSchema`) rather than its
    /// other schema field.
    pub json_field: bool,
}

/// Where a schema's `strict` switch is.
#[derive(Clone, Copy)]
pub enum StrictAt<'a> {
    /// The format has none.
    NoSwitch,
    /// The member is absent; the API's default is `default`.
    Absent { default: bool },
    /// The member's value.
    Member(Raw<'a>),
}

impl StrictAt<'_> {
    /// Whether the request asks for strict mode.
    fn on(&self) -> bool {
        match self {
            StrictAt::NoSwitch => false,
            StrictAt::Absent { default } => *default,
            StrictAt::Member(v) => v.get() == "true",
        }
    }
}

impl<'a> Site<'a> {
    fn new(raw: Raw<'a>, tool: String, context: Context) -> Self {
        Site { raw, tool, context, strict: StrictAt::NoSwitch, json_field: false }
    }

    /// The site with the `strict` member of `o` (the object holding the schema or its switch).
    fn switch(mut self, o: &raw::RawObject<'a>, default: bool) -> Self {
        self.strict = match o.get("strict") {
            Some(v) => StrictAt::Member(v),
            None => StrictAt::Absent { default },
        };
        self
    }
}

/// A function tool with no usable `description`: where one goes, and whose it is.
pub struct NoDescription<'a> {
    /// The `description` member's value when it is `null` (replaced), else the `name` value (the
    /// member is inserted after it).
    pub anchor: Raw<'a>,
    pub null: bool,
    pub tool: String,
}

/// A body's top level, scanned once: its members stay unparsed slices.
enum Top<'a> {
    /// A bare array of tools (an MCP `tools/list` result written as an array).
    Array(Vec<raw::RawTool<'a>>),
    Object(raw::RawObject<'a>),
}

/// The top level; with `lists`, also the format's first top-level list of tools split into tools in
/// the same scan (for a body whose schemas are all read: without a rewrite cache). With a cache, most
/// requests are answered from their members whole, and splitting the lists first would only cost (a
/// third of the warm path).
fn top(text: &str, format: Format, lists: bool) -> (Option<Top<'_>>, raw::ToolLists<'_>) {
    if text.trim_start().starts_with('[') {
        let bare = format::bare(format).and_then(|b| raw::tools(text, b.split)).map(Top::Array);
        return (bare, Vec::new());
    }
    match format::presplit(format) {
        Some(list) if lists => raw::object_and_tools(text, list).map_or((None, Vec::new()), |(o, lists)| (Some(Top::Object(o)), lists)),
        _ => (raw::object(text).map(Top::Object), Vec::new()),
    }
}

/// The request's top-level `model` (OpenAI, Anthropic, Ollama and vLLM bodies), for the model map.
pub fn model(body: &[u8]) -> Option<String> {
    match raw::object(skim::text(body)?) {
        Some(o) => o.str("model"),
        None => None,
    }
}

pub use format::gemini::model_in_path;

/// The tool sites of `format` in its lists of tools in `text` (a request, or the object
/// [`BodyOutcome::tool_lists_of`] makes of its lists: the same sites either way).
pub fn locate_tools(text: &str, format: Format) -> Vec<Site<'_>> {
    let Some(o) = raw::object(text) else { return Vec::new() };
    let mut sites = Vec::new();
    tool_sites(&o, &[], format, &mut Vec::new(), &mut sites);
    sites.retain(|s| s.context == Context::Tool);
    sites
}

/// Finds every schema site of `format` in `text`. `None` when the text is not JSON of a known shape.
pub fn locate(text: &str, format: Format) -> Option<Vec<Site<'_>>> {
    let (top, lists) = top(text, format, true);
    locate_in(&top?, &lists, format, &mut Vec::new())
}

/// [`locate`], from the top level and the list of tools read with it (a list not there is read here),
/// also listing in `undescribed` the function tools without a description.
fn locate_in<'a>(top: &Top<'a>, lists: &[(&'a str, Vec<raw::RawTool<'a>>)], format: Format, undescribed: &mut Vec<NoDescription<'a>>) -> Option<Vec<Site<'a>>> {
    let mut sites = Vec::new();
    let top = match top {
        Top::Array(tools) => {
            let read = format::bare(format)?;
            read_tools(tools, &read, undescribed, &mut sites);
            return Some(sites);
        }
        Top::Object(o) => o,
    };
    if !top.0.iter().any(|(k, _)| format::known(k)) {
        return None;
    }
    tool_sites(top, lists, format, undescribed, &mut sites);
    output_sites(top, format, &mut sites);
    Some(sites)
}

/// The values at `path` from the top level (every duplicate member on the way).
fn values_at<'a>(top: &raw::RawObject<'a>, path: &[&str]) -> Vec<Raw<'a>> {
    let Some((first, rest)) = path.split_first() else { return Vec::new() };
    let mut at: Vec<Raw<'a>> = top.all(first).collect();
    for key in rest {
        at = at.iter().filter_map(|v| raw::object(v.get())).flat_map(|o| o.all(key).collect::<Vec<_>>()).collect();
    }
    at
}

/// The schemas of the request's lists of tools (and the function tools without a description).
fn tool_sites<'a>(
    top: &raw::RawObject<'a>,
    lists: &[(&'a str, Vec<raw::RawTool<'a>>)],
    format: Format,
    undescribed: &mut Vec<NoDescription<'a>>,
    sites: &mut Vec<Site<'a>>,
) {
    for read in format::list_reads(format) {
        if read.readers.is_empty() {
            continue;
        }
        for list in values_at(top, read.at) {
            // read with the body where it was (the same text), else here
            let here;
            let tools = match lists.iter().find(|(at, _)| std::ptr::eq(*at, list.get())) {
                Some((_, tools)) => tools,
                None => match raw::tools(list.get(), read.split) {
                    Some(tools) => {
                        here = tools;
                        &here
                    }
                    None => continue,
                },
            };
            read_tools(tools, &read, undescribed, sites);
        }
    }
}

/// Each tool of a list by each reader, and the tools of a nested list (a namespace) after the tool
/// that holds it.
fn read_tools<'a>(tools: &[raw::RawTool<'a>], read: &format::ListRead, undescribed: &mut Vec<NoDescription<'a>>, sites: &mut Vec<Site<'a>>) {
    for t in tools {
        for reader in &read.readers {
            reader(t, sites, undescribed);
        }
        let Some(nested) = read.nested else { continue };
        if t.members.str("type").as_deref() != Some(nested.kind) {
            continue;
        }
        for inner in t.members.all(nested.key) {
            for t in raw::tools(inner.get(), read.split).unwrap_or_default() {
                for reader in &read.readers {
                    reader(&t, sites, undescribed);
                }
            }
        }
    }
}

/// The structured-output schemas.
fn output_sites<'a>(top: &raw::RawObject<'a>, format: Format, sites: &mut Vec<Site<'a>>) {
    // `auto` has no descriptor: it reads with every distinct reader
    let readers = format.descriptor().map_or(format::AUTO_OUTPUTS, |d| d.output_sites.as_slice());
    for read in readers {
        read(top, sites);
    }
}

/// Why a body was left as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    NotJson,
    UnknownShape,
    /// toolfit's own mistake: an edit it could not place in the body (see [`raw::placed`]).
    Misplaced,
}

/// A schema the engine could not take (not valid JSON for `serde_json`, e.g. a number past f64; a
/// schema nested too deep to parse is cut to the bounds instead, see [`schema::parse`]): it is
/// forwarded as it was.
#[derive(Debug, Clone)]
pub struct Unparsed {
    pub tool: String,
    pub reason: String,
}

pub struct BodyOutcome {
    /// The rewritten body; `None` when nothing changed (forward the original bytes).
    pub body: Option<Vec<u8>>,
    pub report: Report,
    pub tools: usize,
    pub schemas_changed: usize,
    pub unparsed: Vec<Unparsed>,
    /// Tools sent under another name (the response path says the originals again).
    pub names: names::NameMap,
    /// The request's lists of tools, as the client sent them: all the response path keeps of the
    /// request (see [`BodyOutcome::tool_lists_of`]).
    pub tool_lists: Vec<ToolList>,
}

/// Where one list of tools was in a request: its byte range, and the keys from the top level to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolList {
    pub at: usize,
    pub end: usize,
    pub path: &'static [&'static str],
}

/// The lists of tools of `format` at the top level `o` of `text`.
fn tool_lists(text: &str, o: &raw::RawObject, format: Format) -> Vec<ToolList> {
    let mut out = Vec::new();
    for read in format::list_reads(format) {
        for v in values_at(o, read.at) {
            if let Some(at) = raw::offset(text, v.get()) {
                out.push(ToolList { at, end: at + v.get().len(), path: read.at });
            }
        }
    }
    out
}

impl BodyOutcome {
    /// The request's tool lists from `body` (the bytes this outcome came from): what [`locate_tools`]
    /// reads tool schemas from, without the rest of the body when that is large (messages can be
    /// megabytes). A body that is mostly its tool lists (a catalog) is kept whole when owned, not
    /// copied; else the lists are copied out as a JSON object with each list where it was
    /// (`{"tools": [...], "toolConfig": {"tools": [...]}}`), once, at their final size (a string grown
    /// by doubling would hold a catalog two or three times over at its peak).
    pub fn tool_lists_of(&self, body: std::borrow::Cow<'_, [u8]>) -> Vec<u8> {
        let ranges = || self.tool_lists.iter().filter_map(|l| Some((body.get(l.at..l.end)?, l.path)));
        let size = ranges().map(|(l, path)| l.len() + path.iter().map(|k| k.len() + 5).sum::<usize>()).sum::<usize>() + 2;
        if size > body.len() / 2 {
            if let std::borrow::Cow::Owned(whole) = body {
                return whole;
            }
        }
        let mut out = Vec::with_capacity(size);
        out.push(b'{');
        for (i, (l, path)) in ranges().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            for (n, key) in path.iter().enumerate() {
                if n > 0 {
                    out.push(b'{');
                }
                out.push(b'"');
                out.extend_from_slice(key.as_bytes());
                out.extend_from_slice(b"\":");
            }
            out.extend_from_slice(l);
            out.extend(std::iter::repeat_n(b'}', path.len().saturating_sub(1)));
        }
        out.push(b'}');
        out
    }
}

/// Rewrites every schema of `format` in `body`. Bytes outside changed schemas are kept exactly.
pub fn rewrite_body(body: &[u8], format: Format, profile: &'static Profile, opts: &Options) -> Result<BodyOutcome, Skip> {
    rewrite_body_cached(body, format, profile, opts, None)
}

/// [`rewrite_body`] with a rewrite cache: a schema seen before (same bytes, tool, context, profile and
/// options) reuses its rewrite and report instead of parsing it again.
pub fn rewrite_body_cached(
    body: &[u8],
    format: Format,
    profile: &'static Profile,
    opts: &Options,
    cache: Option<&mut cache::SiteCache>,
) -> Result<BodyOutcome, Skip> {
    let (out, placed) = raw::placed(|| rewrite_placed(body, format, profile, opts, cache));
    if !placed {
        return Err(Skip::Misplaced);
    }
    out
}

/// [`rewrite_body_cached`], where every edit's place is a slice of the text it edits.
fn rewrite_placed(body: &[u8], format: Format, profile: &'static Profile, opts: &Options, cache: Option<&mut cache::SiteCache>) -> Result<BodyOutcome, Skip> {
    let mut out = rewrite_schemas(body, format, profile, opts, cache)?;
    // names last, over the body as rewritten: schema edits never touch a name, and a body whose
    // names are all valid costs one scan of its tool list
    let Some(rule) = profile.target.names else { return Ok(out) };
    let text = match &out.body {
        Some(b) => skim::text(b).ok_or(Skip::NotJson)?,
        None => skim::text(body).ok_or(Skip::NotJson)?,
    };
    if let Some((edits, map, report)) = names::plan(text, format, &rule) {
        if !edits.is_empty() {
            out.body = Some(splice(text, edits).into_bytes());
        }
        out.report.extend(report);
        out.names = map;
    }
    Ok(out)
}

fn rewrite_schemas(
    body: &[u8],
    format: Format,
    profile: &'static Profile,
    opts: &Options,
    mut cache: Option<&mut cache::SiteCache>,
) -> Result<BodyOutcome, Skip> {
    let scope = if cache.is_some() { cache::scope(profile.name, opts) } else { 0 };
    let text = skim::text(body).ok_or(Skip::NotJson)?;
    let (parsed, lists) = top(text, format, cache.is_none());
    let members = cached_members(text, parsed.as_ref(), profile, cache.is_some());
    let tool_lists = match &parsed {
        Some(Top::Object(o)) => tool_lists(text, o, format),
        _ => Vec::new(),
    };
    if let (Some(c), false) = (cache.as_deref_mut(), members.is_empty()) {
        if let Some(done) = from_members(c, scope, format, text, &members) {
            return Ok(BodyOutcome { tool_lists, ..done });
        }
    }
    let mut undescribed = Vec::new();
    let Some(sites) = parsed.as_ref().and_then(|t| locate_in(t, &lists, format, &mut undescribed)) else {
        return Err(if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() { Skip::UnknownShape } else { Skip::NotJson });
    };
    // the sites point into the text: the split lists are not held while the schemas are rewritten
    drop(lists);
    let mut policy = StrictPolicy { profile, opts, spent: Spent::default(), scopes: Scopes::default() };
    let mut results: Vec<SiteResult> = Vec::with_capacity(sites.len());
    for site in &sites {
        policy.site(text, site, cache.as_deref_mut(), &mut results);
    }
    // what spans the request: definitions shared across tools, Cohere's request-level switch, the
    // descriptions old llama-server releases need
    if profile.target.shared_defs {
        defs::share(text, &mut results);
    }
    if let (Some(limits), Some(Top::Object(o))) = (profile.target.strict_tools, parsed.as_ref()) {
        results.extend(strict_tools(text, o, &limits, &results));
    }
    if profile.target.tool_description && !profile.target.release(opts).is_some_and(|r| r.tool_description_optional()) {
        results.extend(undescribed.iter().filter_map(|d| describe(text, d)));
    }
    if let Some(c) = cache {
        remember_members(c, scope, format, text, &members, &results);
    }
    Ok(assemble(text, results, tool_lists))
}

/// The schema-bearing members as wholes, for the cache: a catalog sent again is found without looking
/// inside it. None where a request-level switch depends on every tool together (Cohere's
/// `strict_tools`), or without a cache.
fn cached_members<'p, 't: 'p>(text: &'t str, parsed: Option<&'p Top<'t>>, profile: &Profile, cached: bool) -> Vec<(&'p str, &'p str)> {
    match parsed {
        _ if !cached || profile.target.strict_tools.is_some() => Vec::new(),
        Some(Top::Object(o)) => o.0.iter().filter(|(k, _)| format::holds_schemas(k)).map(|(k, v)| (k.as_str(), v.get())).collect(),
        Some(Top::Array(_)) => vec![("", text)],
        None => Vec::new(),
    }
}

/// The body's outcome from every site's result: one edit per change, one report.
fn assemble(text: &str, results: Vec<SiteResult>, tool_lists: Vec<ToolList>) -> BodyOutcome {
    let tools = results.iter().filter(|r| r.tool).count();
    let schemas_changed = results.iter().filter(|r| r.schema && r.output.is_some()).count();
    let (mut report, mut unparsed, mut edits) = (Report::default(), Vec::new(), Vec::new());
    for r in results {
        if let Some(o) = r.output {
            edits.push(Edit::new(r.at, r.at + r.len, o));
        }
        unparsed.extend(r.unparsed);
        report.extend(r.report);
    }
    let body = (!edits.is_empty()).then(|| splice(text, edits).into_bytes());
    BodyOutcome { body, report, tools, schemas_changed, unparsed, names: names::NameMap::default(), tool_lists }
}

/// Whether each schema goes strict, for an API with a strict mode: asked for (or forced by the
/// profile), kept only if the strict rewrite is not declined and the request's strict schemas stay
/// within the API's per-request limits; else the schema gets the non-strict rewrite of the original,
/// and the switch says which.
struct StrictPolicy<'o> {
    profile: &'static Profile,
    opts: &'o Options,
    /// What the request's strict tools have used of the per-request limits so far.
    spent: Spent,
    scopes: Scopes,
}

impl StrictPolicy<'_> {
    /// Rewrites one site and adds its results (the schema's, and any switch or member edit beside it).
    fn site(&mut self, text: &str, site: &Site, mut cache: Option<&mut cache::SiteCache>, results: &mut Vec<SiteResult>) {
        let src = site.raw.get();
        let Some(at) = raw::offset(text, src) else { return };
        let mut r = SiteResult {
            at,
            len: src.len(),
            output: None,
            report: Report::default(),
            tool: site.context == Context::Tool,
            schema: true,
            unparsed: None,
            name: site.tool.clone(),
        };
        if !(src.starts_with('{') || src == "true" || src == "false") {
            results.push(r); // `null` or another non-schema: nothing to compile, nothing to change
            return;
        }
        let (profile, opts) = (self.profile, self.opts);
        let modes = profile.modes.filter(|_| !matches!(site.strict, StrictAt::NoSwitch));
        let strict_on = modes.is_some_and(|m| m.force || site.strict.on());
        let first = profile.for_site(strict_on, site.json_field);
        let mut done = rewrite_site(src, site, first, opts, cache.as_deref_mut(), &mut self.scopes);
        let mut strict = strict_on;
        let loose = profile.for_site(false, site.json_field);
        if strict && done.report.counters.contains_key(&Kind::StrictDeclined) {
            done = declined(done.report, rewrite_site(src, site, loose, opts, cache.as_deref_mut(), &mut self.scopes));
            strict = false;
        }
        // the API's limits over the whole request: past them a schema goes non-strict
        if let (true, Some(limits)) = (strict && site.context == Context::Tool, first.target.strict.and_then(|s| s.per_request)) {
            if let Some(why) = self.spent.add(&limits, done.output.as_deref().unwrap_or(src)) {
                let mut report = Report::default();
                report.push(crate::schema::Record { tool: site.tool.clone(), path: String::new(), kind: Kind::StrictDeclined, detail: why });
                done = declined(report, rewrite_site(src, site, loose, opts, cache, &mut self.scopes));
                strict = false;
            }
        }
        // a forced profile states the switch on every schema, strict or declined
        let unstated = matches!(site.strict, StrictAt::Absent { .. }) && modes.is_some_and(|m| m.force);
        if modes.is_some() && (strict != site.strict.on() || unstated) {
            results.extend(set_strict(text, site, strict));
        }
        if let (StrictAt::Member(v), true) = (site.strict, profile.target.no_strict_member) {
            results.extend(drop_member(text, "strict", v, &site.tool));
        }
        r.output = done.output;
        r.report = done.report;
        r.unparsed = done.unparsed;
        results.push(r);
    }
}

/// One schema's rewrite by one profile.
struct Done {
    output: Option<String>,
    report: Report,
    unparsed: Option<Unparsed>,
}

/// Rewrites one schema with `profile` (from the cache when it was seen before).
fn rewrite_site(src: &str, site: &Site, profile: &'static Profile, opts: &Options, mut cache: Option<&mut cache::SiteCache>, scopes: &mut Scopes) -> Done {
    let scope = if cache.is_some() { scopes.of(profile, opts) } else { 0 };
    if let Some(c) = cache.as_deref_mut() {
        if let Some(hit) = c.get(scope, &site.tool, site.context, src) {
            c.hits += 1;
            return Done { output: hit.output, report: hit.report, unparsed: None };
        }
    }
    let mut report = Report::default();
    let mut v: Value = match schema::parse(src, opts, site.context, &site.tool, &mut report) {
        Ok(v) => v,
        Err(reason) => return Done { output: None, report: Report::default(), unparsed: Some(Unparsed { tool: site.tool.clone(), reason }) },
    };
    let cut = !report.is_empty();
    let out = schema::normalize(&mut v, profile, opts, site.context, &site.tool);
    let output = if out.changed || cut { to_text(&v, src.len()) } else { None };
    report.extend(out.report);
    let declined = report.counters.contains_key(&Kind::StrictDeclined);
    let output = if declined { None } else { output };
    if let Some(c) = cache {
        c.misses += 1;
        c.put(scope, &site.tool, site.context, src, cache::Hit { output: output.clone(), report: report.clone(), counts: cache::Counts::default() });
    }
    Done { output, report, unparsed: None }
}

/// A rewritten schema as compact JSON, written into a buffer about the size of the original (it grew by
/// doubling from nothing before: a dozen copies for a large schema).
fn to_text(v: &Value, about: usize) -> Option<String> {
    let mut out = Vec::with_capacity(about + about / 4);
    serde_json::to_writer(&mut out, v).ok()?;
    String::from_utf8(out).ok()
}

/// Each profile's cache scope, taken once per body (a body's sites use one or two profiles).
#[derive(Default)]
struct Scopes(Vec<(&'static str, u64)>);

impl Scopes {
    fn of(&mut self, profile: &'static Profile, opts: &Options) -> u64 {
        if let Some((_, s)) = self.0.iter().find(|(n, _)| *n == profile.name) {
            return *s;
        }
        let s = cache::scope(profile.name, opts);
        self.0.push((profile.name, s));
        s
    }
}

/// The non-strict rewrite, reported with why strict mode was declined (see [`Report::declined`]).
fn declined(strict: Report, loose: Done) -> Done {
    Done { output: loose.output, report: Report::declined(strict, loose.report), unparsed: loose.unparsed }
}

/// What a request's strict tools have used of the API's per-request limits so far.
#[derive(Default)]
struct Spent {
    tools: usize,
    optional: usize,
    unions: usize,
}

impl Spent {
    /// Counts one more strict schema (`text`), or says which limit it would pass (and counts nothing).
    fn add(&mut self, limits: &crate::schema::target::RequestLimits, text: &str) -> Option<String> {
        let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let crate::schema::target::Properties { optional, unions, .. } = crate::schema::target::Properties::of(&v);
        if self.tools + 1 > limits.tools {
            return Some(format!("more than {} strict tools in one request", limits.tools));
        }
        if self.optional + optional > limits.optional {
            return Some(format!("{} more optional parameters would pass the request's {} for strict tools", optional, limits.optional));
        }
        if self.unions + unions > limits.unions {
            return Some(format!("{} more union parameters would pass the request's {} for strict tools", unions, limits.unions));
        }
        self.tools += 1;
        self.optional += optional;
        self.unions += unions;
        None
    }
}

/// The edit that sets a schema's `strict` switch: the member's value replaced, or the member added
/// after the schema.
fn set_strict(text: &str, site: &Site, on: bool) -> Option<SiteResult> {
    let value = if on { "true" } else { "false" };
    let (at, len, output) = match site.strict {
        StrictAt::Member(v) if v.get() == value => return None,
        StrictAt::Member(v) => (raw::offset(text, v.get())?, v.get().len(), value.to_string()),
        StrictAt::Absent { .. } => (raw::offset(text, site.raw.get())? + site.raw.get().len(), 0, format!(",\"strict\":{value}")),
        StrictAt::NoSwitch => return None,
    };
    Some(SiteResult { at, len, output: Some(output), report: Report::default(), tool: false, schema: false, unparsed: None, name: site.tool.clone() })
}

/// The edit that turns a request's `strict_tools: true` off when its tools, as rewritten, pass the API's
/// limits for it.
fn strict_tools(text: &str, top: &raw::RawObject, limits: &crate::schema::target::StrictTools, results: &[SiteResult]) -> Option<SiteResult> {
    let v = top.get("strict_tools").filter(|v| v.get() == "true")?;
    let tools: Vec<(String, Value)> = results
        .iter()
        .filter(|r| r.tool && r.schema)
        .filter_map(|r| {
            let s = r.output.as_deref().or_else(|| text.get(r.at..r.at + r.len))?;
            Some((r.name.clone(), serde_json::from_str(s).ok()?))
        })
        .collect();
    let why = limits.refuses(&tools)?;
    let mut report = Report::default();
    report.push(crate::schema::Record { tool: String::new(), path: String::new(), kind: Kind::StrictDeclined, detail: format!("strict_tools: false: {why}") });
    Some(SiteResult {
        at: raw::offset(text, v.get())?,
        len: v.get().len(),
        output: Some("false".into()),
        report,
        tool: false,
        schema: false,
        unparsed: None,
        name: String::new(),
    })
}

/// The edit that removes member `key` (whose value is `v`) with its separator.
fn drop_member(text: &str, key: &str, v: Raw<'_>, tool: &str) -> Option<SiteResult> {
    let at = raw::offset(text, v.get())?;
    let (a, b) = raw::member_span(text, key, at, v.get().len())?;
    let mut report = Report::default();
    report.push(crate::schema::Record {
        tool: tool.to_string(),
        path: String::new(),
        kind: Kind::KeywordNormalized,
        detail: format!("tool member {key:?} removed: the API refuses it"),
    });
    Some(SiteResult { at: a, len: b - a, output: Some(String::new()), report, tool: false, schema: false, unparsed: None, name: tool.to_string() })
}

/// One schema's outcome, placed by its byte range in the body.
struct SiteResult {
    at: usize,
    len: usize,
    output: Option<String>,
    report: Report,
    tool: bool,
    /// A schema site (else an edit beside the schemas, such as an added description).
    schema: bool,
    unparsed: Option<Unparsed>,
    /// The tool (or structured-output name) the schema belongs to.
    name: String,
}

/// The edit that gives a function tool an empty description: `null` replaced, or the member inserted
/// after `name`.
fn describe(text: &str, d: &NoDescription) -> Option<SiteResult> {
    let src = d.anchor.get();
    let at = raw::offset(text, src)?;
    let (at, len, output) = if d.null { (at, src.len(), "\"\"") } else { (at + src.len(), 0, ",\"description\":\"\"") };
    let mut report = Report::default();
    report.push(crate::schema::Record {
        tool: d.tool.clone(),
        path: String::new(),
        kind: crate::schema::Kind::DescriptionAdded,
        detail: "function.description added (empty): llama-server up to 2025-08 answers 500 without it".into(),
    });
    Some(SiteResult { at, len, output: Some(output.into()), report, tool: false, schema: false, unparsed: None, name: String::new() })
}

/// The cache's name for a whole member: no tool name can look like it.
fn member_tag(key: &str, format: Format) -> String {
    format!("\0member {key} {}", format.name())
}

/// The body from cached members, if every schema-bearing member was seen before as it is.
fn from_members(c: &mut cache::SiteCache, scope: u64, format: Format, text: &str, members: &[(&str, &str)]) -> Option<BodyOutcome> {
    let mut hits = Vec::with_capacity(members.len());
    for (key, m) in members {
        hits.push((raw::offset(text, m)?, m.len(), c.get(scope, &member_tag(key, format), Context::Tool, m)?));
    }
    let (mut report, mut tools, mut schemas_changed, mut edits) = (Report::default(), 0, 0, Vec::new());
    for (at, len, hit) in hits {
        c.hits += hit.counts.schemas as u64;
        tools += hit.counts.tools;
        schemas_changed += hit.counts.changed;
        report.extend(hit.report);
        if let Some(o) = hit.output {
            edits.push(Edit::new(at, at + len, o));
        }
    }
    let body = (!edits.is_empty()).then(|| splice(text, edits).into_bytes());
    Some(BodyOutcome { body, report, tools, schemas_changed, unparsed: Vec::new(), names: names::NameMap::default(), tool_lists: Vec::new() })
}

/// Stores each member as a whole: its rewritten text (its schemas' rewrites spliced in), its report
/// and counts. A member holding a schema that could not be parsed is not stored.
fn remember_members(c: &mut cache::SiteCache, scope: u64, format: Format, text: &str, members: &[(&str, &str)], results: &[SiteResult]) {
    for (key, m) in members {
        let Some(base) = raw::offset(text, m) else { continue };
        let inside: Vec<&SiteResult> = results.iter().filter(|r| r.at >= base && r.at + r.len <= base + m.len()).collect();
        if inside.iter().any(|r| r.unparsed.is_some()) {
            continue;
        }
        let mut report = Report::default();
        for r in &inside {
            report.extend(r.report.clone());
        }
        let edits: Vec<Edit> = inside.iter().filter_map(|r| r.output.as_deref().map(|o| Edit::new(r.at - base, r.at - base + r.len, o))).collect();
        let counts = cache::Counts {
            schemas: inside.iter().filter(|r| r.schema).count(),
            tools: inside.iter().filter(|r| r.tool).count(),
            changed: inside.iter().filter(|r| r.schema && r.output.is_some()).count(),
        };
        let output = (!edits.is_empty()).then(|| splice(m, edits));
        c.put(scope, &member_tag(key, format), Context::Tool, m, cache::Hit { output, report, counts });
    }
}

/// One change to a body: the bytes `at..end` replaced by `text`. Every rewrite (schemas, names,
/// switches, repaired calls in a response) is a list of these, applied by [`splice`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub at: usize,
    pub end: usize,
    pub text: String,
}

impl Edit {
    pub fn new(at: usize, end: usize, text: impl Into<String>) -> Edit {
        Edit { at, end, text: text.into() }
    }
}

/// `text` with each edit applied; edits in any order, an overlapping one is skipped (a duplicate
/// member: the first rewrite wins).
pub fn splice(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| e.at);
    // the exact size: a rewritten catalog is longer than the original, and letting the string double
    // past it would hold twice the body at the peak
    let grown: usize = edits.iter().map(|e| e.text.len().saturating_sub(e.end.saturating_sub(e.at))).sum();
    let mut out = String::with_capacity(text.len() + grown);
    let mut pos = 0;
    for e in edits {
        if e.at < pos {
            continue;
        }
        out.push_str(text.get(pos..e.at).unwrap_or(""));
        out.push_str(&e.text);
        pos = e.end;
    }
    out.push_str(text.get(pos..).unwrap_or(""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::profile::LLAMA_CPP;

    fn run(body: &str, f: Format) -> BodyOutcome {
        match rewrite_body(body.as_bytes(), f, &LLAMA_CPP, &Options::default()) {
            Ok(o) => o,
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn tools_that_define_a_name_differently_get_their_own_names_where_definitions_are_shared() {
        let tool = |name: &str, ty: &str| {
            format!(
                r##"{{"type":"function","function":{{"name":"{name}","parameters":{{"type":"object","properties":{{"c":{{"$ref":"#/$defs/Config"}}}},"$defs":{{"Config":{{"type":"{ty}"}}}}}}}}}}"##
            )
        };
        let body = format!(r#"{{"tool_choice":"required","tools":[{},{},{}]}}"#, tool("a", "string"), tool("b", "integer"), tool("c", "string"));
        let Ok(o) = rewrite_body(body.as_bytes(), Format::OpenAiChat, &crate::schema::profile::VLLM, &Options::default()) else { panic!() };
        let Ok(v) = serde_json::from_slice::<Value>(&o.body.unwrap_or_default()) else { panic!("no body") };
        let params = |i: usize| v["tools"][i]["function"]["parameters"].clone();
        assert_eq!(params(0)["$defs"]["Config"]["type"], "string");
        assert_eq!(params(1)["properties"]["c"]["$ref"], "#/$defs/Config2");
        assert_eq!(params(1)["$defs"]["Config2"]["type"], "integer");
        assert_eq!(params(2)["$defs"]["Config"]["type"], "string", "the same definition is shared, not renamed");
        assert_eq!(o.report.counters.get(&crate::schema::Kind::DefinitionRenamed), Some(&1));
        // where each tool is compiled alone, names never clash
        let alone = run(&body, Format::OpenAiChat).body.unwrap_or_default();
        assert!(!String::from_utf8_lossy(&alone).contains("Config2"));
    }

    #[test]
    fn only_the_schema_bytes_change() {
        let body = r#"{ "messages" : [ {"role":"user", "content":"hi \u00e9"} ],
  "tools": [{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"\\d+"}},"additionalProperties":false}}}] , "x": 1.50 }"#;
        let o = run(body, Format::OpenAiChat);
        let out = String::from_utf8(o.body.unwrap_or_default()).unwrap_or_default();
        assert!(out.starts_with(r#"{ "messages" : [ {"role":"user", "content":"hi \u00e9"} ],"#));
        assert!(out.ends_with(r#" , "x": 1.50 }"#));
        assert!(out.contains(r#""pattern":"^.*[0-9]+.*$""#), "{out}");
        assert_eq!(o.tools, 1);
    }

    #[test]
    fn a_body_needing_nothing_is_not_rewritten() {
        let body = r#"{"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}]}"#;
        let o = run(body, Format::OpenAiChat);
        assert!(o.body.is_none());
        assert!(o.report.is_empty());
    }

    #[test]
    fn every_format_is_found() {
        let s = r#"{"type":"object","properties":{"a":true}}"#;
        let cases = [
            (format!(r#"{{"tools":[{{"type":"function","name":"f","parameters":{s}}}]}}"#), Format::OpenAiResponses),
            (format!(r#"{{"tools":[{{"name":"f","input_schema":{s}}}]}}"#), Format::Anthropic),
            (format!(r#"{{"format":{s}}}"#), Format::Ollama),
            (format!(r#"{{"json_schema":{s}}}"#), Format::LlamaCompletion),
            (format!(r#"{{"tools":[{{"name":"f","inputSchema":{s}}}]}}"#), Format::McpTools),
            (format!(r#"{{"text":{{"format":{{"type":"json_schema","name":"n","schema":{s}}}}}}}"#), Format::OpenAiResponses),
            (format!(r#"{{"response_format":{{"type":"json_schema","json_schema":{{"name":"n","schema":{s}}}}}}}"#), Format::OpenAiChat),
        ];
        for (body, f) in cases {
            let o = run(&body, f);
            assert!(o.body.is_some(), "{f:?} not rewritten");
            let o = run(&body, Format::Auto);
            assert!(o.body.is_some(), "{f:?} not rewritten in auto");
        }
    }

    #[test]
    fn tools_without_a_description_get_an_empty_one_for_llama_cpp_before_2026_10() {
        let body = r#"{"tools": [{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},
 {"type":"function","function":{"description":null,"name":"b"}}, {"type":"function","function":{"name":"c","description":"x"}}]}"#;
        let o = run(body, Format::OpenAiChat);
        let out = String::from_utf8(o.body.clone().unwrap_or_default()).unwrap_or_default();
        let want = body.replacen(r#""name":"a""#, r#""name":"a","description":"""#, 1).replacen(r#""description":null"#, r#""description":"""#, 1);
        assert_eq!(out, want, "only the two descriptions change");
        assert_eq!((o.report.counters.get(&crate::schema::Kind::DescriptionAdded), o.schemas_changed), (Some(&2), 0));
        let names: Vec<&str> = o.report.records.iter().map(|r| r.tool.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        // the same through the cache, twice: the second is a whole-member hit
        let mut c = cache::SiteCache::new(1 << 20);
        for _ in 0..2 {
            let o = rewrite_body_cached(body.as_bytes(), Format::OpenAiChat, &LLAMA_CPP, &Options::default(), Some(&mut c)).unwrap();
            assert_eq!(o.body.as_deref(), Some(want.as_bytes()));
            assert_eq!(o.report.counters.get(&crate::schema::Kind::DescriptionAdded), Some(&2));
        }
        // a route on llama.cpp 2026-10 or later, and the mcp profile, leave them as they are
        let new = Options { llama_cpp: crate::schema::LlamaCpp::V2026_10, ..Options::default() };
        assert!(rewrite_body(body.as_bytes(), Format::OpenAiChat, &LLAMA_CPP, &new).unwrap().body.is_none());
        assert!(rewrite_body(body.as_bytes(), Format::OpenAiChat, &crate::schema::profile::MCP, &Options::default()).unwrap().body.is_none());
        // Anthropic tools have no `function`: nothing to add
        assert!(run(r#"{"tools":[{"name":"a","input_schema":{"type":"object"}}]}"#, Format::Anthropic).body.is_none());
    }

    #[test]
    fn strict_tools_is_turned_off_past_its_limits() {
        let p = &crate::schema::profile::COHERE;
        let tool = |req: &str| {
            format!(
                r#"{{"type":"function","function":{{"name":"f","strict":true,"parameters":{{"type":"object","properties":{{"a":{{"type":"string"}}}}{req}}}}}}}"#
            )
        };
        let body = |req: &str| format!(r#"{{"model":"c","strict_tools":true,"messages":[],"tools":[{}]}}"#, tool(req));
        let with = |b: &str, c: Option<&mut cache::SiteCache>| rewrite_body_cached(b.as_bytes(), Format::Cohere, p, &Options::default(), c).unwrap();
        let mut c = cache::SiteCache::new(1 << 20);
        for cache in [None, Some(&mut c)] {
            // a tool with parameters but none required: strict_tools off, the tool's own strict removed
            let o = with(&body(""), cache);
            let out = String::from_utf8(o.body.unwrap()).unwrap();
            assert!(out.contains(r#""strict_tools":false"#) && !out.contains(r#""strict":true"#), "{out}");
            assert_eq!(o.report.counters.get(&Kind::StrictDeclined), Some(&1));
        }
        // one required parameter: strict_tools stays
        let o = with(&body(r#","required":["a"]"#), Some(&mut c));
        let out = String::from_utf8(o.body.unwrap()).unwrap();
        assert!(out.contains(r#""strict_tools":true"#) && !out.contains(r#""strict":true"#), "{out}");
        assert_eq!(o.report.counters.get(&Kind::StrictDeclined), None);
    }

    /// Adding a format is its module and its variant: the test-only probe format keeps its tools under
    /// `toolbox.items` (and inside groups there) and its output under `answer.shape`, and is rewritten
    /// as a real format is, cold and warm. A warm body is answered from its schema-bearing members
    /// whole, so a member its descriptor did not declare would go out unchanged; the response path
    /// finds its tools in what it keeps of the request.
    #[test]
    fn a_format_with_its_tools_under_its_own_keys_is_rewritten_cold_and_warm() {
        let s = r#"{"type":"object","properties":{"a":{"type":"string","pattern":"\\d+"}}}"#;
        let Ok(alone) =
            rewrite_body(format!(r#"{{"tools":[{{"name":"x","input_schema":{s}}}]}}"#).as_bytes(), Format::Anthropic, &LLAMA_CPP, &Options::default())
        else {
            panic!()
        };
        let alone = String::from_utf8(alone.body.unwrap_or_default()).unwrap_or_default();
        let Some(rewritten) = alone.strip_prefix(r#"{"tools":[{"name":"x","input_schema":"#).and_then(|r| r.strip_suffix("}]}")) else { panic!("{alone}") };
        assert_ne!(rewritten, s, "the schema needs a rewrite");
        let body = |s: &str| {
            format!(
                r#"{{"query":"q","toolbox":{{"items":[{{"title":"a","args":{s}}},{{"type":"group","members":[{{"title":"b","args":{s}}}]}}]}},"answer":{{"shape":{s}}}}}"#
            )
        };
        let (body, want) = (body(s), body(rewritten));
        let o = run(&body, Format::Probe);
        assert_eq!((o.body.as_deref(), o.tools, o.schemas_changed), (Some(want.as_bytes()), 2, 3), "cold");
        let mut c = cache::SiteCache::new(1 << 20);
        for round in 0..2 {
            let misses = c.misses;
            let Ok(o) = rewrite_body_cached(body.as_bytes(), Format::Probe, &LLAMA_CPP, &Options::default(), Some(&mut c)) else { panic!() };
            assert_eq!((o.body.as_deref(), o.tools, o.schemas_changed), (Some(want.as_bytes()), 2, 3), "warm, round {round}");
            assert_eq!(c.misses == misses, round == 1, "the second round is answered from the members");
        }
        // controls: another format reads none of it, and the members are the probe's own
        assert!(run(&body, Format::Anthropic).body.is_none());
        assert!(format::holds_schemas("toolbox") && format::holds_schemas("answer") && !format::holds_schemas("query"));
        let kept = o.tool_lists_of(std::borrow::Cow::Borrowed(body.as_bytes()));
        assert!(kept.starts_with(br#"{"toolbox":{"items":[{"#), "{}", String::from_utf8_lossy(&kept));
        let text = skim::text(&kept).unwrap_or_default();
        let names: Vec<String> = locate_tools(text, Format::Probe).into_iter().map(|s| s.tool).collect();
        assert_eq!(names, ["a", "b"]);
    }

    /// Codex sends MCP tools inside a Responses namespace: their schemas and names are the request's
    /// like any other tool's.
    #[test]
    fn responses_namespaces_are_read_as_tools() {
        let s = r#"{"type":"object","properties":{"a":{"type":"string","pattern":"\\p{L}+"}}}"#;
        let body = format!(
            r#"{{"model":"m","input":[],"tools":[{{"type":"namespace","name":"mcp__srv","tools":[{{"type":"function","name":"get.weather","strict":true,"parameters":{s}}}]}}]}}"#
        );
        for format in [Format::OpenAiResponses, Format::Auto] {
            let Ok(o) = rewrite_body(body.as_bytes(), format, &crate::schema::profile::OPENAI_STRICT, &Options::default()) else { panic!() };
            let out = String::from_utf8(o.body.unwrap_or_default()).unwrap_or_default();
            assert_eq!(o.tools, 1, "{format:?}");
            assert!(out.contains(r#""name":"mcp__srv""#) && out.contains(r#""additionalProperties":false"#), "{format:?}: {out}");
            // names are the format's: `auto` renames none
            if format == Format::OpenAiResponses {
                assert!(out.contains(r#""name":"get_weather""#), "{out}");
                assert_eq!(o.names.original("get_weather"), Some("get.weather"));
            }
        }
        // a tool of another type with a `tools` member is not a namespace
        let other = body.replace(r#""type":"namespace""#, r#""type":"bundle""#);
        assert_eq!(run(&other, Format::OpenAiResponses).tools, 0);
    }

    /// `auto` reads every list any format has, and the bare list only MCP has.
    #[test]
    fn auto_reads_every_list() {
        let auto: Vec<&[&str]> = format::list_reads(Format::Auto).iter().map(|r| r.at).collect();
        for d in format::ALL.iter().filter(|d| d.format != Format::Probe) {
            for l in d.tools.lists {
                assert!(auto.contains(l), "{}: {l:?} not read by auto", d.name);
            }
        }
        assert_eq!(auto.len(), auto.iter().collect::<std::collections::BTreeSet<_>>().len(), "each list once: {auto:?}");
        assert!(format::bare(Format::Auto).is_some() && format::bare(Format::OpenAiChat).is_none());
    }

    #[test]
    fn broken_bodies_are_refused_not_mangled() {
        let p = &LLAMA_CPP;
        let o = Options::default();
        assert_eq!(rewrite_body(b"{\"tools\": [", Format::Auto, p, &o).err(), Some(Skip::NotJson));
        assert_eq!(rewrite_body(b"\"x\"", Format::Auto, p, &o).err(), Some(Skip::UnknownShape));
        assert_eq!(rewrite_body(&[0xff, 0xfe], Format::Auto, p, &o).err(), Some(Skip::NotJson));
    }
}
