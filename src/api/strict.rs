//! Each site's rewrite, and the strict policy of APIs with a strict mode: asked for or forced, kept
//! within the API's per-request limits, declined to the non-strict rewrite otherwise, and the
//! switches beside the schemas set to say which.

use super::edit::SiteResult;
use super::raw::{self, Raw};
use super::site::{Site, StrictAt};
use super::{cache, Unparsed};
use crate::schema::profile::{Field, Strictness};
use crate::schema::{self, Context, Kind, Options, Profile, Report};
use serde_json::Value;

/// Whether each schema goes strict, for an API with a strict mode: asked for (or forced by the
/// profile), kept only if the strict rewrite is not declined and the request's strict schemas stay
/// within the API's per-request limits; else the schema gets the non-strict rewrite of the original,
/// and the switch says which.
pub(super) struct StrictPolicy<'o> {
    profile: &'static Profile,
    opts: &'o Options,
    /// What the request's strict tools have used of the per-request limits so far.
    spent: Spent,
    scopes: Scopes,
    /// Tools sent strict, and tools that asked for strict mode and were declined, so far.
    strict_tools: usize,
    declined_tools: usize,
    /// Every tool non-strict: the mode is all tools or none, and one was declined (see [`Self::mixed`]).
    all_loose: bool,
}

impl<'o> StrictPolicy<'o> {
    pub(super) fn new(profile: &'static Profile, opts: &'o Options) -> Self {
        StrictPolicy { profile, opts, spent: Spent::default(), scopes: Scopes::default(), strict_tools: 0, declined_tools: 0, all_loose: false }
    }

    /// The policy for a second pass over a request whose strict mode is all tools or none, after
    /// [`Self::mixed`]: every tool non-strict.
    pub(super) fn all_loose(profile: &'static Profile, opts: &'o Options) -> Self {
        StrictPolicy { all_loose: true, ..StrictPolicy::new(profile, opts) }
    }

    /// Whether the request's tools ended some strict and some declined where the API's strict mode is
    /// all tools or none (DeepSeek): the request is then rewritten again with [`Self::all_loose`].
    pub(super) fn mixed(&self) -> bool {
        let all_or_none = self.profile.modes.and_then(|m| m.strict.target.strict).is_some_and(|s| s.all_tools);
        all_or_none && self.strict_tools > 0 && self.declined_tools > 0
    }

