//! The plugin configuration: JSON, every field with a default, validated completely at load.
//!
//! `{"profile": "llama-cpp"}` alone is a complete configuration. An unknown key or a bad value is an
//! error that names it: the filter refuses to start rather than run on a half-understood config
//! (Envoy then rejects the listener or NACKs the update, and keeps the previous config).

use crate::api::{format, Format};
use crate::schema::{Limits, LlamaCpp, Options, Profile};
use serde::Deserialize;

/// What to do with a tool call whose arguments the client's schema refuses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnInvalid {
    /// Count it and log it; the client gets the call.
    #[default]
    Count,
    /// Answer the client with an error naming the tool and the place instead of the call (plain
    /// JSON responses; a stream is counted only, its headers are long gone).
    Reject,
}

/// How the rewritten body is framed towards the upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    /// Headers go upstream at once without `Content-Length`; the body follows chunked. Works on every
    /// Envoy and with Istio's WasmPlugin (which cannot set `allow_on_headers_stop_iteration`).
    Chunked,
    /// Headers are held until the body is rewritten and carry its exact `Content-Length`. Requires the
    /// plugin's `allow_on_headers_stop_iteration: true` (Envoy >= 1.35), or requests hang.
    Exact,
}

/// One inference route: which requests are buffered and how their body is read.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Exact request path (without the query string).
    #[serde(default)]
    pub path: Option<String>,
    /// Path prefix, when `path` is not given.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Body format: openai-chat, openai-responses, anthropic, ollama, llama-completion, gemini, cohere,
    /// mcp-tools, auto.
    #[serde(deserialize_with = "format")]
    pub format: Format,
    /// Profile for this route (default: the plugin's `profile`).
    #[serde(default, deserialize_with = "opt_profile")]
    pub profile: Option<&'static Profile>,
    /// Strict mode for this route (default: the plugin's `strict`).
    #[serde(default)]
    pub strict: Option<bool>,
    /// The oldest llama.cpp release behind this route (default: the plugin's `llama_cpp_since`).
    #[serde(default, deserialize_with = "opt_llama_cpp")]
    pub llama_cpp_since: Option<LlamaCpp>,
    /// Profiles by the request's `model` for this route (default: the plugin's `models`).
    #[serde(default, deserialize_with = "opt_models")]
    pub models: Option<Models>,
    /// Overrides the plugin's (and the profile's) `promote_to_description` on this route.
    #[serde(default)]
    pub promote_to_description: Option<bool>,
    /// Overrides the plugin's (and the profile's) `open_objects` on this route.
    #[serde(default)]
    pub open_objects: Option<bool>,
    /// Overrides the plugin's `on_invalid_tool_call` on this route.
    #[serde(default)]
    pub on_invalid_tool_call: Option<OnInvalid>,
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
        let model = model.to_ascii_lowercase();
        self.0.iter().find(|(pattern, _)| glob(pattern, &model)).map(|(_, p)| *p)
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
    fn exact(path: &str, format: Format) -> Route {
        Route {
            path: Some(path.into()),
            prefix: None,
            format,
            profile: None,
            strict: None,
            llama_cpp_since: None,
            models: None,
            promote_to_description: None,
            open_objects: None,
            on_invalid_tool_call: None,
        }
    }

    /// The route a format's descriptor lists: its own profile with the model map off, where the path
    /// is only ever that API.
    fn of(d: &format::Descriptor, path: Option<&str>, prefix: Option<&str>) -> Route {
        let own = d.routes.profile.map(|p| Route { profile: Some(p), models: Some(Models::default()), ..Route::exact("", d.format) });
        Route { path: path.map(Into::into), prefix: prefix.map(Into::into), ..own.unwrap_or_else(|| Route::exact("", d.format)) }
    }

    fn matches(&self, path: &str) -> bool {
        let found = match (&self.path, &self.prefix) {
            (Some(p), _) => p == path,
            (None, Some(p)) => path.starts_with(p.as_str()),
            (None, None) => false,
        };
        // under a prefix, only the paths the format's descriptor says carry schemas
        let ends = self.format.descriptor().and_then(|d| d.routes.prefix_ends);
        found && (self.path.is_some() || ends.is_none_or(|e| e.iter().any(|x| path.ends_with(x))))
    }
}

