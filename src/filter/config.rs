//! The plugin configuration: JSON, every field with a default, validated completely at load.
//!
//! `{"profile": "llama-cpp"}` alone is a complete configuration. An unknown key or a bad value is an
//! error that names it: the filter refuses to start rather than run on a half-understood config
//! (Envoy then rejects the listener or NACKs the update, and keeps the previous config).

use crate::api::{format, Format};
use crate::schema::{Limits, LlamaCpp, Options, Profile};
use serde_json::{Map, Value};

/// What to do with a tool call whose arguments the client's schema refuses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnInvalid {
    /// Count it and log it; the client gets the call.
    #[default]
    Count,
    /// Answer the client with an error naming the tool and the place instead of the call (plain
    /// JSON responses; a stream is counted only, its headers are long gone).
    Reject,
}

/// Whether toolfit acts on what it computes (`mode`), for rolling it out in stages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Rewrite requests, refuse in strict mode, repair responses.
    #[default]
    Enforce,
    /// Compute the rewrite and count and log it exactly as `enforce` would, then forward the original
    /// bytes (`requests_observed`); no strict 400, nothing to repair in responses, calls still checked.
    Observe,
}

/// How the rewritten body is framed towards the upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Headers go upstream at once without `Content-Length`; the body follows chunked. Works on every
    /// Envoy and with Istio's WasmPlugin (which cannot set `allow_on_headers_stop_iteration`).
    Chunked,
    /// Headers are held until the body is rewritten and carry its exact `Content-Length`. Requires the
    /// plugin's `allow_on_headers_stop_iteration: true` (Envoy >= 1.35), or requests hang.
    Exact,
}

/// One route: which requests toolfit reads, and how. What both legs read sits here; what only one
/// reads sits in its [`RouteLeg`], chosen by `format` when the configuration is read.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// Where it matches.
    pub at: At,
    /// Body format: one of [`crate::api::format::ALL`] by name, or `auto` (recognised by its members).
    pub format: Format,
    /// Profile for this route (default: the plugin's `profile`; on an MCP route, `mcp`).
    pub profile: Option<&'static Profile>,
    /// `enforce` or `observe` on this route (default: the plugin's `mode`).
    pub mode: Option<Mode>,
    /// The oldest llama.cpp release behind this route (default: the plugin's `llama_cpp_since`).
    pub llama_cpp_since: Option<LlamaCpp>,
    /// Overrides the plugin's (and the profile's) `promote_to_description` on this route.
    pub promote_to_description: Option<bool>,
    /// Overrides the plugin's (and the profile's) `open_objects` on this route.
    pub open_objects: Option<bool>,
    /// What only its leg reads.
    pub leg: RouteLeg,
}

/// Where a route matches a request's path (its query string left out).
#[derive(Clone, Debug, PartialEq)]
pub enum At {
    /// This path exactly.
    Path(String),
    /// Paths under this prefix (those the format's descriptor says carry schemas, where it says).
    Prefix(String),
}

/// What only one leg's routes read.
#[derive(Clone, Debug, PartialEq)]
pub enum RouteLeg {
    Inference(InferenceRoute),
    /// `format: mcp`.
    Mcp(McpRoute),
}

/// What only an inference route reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InferenceRoute {
    /// Strict mode for this route (default: the plugin's `strict`).
    pub strict: Option<bool>,
    /// Profiles by the request's `model` for this route (default: the plugin's `models`).
    pub models: Option<Models>,
    /// Overrides the plugin's `on_invalid_tool_call` on this route.
    pub on_invalid_tool_call: Option<OnInvalid>,
}

/// What only an MCP route reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpRoute {
    /// Profiles by the MCP client's `clientInfo.name` (default:
    /// [`crate::filter::mcp::DEFAULT_CLIENTS`]).
    pub clients: Option<Models>,
    /// What becomes of a listed tool whose schema cannot be made to fit the client's profile without
    /// loss.
    pub unfit: Option<Unfit>,
    /// The clients (patterns over the client's label) whose lists declare 2020-12 (default:
    /// [`DEFAULT_DECLARE_2020_12`]): clients that validate with 2020-12 only.
    pub declare_2020_12: Option<Patterns>,
}

/// The clients whose lists declare 2020-12 when a route names none: Claude's (its clients have refused
/// draft-07 `outputSchema`s: issue 58).
pub const DEFAULT_DECLARE_2020_12: &[&str] = &["claude*"];

/// `*` globs over a name, ASCII case ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct Patterns(std::sync::Arc<[String]>);

impl Patterns {
    pub fn of(patterns: &[&str]) -> Patterns {
        Patterns(patterns.iter().map(|p| p.to_ascii_lowercase()).collect())
    }

    /// Whether a pattern matches `name`.
    pub fn matches(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        self.0.iter().any(|p| glob(p, &name))
    }
}

/// A route's settings over the plugin's, resolved once for either leg.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub mode: Mode,
    pub llama_cpp: LlamaCpp,
    pub promote_to_description: Option<bool>,
    pub open_objects: Option<bool>,
}

impl Settings {
    /// Whether the route only observes (computes, counts, logs, forwards the original).
    pub fn observe(&self) -> bool {
        self.mode == Mode::Observe
    }
}

/// What an MCP route does with a listed tool whose rewrite for the client's profile loses meaning (a
/// lossy change) or whose schema cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Unfit {
    /// List it as rewritten, each loss counted and logged (what inference routes do).
    #[default]
    Rewrite,
    /// List it as the server wrote it.
    Pass,
    /// Leave it out of the list (counted, logged with the tool and the reason).
    Drop,
    /// Answer the `tools/list` with a JSON-RPC error naming the tool, the server and the pointer.
    Error,
}

/// Profiles by model name: `{"qwen*": "vllm", "llama*": "llama-cpp"}`, tried in the order written; the
/// first pattern that matches the request's `model` picks the profile. `*` matches any run of
/// characters; matching ignores ASCII case. A request whose model matches nothing keeps the route's
/// profile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Models(std::sync::Arc<[(String, &'static Profile)]>);