    /// Rewrites one site and adds its results (the schema's, and any switch or member edit beside it).
    pub(super) fn site(&mut self, text: &str, site: &Site, mut cache: Option<&mut cache::SiteCache>, results: &mut Vec<SiteResult>) {
        let Some(at) = raw::offset(text, site.raw.get()) else { return };
        let mut r = SiteResult::schema(at, site.raw.get().len(), &site.tool, site.context);
        // a schema held in a JSON string is rewritten decoded (one that does not decode is left)
        let decoded;
        let src = if site.encoded {
            decoded = serde_json::from_str::<String>(site.raw.get()).unwrap_or_default();
            decoded.as_str()
        } else {
            site.raw.get()
        };
        if !(src.starts_with('{') || src == "true" || src == "false") {
            results.push(r); // `null` or another non-schema: nothing to compile, nothing to change
            return;
        }
        let (profile, opts) = (self.profile, self.opts);
        let modes = profile.modes.filter(|_| !matches!(site.strict, StrictAt::NoSwitch));
        let asked = modes.is_some_and(|m| m.force || site.strict.on());
        let all_loose = self.all_loose && site.context == Context::Tool;
        let strict_on = asked && !all_loose;
        let first = profile.for_site(Strictness::of(strict_on), Field::of(site.json_field), site.context);
        let mut done = rewrite_site(src, (&site.tool, site.context), first, opts, cache.as_deref_mut(), &mut self.scopes);
        let mut strict = strict_on;
        let loose = profile.for_site(Strictness::Loose, Field::of(site.json_field), site.context);
        if strict && done.report.counters.contains_key(&Kind::StrictDeclined) {
            done = declined(done.report, rewrite_site(src, (&site.tool, site.context), loose, opts, cache.as_deref_mut(), &mut self.scopes));
            strict = false;
        }
        // the API's limits over the whole request: past them a schema goes non-strict
        if let (true, Some(limits)) = (strict && site.context == Context::Tool, first.target.strict.and_then(|s| s.per_request)) {
            if let Some(why) = self.spent.add(&limits, done.output.as_deref().unwrap_or(src)) {
                let mut report = Report::default();
                report.push(crate::schema::Record { tool: site.tool.clone(), path: String::new(), kind: Kind::StrictDeclined, detail: why });
                done = declined(report, rewrite_site(src, (&site.tool, site.context), loose, opts, cache, &mut self.scopes));
                strict = false;
            }
        }
        if all_loose && asked {
            done.report.push(crate::schema::Record {
                tool: site.tool.clone(),
                path: String::new(),
                kind: Kind::StrictDeclined,
                detail: "another tool of the request cannot be made strict, and the API's strict mode is all tools or none".into(),
            });
        }
        if site.context == Context::Tool && asked {
            if strict {
                self.strict_tools += 1;
            } else {
                self.declined_tools += 1;
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
        r.output = if site.encoded { done.output.and_then(|o| serde_json::to_string(&o).ok()) } else { done.output };
        r.report = done.report;
        r.unparsed = done.unparsed;
        results.push(r);
    }
}

/// One schema's rewrite by one profile.
pub(super) struct Done {
    pub(super) output: Option<String>,
    pub(super) report: Report,
    pub(super) unparsed: Option<Unparsed>,
}

/// Rewrites one schema with `profile` (from the cache when it was seen before).
pub(super) fn rewrite_site(
    src: &str,
    (tool, context): (&str, Context),
    profile: &'static Profile,
    opts: &Options,
    mut cache: Option<&mut cache::SiteCache>,
    scopes: &mut Scopes,
) -> Done {
    let scope = if cache.is_some() { scopes.of(profile, opts) } else { 0 };
    if let Some(c) = cache.as_deref_mut() {
        if let Some(hit) = c.get(scope, tool, context, src) {
            c.hits += 1;
            return Done { output: hit.output, report: hit.report, unparsed: None };
        }
    }
    let mut report = Report::default();
    let mut v: Value = match schema::parse(src, opts, context, tool, &mut report) {
        Ok(v) => v,
        Err(reason) => return Done { output: None, report: Report::default(), unparsed: Some(Unparsed { tool: tool.to_string(), reason }) },
    };
    let cut = !report.is_empty();
    let out = schema::normalize(&mut v, profile, opts, context, tool);
    let output = if out.changed || cut { to_text(&v, src.len()) } else { None };
    report.extend(out.report);
    let declined = report.counters.contains_key(&Kind::StrictDeclined);
    let output = if declined { None } else { output };
    if let Some(c) = cache {
        c.misses += 1;
        c.put(scope, tool, context, src, cache::Hit { output: output.clone(), report: report.clone(), counts: cache::Counts::default() });
    }
    Done { output, report, unparsed: None }
}

/// A rewritten schema as compact JSON, written into a buffer about the size of the original (it grew by
/// doubling from nothing before: a dozen copies for a large schema).
pub(super) fn to_text(v: &Value, about: usize) -> Option<String> {
    let mut out = Vec::with_capacity(about + about / 4);
    serde_json::to_writer(&mut out, v).ok()?;
    String::from_utf8(out).ok()
}

/// Each profile's cache scope, taken once per body (a body's sites use one or two profiles).
#[derive(Default)]
pub(super) struct Scopes(Vec<(&'static str, u64)>);

impl Scopes {
    pub(super) fn of(&mut self, profile: &'static Profile, opts: &Options) -> u64 {
        if let Some((_, s)) = self.0.iter().find(|(n, _)| *n == profile.name) {
            return *s;
        }
        let s = cache::scope(profile.name, opts);
        self.0.push((profile.name, s));
        s
    }
}

/// The non-strict rewrite, reported with why strict mode was declined (see [`Report::declined`]).
pub(super) fn declined(strict: Report, loose: Done) -> Done {
    Done { output: loose.output, report: Report::declined(strict, loose.report), unparsed: loose.unparsed }
}

/// What a request's strict tools have used of the API's per-request limits so far.
#[derive(Default)]
pub(super) struct Spent {
    tools: usize,
    optional: usize,
    unions: usize,
}

impl Spent {
    /// Counts one more strict schema (`text`), or says which limit it would pass (and counts nothing).
    pub(super) fn add(&mut self, limits: &crate::schema::target::RequestLimits, text: &str) -> Option<String> {
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
pub(super) fn set_strict(text: &str, site: &Site, on: bool) -> Option<SiteResult> {
    let value = if on { "true" } else { "false" };
    let (at, len, output) = match site.strict {
        StrictAt::Member(v) if v.get() == value => return None,
        StrictAt::Member(v) => (raw::offset(text, v.get())?, v.get().len(), value.to_string()),
        StrictAt::Absent { .. } => (raw::offset(text, site.raw.get())? + site.raw.get().len(), 0, format!(",\"strict\":{value}")),
        StrictAt::NoSwitch => return None,
    };
    Some(SiteResult::beside(at, len, output, Report::default(), &site.tool))
}

/// The edit that turns a request's `strict_tools: true` off when its tools, as rewritten, pass the API's
/// limits for it.
pub(super) fn strict_tools(text: &str, top: &raw::RawObject, limits: &crate::schema::target::StrictTools, results: &[SiteResult]) -> Option<SiteResult> {
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
    Some(SiteResult::beside(raw::offset(text, v.get())?, v.get().len(), "false", report, ""))
}

/// The edit that removes member `key` (whose value is `v`) with its separator.
pub(super) fn drop_member(text: &str, key: &str, v: Raw<'_>, tool: &str) -> Option<SiteResult> {
    let at = raw::offset(text, v.get())?;
    let (a, b) = raw::member_span(text, key, at, v.get().len())?;
    let mut report = Report::default();
    report.push(crate::schema::Record {
        tool: tool.to_string(),
        path: String::new(),
        kind: Kind::KeywordNormalized,
        detail: format!("tool member {key:?} removed: the API refuses it"),
    });
    Some(SiteResult::beside(a, b - a, "", report, tool))
}
