//! Where the schemas are in each API's body, and how rewritten ones go back in.
//!
//! Only the schema subtrees are parsed into values; everything else (messages can be megabytes) is
//! scanned once and copied through as the original bytes.

pub mod cache;
pub mod convert;
mod defs;
mod edit;
pub mod format;
pub mod lift;
mod locate;
mod members;
mod namemap;
pub mod names;
pub mod raw;
pub mod scan;
mod site;
pub mod skim;
mod strict;

pub use edit::{splice, Edit};
pub use format::model_in_path;
pub use locate::{locate, locate_tools, tool_lists_in, ToolList};
pub use namemap::NameMap;
pub use site::{Member, Missing, Site, StrictAt, Unset};

use edit::{assemble, describe, parameterize, SiteResult};
use locate::{locate_in, tool_lists, top, Read, Top};
use members::{cached_members, from_members, known, remember_members};
use strict::{strict_tools, StrictPolicy};

use crate::schema::{Options, Profile, Report};

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
    /// Bedrock Converse: `toolConfig.tools[].toolSpec.inputSchema.json`,
    /// `outputConfig.textFormat.structure.jsonSchema.schema` (a string holding the schema).
    BedrockConverse,
    /// Bedrock InvokeModel with Anthropic's Messages body (`anthropic_version: bedrock-2023-05-31`):
    /// `tools[].input_schema`, its stream Anthropic's events base64-encoded in event-stream messages.
    BedrockInvoke,
    /// An MCP `tools/list` result (`{"tools": [...]}`, a JSON-RPC response, or a bare array of tools):
    /// `inputSchema` (tool context) and `outputSchema` (structured output).
    McpTools,
    /// An MCP route: JSON-RPC messages between MCP clients and a server (`crate::filter::mcp`); the
    /// schemas are a `tools/list` result's `inputSchema`s.
    Mcp,
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

/// The request's top-level `model` (OpenAI, Anthropic, Ollama and vLLM bodies), for the model map.
pub fn model(body: &[u8]) -> Option<String> {
    match raw::object(skim::text(body)?) {
        Some(o) => o.str("model"),
        None => None,
    }
}

