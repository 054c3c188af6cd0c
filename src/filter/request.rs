//! One request's way through the filter, without any host: which requests are buffered, when
//! buffering stops, and what happens to the body. The Wasm glue feeds it what Envoy says and carries
//! out what it returns; tests drive it directly.

use super::body;
use super::config::{Config, Models, OnInvalid, Route, Settings};
use super::encoding::{narrow_accept, Coding};
use super::headers::is_json;
use super::host::{Headers, Next, RequestHost, RouteMeta};
use super::log::{clip, Line};
use super::response::Reply;
use super::stats::{self, label, Metrics, Series, Stat};
use crate::api::cache::SiteCache;
use crate::api::format::ErrorShape;
use crate::api::NameMap;
use crate::api::{self, Format, Skip};
use crate::schema::{Profile, Report};
use std::borrow::Cow;

/// The decision for one buffered request.
#[derive(Debug, Clone)]
pub struct Plan {
    pub format: Format,
    pub profile: &'static Profile,
    pub strict: bool,
    /// Route label for metrics and logs (the Envoy route name, made safe).
    pub route: String,
    /// The route's model map (empty: the profile above serves every model).
    pub models: Models,
    /// The route's settings over the plugin's (`mode: observe`: count and log what enforce would do,
    /// forward the original bytes).
    pub settings: Settings,
    /// The model the request path names (Gemini), for the model map when the body names none.
    pub path_model: Option<String>,
    pub on_invalid: OnInvalid,
    /// The `Accept-Encoding` to send upstream instead of the client's (`None`: leave it): only the
    /// codings toolfit reads, so every response to a request it buffered can be read and repaired.
    /// Decided at the headers, because they go upstream before the body has been read.
    pub accept_encoding: Option<String>,
}

impl Plan {
    pub fn count(&self, m: &mut dyn Metrics, s: Stat, n: u64) {
        stats::count(m, &self.route, self.profile.name, s, n);
    }

    /// Every profile the request may be rewritten for: the route's, and each its model map may pick.
    pub fn profiles(&self) -> Vec<&'static Profile> {
        std::iter::once(self.profile).chain(self.models.profiles()).collect()
    }
}

#[derive(Debug)]
pub enum Start {
    /// Not an inference request: not buffered, not counted.
    Ignore,
    /// An inference request toolfit will not read (already counted): forwarded as it is.
    PassThrough,
    /// Buffer the body, then call [`finish`].
    Buffer(Plan),
}

/// Decides from the headers whether to buffer. Counts `requests_seen` and the skips it decides here.
/// `warn` receives configuration problems found at request time (an unknown profile in route metadata).
pub fn start(cfg: &Config, h: &Headers, route_name: Option<&str>, meta: &RouteMeta, m: &mut dyn Metrics, warn: &mut dyn FnMut(String)) -> Start {
    if h.end_of_stream || !h.method.eq_ignore_ascii_case("POST") || meta.disabled {
        return Start::Ignore;
    }
    let Some(route) = cfg.route_for(h.path) else { return Start::Ignore };
    if h.content_type.is_some_and(|ct| !is_json(ct)) {
        return Start::Ignore;
    }
    let mut plan = plan(cfg, route, route_name, meta, warn);
    plan.path_model = api::model_in_path(h.path);
    plan.count(m, Stat::RequestsSeen, 1);
    if signed(h) {
        // a rewritten body would break the signature: the upstream would refuse the request
        plan.count(m, Stat::SkippedSigned, 1);
        return Start::PassThrough;
    }
    if Coding::of(h.content_encoding) != Coding::Identity {
        plan.count(m, Stat::SkippedEncoded, 1);
        return Start::PassThrough;
    }
    // observe changes no byte and no header: a reply in a coding toolfit does not read goes unchecked
    if !plan.settings.observe() {
        plan.accept_encoding = narrow_accept(h.accept_encoding);
    }
    Start::Buffer(plan)
}

/// Whether the client signed the request over its body: AWS Signature Version 4 in the `Authorization`
/// header (the payload's hash is in the canonical request) or in the query (a presigned URL). A gateway
/// that signs after toolfit (Envoy's `aws_request_signing`) signs what toolfit forwards.
fn signed(h: &Headers) -> bool {
    let query = h.path.split_once('?').map_or("", |(_, q)| q);
    h.authorization.is_some_and(|a| a.trim_start().starts_with("AWS4-HMAC-SHA256")) || query.split('&').any(|kv| kv.starts_with("X-Amz-Signature="))
}