impl Models {
    /// The profile for a model name, if a pattern matches it.
    pub fn profile_for(&self, model: &str) -> Option<&'static Profile> {
        self.matched(model).map(|(_, p)| p)
    }

    /// The first pattern that matches `name` (ASCII case ignored), with its profile.
    pub fn matched(&self, name: &str) -> Option<(&str, &'static Profile)> {
        let name = name.to_ascii_lowercase();
        self.0.iter().find(|(pattern, _)| glob(pattern, &name)).map(|(pattern, p)| (pattern.as_str(), *p))
    }

    /// A map of `(pattern, profile name)` pairs; pairs naming no profile are left out.
    pub fn of(pairs: &[(&str, &str)]) -> Models {
        Models(pairs.iter().filter_map(|(k, p)| Some((k.to_ascii_lowercase(), Profile::by_name(p)?))).collect())
    }

    /// The profiles it picks, in order.
    pub fn profiles(&self) -> impl Iterator<Item = &'static Profile> + '_ {
        self.0.iter().map(|(_, p)| *p)
    }

    /// The patterns, in order.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(p, _)| p.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// `*`-only glob over a lower-case pattern and name, in time linear in the pattern times the name.
fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(mut rest) = name.strip_prefix(parts.next().unwrap_or("")) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = rest.get(at + part.len()..).unwrap_or(""),
            None => return false,
        }
    }
    rest.ends_with(last)
}

impl Route {
    /// A route with nothing of its own set: every setting the plugin's.
    fn bare(at: At, format: Format) -> Route {
        let leg = if format == Format::Mcp { RouteLeg::Mcp(McpRoute::default()) } else { RouteLeg::Inference(InferenceRoute::default()) };
        Route { at, format, profile: None, mode: None, llama_cpp_since: None, promote_to_description: None, open_objects: None, leg }
    }

    /// The route a format's descriptor lists: its own profile with the model map off, where the path
    /// is only ever that API.
    fn of(d: &format::Descriptor, at: At) -> Route {
        let mut r = Route::bare(at, d.format);
        if let (Some(p), RouteLeg::Inference(i)) = (d.routes.profile, &mut r.leg) {
            r.profile = Some(p);
            i.models = Some(Models::of(d.routes.models));
        }
        r
    }

    fn matches(&self, path: &str) -> bool {
        match &self.at {
            // `/mcp/` is `/mcp`: servers and proxies take a trailing slash as the same resource
            At::Path(p) => p == path || path.strip_suffix('/') == Some(p.as_str()),
            // under a prefix, only the paths the format's descriptor says carry schemas
            At::Prefix(p) => {
                let ends = self.format.descriptor().and_then(|d| d.routes.prefix_ends);
                path.starts_with(p.as_str()) && ends.is_none_or(|e| e.iter().any(|x| path.ends_with(x)))
            }
        }
    }

    /// What only an inference route reads (`None` on an MCP route).
    pub fn inference(&self) -> Option<&InferenceRoute> {
        match &self.leg {
            RouteLeg::Inference(i) => Some(i),
            RouteLeg::Mcp(_) => None,
        }
    }

    /// What only an MCP route reads (`None` on an inference route).
    pub fn mcp(&self) -> Option<&McpRoute> {
        match &self.leg {
            RouteLeg::Mcp(m) => Some(m),
            RouteLeg::Inference(_) => None,
        }
    }
}

/// Engine limits as configured (any field may be left out).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LimitsConfig {
    pub max_depth: Option<usize>,
    pub max_nodes: Option<usize>,
    pub inline_budget: Option<usize>,
    pub max_branches: Option<usize>,
    pub max_repetition: Option<u64>,
    pub max_open_properties: Option<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Default profile for every route.
    pub profile: &'static Profile,
    /// Profiles by the request's `model`, for routes that serve several backends (see [`Models`]).
    pub models: Models,
    /// Inference routes. Given, it replaces the default list entirely.
    pub routes: Vec<Route>,
    /// Largest body buffered and rewritten; larger bodies pass unchanged (counted). Keep it at or below
    /// Envoy's buffer limit (`per_connection_buffer_limit_bytes` or the route's
    /// `request_body_buffer_limit`), or Envoy answers 413 before toolfit can step aside.
    pub max_body_bytes: usize,
    /// Most bytes toolfit holds for all requests in flight together, in one Wasm VM (each Envoy worker
    /// has its own) or in one toolfit-extproc process: a body that would take the total past it goes
    /// on as it came, unread (`skipped_over_budget`), and a response that would goes on unrepaired.
    /// A body costs up to four times its size while it is rewritten (see `filter::memory`).
    pub max_held_bytes: usize,
    /// Refuse (400) a request whose rewrite would lose meaning, instead of forwarding the rewrite.
    pub strict: bool,
    /// `enforce` (default), or `observe`: compute, count and log, forward the original bytes.
    pub mode: Mode,
    pub framing: Framing,
    /// Write removed constraints into descriptions so the model still reads them (default: the
    /// profile's, which is on for every profile).
    pub promote_to_description: Option<bool>,
    /// Open objects JSON Schema leaves open (grammar compilers close them; default: the profile's,
    /// off for every profile), see [`crate::schema::Options::open_objects`].
    pub open_objects: Option<bool>,
    /// The oldest llama.cpp release the model servers run, as `YYYY-MM` (default `2024-08`: every
    /// release toolfit is judged on). Later months rely on what later releases fixed: `2026-10` keeps
    /// integer bounds past 32 bits and adds no tool descriptions, for example.
    pub llama_cpp_since: LlamaCpp,
    pub limits: LimitsConfig,
    /// Bytes of rewrites kept per worker for catalogs seen again (0: no cache).
    pub cache_bytes: usize,
    /// Most log lines per route per second (the counters still count everything).
    pub log_lines_per_second: u32,
    /// Check every tool call in responses against the schema the client sent, and count the invalid
    /// ones (`tool_calls_invalid`).
    pub validate_tool_calls: bool,
    /// What an invalid tool call does to a plain JSON response: `count` (the client gets it) or
    /// `reject` (the client gets an error naming the tool and the place; needs `framing: exact`, as
    /// the response headers are held until the body is checked). Streams are counted only.
    pub on_invalid_tool_call: OnInvalid,
    /// Test only: a request carrying this header traps the VM, to show what Envoy's failure policy
    /// does. Only a module built with the `test-trap` cargo feature (the e2e tests' build) accepts
    /// it: a release module refuses the key, since one mistake would disable toolfit for good under
    /// `fail_open`.
    pub test_trap_header: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            profile: &crate::schema::profile::LLAMA_CPP,
            models: Models::default(),
            routes: default_routes(),
            max_body_bytes: 16 * 1024 * 1024,
            max_held_bytes: 256 * 1024 * 1024,
            strict: false,
            mode: Mode::Enforce,
            framing: Framing::Chunked,
            promote_to_description: None,
            open_objects: None,
            llama_cpp_since: LlamaCpp::default(),
            limits: LimitsConfig::default(),
            log_lines_per_second: 10,
            cache_bytes: 8 * 1024 * 1024,
            validate_tool_calls: true,
            on_invalid_tool_call: OnInvalid::Count,
            test_trap_header: None,
        }
    }
}