/// Whether rewriting a `format` body for `profile` may change its top-level member `key`, or needs
/// to read it whole: a member holding schemas (any format's, as the rewrite cache's members), one
/// that declares the request's tools or names them again where the profile renames tools (names the
/// API refuses, namespaces lifted), and a request-level switch the profile decides over every tool
/// together (Cohere's `strict_tools`). Every other member goes to the engine only for its key (and its
/// text when short: `model`), and comes out as it went in: a body streamed past toolfit is held from
/// the first member this says yes to, the members before it go on as they came (`filter::incoming`).
pub fn changes(key: &str, format: Format, profile: &Profile) -> bool {
    if format::holds_schemas(key) {
        return true;
    }
    if profile.target.strict_tools.is_some() && key == "strict_tools" {
        return true;
    }
    let Some(d) = format.descriptor() else { return false };
    let lifts = profile.target.namespaces == crate::schema::target::Namespaces::Lift && d.tools.nested.is_some();
    let renames = profile.target.names.is_some() || lifts;
    let first = |paths: &[&[raw::Step]]| paths.iter().any(|p| matches!(p.first(), Some(raw::Step::Key(k)) if *k == key));
    first(d.declared) || (renames && first(d.mentioned))
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

/// One schema rewritten apart from any body (an MCP `outputSchema`, which the MCP leg sends on only
/// where every change widens it), through the rewrite cache like a body's: its new text where it
/// changed, and the report. `Err`: not a schema toolfit reads, and why.
pub fn rewrite_schema(
    src: &str,
    (tool, context): (&str, crate::schema::Context),
    profile: &'static Profile,
    opts: &Options,
    cache: Option<&mut cache::SiteCache>,
) -> Result<(Option<String>, Report), String> {
    let done = strict::rewrite_site(src, (tool, context), profile, opts, cache, &mut strict::Scopes::default());
    match done.unparsed {
        Some(u) => Err(u.reason),
        None => Ok((done.output, done.report)),
    }
}

pub struct BodyOutcome {
    /// The rewritten body; `None` when nothing changed (forward the original bytes).
    pub body: Option<Vec<u8>>,
    pub report: Report,
    pub tools: usize,
    pub schemas_changed: usize,
    pub unparsed: Vec<Unparsed>,
    /// Tools sent under another name (the response path says the originals again).
    pub names: NameMap,
    /// The request's lists of tools, as the client sent them: all the response path keeps of the
    /// request (see [`BodyOutcome::tool_lists_of`]).
    pub tool_lists: Vec<ToolList>,
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
    if let Some(rule) = profile.target.names {
        if let Some(map) = apply(&mut out, body, &|t| names::plan(t, format, &rule))? {
            out.names = map;
        }
    }
    // namespaces after names, over the body as it goes: a lifted tool's name is the one sent
    // only where the target lifts and the format has namespaces: no other request pays for the look
    let lifts = profile.target.namespaces == crate::schema::target::Namespaces::Lift && format.descriptor().is_some_and(|d| d.tools.nested.is_some());
    if let Some(mut map) = if lifts { apply(&mut out, body, &|t| lift::plan(t, format, profile.target.namespaces))? } else { None } {
        // the client's names: a name the API refused was renamed before it was lifted
        for l in &mut map.lifted {
            if let Some(o) = out.names.original(&l.name) {
                l.name = o.to_string();
            }
        }
        out.names.lifted = map.lifted;
    }
    Ok(out)
}

/// What a plan over a whole body gives: its edits, the names it changed, its records.
type Plan = (Vec<Edit>, NameMap, Report);

/// A plan over the body as it goes (rewritten, else as it came) applied to it: its edits spliced in,
/// its records added; its map returned. One copy for both plans (Wasm size).
#[inline(never)]
fn apply(out: &mut BodyOutcome, body: &[u8], plan: &dyn Fn(&str) -> Option<Plan>) -> Result<Option<NameMap>, Skip> {
    let text = match &out.body {
        Some(b) => skim::text(b).ok_or(Skip::NotJson)?,
        None => skim::text(body).ok_or(Skip::NotJson)?,
    };
    let Some((edits, map, report)) = plan(text) else { return Ok(None) };
    if !edits.is_empty() {
        out.body = Some(splice(text, edits).into_bytes());
    }
    out.report.extend(report);
    Ok(Some(map))
}

/// The body's top level, as [`top`] reads it; with a cache, a member it holds whole is not read again:
/// the scan takes it as it is, and its hit is kept (by its value's offset) for [`from_members`].
#[allow(clippy::type_complexity)]
fn read_top<'t>(
    text: &'t str,
    format: Format,
    profile: &Profile,
    scope: u64,
    cache: Option<&mut cache::SiteCache>,
) -> (Option<Top<'t>>, raw::ToolLists<'t>, Vec<(usize, cache::Hit)>) {
    let mut vouched = Vec::new();
    match cache {
        Some(c) if !text.trim_start().starts_with('[') && profile.target.strict_tools.is_none() => {
            let mut vouch = |key: &str, rest: &str| {
                let (len, hit) = known(c, scope, format, key, rest)?;
                vouched.push((raw::offset(text, rest)?, hit));
                Some(len)
            };
            let parsed = skim::object_known(text, &mut vouch).map(|m| Top::Object(raw::raw_object(m)));
            (parsed, Vec::new(), vouched)
        }
        c => {
            let (parsed, lists) = top(text, format, if c.is_some() { Read::Members } else { Read::WithLists });
            (parsed, lists, vouched)
        }
    }
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
    let (parsed, lists, vouched) = read_top(text, format, profile, scope, cache.as_deref_mut());
    // a member's rewrite may read the body's other schema-bearing members (a strict mode of all tools
    // or none, definitions renamed apart across tools): it depends on its own bytes alone only where it
    // is the only one, so only then is it looked up or stored whole (issue 71: `{"tools":[..],
    // "tools":[..]}` stored one member's rewrite made beside the other and served it to later requests)
    let members = cached_members(text, parsed.as_ref(), profile, cache.is_some());
    let members = if members.len() > 1 { Vec::new() } else { members };
    let tool_lists = match &parsed {
        Some(Top::Object(o)) => tool_lists(text, o, format),
        _ => Vec::new(),
    };
    if let (Some(c), false) = (cache.as_deref_mut(), members.is_empty()) {
        if let Some(done) = from_members(c, scope, format, text, &members, vouched) {
            return Ok(BodyOutcome { tool_lists, ..done });
        }
    }
    let mut undescribed = Vec::new();
    let Some(sites) = parsed.as_ref().and_then(|t| locate_in(t, &lists, format, &mut undescribed)) else {
        return Err(if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() { Skip::UnknownShape } else { Skip::NotJson });
    };
    // the sites point into the text: the split lists are not held while the schemas are rewritten
    drop(lists);
    let mut policy = StrictPolicy::new(profile, opts);
    let mut results: Vec<SiteResult> = Vec::with_capacity(sites.len());
    for site in &sites {
        policy.site(text, site, cache.as_deref_mut(), &mut results);
    }
    // a strict mode of all tools or none, with one tool declined: every tool again, non-strict
    if policy.mixed() {
        policy = StrictPolicy::all_loose(profile, opts);
        results.clear();
        for site in &sites {
            policy.site(text, site, cache.as_deref_mut(), &mut results);
        }
    }
    // what spans the request: definitions shared across tools, Cohere's request-level switch, the
    // descriptions old llama-server releases need
    if profile.target.shared_defs {
        defs::share(text, &mut results);
    }
    if let (Some(limits), Some(Top::Object(o))) = (profile.target.strict_tools, parsed.as_ref()) {
        results.extend(strict_tools(text, o, &limits, &results));
    }
    let release = profile.target.release(opts);
    let (descriptions, parameters): (Vec<&Missing>, Vec<&Missing>) = undescribed.iter().partition(|d| d.member == Member::Description);
    if profile.target.tool_description && !release.is_some_and(|r| r.tool_description_optional()) {
        results.extend(descriptions.iter().filter(|d| !d.empty).filter_map(|d| describe(text, d)));
    }
    // an empty description the format refuses (Bedrock's `NonEmptyString`) goes, whatever the profile
    results.extend(descriptions.iter().filter(|d| d.empty).filter_map(|d| strict::drop_member(text, "description", d.anchor, &d.tool)));
    // a function without `parameters` is a tool too (counted), given an empty object schema where the
    // server reads the member unconditionally
    let add = profile.target.tool_parameters && !release.is_some_and(|r| r.tool_parameters_optional());
    results.extend(parameters.iter().filter_map(|d| parameterize(text, d, add)));
    if let Some(c) = cache {
        remember_members(c, scope, format, text, &members, &results);
    }
    Ok(assemble(text, results, tool_lists))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::profile::LLAMA_CPP;
    use crate::schema::Kind;
    use serde_json::{json, Value};

    fn run(body: &str, f: Format) -> BodyOutcome {
        match rewrite_body(body.as_bytes(), f, &LLAMA_CPP, &Options::default()) {
            Ok(o) => o,
            Err(e) => panic!("{e:?}"),
        }
    }

    /// A cached rewrite depends only on its key: a body whose two `tools` members read each other (20
    /// strict tools beside one, a tool strict declines, a `$defs` name that clashes) leaves nothing in the
    /// cache that changes a later body holding one of those members alone, for every profile. The
    /// control: the member alone, rewritten first beside the other, differs for some profile (so the
    /// sequence can tell).
    #[test]
    fn a_cached_member_rewrite_depends_only_on_its_bytes() {
        let tool = |name: &str, schema: &str| format!(r#"{{"type":"function","function":{{"name":"{name}","description":"d","parameters":{schema}}}}}"#);
        let plain = tool(
            "ap",
            r##"{"type":"object","properties":{"c":{"$ref":"#/$defs/Config"}},"$defs":{"Config":{"type":"string"}},"required":["c"],"additionalProperties":false}"##,
        );
        let many: Vec<String> = (0..20)
            .map(|i| tool(&format!("t{i}"), r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}"#))
            .collect();
        let clash = tool(
            "cl",
            r##"{"type":"object","properties":{"c":{"$ref":"#/$defs/Config"},"r":{"type":"object","patternProperties":{"^x":{"type":"integer"}}}},"$defs":{"Config":{"type":"integer"}}}"##,
        );
        let alone = format!(r#"{{"model":"m","tools":[{plain}]}}"#);
        let mut differs = false;
        for p in crate::schema::profile::ALL {
            let opts = Options::default();
            let want = rewrite_body(alone.as_bytes(), Format::OpenAiChat, p, &opts).map(|o| o.body);
            for other in [format!("{},{clash}", many.join(",")), clash.clone()] {
                for pair in
                    [format!(r#"{{"model":"m","tools":[{other}],"tools":[{plain}]}}"#), format!(r#"{{"model":"m","tools":[{plain}],"tools":[{other}]}}"#)]
                {
                    let mut c = cache::SiteCache::new(1 << 20);
                    let _ = rewrite_body_cached(pair.as_bytes(), Format::OpenAiChat, p, &opts, Some(&mut c));
                    let got = rewrite_body_cached(alone.as_bytes(), Format::OpenAiChat, p, &opts, Some(&mut c)).map(|o| o.body);
                    assert_eq!(got, want, "{}: the member alone after {pair}", p.name);
                    // the control: what the pair made of that member is not what it makes alone
                    let paired = rewrite_body(pair.as_bytes(), Format::OpenAiChat, p, &opts).ok().and_then(|o| o.body).unwrap_or_default();
                    let mine = want.as_ref().ok().and_then(|b| b.clone()).unwrap_or_else(|| alone.clone().into_bytes());
                    let text = String::from_utf8_lossy(&mine);
                    let core = text.trim_start_matches(r#"{"model":"m","tools":["#).trim_end_matches("]}");
                    differs |= !String::from_utf8_lossy(&paired).contains(core);
                }
            }
        }
        assert!(differs, "control: some profile rewrites the member differently beside the other");
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
    fn tools_without_parameters_are_tools_and_get_an_empty_object_for_llama_cpp_before_2026_10() {
        let body = r#"{"tools": [{"type":"function","function":{"name":"a","description":"x"}},
 {"type":"function","function":{"name":"b","description":"y","parameters":{"type":"object","properties":{}}}}]}"#;
        let o = run(body, Format::OpenAiChat);
        let out = String::from_utf8(o.body.clone().unwrap_or_default()).unwrap_or_default();
        assert_eq!(out, body.replacen(r#""name":"a""#, r#""name":"a","parameters":{"type":"object","properties":{}}"#, 1));
        assert_eq!((o.report.counters.get(&crate::schema::Kind::ParametersAdded), o.tools), (Some(&1), 2));
        // through the cache, twice
        let mut c = cache::SiteCache::new(1 << 20);
        for _ in 0..2 {
            let o = rewrite_body_cached(body.as_bytes(), Format::OpenAiChat, &LLAMA_CPP, &Options::default(), Some(&mut c)).unwrap();
            assert_eq!(o.body.as_deref(), Some(out.as_bytes()));
            assert_eq!(o.tools, 2);
        }
        // 2026-10 reads a missing `parameters` as `{}`: unchanged, and still two tools
        let new = Options { llama_cpp: crate::schema::LlamaCpp::V2026_10, ..Options::default() };
        let o = rewrite_body(body.as_bytes(), Format::OpenAiChat, &LLAMA_CPP, &new).unwrap();
        assert_eq!((o.body.is_none(), o.tools), (true, 2));
        assert!(rewrite_body(body.as_bytes(), Format::OpenAiChat, &crate::schema::profile::OPENAI, &Options::default()).unwrap().body.is_none());
    }

    #[test]
    fn tools_without_a_description_get_an_empty_one_for_llama_cpp_before_2026_10() {
        let body = r#"{"tools": [{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},
 {"type":"function","function":{"description":null,"name":"b","parameters":{"type":"object"}}}, {"type":"function","function":{"name":"c","description":"x","parameters":{"type":"object"}}}]}"#;
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

    #[test]
    fn deepseek_strict_is_all_tools_or_none() {
        let p = &crate::schema::profile::DEEPSEEK_STRICT;
        let plain = r#"{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"string","minLength":2}}}}}"#;
        // a map: strict mode cannot say it
        let map = r#"{"type":"function","function":{"name":"m","parameters":{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}}}}"#;
        let with = |tools: &str, c: Option<&mut cache::SiteCache>| {
            let b = format!(r#"{{"model":"deepseek-chat","messages":[],"tools":[{tools}]}}"#);
            rewrite_body_cached(b.as_bytes(), Format::OpenAiChat, p, &Options::default(), c).unwrap()
        };
        let mut c = cache::SiteCache::new(1 << 20);
        for cache in [None, Some(&mut c)] {
            let o = with(&format!("{plain},{map}"), cache);
            let out: Value = serde_json::from_slice(&o.body.unwrap()).unwrap();
            let tools = out["tools"].as_array().unwrap();
            assert!(tools.iter().all(|t| t["function"]["strict"] == json!(false)), "{out}");
            assert_eq!(tools[0]["function"]["parameters"]["properties"]["x"]["minLength"], json!(2), "the non-strict rewrite: {out}");
            assert_eq!(o.report.counters.get(&Kind::StrictDeclined), Some(&2));
        }
        // control: every tool can be strict, so every tool is
        let o = with(plain, Some(&mut c));
        let out: Value = serde_json::from_slice(&o.body.unwrap()).unwrap();
        assert_eq!(out["tools"][0]["function"]["strict"], json!(true), "{out}");
        assert!(out["tools"][0]["function"]["parameters"]["properties"]["x"].get("minLength").is_none(), "{out}");
        assert_eq!(out["tools"][0]["function"]["parameters"]["additionalProperties"], json!(false));
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