fn plan(cfg: &Config, route: &Route, route_name: Option<&str>, meta: &RouteMeta, warn: &mut dyn FnMut(String)) -> Plan {
    let inference = route.inference();
    let mut profile = route.profile.unwrap_or(cfg.profile);
    if let Some(name) = &meta.profile {
        match Profile::by_name(name) {
            Some(p) => profile = p,
            None => warn(format!("route {:?}: metadata names unknown profile {name:?}; using {}", route_name.unwrap_or(""), profile.name)),
        }
    }
    Plan {
        format: route.format,
        profile,
        strict: meta.strict.or(inference.and_then(|i| i.strict)).unwrap_or(cfg.strict),
        settings: cfg.settings(Some(route)),
        route: label(route_name.unwrap_or("none")),
        models: inference.and_then(|i| i.models.clone()).unwrap_or_else(|| cfg.models.clone()),
        path_model: None,
        accept_encoding: None,
        on_invalid: inference.and_then(|i| i.on_invalid_tool_call).unwrap_or(cfg.on_invalid_tool_call),
    }
}

/// Whether to keep buffering once `total` body bytes have arrived. Past `max_body_bytes` buffering
/// stops (the body then streams on unchanged) and `skipped_too_large` is counted.
pub fn keep_buffering(cfg: &Config, plan: &Plan, total: usize, m: &mut dyn Metrics) -> bool {
    if !body::within_limit(cfg, total) {
        plan.count(m, Stat::SkippedTooLarge, 1);
        return false;
    }
    true
}

/// The request headers of a request to buffer, before they go upstream: `Accept-Encoding` narrowed
/// to what toolfit reads, and the framing's own header work. `None`: the request is left alone (its
/// `Content-Length` could not be dropped, so its body must not change); else what the host does with
/// the headers (`Pause`: they wait for the body, to get its new length).
pub fn hold_headers(cfg: &Config, plan: &Plan, host: &mut dyn RequestHost, m: &mut dyn Metrics) -> Option<Next> {
    if let Some(ae) = &plan.accept_encoding {
        // the upstream may compress only in codings toolfit reads (else its answer goes on unrepaired)
        if !host.set_header("accept-encoding", ae) {
            plan.count(m, Stat::InternalErrors, 1);
        }
    }
    if plan.settings.observe() {
        // the body goes upstream as it came: its headers too, at once
        return Some(Next::Continue);
    }
    let next = body::frame(cfg, host);
    if next.is_none() {
        plan.count(m, Stat::InternalErrors, 1);
    }
    next
}

/// Carries out a verdict on the body of `size` bytes, whose bytes from offset `at` on the verdict's
/// new bytes replace. `Pause`: toolfit answered the request.
pub fn apply(cfg: &Config, plan: &Plan, verdict: Verdict, at: usize, size: usize, host: &mut dyn RequestHost, m: &mut dyn Metrics) -> Next {
    match verdict {
        Verdict::Forward => Next::Continue,
        Verdict::Replace(new) => {
            if !body::replace(cfg, host, at, size, &new) {
                plan.count(m, Stat::InternalErrors, 1);
            }
            Next::Continue
        }
        Verdict::Reject(status, err) => {
            if !host.reject(status, &err) {
                plan.count(m, Stat::InternalErrors, 1);
                return Next::Continue;
            }
            Next::Pause
        }
    }
}

/// What to do with the buffered body.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Forward the original bytes (nothing to change, or nothing toolfit could read).
    Forward,
    /// Replace the body with these bytes.
    Replace(Vec<u8>),
    /// Answer the client with this status and JSON body (strict mode); nothing goes upstream.
    Reject(u16, Vec<u8>),
}

/// The plan for the request's model when the route's model map picks another profile for it. Counters
/// from here on carry that profile; `requests_seen` and the skips decided from the headers keep the
/// route's.
fn by_model(plan: &Plan, body: &[u8]) -> Option<Plan> {
    if plan.models.is_empty() {
        return None;
    }
    let model = api::model(body).or_else(|| plan.path_model.clone())?;
    let profile = plan.models.profile_for(&model)?;
    (profile != plan.profile).then(|| Plan { profile, ..plan.clone() })
}

/// Rewrites a complete body and counts what happened. `elapsed_us` reads a clock in microseconds.
/// `cache`, when given, is this worker's rewrite cache.
pub fn finish<'b>(
    cfg: &Config,
    plan: &Plan,
    body: impl Into<Cow<'b, [u8]>>,
    m: &mut dyn Metrics,
    elapsed_us: &mut dyn FnMut() -> u64,
    cache: Option<&mut SiteCache>,
) -> (Verdict, Option<Line>, Option<Reply>) {
    let body = body.into();
    let size = body.len();
    finish_part(cfg, plan, body, (size, size), m, elapsed_us, cache)
}