/// The inference routes of llama-server, vLLM, Ollama, OpenAI, Anthropic, Gemini and Cohere APIs:
/// each format's own, as its descriptor lists them (Ollama's, Gemini's and Cohere's paths are only
/// ever that API: their profile, whatever the plugin's profile or model map).
pub fn default_routes() -> Vec<Route> {
    let mut routes = Vec::new();
    for d in format::ALL {
        routes.extend(d.routes.paths.iter().map(|p| Route::of(d, At::Path(p.to_string()))));
        routes.extend(d.routes.prefixes.iter().map(|p| Route::of(d, At::Prefix(p.to_string()))));
    }
    routes
}

impl Config {
    /// The rewrite cache this configuration sizes (`cache_bytes`; 0: none).
    pub fn new_cache(&self) -> Option<crate::api::cache::SiteCache> {
        (self.cache_bytes > 0).then(|| crate::api::cache::SiteCache::new(self.cache_bytes))
    }

    /// Parses and validates a plugin configuration; an empty one means all defaults.
    pub fn parse(bytes: &[u8]) -> Result<Config, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "configuration is not UTF-8".to_string())?;
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        let v: Value = serde_json::from_str(text).map_err(|e| format!("configuration rejected: {e}"))?;
        let c = Config::read(&v).map_err(|e| format!("configuration rejected: {e}"))?;
        c.validate()?;
        Ok(c)
    }

    fn validate(&self) -> Result<(), String> {
        if self.max_body_bytes == 0 {
            return Err("configuration rejected: max_body_bytes must be positive".into());
        }
        if self.max_held_bytes == 0 {
            return Err("configuration rejected: max_held_bytes must be positive".into());
        }
        if self.test_trap_header.is_some() && !cfg!(feature = "test-trap") {
            return Err("configuration rejected: test_trap_header is for tests only; this is a release build (the key is accepted only by a module built with the test-trap feature)".into());
        }
        let rejects = self.on_invalid_tool_call == OnInvalid::Reject
            || self.routes.iter().filter_map(Route::inference).any(|r| r.on_invalid_tool_call == Some(OnInvalid::Reject));
        if rejects && self.framing != Framing::Exact {
            return Err("configuration rejected: on_invalid_tool_call: reject needs framing: exact (and the plugin's allow_on_headers_stop_iteration: true): the response headers wait for the check".into());
        }
        let l = &self.limits;
        for (name, v) in [("max_depth", l.max_depth), ("max_nodes", l.max_nodes), ("max_branches", l.max_branches)] {
            if v == Some(0) {
                return Err(format!("configuration rejected: limits.{name} must be positive"));
            }
        }
        Ok(())
    }

    /// The route a request path (query string included or not) belongs to.
    pub fn route_for(&self, path: &str) -> Option<&Route> {
        let path = path.split(['?', '#']).next().unwrap_or(path);
        self.routes.iter().find(|r| r.matches(path))
    }

    /// A route's settings over the plugin's (`None`: the plugin's alone).
    pub fn settings(&self, route: Option<&Route>) -> Settings {
        Settings {
            mode: route.and_then(|r| r.mode).unwrap_or(self.mode),
            llama_cpp: route.and_then(|r| r.llama_cpp_since).unwrap_or(self.llama_cpp_since),
            promote_to_description: route.and_then(|r| r.promote_to_description).or(self.promote_to_description),
            open_objects: route.and_then(|r| r.open_objects).or(self.open_objects),
        }
    }

    /// The engine options for `profile` under the plugin's settings alone.
    pub fn options(&self, profile: &Profile) -> Options {
        self.options_with(profile, &self.settings(None))
    }

    /// The engine options for `profile`: its defaults, with what the settings (a route's over the
    /// plugin's) and the plugin's limits lay over them.
    pub fn options_with(&self, profile: &Profile, settings: &Settings) -> Options {
        let mut o = profile.default_options();
        if let Some(v) = settings.promote_to_description {
            o.promote_to_description = v;
        }
        if let Some(v) = settings.open_objects {
            o.open_objects = v;
        }
        o.llama_cpp = settings.llama_cpp;
        let d = o.limits.clone();
        let l = &self.limits;
        o.limits = Limits {
            max_depth: l.max_depth.unwrap_or(d.max_depth),
            max_nodes: l.max_nodes.unwrap_or(d.max_nodes),
            inline_budget: l.inline_budget.unwrap_or(d.inline_budget),
            max_branches: l.max_branches.unwrap_or(d.max_branches),
            max_repetition: l.max_repetition.unwrap_or(d.max_repetition),
            max_open_properties: l.max_open_properties.unwrap_or(d.max_open_properties),
        };
        o
    }
}