/// Engine limits as configured (any field may be left out).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    #[serde(default, deserialize_with = "opt_whole")]
    pub max_depth: Option<usize>,
    #[serde(default, deserialize_with = "opt_whole")]
    pub max_nodes: Option<usize>,
    #[serde(default, deserialize_with = "opt_whole")]
    pub inline_budget: Option<usize>,
    #[serde(default, deserialize_with = "opt_whole")]
    pub max_branches: Option<usize>,
    #[serde(default, deserialize_with = "opt_whole")]
    pub max_repetition: Option<u64>,
    #[serde(default, deserialize_with = "opt_whole")]
    pub max_open_properties: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Default profile for every route.
    #[serde(deserialize_with = "profile")]
    pub profile: &'static Profile,
    /// Profiles by the request's `model`, for routes that serve several backends (see [`Models`]).
    #[serde(deserialize_with = "models")]
    pub models: Models,
    /// Inference routes. Given, it replaces the default list entirely.
    pub routes: Vec<Route>,
    /// Largest body buffered and rewritten; larger bodies pass unchanged (counted). Keep it at or below
    /// Envoy's buffer limit (`per_connection_buffer_limit_bytes` or the route's
    /// `request_body_buffer_limit`), or Envoy answers 413 before toolfit can step aside.
    #[serde(deserialize_with = "whole")]
    pub max_body_bytes: usize,
    /// Refuse (400) a request whose rewrite would lose meaning, instead of forwarding the rewrite.
    pub strict: bool,
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
    #[serde(deserialize_with = "llama_cpp")]
    pub llama_cpp_since: LlamaCpp,
    pub limits: LimitsConfig,
    /// Bytes of rewrites kept per worker for catalogs seen again (0: no cache).
    #[serde(deserialize_with = "whole")]
    pub cache_bytes: usize,
    /// Most log lines per route per second (the counters still count everything).
    #[serde(deserialize_with = "whole")]
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
            strict: false,
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
        routes.extend(d.routes.paths.iter().map(|p| Route::of(d, Some(p), None)));
        routes.extend(d.routes.prefixes.iter().map(|p| Route::of(d, None, Some(p))));
    }
    routes
}

impl Config {
    /// Parses and validates a plugin configuration; an empty one means all defaults.
    pub fn parse(bytes: &[u8]) -> Result<Config, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "configuration is not UTF-8".to_string())?;
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        let c: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let at = e.path().to_string();
            if at == "." {
                format!("configuration rejected: {}", e.inner())
            } else {
                format!("configuration rejected: {at}: {}", e.inner())
            }
        })?;
        c.validate()?;
        Ok(c)
    }

    fn validate(&self) -> Result<(), String> {
        if self.max_body_bytes == 0 {
            return Err("configuration rejected: max_body_bytes must be positive".into());
        }
        if self.test_trap_header.is_some() && !cfg!(feature = "test-trap") {
            return Err("configuration rejected: test_trap_header is for tests only; this is a release build (the key is accepted only by a module built with the test-trap feature)".into());
        }
        for (i, r) in self.routes.iter().enumerate() {
            match (&r.path, &r.prefix) {
                (Some(_), Some(_)) => return Err(format!("configuration rejected: routes[{i}] has both path and prefix")),
                (None, None) => return Err(format!("configuration rejected: routes[{i}] needs path or prefix")),
                (Some(p), None) | (None, Some(p)) if !p.starts_with('/') => {
                    return Err(format!("configuration rejected: routes[{i}]: {p:?} does not start with /"))
                }
                _ => {}
            }
        }
        let rejects = self.on_invalid_tool_call == OnInvalid::Reject || self.routes.iter().any(|r| r.on_invalid_tool_call == Some(OnInvalid::Reject));
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

    /// Engine options for a profile under this configuration: the profile's defaults, with what the
    /// plugin configuration sets laid over them.
    /// The options for `profile`: its defaults, under the plugin's settings.
    pub fn options(&self, profile: &Profile) -> Options {
        self.options_on(profile, None, None)
    }

    /// [`Config::options`] with a route's own `promote_to_description` and `open_objects` over the
    /// plugin's.
    pub fn options_on(&self, profile: &Profile, promote_to_description: Option<bool>, open_objects: Option<bool>) -> Options {
        let mut o = profile.default_options();
        if let Some(v) = promote_to_description.or(self.promote_to_description) {
            o.promote_to_description = v;
        }
        if let Some(v) = open_objects.or(self.open_objects) {
            o.open_objects = v;
        }
        o.llama_cpp = self.llama_cpp_since;
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

/// A whole number, written as an integer or as a float with no fraction: Istio's WasmPlugin passes
/// `pluginConfig` as a protobuf Struct, whose numbers are doubles (16777216 may arrive as 1.6777216e+07).
fn whole<'de, D: serde::Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<T, D::Error> {
    let v = serde_json::Number::deserialize(d)?;
    let n = match (v.as_u64(), v.as_f64()) {
        (Some(n), _) => Some(n),
        (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f <= 9.0e15 => Some(f as u64),
        _ => None,
    };
    n.and_then(|n| T::try_from(n).ok()).ok_or_else(|| serde::de::Error::custom(format!("{v} is not a whole number in range")))
}

fn opt_whole<'de, D: serde::Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<Option<T>, D::Error> {
    whole(d).map(Some)
}

fn profile<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static Profile, D::Error> {
    let name = String::deserialize(d)?;
    Profile::by_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown profile {name:?} (known: {})", profile_names())))
}

fn opt_profile<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'static Profile>, D::Error> {
    profile(d).map(Some)
}