/// [`finish`] of what the engine reads of a body of `sizes.0` bytes, `sizes.1` of them held (a
/// streamed body's stubs and held bytes, `super::incoming`): counted as that body.
pub fn finish_part<'b>(
    cfg: &Config,
    plan: &Plan,
    body: Cow<'b, [u8]>,
    (size, held): (usize, usize),
    m: &mut dyn Metrics,
    elapsed_us: &mut dyn FnMut() -> u64,
    mut cache: Option<&mut SiteCache>,
) -> (Verdict, Option<Line>, Option<Reply>) {
    let t0 = elapsed_us();
    let owned = body;
    let body: &[u8] = &owned;
    let mapped;
    let plan = match by_model(plan, body) {
        Some(p) => {
            m.prepare(&p.route, p.profile.name);
            mapped = p;
            &mapped
        }
        None => plan,
    };
    let opts = cfg.options_with(plan.profile, &plan.settings);
    let before = cache.as_deref().map(|c| (c.hits, c.misses, c.evictions));
    let outcome = api::rewrite_body_cached(body, plan.format, plan.profile, &opts, cache.as_deref_mut());
    let took = elapsed_us().saturating_sub(t0);
    count_cache(plan, m, cache.as_deref(), before);
    let o = match outcome {
        Ok(o) => o,
        Err(skip) => {
            plan.count(m, skipped(skip), 1);
            return (Verdict::Forward, None, None);
        }
    };
    m.record(&Series::of(&plan.route, plan.profile.name, Stat::RewriteUs.name()), took);
    plan.count(m, Stat::ToolsSeen, o.tools as u64);
    plan.count(m, Stat::SchemasUnparsed, o.unparsed.len() as u64);
    stats::count_report(m, &plan.route, plan.profile.name, &o.report);
    // observe: every counter and line below as enforce would have them, then the original bytes
    plan.count(m, Stat::RequestsObserved, u64::from(plan.settings.observe()));
    let observed = |mut line: Line| {
        if plan.settings.observe() {
            line.text.push_str(" (observe: forwarded as it came)");
        }
        line
    };
    if plan.strict {
        if let Some((tool, path, why)) = refusal(&o.report, &o.unparsed) {
            plan.count(m, Stat::RejectedStrict, 1);
            let text = format!("route={} profile={} strict: refused tool \"{}\" at \"{}\": {why}", plan.route, plan.profile.name, clip(&tool), clip(&path));
            let line = observed(Line { warn: true, text });
            if plan.settings.observe() {
                return (Verdict::Forward, Some(line), reply(cfg, plan, owned, &o));
            }
            return (Verdict::Reject(400, strict_error(plan.format, &tool, &path, &why)), Some(line), None);
        }
    }
    plan.count(m, Stat::BytesIn, size as u64);
    plan.count(m, Stat::BytesHeld, held as u64);
    let line = summary(plan, &o.report, o.tools, o.schemas_changed, &o.unparsed).map(observed);
    let read = body.len();
    let reply = reply(cfg, plan, owned, &o);
    match o.body {
        Some(new) => {
            plan.count(m, Stat::RequestsRewritten, 1);
            plan.count(m, Stat::BytesOut, (size + new.len()).saturating_sub(read) as u64);
            if plan.settings.observe() {
                return (Verdict::Forward, line, reply);
            }
            (Verdict::Replace(new), line, reply)
        }
        None => {
            plan.count(m, Stat::RequestsUnchanged, 1);
            plan.count(m, Stat::BytesOut, size as u64);
            (Verdict::Forward, line, reply)
        }
    }
}

/// The cache's hits, misses and evictions since `before`, counted on the plan's route.
fn count_cache(plan: &Plan, m: &mut dyn Metrics, cache: Option<&SiteCache>, before: Option<(u64, u64, u64)>) {
    if let (Some(c), Some((h, mi, e))) = (cache, before) {
        plan.count(m, Stat::CacheHits, c.hits.saturating_sub(h));
        plan.count(m, Stat::CacheMisses, c.misses.saturating_sub(mi));
        plan.count(m, Stat::CacheEvictions, c.evictions.saturating_sub(e));
    }
}

/// The counter of a body the engine could not read.
fn skipped(skip: Skip) -> Stat {
    match skip {
        Skip::NotJson => Stat::SkippedNotJson,
        Skip::UnknownShape => Stat::SkippedUnknownShape,
        Skip::Misplaced => Stat::InternalErrors,
    }
}