// The reader. Hand-written over a parsed `Value` rather than derived: the derived visitors and the
// error-path tracking cost about 40 KB of the wasm, this a fraction of it. Every error names where
// it is (`routes[0].llama_cpp_since: ...`), every key not listed here is refused.

/// `at` and `key` as one place: `limits.max_depth`.
fn place(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// An error at a place (the whole configuration when `at` is empty).
fn fail<T>(at: &str, why: impl std::fmt::Display) -> Result<T, String> {
    Err(if at.is_empty() { why.to_string() } else { format!("{at}: {why}") })
}

/// What kind of JSON value `v` is, for errors.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A section's members, every key among `known`.
fn members<'v>(v: &'v Value, at: &str, known: &[&str]) -> Result<&'v Map<String, Value>, String> {
    let Value::Object(m) = v else { return fail(at, format_args!("expected an object, got {}", kind(v))) };
    match m.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => fail(at, format_args!("unknown field `{k}`, expected one of `{}`", known.join("`, `"))),
        None => Ok(m),
    }
}

/// Reads member `key` of `m` with `read` when it is there and not null.
fn opt<'v, T>(m: &'v Map<String, Value>, at: &str, key: &str, read: impl FnOnce(&'v Value, &str) -> Result<T, String>) -> Result<Option<T>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => read(v, &place(at, key)).map(Some),
    }
}

fn boolean(v: &Value, at: &str) -> Result<bool, String> {
    v.as_bool().map_or_else(|| fail(at, format_args!("expected a boolean, got {}", kind(v))), Ok)
}

fn string<'v>(v: &'v Value, at: &str) -> Result<&'v str, String> {
    v.as_str().map_or_else(|| fail(at, format_args!("expected a string, got {}", kind(v))), Ok)
}

/// A whole number, written as an integer or as a float with no fraction: Istio's WasmPlugin passes
/// `pluginConfig` as a protobuf Struct, whose numbers are doubles (16777216 may arrive as 1.6777216e+07).
fn whole<T: TryFrom<u64>>(v: &Value, at: &str) -> Result<T, String> {
    let n = match (v.as_u64(), v.as_f64()) {
        (Some(n), _) => Some(n),
        (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f <= 9.0e15 => Some(f as u64),
        _ => None,
    };
    n.and_then(|n| T::try_from(n).ok()).map_or_else(|| fail(at, format_args!("{v} is not a whole number in range")), Ok)
}

fn profile(v: &Value, at: &str) -> Result<&'static Profile, String> {
    let name = string(v, at)?;
    Profile::by_name(name).map_or_else(|| fail(at, format_args!("unknown profile {name:?} (known: {})", profile_names())), Ok)
}

fn models(v: &Value, at: &str) -> Result<Models, String> {
    // a JSON object keeps its order here (serde_json's preserve_order): the first match wins
    let Value::Object(map) = v else { return fail(at, format_args!("expected an object, got {}", kind(v))) };
    let mut out = Vec::with_capacity(map.len());
    for (pattern, v) in map {
        let here = format!("{at}[{pattern:?}]");
        let Some(name) = v.as_str() else { return fail(&here, "a profile name is a string") };
        let Some(p) = Profile::by_name(name) else { return fail(&here, format_args!("unknown profile {name:?} (known: {})", profile_names())) };
        if pattern.is_empty() {
            return fail(at, "an empty pattern matches no model; use \"*\" for every model");
        }
        // lower-cased once here: matching ignores ASCII case
        out.push((pattern.to_ascii_lowercase(), p));
    }
    Ok(Models(out.into()))
}

fn patterns(v: &Value, at: &str) -> Result<Patterns, String> {
    let Value::Array(items) = v else { return fail(at, format_args!("expected a list of client name patterns, got {}", kind(v))) };
    let mut out = Vec::with_capacity(items.len());
    for (i, p) in items.iter().enumerate() {
        let p = string(p, &format!("{at}[{i}]"))?;
        if p.is_empty() {
            return fail(&format!("{at}[{i}]"), "an empty pattern matches no client; use \"*\" for every client");
        }
        out.push(p);
    }
    Ok(Patterns::of(&out))
}

fn llama_cpp(v: &Value, at: &str) -> Result<LlamaCpp, String> {
    let month = string(v, at)?;
    LlamaCpp::since(month).map_or_else(
        || {
            let known: Vec<&str> = LlamaCpp::ALL.iter().map(|v| v.name()).collect();
            fail(at, format_args!("{month:?} is not a month from 2024-08 on, as YYYY-MM (judged releases: {})", known.join(", ")))
        },
        Ok,
    )
}

fn format(v: &Value, at: &str) -> Result<Format, String> {
    let name = string(v, at)?;
    Format::by_name(name).map_or_else(|| fail(at, format_args!("unknown format {name:?}")), Ok)
}

/// One of a closed set of names.
fn one_of<T: Copy>(v: &Value, at: &str, names: &[(&str, T)]) -> Result<T, String> {
    let name = string(v, at)?;
    match names.iter().find(|(n, _)| *n == name) {
        Some((_, t)) => Ok(*t),
        None => fail(at, format_args!("unknown variant `{name}`, expected one of `{}`", names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join("`, `"))),
    }
}

fn mode(v: &Value, at: &str) -> Result<Mode, String> {
    one_of(v, at, &[("enforce", Mode::Enforce), ("observe", Mode::Observe)])
}

fn on_invalid(v: &Value, at: &str) -> Result<OnInvalid, String> {
    one_of(v, at, &[("count", OnInvalid::Count), ("reject", OnInvalid::Reject)])
}