fn models<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Models, D::Error> {
    // a JSON object keeps its order here (serde_json's preserve_order): the first match wins
    let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
    let mut out = Vec::with_capacity(map.len());
    for (pattern, v) in map {
        let name = v.as_str().ok_or_else(|| serde::de::Error::custom(format!("models[{pattern:?}]: a profile name is a string")))?;
        let p = Profile::by_name(name)
            .ok_or_else(|| serde::de::Error::custom(format!("models[{pattern:?}]: unknown profile {name:?} (known: {})", profile_names())))?;
        if pattern.is_empty() {
            return Err(serde::de::Error::custom("models: an empty pattern matches no model; use \"*\" for every model"));
        }
        // lower-cased once here: matching ignores ASCII case
        out.push((pattern.to_ascii_lowercase(), p));
    }
    Ok(Models(out.into()))
}

fn opt_models<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Models>, D::Error> {
    models(d).map(Some)
}

fn llama_cpp<'de, D: serde::Deserializer<'de>>(d: D) -> Result<LlamaCpp, D::Error> {
    let month = String::deserialize(d)?;
    LlamaCpp::since(&month).ok_or_else(|| {
        let known: Vec<&str> = LlamaCpp::ALL.iter().map(|v| v.name()).collect();
        serde::de::Error::custom(format!("{month:?} is not a month from 2024-08 on, as YYYY-MM (judged releases: {})", known.join(", ")))
    })
}

fn opt_llama_cpp<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<LlamaCpp>, D::Error> {
    llama_cpp(d).map(Some)
}

fn format<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Format, D::Error> {
    let name = String::deserialize(d)?;
    Format::by_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown format {name:?}")))
}

fn profile_names() -> String {
    crate::schema::profile::ALL.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_routes_are_each_formats_own() {
        let routes = default_routes();
        type Row<'a> = (Option<&'a str>, Option<&'a str>, Format, Option<&'a str>, bool);
        let got: Vec<Row> = routes.iter().map(|r| (r.path.as_deref(), r.prefix.as_deref(), r.format, r.profile.map(|p| p.name), r.models.is_some())).collect();
        let exact = |p, f| (Some(p), None, f, None, false);
        let own = |p, f, profile| (Some(p), None, f, Some(profile), true);
        let gemini = |p| (None, Some(p), Format::Gemini, Some("gemini"), true);
        assert_eq!(
            got,
            vec![
                exact("/v1/chat/completions", Format::OpenAiChat),
                exact("/chat/completions", Format::OpenAiChat),
                exact("/v1/responses", Format::OpenAiResponses),
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
            ]
        );
        let c = Config::default();
        assert!(c.route_for("/v1beta/models/gemini-2.5-flash:streamGenerateContent").is_some());
        assert!(c.route_for("/v1beta/models/gemini-2.5-flash:countTokens").is_none(), "no schemas there");
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
            (r#"{"routes": [{"path": "/x", "format": "soap"}]}"#, "soap"),
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
        assert_eq!((r.format, r.profile.map(|p| p.name), r.strict), (Format::Auto, Some("mcp"), Some(true)));
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
        let r = c.route_for("/x").and_then(|r| r.models.clone()).unwrap_or_default();
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
            c.options_on(c.profile, r.promote_to_description, r.open_objects)
        };
        assert!(!on("/a").promote_to_description && on("/a").open_objects);
        assert!(on("/b").promote_to_description && !on("/b").open_objects);
        assert!(on("/c").promote_to_description && on("/c").open_objects);
        assert_eq!(on("/c"), c.options(c.profile));
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