/// What the response path needs from this request, when it declares tools and the response is worth
/// reading (repairs to make, or calls to check).
fn reply(cfg: &Config, plan: &Plan, body: Cow<'_, [u8]>, o: &api::BodyOutcome) -> Option<Reply> {
    if o.tools == 0 {
        return None;
    }
    // observe: the upstream got the client's own tools, so there is nothing to give back and no
    // rewrite to blame; calls are still checked, and counted, never refused
    let unchanged = Report::default();
    let (names, report, on_invalid) =
        if plan.settings.observe() { (NameMap::default(), &unchanged, OnInvalid::Count) } else { (o.names.clone(), &o.report, plan.on_invalid) };
    let mut r = Reply::of(o.tool_lists_of(body), plan.format, names, report, cfg.validate_tool_calls, on_invalid, cfg.max_body_bytes);
    r.route = plan.route.clone();
    r.profile = plan.profile.name;
    r.wanted().then_some(r)
}

fn refusal(r: &Report, unparsed: &[api::Unparsed]) -> Option<(String, String, String)> {
    if let Some(u) = unparsed.first() {
        return Some((u.tool.clone(), String::new(), format!("schema could not be parsed: {}", u.reason)));
    }
    r.first_lossy().map(|x| (x.tool.clone(), x.path.clone(), format!("{}: {}", x.kind.name(), x.detail)))
}

/// The 400 body, in the shape of the request's API (what its clients show as the error's message).
pub fn strict_error(format: Format, tool: &str, path: &str, why: &str) -> Vec<u8> {
    let path = if path.is_empty() { "/" } else { path };
    let message = format!("tool {tool:?}: schema at {path} cannot be used as it is on this model server: {why}");
    ErrorShape::of(format).body(400, "toolfit_schema_rejected", &message, tool, path)
}