/// How a route key is read, and which leg reads it.
enum Reads {
    /// Where the route matches and its format, which say what the rest means: read first.
    Match,
    /// Both legs.
    Both(Setter<Route>),
    /// Inference routes; on an MCP route the key is refused with the hint.
    Inference(Setter<InferenceRoute>, &'static str),
    /// MCP routes; on an inference route the key is refused.
    Mcp(Setter<McpRoute>),
}

/// Every key a route may hold, in one table: its name, which leg reads it and how (docs/configuration.md
/// names each). A key the other leg reads is refused, as the route would silently ignore it.
const ROUTE_KEYS: &[(&str, Reads)] = &[
    ("path", Reads::Match),
    ("prefix", Reads::Match),
    ("format", Reads::Match),
    ("profile", Reads::Both(|r, v, at| profile(v, at).map(|p| r.profile = Some(p)))),
    ("mode", Reads::Both(|r, v, at| mode(v, at).map(|m| r.mode = Some(m)))),
    ("llama_cpp_since", Reads::Both(|r, v, at| llama_cpp(v, at).map(|l| r.llama_cpp_since = Some(l)))),
    ("promote_to_description", Reads::Both(|r, v, at| boolean(v, at).map(|b| r.promote_to_description = Some(b)))),
    ("open_objects", Reads::Both(|r, v, at| boolean(v, at).map(|b| r.open_objects = Some(b)))),
    (
        "strict",
        Reads::Inference(|r, v, at| boolean(v, at).map(|b| r.strict = Some(b)), "say what a tool that cannot fit becomes with `unfit` (error, drop, pass)"),
    ),
    ("models", Reads::Inference(|r, v, at| models(v, at).map(|m| r.models = Some(m)), "an MCP route picks the profile by client: use `clients`")),
    (
        "on_invalid_tool_call",
        Reads::Inference(|r, v, at| on_invalid(v, at).map(|o| r.on_invalid_tool_call = Some(o)), "an MCP route carries no model's tool calls"),
    ),
    ("clients", Reads::Mcp(|r, v, at| models(v, at).map(|m| r.clients = Some(m)))),
    ("declare_2020_12", Reads::Mcp(|r, v, at| patterns(v, at).map(|p| r.declare_2020_12 = Some(p)))),
    (
        "unfit",
        Reads::Mcp(|r, v, at| {
            one_of(v, at, &[("rewrite", Unfit::Rewrite), ("pass", Unfit::Pass), ("drop", Unfit::Drop), ("error", Unfit::Error)]).map(|u| r.unfit = Some(u))
        }),
    ),
];

impl Route {
    /// Every key a route may hold.
    pub fn keys() -> impl Iterator<Item = &'static str> {
        ROUTE_KEYS.iter().map(|(k, _)| *k)
    }

    fn read(v: &Value, at: &str) -> Result<Route, String> {
        let known: Vec<&str> = Route::keys().collect();
        let m = members(v, at, &known)?;
        let text = |v, at: &str| string(v, at).map(str::to_string);
        let format = opt(m, at, "format", format)?.map_or_else(|| fail(at, "missing field `format`"), Ok)?;
        let place = match (opt(m, at, "path", text)?, opt(m, at, "prefix", text)?) {
            (Some(_), Some(_)) => return Err(format!("{at} has both path and prefix")),
            (None, None) => return Err(format!("{at} needs path or prefix")),
            (Some(p), None) | (None, Some(p)) if !p.starts_with('/') => return fail(at, format_args!("{p:?} does not start with /")),
            (Some(p), None) => At::Path(p),
            (None, Some(p)) => At::Prefix(p),
        };
        let mut r = Route::bare(place, format);
        for (key, reads) in ROUTE_KEYS {
            let Some(v) = m.get(*key).filter(|v| !v.is_null()) else { continue };
            let here = self::place(at, key);
            if let Reads::Both(set) = reads {
                set(&mut r, v, &here)?;
                continue;
            }
            match (reads, &mut r.leg) {
                (Reads::Match | Reads::Both(_), _) => {}
                (Reads::Inference(set, _), RouteLeg::Inference(i)) => set(i, v, &here)?,
                (Reads::Inference(_, hint), RouteLeg::Mcp(_)) => return fail(&here, format_args!("a route of format mcp does not read it ({hint})")),
                (Reads::Mcp(set), RouteLeg::Mcp(m)) => set(m, v, &here)?,
                (Reads::Mcp(_), RouteLeg::Inference(_)) => return fail(&here, "only a route of format mcp reads it"),
            }
        }
        Ok(r)
    }
}

/// Sets one key's value in what it configures (`at`: the key's place, for errors).
type Setter<T> = fn(&mut T, &Value, &str) -> Result<(), String>;

/// Every key of `limits`, with its reader.
const LIMIT_KEYS: &[(&str, Setter<LimitsConfig>)] = &[
    ("max_depth", |l, v, at| whole(v, at).map(|n| l.max_depth = Some(n))),
    ("max_nodes", |l, v, at| whole(v, at).map(|n| l.max_nodes = Some(n))),
    ("inline_budget", |l, v, at| whole(v, at).map(|n| l.inline_budget = Some(n))),
    ("max_branches", |l, v, at| whole(v, at).map(|n| l.max_branches = Some(n))),
    ("max_repetition", |l, v, at| whole(v, at).map(|n| l.max_repetition = Some(n))),
    ("max_open_properties", |l, v, at| whole(v, at).map(|n| l.max_open_properties = Some(n))),
];

/// Every top-level key, with its reader (docs/configuration.md names each).
const CONFIG_KEYS: &[(&str, Setter<Config>)] = &[
    ("profile", |c, v, at| profile(v, at).map(|p| c.profile = p)),
    ("models", |c, v, at| models(v, at).map(|m| c.models = m)),
    ("routes", |c, v, at| match v {
        Value::Array(a) => a.iter().enumerate().map(|(i, r)| Route::read(r, &format!("{at}[{i}]"))).collect::<Result<_, _>>().map(|r| c.routes = r),
        v => fail(at, format_args!("expected an array, got {}", kind(v))),
    }),
    ("max_body_bytes", |c, v, at| whole(v, at).map(|n| c.max_body_bytes = n)),
    ("max_held_bytes", |c, v, at| whole(v, at).map(|n| c.max_held_bytes = n)),
    ("strict", |c, v, at| boolean(v, at).map(|b| c.strict = b)),
    ("mode", |c, v, at| mode(v, at).map(|m| c.mode = m)),
    ("framing", |c, v, at| one_of(v, at, &[("chunked", Framing::Chunked), ("exact", Framing::Exact)]).map(|f| c.framing = f)),
    ("promote_to_description", |c, v, at| boolean(v, at).map(|b| c.promote_to_description = Some(b))),
    ("open_objects", |c, v, at| boolean(v, at).map(|b| c.open_objects = Some(b))),
    ("llama_cpp_since", |c, v, at| llama_cpp(v, at).map(|l| c.llama_cpp_since = l)),
    ("limits", |c, v, at| read_keys(v, at, LIMIT_KEYS, LimitsConfig::default()).map(|l| c.limits = l)),
    ("cache_bytes", |c, v, at| whole(v, at).map(|n| c.cache_bytes = n)),
    ("log_lines_per_second", |c, v, at| whole(v, at).map(|n| c.log_lines_per_second = n)),
    ("validate_tool_calls", |c, v, at| boolean(v, at).map(|b| c.validate_tool_calls = b)),
    ("on_invalid_tool_call", |c, v, at| on_invalid(v, at).map(|o| c.on_invalid_tool_call = o)),
    ("test_trap_header", |c, v, at| string(v, at).map(|h| c.test_trap_header = Some(h.to_string()))),
];

/// A section read by its key table, over `start`: a key left out (or null) keeps what `start` has.
fn read_keys<T>(v: &Value, at: &str, keys: &[(&str, Setter<T>)], mut start: T) -> Result<T, String> {
    let known: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
    let m = members(v, at, &known)?;
    for (key, set) in keys {
        if let Some(v) = m.get(*key).filter(|v| !v.is_null()) {
            set(&mut start, v, &place(at, key))?;
        }
    }
    Ok(start)
}

impl Config {
    /// Every top-level key.
    pub fn keys() -> impl Iterator<Item = &'static str> {
        CONFIG_KEYS.iter().map(|(k, _)| *k)
    }

    /// The configuration a parsed document says: what it leaves out (or sets to null) keeps its default.
    fn read(v: &Value) -> Result<Config, String> {
        read_keys(v, "", CONFIG_KEYS, Config::default())
    }
}