/// One line per request that changed something: info, or warn with each lossy change's tool and path.
fn summary(plan: &Plan, r: &Report, tools: usize, changed: usize, unparsed: &[api::Unparsed]) -> Option<Line> {
    if r.is_empty() && unparsed.is_empty() {
        return None;
    }
    let mut text = format!("route={} profile={} tools={tools} schemas_changed={changed}", plan.route, plan.profile.name);
    for (k, n) in &r.counters {
        text.push_str(&format!(" {}={n}", k.name()));
    }
    let lossy: Vec<String> = r
        .records
        .iter()
        .filter(|x| x.kind.lossy())
        .take(5)
        .map(|x| format!("{}:{}:{}", clip(&x.tool), if x.path.is_empty() { "/".into() } else { clip(&x.path) }, x.kind.name()))
        .collect();
    for u in unparsed.iter().take(3) {
        text.push_str(&format!(" unparsed=\"{}\"", clip(&u.tool)));
    }
    let warn = !lossy.is_empty() || !unparsed.is_empty();
    if !lossy.is_empty() {
        text.push_str(&format!(" lossy=[{}]", lossy.join(" ")));
        let more = r.lossy_count().saturating_sub(lossy.len() as u64);
        if more > 0 {
            text.push_str(&format!(" (+{more} more)"));
        }
    }
    Some(Line { warn, text })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::stats::testing::Counts;

    fn post<'a>(path: &'a str) -> Headers<'a> {
        Headers { method: "POST", path, content_type: Some("application/json"), ..Headers::default() }
    }

    fn planned(cfg: &Config, h: &Headers, meta: &RouteMeta, m: &mut Counts) -> Option<Plan> {
        match start(cfg, h, Some("chat"), meta, m, &mut |_| {}) {
            Start::Buffer(p) => Some(p),
            _ => None,
        }
    }

    #[test]
    fn only_json_posts_on_inference_routes_are_buffered() {
        let cfg = Config::default();
        let mut m = Counts::default();
        assert!(planned(&cfg, &post("/v1/chat/completions"), &RouteMeta::default(), &mut m).is_some());
        let get = Headers { method: "GET", ..post("/v1/chat/completions") };
        let form = Headers { content_type: Some("application/x-www-form-urlencoded"), ..post("/v1/chat/completions") };
        let none = Headers { content_type: None, ..post("/v1/chat/completions") };
        let empty = Headers { end_of_stream: true, ..post("/v1/chat/completions") };
        assert!(planned(&cfg, &get, &RouteMeta::default(), &mut m).is_none());
        assert!(planned(&cfg, &post("/health"), &RouteMeta::default(), &mut m).is_none());
        assert!(planned(&cfg, &form, &RouteMeta::default(), &mut m).is_none());
        assert!(planned(&cfg, &empty, &RouteMeta::default(), &mut m).is_none());
        assert!(planned(&cfg, &none, &RouteMeta::default(), &mut m).is_some(), "no content type: the parse decides");
        let disabled = RouteMeta { disabled: true, ..RouteMeta::default() };
        assert!(planned(&cfg, &post("/v1/chat/completions"), &disabled, &mut m).is_none());
        assert_eq!(m.get("chat", "llama-cpp", "requests_seen"), 2);
    }

    #[test]
    fn requests_signed_over_their_body_pass_as_they_came() {
        let mut m = Counts::default();
        let path = "/model/meta.llama3-70b-instruct-v1:0/converse";
        let sig = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261127/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc";
        for h in [
            Headers { authorization: Some(sig), ..post(path) },
            Headers { path: "/model/m.n/converse?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab12", ..post(path) },
        ] {
            assert!(matches!(start(&Config::default(), &h, Some("bedrock"), &RouteMeta::default(), &mut m, &mut |_| {}), Start::PassThrough), "{:?}", h.path);
        }
        assert_eq!(m.get("bedrock", "bedrock", "skipped_signed"), 2);
        // the controls: a bearer token (Bedrock API keys) or no signature, buffered as any request
        for h in
            [Headers { authorization: Some("Bearer ABSK..."), ..post(path) }, post(path), Headers { path: "/model/m.n/converse?X-Amz-Date=1", ..post(path) }]
        {
            assert!(
                matches!(start(&Config::default(), &h, Some("bedrock"), &RouteMeta::default(), &mut m, &mut |_| {}), Start::Buffer(_)),
                "{:?}",
                h.authorization
            );
        }
        assert_eq!(m.get("bedrock", "bedrock", "skipped_signed"), 2);
    }

    #[test]
    fn buffered_requests_ask_upstream_only_for_codings_toolfit_reads() {
        let mut m = Counts::default();
        let cases = [(None, None), (Some("gzip, deflate"), None), (Some("gzip, deflate, br, zstd"), Some("gzip, deflate")), (Some("br"), Some("identity"))];
        for (sent, want) in cases {
            let h = Headers { accept_encoding: sent, ..post("/v1/chat/completions") };
            let Start::Buffer(p) = start(&Config::default(), &h, Some("chat"), &RouteMeta::default(), &mut m, &mut |_| {}) else { panic!("not buffered") };
            assert_eq!(p.accept_encoding.as_deref(), want, "{sent:?}");
        }
    }

    #[test]
    fn encoded_bodies_are_counted_and_not_buffered() {
        let mut m = Counts::default();
        let h = Headers { content_encoding: Some("gzip"), ..post("/v1/chat/completions") };
        assert!(matches!(start(&Config::default(), &h, Some("chat"), &RouteMeta::default(), &mut m, &mut |_| {}), Start::PassThrough));
        assert_eq!(m.get("chat", "llama-cpp", "skipped_encoded"), 1);
    }

    #[test]
    fn route_metadata_overrides_profile_and_strict() {
        let mut m = Counts::default();
        let meta = RouteMeta { profile: Some("mcp".into()), strict: Some(true), disabled: false };
        let p = planned(&Config::default(), &post("/v1/chat/completions"), &meta, &mut m).unwrap();
        assert_eq!((p.profile.name, p.strict), ("mcp", true));
        let mut warned = Vec::new();
        let meta = RouteMeta { profile: Some("nope".into()), ..RouteMeta::default() };
        let Start::Buffer(p) = start(&Config::default(), &post("/v1/chat/completions"), Some("chat"), &meta, &mut m, &mut |w| warned.push(w)) else { panic!() };
        assert_eq!(p.profile.name, "llama-cpp");
        assert!(warned[0].contains("nope"));
    }

    #[test]
    fn body_outcomes_and_counters() {
        let cfg = Config::default();
        let mut m = Counts::default();
        let p = planned(&cfg, &post("/v1/chat/completions"), &RouteMeta::default(), &mut m).unwrap();
        let mut clock = || 0u64;
        let fine = br#"{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}}]}"#;
        assert_eq!(finish(&cfg, &p, fine, &mut m, &mut clock, None).0, Verdict::Forward);
        let fixable = br#"{"messages":[], "tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"^\\d+$"}},"additionalProperties":false}}}]}"#;
        let (v, line, _) = finish(&cfg, &p, fixable, &mut m, &mut clock, None);
        let Verdict::Replace(new) = v else { panic!("{v:?}") };
        assert!(std::str::from_utf8(&new).unwrap().starts_with(r#"{"messages":[], "tools":"#), "bytes outside the schema kept");
        assert!(!line.unwrap().warn);
        assert_eq!(finish(&cfg, &p, b"{not json", &mut m, &mut clock, None).0, Verdict::Forward);
        assert_eq!(finish(&cfg, &p, b"[1,2]", &mut m, &mut clock, None).0, Verdict::Forward);
        for (c, n) in [
            ("requests_unchanged", 1),
            ("requests_rewritten", 1),
            ("skipped_not_json", 1),
            ("skipped_unknown_shape", 1),
            ("pattern_rewritten", 1),
            ("tools_seen", 2),
            ("rewrite_us", 2),
        ] {
            assert_eq!(m.get("chat", "llama-cpp", c), n, "{c}");
        }
        assert_eq!(m.get("chat", "llama-cpp", "bytes_in"), (fine.len() + fixable.len()) as u64);
    }

    #[test]
    fn the_model_map_picks_the_profile_and_its_counters() {
        let cfg = Config::parse(br#"{"models": {"qwen*": "vllm-outlines"}}"#).unwrap();
        let mut m = Counts::default();
        let p = planned(&cfg, &post("/v1/chat/completions"), &RouteMeta::default(), &mut m).unwrap();
        let mut clock = || 0u64;
        // an email format: outlines compiles it, llama.cpp does not (removed, a rewrite)
        let body = |model: &str| {
            format!(
                r#"{{"model":"{model}","messages":[],"tools":[{{"type":"function","function":{{"name":"f","description":"d","parameters":{{"type":"object","properties":{{"a":{{"type":"string","format":"email"}}}},"additionalProperties":false}}}}}}]}}"#
            )
        };
        assert_eq!(finish(&cfg, &p, body("Qwen2.5-7B").as_bytes(), &mut m, &mut clock, None).0, Verdict::Forward, "outlines keeps email");
        assert!(matches!(finish(&cfg, &p, body("llama3").as_bytes(), &mut m, &mut clock, None).0, Verdict::Replace(_)));
        assert_eq!(m.get("chat", "vllm-outlines", "requests_unchanged"), 1);
        assert_eq!(m.get("chat", "llama-cpp", "requests_rewritten"), 1);
        assert_eq!(m.get("chat", "llama-cpp", "requests_seen"), 1, "counted from the headers, before the model is known");
        assert_eq!(m.get("chat", "vllm-outlines", "requests_seen"), 0);
    }

    #[test]
    fn a_cache_hit_moves_the_same_counters_as_a_miss() {
        let cfg = Config::default();
        let mut cache = SiteCache::new(1 << 20);
        let body = br#"{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"^\\d+$"}}}}}]}"#;
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut m = Counts::default();
            let p = planned(&cfg, &post("/v1/chat/completions"), &RouteMeta::default(), &mut m).unwrap();
            let (v, _, _) = finish(&cfg, &p, body, &mut m, &mut || 0, Some(&mut cache));
            runs.push((v, m));
        }
        assert_eq!(runs[0].0, runs[1].0, "a hit gives the same body");
        let strip = |m: &Counts| -> Vec<(String, u64)> {
            let mut v: Vec<_> = m.0.iter().filter(|(k, _)| !k.contains("cache_")).map(|(k, n)| (k.clone(), *n)).collect();
            v.sort();
            v
        };
        assert_eq!(strip(&runs[0].1), strip(&runs[1].1));
        assert_eq!(runs[0].1.get("chat", "llama-cpp", "cache_misses"), 1);
        assert_eq!(runs[1].1.get("chat", "llama-cpp", "cache_hits"), 1);
    }

    #[test]
    fn strict_mode_refuses_lossy_rewrites_naming_tool_and_path() {
        let cfg = Config { strict: true, ..Config::default() };
        let mut m = Counts::default();
        let p = planned(&cfg, &post("/v1/chat/completions"), &RouteMeta::default(), &mut m).unwrap();
        let body = br#"{"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"k":{"type":"string","pattern":"^(?!x)"}}}}}]}"#;
        let (v, line, _) = finish(&cfg, &p, body, &mut m, &mut || 0, None);
        let Verdict::Reject(400, err) = v else { panic!("{v:?}") };
        let e: serde_json::Value = serde_json::from_slice(&err).unwrap();
        assert_eq!(e["error"]["type"], "toolfit_schema_rejected");
        assert_eq!(e["error"]["tool"], "lookup");
        assert_eq!(e["error"]["path"], "/properties/k");
        assert!(line.unwrap().warn);
        assert_eq!(m.get("chat", "llama-cpp", "rejected_strict"), 1);
    }

    #[test]
    fn the_reply_carries_names_nulls_and_route_only_when_tools_are_declared() {
        let cfg = Config::parse(br#"{"profile": "openai-strict"}"#).unwrap();
        let mut m = Counts::default();
        let p = planned(&cfg, &post("/v1/chat/completions"), &RouteMeta::default(), &mut m).unwrap();
        let body = br#"{"messages":[],"tools":[{"type":"function","function":{"name":"gh.search","parameters":{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}}}]}"#;
        let (v, _, reply) = finish(&cfg, &p, body, &mut m, &mut || 0, None);
        let Verdict::Replace(new) = v else { panic!("{v:?}") };
        assert!(std::str::from_utf8(&new).unwrap().contains(r#""name":"gh_search""#));
        let r = reply.expect("tools declared");
        assert_eq!((r.route.as_str(), r.profile), ("chat", "openai-strict"));
        assert_eq!((r.tools()[0].sent.as_str(), r.tools()[0].name.as_str(), r.tools()[0].nulls), ("gh_search", "gh.search", true));
        assert!(r.tools()[0].schema.contains(r#""required":["q"]"#), "the schema as the client sent it");
        assert_eq!(m.get("chat", "openai-strict", "name_mapped"), 1);
        let (_, _, none) = finish(&cfg, &p, br#"{"messages":[]}"#, &mut m, &mut || 0, None);
        assert!(none.is_none(), "no tools: the response is not read");
        let off = Config { validate_tool_calls: false, ..Config::default() };
        let p = planned(&off, &post("/v1/chat/completions"), &RouteMeta::default(), &mut m).unwrap();
        let plain = br#"{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}"#;
        assert!(finish(&off, &p, plain, &mut m, &mut || 0, None).2.is_none(), "nothing to repair, nothing to check");
    }

    #[test]
    fn reject_needs_exact_framing() {
        let e = Config::parse(br#"{"on_invalid_tool_call": "reject"}"#).unwrap_err();
        assert!(e.contains("framing: exact"), "{e}");
        assert!(Config::parse(br#"{"on_invalid_tool_call": "reject", "framing": "exact"}"#).is_ok());
        let e = Config::parse(br#"{"routes": [{"path": "/x", "format": "openai-chat", "on_invalid_tool_call": "reject"}]}"#).unwrap_err();
        assert!(e.contains("framing: exact"), "{e}");
        assert!(Config::parse(br#"{"on_invalid_tool_call": "drop"}"#).is_err());
    }

    /// observe: the counters and lines enforce would give, plus `requests_observed`; the original bytes
    /// upstream, the client's headers untouched, no 400, no repair in the reply.
    #[test]
    fn observe_counts_what_enforce_would_do_and_forwards_the_original() {
        let run = |extra: &str, body: &[u8]| {
            let cfg = Config::parse(format!(r#"{{"profile": "openai-strict"{extra}}}"#).as_bytes()).unwrap();
            let mut m = Counts::default();
            let h = Headers { accept_encoding: Some("gzip, br"), ..post("/v1/chat/completions") };
            let Start::Buffer(p) = start(&cfg, &h, Some("chat"), &RouteMeta::default(), &mut m, &mut |_| {}) else { panic!("not buffered") };
            let (v, line, reply) = finish(&cfg, &p, body, &mut m, &mut || 0, None);
            (p.accept_encoding, v, line.map(|l| (l.warn, l.text)), reply, m)
        };
        let mapped = br#"{"messages":[],"tools":[{"type":"function","function":{"name":"gh.search","parameters":{"type":"object","properties":{"q":{"type":"string","pattern":"^(?!x)"},"n":{"type":"integer"}},"required":["q"]}}}]}"#;
        let (enc_e, v_e, line_e, reply_e, m_e) = run("", mapped);
        let (enc_o, v_o, line_o, reply_o, m_o) = run(r#", "mode": "observe""#, mapped);
        assert!(matches!(v_e, Verdict::Replace(_)), "{v_e:?}");
        assert_eq!(v_o, Verdict::Forward);
        assert_eq!((enc_e.as_deref(), enc_o), (Some("gzip"), None), "observe leaves Accept-Encoding alone");
        let (we, te) = line_e.unwrap();
        let (wo, to) = line_o.unwrap();
        assert_eq!((we, format!("{te} (observe: forwarded as it came)")), (wo, to));
        // every counter enforce moved, moved the same; observe adds requests_observed alone
        let mut only_o: Vec<_> = m_o.0.iter().filter(|(k, n)| m_e.0.get(*k) != Some(n)).map(|(k, _)| k.clone()).collect();
        only_o.sort();
        assert_eq!(only_o, [crate::filter::stats::metric_name("chat", "openai-strict", "requests_observed")]);
        assert!(m_e.0.keys().all(|k| m_o.0.contains_key(k)));
        assert_eq!(m_o.get("chat", "openai-strict", "name_mapped"), 1);
        assert_eq!(m_e.get("chat", "openai-strict", "requests_observed"), 0);
        // the reply checks calls against the client's tools, under their own names, and repairs nothing
        let (re, ro) = (reply_e.unwrap(), reply_o.unwrap());
        assert!(re.repairs() && !ro.repairs());
        assert_eq!((ro.tools()[0].sent.as_str(), ro.tools()[0].nulls), ("gh.search", false));
        // strict: enforce answers 400, observe counts the refusal and forwards
        let (_, v_e, _, _, m_e) = run(r#", "strict": true, "profile": "llama-cpp""#, mapped);
        let (_, v_o, line_o, _, m_o) = run(r#", "strict": true, "profile": "llama-cpp", "mode": "observe""#, mapped);
        assert!(matches!(v_e, Verdict::Reject(400, _)), "{v_e:?}");
        assert_eq!(v_o, Verdict::Forward);
        assert!(line_o.is_some_and(|(warn, t)| warn && t.contains("strict: refused") && t.ends_with("(observe: forwarded as it came)")));
        assert_eq!((m_e.get("chat", "llama-cpp", "rejected_strict"), m_o.get("chat", "llama-cpp", "rejected_strict")), (1, 1));
        // its headers go on untouched, at once, in either framing
        #[derive(Default)]
        struct Calls(Vec<String>);
        impl RequestHost for Calls {
            fn set_header(&mut self, name: &str, value: &str) -> bool {
                self.0.push(format!("set {name}: {value}"));
                true
            }
            fn remove_header(&mut self, name: &str) -> bool {
                self.0.push(format!("remove {name}"));
                true
            }
            fn set_body(&mut self, _: usize, _: usize, _: &[u8]) -> bool {
                true
            }
            fn reject(&mut self, _: u16, _: &[u8]) -> bool {
                true
            }
        }
        for (extra, want) in [("", Some(Next::Continue)), (r#", "framing": "exact""#, Some(Next::Pause))] {
            for observe in [false, true] {
                let mode = if observe { r#", "mode": "observe""# } else { "" };
                let cfg = Config::parse(format!(r#"{{"profile": "llama-cpp"{extra}{mode}}}"#).as_bytes()).unwrap();
                let h = Headers { accept_encoding: Some("br"), ..post("/v1/chat/completions") };
                let p = planned(&cfg, &h, &RouteMeta::default(), &mut Counts::default()).unwrap();
                let mut calls = Calls::default();
                let next = hold_headers(&cfg, &p, &mut calls, &mut Counts::default());
                if observe {
                    assert_eq!((next, calls.0.len()), (Some(Next::Continue), 0), "{extra}: {:?}", calls.0);
                } else {
                    assert_eq!(next, want, "{extra}");
                    assert!(calls.0.contains(&"set accept-encoding: identity".to_string()), "{:?}", calls.0);
                }
            }
        }
        // a route may observe while the plugin enforces
        let cfg = Config::parse(br#"{"routes": [{"path": "/v1/chat/completions", "format": "openai-chat", "mode": "observe"}]}"#).unwrap();
        let p = planned(&cfg, &post("/v1/chat/completions"), &RouteMeta::default(), &mut Counts::default()).unwrap();
        assert!(p.settings.observe());
        assert!(Config::parse(br#"{"mode": "audit"}"#).unwrap_err().contains("mode"));
    }

    #[test]
    fn too_large_stops_buffering() {
        let cfg = Config { max_body_bytes: 10, ..Config::default() };
        let mut m = Counts::default();
        let p = planned(&cfg, &post("/v1/chat/completions"), &RouteMeta::default(), &mut m).unwrap();
        assert!(keep_buffering(&cfg, &p, 10, &mut m));
        assert!(!keep_buffering(&cfg, &p, 11, &mut m));
        assert_eq!(m.get("chat", "llama-cpp", "skipped_too_large"), 1);
    }
}