fn profile_names() -> String {
    let aliases = crate::schema::profile::ALIASES.iter().map(|(a, _)| *a);
    crate::schema::profile::ALL.iter().map(|p| p.name).chain(aliases).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alias_names_its_profile() {
        let c = Config::parse(br#"{"profile": "azure-openai", "routes": [{"path": "/x", "format": "openai-chat", "profile": "azure-openai-strict"}]}"#);
        let c = c.unwrap_or_default();
        assert_eq!((c.profile.name, c.route_for("/x").and_then(|r| r.profile).map(|p| p.name)), ("openai", Some("openai-strict")));
        assert!(Config::parse(br#"{"profile": "azure"}"#).is_err_and(|e| e.contains("azure-openai")), "the error lists the aliases too");
    }

    #[test]
    fn default_routes_are_each_formats_own() {
        let routes = default_routes();
        type Row<'a> = (Option<&'a str>, Option<&'a str>, Format, Option<&'a str>, bool);
        let got: Vec<Row> = routes
            .iter()
            .map(|r| {
                let (path, prefix) = match &r.at {
                    At::Path(p) => (Some(p.as_str()), None),
                    At::Prefix(p) => (None, Some(p.as_str())),
                };
                (path, prefix, r.format, r.profile.map(|p| p.name), r.inference().is_some_and(|i| i.models.is_some()))
            })
            .collect();
        let exact = |p, f| (Some(p), None, f, None, false);
        let own = |p, f, profile| (Some(p), None, f, Some(profile), true);
        let gemini = |p| (None, Some(p), Format::Gemini, Some("gemini"), true);
        assert_eq!(
            got,
            vec![
                exact("/v1/chat/completions", Format::OpenAiChat),
                exact("/chat/completions", Format::OpenAiChat),
                exact("/openai/v1/chat/completions", Format::OpenAiChat),
                exact("/beta/chat/completions", Format::OpenAiChat),
                (None, Some("/openai/deployments/"), Format::OpenAiChat, None, false),
                exact("/v1/responses", Format::OpenAiResponses),
                exact("/openai/v1/responses", Format::OpenAiResponses),
                exact("/v1/messages", Format::Anthropic),
                own("/api/chat", Format::Ollama, "ollama"),
                own("/api/generate", Format::Ollama, "ollama"),
                exact("/completion", Format::LlamaCompletion),
                exact("/completions", Format::LlamaCompletion),
                exact("/v1/completions", Format::LlamaCompletion),
                gemini("/v1beta/models/"),
                gemini("/v1/models/"),
                gemini("/v1/projects/"),
                gemini("/v1beta1/projects/"),
                own("/v2/chat", Format::Cohere, "cohere"),
                (None, Some("/model/"), Format::BedrockConverse, Some("bedrock"), true),
                (None, Some("/model/"), Format::BedrockInvoke, Some("bedrock-anthropic"), true),
            ]
        );
        let c = Config::default();
        // Bedrock: Converse paths only, and the route's own model map sends Claude to bedrock-anthropic
        let bedrock = c.route_for("/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream");
        assert_eq!(bedrock.map(|r| r.format), Some(Format::BedrockConverse));
        let models = bedrock.and_then(Route::inference).and_then(|i| i.models.clone()).unwrap_or_default();
        assert_eq!(models.profile_for("us.anthropic.claude-sonnet-4-5-20250929-v1:0").map(|p| p.name), Some("bedrock-anthropic"));
        assert_eq!(models.profile_for("meta.llama3-70b-instruct-v1:0"), None);
        assert_eq!(c.route_for("/model/anthropic.claude-x-v1:0/invoke-with-response-stream").map(|r| r.format), Some(Format::BedrockInvoke));
        assert!(c.route_for("/model/x.y/count-tokens").is_none() && c.route_for("/model/x.y/invoke-async").is_none());
        assert!(c.route_for("/v1beta/models/gemini-2.5-flash:streamGenerateContent").is_some());
        assert!(c.route_for("/v1beta/models/gemini-2.5-flash:countTokens").is_none(), "no schemas there");
        // Azure OpenAI's deployments: chat completions only (its embeddings carry no schemas)
        assert_eq!(c.route_for("/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21").map(|r| r.format), Some(Format::OpenAiChat));
        assert!(c.route_for("/openai/deployments/emb/embeddings").is_none());
    }

    #[test]
    fn profile_alone_is_complete_and_empty_means_defaults() {
        let c = Config::parse(br#"{"profile": "mcp"}"#).unwrap();
        assert_eq!(c.profile.name, "mcp");
        assert_eq!(c.routes, default_routes());
        assert_eq!(Config::parse(b"").unwrap(), Config::default());
        assert_eq!(Config::parse(b"  ").unwrap().max_body_bytes, 16 << 20);
    }

    #[test]
    fn only_a_test_build_takes_the_trap_header() {
        let r = Config::parse(br#"{"test_trap_header": "x-trap"}"#);
        if cfg!(feature = "test-trap") {
            assert_eq!(r.map(|c| c.test_trap_header), Ok(Some("x-trap".to_string())));
        } else {
            assert!(r.is_err_and(|e| e.contains("test_trap_header is for tests only")));
        }
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        for (cfg, needle) in [
            (r#"{"profle": "mcp"}"#, "profle"),
            (r#"{"profile": "gemini-pro"}"#, "gemini-pro"),
            (r#"{"framing": "streamy"}"#, "streamy"),
            (r#"{"max_body_bytes": -1}"#, "max_body_bytes"),
            (r#"{"max_body_bytes": 0}"#, "max_body_bytes"),
            (r#"{"max_held_bytes": 0}"#, "max_held_bytes"),
            (r#"{"routes": [{"path": "/x", "format": "soap"}]}"#, "soap"),
            (r#"{"routes": [{"path": "/x", "format": "openai-chat", "unfit": "drop"}]}"#, "routes[0].unfit"),
            (r#"{"routes": [{"path": "/mcp", "format": "mcp", "strict": true}]}"#, "routes[0].strict"),
            (r#"{"routes": [{"path": "/mcp", "format": "mcp", "clients": {"x": "nope"}}]}"#, "routes[0].clients"),
            (r#"{"routes": [{"path": "x", "format": "auto"}]}"#, "routes[0]"),
            (r#"{"routes": [{"format": "auto"}]}"#, "routes[0]"),
            (r#"{"limits": {"max_depth": 0}}"#, "max_depth"),
            (r#"{"limits": {"depth": 3}}"#, "depth"),
            (r#"{"llama_cpp_since": "2023-01"}"#, "llama_cpp_since"),
            (r#"{"llama_cpp_since": "latest"}"#, "2024-08"),
            (r#"{"routes": [{"path": "/x", "format": "auto", "llama_cpp_since": 2025}]}"#, "routes[0].llama_cpp_since"),
            ("[1]", "configuration rejected"),
        ] {
            let e = Config::parse(cfg.as_bytes()).unwrap_err();
            assert!(e.contains(needle), "{cfg}: {e}");
        }
    }

    #[test]
    fn routes_match_exact_paths_and_prefixes_ignoring_the_query() {
        let c = Config::default();
        assert_eq!(c.route_for("/v1/chat/completions?x=1").map(|r| r.format), Some(Format::OpenAiChat));
        assert_eq!(c.route_for("/api/generate").map(|r| r.format), Some(Format::Ollama));
        assert_eq!(c.route_for("/api/chat").and_then(|r| r.profile).map(|p| p.name), Some("ollama"));
        assert!(c.route_for("/health").is_none());
        assert!(c.route_for("/v1/chat/completions/extra").is_none());
        let c = Config::parse(br#"{"routes": [{"prefix": "/llm/", "format": "auto", "profile": "mcp", "strict": true}]}"#).unwrap();
        let r = c.route_for("/llm/v1/chat/completions").unwrap();
        assert_eq!((r.format, r.profile.map(|p| p.name), r.inference().and_then(|i| i.strict)), (Format::Auto, Some("mcp"), Some(true)));
        assert!(c.route_for("/v1/chat/completions").is_none(), "routes replace the defaults");
    }

    #[test]
    fn numbers_from_a_protobuf_struct_are_accepted_when_whole() {
        let c = Config::parse(br#"{"max_body_bytes": 1.6777216e+07, "limits": {"max_depth": 32.0}}"#).unwrap();
        assert_eq!((c.max_body_bytes, c.limits.max_depth), (16_777_216, Some(32)));
        assert!(Config::parse(br#"{"max_body_bytes": 1.5}"#).unwrap_err().contains("max_body_bytes"));
    }

    #[test]
    fn llama_cpp_since_is_a_month_plugin_wide_and_per_route() {
        let c = Config::default();
        assert_eq!((c.llama_cpp_since, c.options(c.profile).llama_cpp), (LlamaCpp::V2024_08, LlamaCpp::V2024_08));
        assert!(!c.options(c.profile).open_objects, "objects closed by default");
        let c = Config::parse(br#"{"llama_cpp_since": "2026-11", "routes": [{"path": "/old", "format": "auto", "llama_cpp_since": "2025-08"}]}"#).unwrap();
        assert_eq!(c.options(c.profile).llama_cpp, LlamaCpp::V2026_10);
        assert_eq!(c.route_for("/old").and_then(|r| r.llama_cpp_since), Some(LlamaCpp::V2025_08));
    }

    #[test]
    fn models_pick_profiles_in_the_order_written() {
        let c = Config::parse(br#"{"models": {"qwen*coder*": "mcp", "Qwen*": "vllm", "*": "llama-cpp"}}"#).unwrap();
        let pick = |m: &str| c.models.profile_for(m).map(|p| p.name);
        assert_eq!(pick("qwen2.5-coder-7b"), Some("mcp"));
        assert_eq!(pick("QWEN3-8B"), Some("vllm"), "case is ignored");
        assert_eq!(pick("llama3.1"), Some("llama-cpp"));
        let c = Config::parse(
            br#"{"models": {"*-instruct": "vllm", "meta/*/llama": "mcp"}, "routes": [{"path": "/x", "format": "auto", "models": {"a": "mcp"}}]}"#,
        )
        .unwrap();
        assert_eq!(pick_in(&c.models, "mistral-7b-instruct"), Some("vllm"));
        assert_eq!(pick_in(&c.models, "mistral-7b-instruct-v2"), None, "the pattern is anchored at both ends");
        assert_eq!(pick_in(&c.models, "meta/x/y/llama"), Some("mcp"));
        assert_eq!(pick_in(&c.models, "meta/llama"), None);
        let r = c.route_for("/x").and_then(Route::inference).and_then(|i| i.models.clone()).unwrap_or_default();
        assert_eq!((pick_in(&r, "a"), pick_in(&r, "ab")), (Some("mcp"), None));
        for (cfg, needle) in [
            (r#"{"models": {"q*": "gemini-pro"}}"#, "unknown profile"),
            (r#"{"models": {"q*": 3}}"#, "models"),
            (r#"{"models": {"": "vllm"}}"#, "empty pattern"),
            (r#"{"models": ["q*"]}"#, "models"),
        ] {
            let e = Config::parse(cfg.as_bytes()).unwrap_err();
            assert!(e.contains(needle), "{cfg}: {e}");
        }
    }

    fn pick_in(m: &Models, model: &str) -> Option<&'static str> {
        m.profile_for(model).map(|p| p.name)
    }

    #[test]
    fn plugin_settings_lay_over_the_profile_defaults() {
        for p in crate::schema::profile::ALL {
            let c = Config::default();
            assert_eq!(c.options(p), Options { llama_cpp: c.llama_cpp_since, ..p.default_options() }, "{}", p.name);
            let c = Config::parse(br#"{"open_objects": true, "promote_to_description": false}"#).unwrap();
            let o = c.options(p);
            assert!(o.open_objects && !o.promote_to_description, "{}", p.name);
            assert_eq!(o.limits, p.default_options().limits);
        }
    }

    #[test]
    fn route_settings_lay_over_the_plugin_settings() {
        let c = Config::parse(
            br#"{"open_objects": true, "routes": [{"path": "/a", "format": "auto", "promote_to_description": false},
                {"path": "/b", "format": "auto", "open_objects": false}, {"path": "/c", "format": "auto"}]}"#,
        )
        .unwrap();
        let on = |path: &str| {
            let r = c.route_for(path).unwrap();
            c.options_with(c.profile, &c.settings(Some(r)))
        };
        assert!(!on("/a").promote_to_description && on("/a").open_objects);
        assert!(on("/b").promote_to_description && !on("/b").open_objects);
        assert!(on("/c").promote_to_description && on("/c").open_objects);
        assert_eq!(on("/c"), c.options(c.profile));
    }

    #[test]
    fn both_legs_resolve_a_routes_settings_alike() {
        let c = Config::parse(
            br#"{"mode": "observe", "routes": [{"path": "/mcp", "format": "mcp", "llama_cpp_since": "2026-10", "mode": "enforce", "unfit": "drop"},
                {"path": "/v1/chat/completions", "format": "openai-chat", "llama_cpp_since": "2025-08"}]}"#,
        )
        .unwrap();
        let mcp = c.route_for("/mcp").unwrap();
        let (s, o) = (c.settings(Some(mcp)), c.options_with(c.profile, &c.settings(Some(mcp))));
        assert_eq!((s.observe(), s.llama_cpp, o.llama_cpp), (false, LlamaCpp::V2026_10, LlamaCpp::V2026_10));
        assert_eq!((mcp.mcp().and_then(|m| m.unfit), mcp.inference()), (Some(Unfit::Drop), None));
        let chat = c.route_for("/v1/chat/completions").unwrap();
        assert_eq!((c.settings(Some(chat)).observe(), c.settings(Some(chat)).llama_cpp), (true, LlamaCpp::V2025_08));
        assert!(chat.mcp().is_none() && chat.inference().is_some());
        // each key of the other leg is refused, with what to use instead
        for (route, needle) in [
            (r#"{"path": "/m", "format": "mcp", "models": {"a": "mcp"}}"#, "routes[0].models: a route of format mcp does not read it (an MCP route picks"),
            (r#"{"path": "/m", "format": "mcp", "on_invalid_tool_call": "count"}"#, "routes[0].on_invalid_tool_call: a route of format mcp"),
            (r#"{"path": "/m", "format": "auto", "clients": {"a": "mcp"}}"#, "routes[0].clients: only a route of format mcp reads it"),
        ] {
            let e = Config::parse(format!(r#"{{"routes": [{route}]}}"#).as_bytes()).unwrap_err();
            assert!(e.contains(needle), "{route}: {e}");
        }
        // control: null is unset, as everywhere in the configuration
        assert!(Config::parse(br#"{"routes": [{"path": "/m", "format": "mcp", "strict": null}]}"#).is_ok());
    }

    #[test]
    fn limits_override_engine_defaults() {
        let c = Config::parse(br#"{"limits": {"max_depth": 10}, "promote_to_description": false}"#).unwrap();
        let o = c.options(c.profile);
        assert_eq!(o.limits.max_depth, 10);
        assert_eq!(o.limits.max_nodes, Limits::default().max_nodes);
        assert!(!o.promote_to_description);
    }
}
