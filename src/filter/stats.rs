//! The filter's own counters, and how every metric is named.
//!
//! Each metric is `toolfit.route.<route>.profile.<profile>.<name>`: proxy-wasm has no labels, so the
//! route and profile ride in the name and the shipped Envoy bootstrap's `stats_tags` turn them into
//! Prometheus labels (`toolfit_requests_rewritten{route="chat",profile="llama-cpp"}`). `<name>` is a
//! [`Stat`] below, a [`ToolStat`] or an engine [`Kind`](crate::schema::Kind): those enums are the only
//! places a counter is named.

macro_rules! stats {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal; )*) => {
        /// A counter (or, for `RewriteUs`, a histogram) of the filter itself.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Stat { $( $(#[doc = $doc])* $variant, )* }

        impl Stat {
            pub const ALL: &'static [Stat] = &[ $( Stat::$variant, )* ];
            pub const fn name(self) -> &'static str {
                match self { $( Stat::$variant => $name, )* }
            }
            pub fn doc(self) -> &'static str {
                match self { $( Stat::$variant => concat!($($doc, " "),*).trim_ascii(), )* }
            }
        }
    };
}

stats! {
    /// Requests on an inference route that toolfit looked at (method POST, JSON or no content type).
    RequestsSeen = "requests_seen";
    /// Requests whose body was rewritten (only schema bytes changed).
    RequestsRewritten = "requests_rewritten";
    /// Requests whose schemas needed no change: forwarded byte for byte, no body rewrite.
    RequestsUnchanged = "requests_unchanged";
    /// Requests on a route in `mode: observe` whose body toolfit read: every counter above and below
    /// says what `enforce` would have done, but the original bytes went upstream.
    RequestsObserved = "requests_observed";
    /// Bodies larger than `max_body_bytes`: forwarded unchanged.
    SkippedTooLarge = "skipped_too_large";
    /// Bodies toolfit let go because the requests in flight already held `max_held_bytes` (in this VM,
    /// or this toolfit-extproc): a request forwarded unread, a response forwarded unrepaired.
    SkippedOverBudget = "skipped_over_budget";
    /// Bodies that are not JSON (or not UTF-8): forwarded unchanged.
    SkippedNotJson = "skipped_not_json";
    /// JSON bodies of no known request shape for the route's format: forwarded unchanged.
    SkippedUnknownShape = "skipped_unknown_shape";
    /// Bodies with a `Content-Encoding` not decoded before toolfit (put Envoy's decompressor first):
    /// forwarded unchanged, never buffered.
    SkippedEncoded = "skipped_encoded";
    /// Requests the client signed over the body (AWS SigV4: Bedrock called with the client's own
    /// credentials): a rewrite would break the signature, so they go as they came. Sign at the gateway,
    /// after toolfit, to have them rewritten.
    SkippedSigned = "skipped_signed";
    /// Requests refused with 400 in strict mode (a lossy change or an unparsable schema).
    RejectedStrict = "rejected_strict";
    /// toolfit's own failures (a host call that failed, a body that could not be read or replaced):
    /// the original body was forwarded.
    InternalErrors = "internal_errors";
    /// Body bytes received on requests toolfit rewrote or left unchanged.
    BytesIn = "bytes_in";
    /// Body bytes sent upstream for those requests.
    BytesOut = "bytes_out";
    /// Of `bytes_in`, those held until the body's end to be rewritten: from the first top-level member
    /// a rewrite may change (the tools) to the end. The rest went by as they were read (in `chunked`
    /// framing, on to the upstream at once).
    BytesHeld = "bytes_held";
    /// Tool schemas seen in request bodies.
    ToolsSeen = "tools_seen";
    /// Schemas that could not be parsed (numbers past f64, lone surrogates): forwarded as they were. A schema nested past
    /// the parser's limit is not one of them: it is cut to the nesting bound (`bounds_exceeded`).
    SchemasUnparsed = "schemas_unparsed";
    /// Lossy transformations, all kinds together (each kind also has its own counter).
    LossyTotal = "lossy_total";
    /// Schemas whose rewrite came from the cache (same bytes seen before on this worker).
    CacheHits = "cache_hits";
    /// Schemas the cache did not have: rewritten, then kept in it unless the entry is over half of `cache_bytes`.
    CacheMisses = "cache_misses";
    /// Cache entries dropped to stay within `cache_bytes` (least recently used first).
    CacheEvictions = "cache_evictions";
    /// Tool names the response had under the name toolfit sent, given back as the client wrote them.
    NamesRestored = "names_restored";
    /// `null` members removed from tool-call arguments: ones OpenAI strict's nullable optionals made the
    /// model write for "absent" (a `null` the client's schema accepts stays).
    NullsRemoved = "nulls_removed";
    /// Argument keys the response had under a property name toolfit sent (Gemini's `parameters`
    /// refuse `-` and `.` in names), given back as the client's schema names them.
    PropertiesRestored = "properties_restored";
    /// Responses that needed a repair toolfit could not make (an encoded body, a call held past
    /// `max_body_bytes`, an event in parts toolfit does not take apart): forwarded as they came.
    ResponsesUnrepaired = "responses_unrepaired";
    /// Tool calls in responses (plain and streamed) to requests that declared tools.
    ToolCallsSeen = "tool_calls_seen";
    /// Tool calls whose arguments the client's own schema (before toolfit's rewrite) refuses, or calls
    /// to a tool the request did not declare: calls the MCP server would reject. Per tool as
    /// `tool.<name>.calls_invalid`.
    ToolCallsInvalid = "tool_calls_invalid";
    /// The invalid calls whose first violation lies where toolfit made a lossy change to that tool's
    /// schema: the lossy rewrites that matter in practice.
    ToolCallsInvalidLossy = "tool_calls_invalid_lossy";
    /// Responses replaced by an error because a tool call was invalid (`on_invalid_tool_call: reject`).
    ToolCallsRejected = "tool_calls_rejected";
    /// MCP routes: sessions begun (an `initialize` answered), per client as
    /// `mcp_client.<client>.mcp_sessions`.
    McpSessions = "mcp_sessions";
    /// MCP routes: tools listed to clients (`tools/list` results toolfit read, every page), per client.
    McpToolsListed = "mcp_tools_listed";
    /// MCP routes: tools left out of a list (`unfit: drop`), per client.
    McpToolsDropped = "mcp_tools_dropped";
    /// MCP routes: `tools/list` results answered with a JSON-RPC error instead (`unfit: error`), per client.
    McpListsRefused = "mcp_lists_refused";
    /// MCP routes: `tools/call` requests naming a tool toolfit never listed (a name the client's profile
    /// refuses, or one spelled like a mapped name that is not one), forwarded as they came, per client.
    McpCallsUnmapped = "mcp_calls_unmapped";
    /// MCP routes: output schemas listed as the server wrote them because their rewrite for the client
    /// would narrow what they accept (the client validates `structuredContent` with them), per client.
    McpOutputsKept = "mcp_outputs_kept";
    /// Histogram: time to rewrite one body, in microseconds.
    RewriteUs = "rewrite_us";
}

/// The counters each tool gets, as `tool.<name>.<counter>` beside the route's (see [`tool_metric`]):
/// its share of [`Stat::ToolCallsSeen`], [`Stat::ToolCallsInvalid`] and [`Stat::ToolCallsInvalidLossy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStat {
    CallsSeen,
    CallsInvalid,
    CallsInvalidLossy,
}

impl ToolStat {
    pub const fn name(self) -> &'static str {
        match self {
            ToolStat::CallsSeen => "calls_seen",
            ToolStat::CallsInvalid => "calls_invalid",
            ToolStat::CallsInvalidLossy => "calls_invalid_lossy",
        }
    }
}

/// Whose series within a route and profile: the route's own, one tool's, or one MCP client's (each
/// value a [`label`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    Route,
    Tool(&'a str),
    Client(&'a str),
}

/// One series as the core counts it: route and profile labels, scope, counter. A host names it as its
/// metrics system wants: [`Series::dotted`] for proxy-wasm (no labels: Envoy's stats tags take them
/// out of the name), [`Series::prometheus`] for a host that writes labels itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Series<'a> {
    pub route: &'a str,
    pub profile: &'a str,
    pub scope: Scope<'a>,
    pub counter: &'a str,
}

impl<'a> Series<'a> {
    /// A route's and profile's own counter `counter`.
    pub fn of(route: &'a str, profile: &'a str, counter: &'a str) -> Self {
        Series { route, profile, scope: Scope::Route, counter }
    }

    /// `toolfit.route.<route>.profile.<profile>[.tool.<tool> | .mcp_client.<client>].<counter>`.
    pub fn dotted(&self) -> String {
        let Series { route, profile, counter, .. } = self;
        match self.scope {
            Scope::Route => format!("toolfit.route.{route}.profile.{profile}.{counter}"),
            Scope::Tool(t) => format!("toolfit.route.{route}.profile.{profile}.tool.{t}.{counter}"),
            Scope::Client(c) => format!("toolfit.route.{route}.profile.{profile}.mcp_client.{c}.{counter}"),
        }
    }

    /// The Prometheus name and labels Envoy's stats tags (`envoy/envoy.yaml`) make of the dotted
    /// name: `toolfit_<counter>{route, profile[, tool | mcp_client]}`.
    pub fn prometheus(&self) -> (String, Vec<(&'static str, String)>) {
        let mut labels = vec![("route", self.route.to_string()), ("profile", self.profile.to_string())];
        match self.scope {
            Scope::Route => {}
            Scope::Tool(t) => labels.push(("tool", t.to_string())),
            Scope::Client(c) => labels.push(("mcp_client", c.to_string())),
        }
        (format!("toolfit_{}", self.counter), labels)
    }
}

/// Keeps a route name usable inside a dotted metric name and a Prometheus label: anything but
/// `[A-Za-z0-9_-]` becomes `_`, and it is cut to 64 characters (each distinct value is a stat Envoy
/// keeps forever, so cardinality stays what the route table makes it).
pub fn label(s: &str) -> String {
    let t: String = s.chars().take(64).map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if t.is_empty() {
        "none".into()
    } else {
        t
    }
}

/// The dotted name of one counter of a route and profile (see [`Series::dotted`]).
pub fn metric_name(route: &str, profile: &str, counter: &str) -> String {
    Series::of(route, profile, counter).dotted()
}

/// Where counts go. The Wasm glue implements it over proxy-wasm's metrics; tests count in a map.
pub trait Metrics {
    fn add(&mut self, s: &Series, n: u64);
    fn record(&mut self, s: &Series, value: u64);
    /// A route and profile about to be counted for the first time in this request (the model map
    /// picked the profile): a host that pre-defines metrics defines theirs.
    fn prepare(&mut self, _route: &str, _profile: &'static str) {}
}

/// Adds `n` to a route's and profile's counter `s` (nothing when `n` is 0: a series is defined once,
/// at its route's first request).
pub fn count(m: &mut dyn Metrics, route: &str, profile: &str, s: Stat, n: u64) {
    if n > 0 {
        m.add(&Series::of(route, profile, s.name()), n);
    }
}

/// Counts what the engine did to a route's request or list: each kind's counter, and the lossy ones
/// in `lossy_total` too.
pub fn count_report(m: &mut dyn Metrics, route: &str, profile: &str, report: &crate::schema::Report) {
    for (kind, n) in &report.counters {
        count(m, route, profile, Stat::LossyTotal, if kind.lossy() { *n } else { 0 });
        m.add(&Series::of(route, profile, kind.name()), *n);
    }
}

/// Every counter name a route and profile can produce.
pub fn all_counter_names() -> impl Iterator<Item = &'static str> {
    Stat::ALL.iter().filter(|s| **s != Stat::RewriteUs).map(|s| s.name()).chain(crate::schema::Kind::ALL.iter().map(|k| k.name()))
}

/// Whether a series is a counter or a histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKind {
    Counter,
    Histogram,
}

/// Every series of a route and profile: what a host defines at a route's first request, so dashboards
/// and alerts see zeros rather than missing series.
pub fn route_series<'a>(route: &'a str, profile: &'a str) -> impl Iterator<Item = (SeriesKind, Series<'a>)> + 'a {
    all_counter_names()
        .map(move |c| (SeriesKind::Counter, Series::of(route, profile, c)))
        .chain(std::iter::once((SeriesKind::Histogram, Series::of(route, profile, Stat::RewriteUs.name()))))
}

/// How many series a host keeps, whatever requests say: route, profile and tool names come from
/// configuration and requests (and a model may call a tool no request declared), and a metrics
/// system keeps every series it is given. Both hosts ask one budget.
#[derive(Default)]
pub struct SeriesBudget {
    /// Route/profile pairs whose counters are all defined.
    defined: std::collections::HashSet<(String, &'static str)>,
    /// Per-tool series counted so far.
    tool_series: usize,
}

impl SeriesBudget {
    /// Route/profile pairs defined up front, at most (later ones are counted as they come).
    pub const ROUTE_PROFILES: usize = 4096;
    /// Per-tool series, at most: past this a tool's counters go to the tool `other`.
    pub const TOOL_SERIES: usize = 3000;

    /// Whether to define every counter of `route` and `profile` now: the first time they are seen,
    /// while the budget lasts.
    pub fn define(&mut self, route: &str, profile: &'static str) -> bool {
        if self.defined.len() > Self::ROUTE_PROFILES || self.defined.contains(&(route.to_string(), profile)) {
            return false;
        }
        self.defined.insert((route.to_string(), profile))
    }

    /// The host's key (`key`: its name or labels for a series) to count `s` under, made once: a
    /// tool's series the host does not have yet (`known`: whether it has the key) is a new one while
    /// the budget lasts, then the tool `other`'s.
    pub fn admit<'a, K>(&mut self, s: Series<'a>, key: impl Fn(&Series<'a>) -> K, known: impl FnOnce(&K) -> bool) -> K {
        let k = key(&s);
        if !matches!(s.scope, Scope::Tool(_)) || known(&k) {
            return k;
        }
        if self.tool_series >= Self::TOOL_SERIES {
            return key(&Series { scope: Scope::Tool("other"), ..s });
        }
        self.tool_series += 1;
        k
    }
}

/// Counters kept in a map, for the filter's tests (request, response and exchange alike).
#[cfg(test)]
pub(crate) mod testing {
    use super::{label, metric_name, Metrics, Scope, Series, Stat};

    /// An MCP counter of one client (its label), by its dotted name.
    pub fn client_metric(route: &str, profile: &str, client: &str, s: Stat) -> String {
        Series { route, profile, scope: Scope::Client(&label(client)), counter: s.name() }.dotted()
    }
    use std::collections::HashMap;

    /// Every counter added (a histogram's samples counted), and the route/profile pairs prepared.
    #[derive(Default)]
    pub struct Counts(pub HashMap<String, u64>, pub Vec<(String, &'static str)>);

    impl Metrics for Counts {
        fn add(&mut self, s: &Series, n: u64) {
            *self.0.entry(s.dotted()).or_default() += n;
        }
        fn record(&mut self, s: &Series, _v: u64) {
            *self.0.entry(s.dotted()).or_default() += 1;
        }
        fn prepare(&mut self, route: &str, profile: &'static str) {
            self.1.push((route.to_string(), profile));
        }
    }

    impl Counts {
        /// A counter of `route` and `profile` (0 when never added).
        pub fn get(&self, route: &str, profile: &str, c: &str) -> u64 {
            self.0.get(&metric_name(route, profile, c)).copied().unwrap_or(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_budget_folds_tools_past_it_and_defines_each_pair_once() {
        let mut b = SeriesBudget::default();
        assert!(b.define("chat", "llama-cpp") && !b.define("chat", "llama-cpp") && b.define("chat", "vllm"));
        let names: Vec<String> = (0..=SeriesBudget::TOOL_SERIES).map(|i| format!("t{i}")).collect();
        let tool = |t: &'static str| Series { route: "r", profile: "p", scope: Scope::Tool(t), counter: "calls_seen" };
        for n in names.iter().take(SeriesBudget::TOOL_SERIES) {
            let s = Series { scope: Scope::Tool(n), ..tool("x") };
            assert_eq!(b.admit(s, Series::dotted, |_| false), s.dotted());
        }
        let past = Series { scope: Scope::Tool(&names[SeriesBudget::TOOL_SERIES]), ..tool("x") };
        assert_eq!(b.admit(past, Series::dotted, |_| false), "toolfit.route.r.profile.p.tool.other.calls_seen");
        assert_eq!(b.admit(tool("t5"), Series::dotted, |_| true), tool("t5").dotted(), "a series the host has keeps its name");
        let route = Series::of("r", "p", "requests_seen");
        assert_eq!(b.admit(route, Series::dotted, |_| false), route.dotted());
        let mut full = SeriesBudget::default();
        for i in 0..=SeriesBudget::ROUTE_PROFILES {
            assert!(full.define(&format!("r{i}"), "p"));
        }
        assert!(!full.define("one-more", "p"));
    }

    #[test]
    fn names_are_unique_and_never_clash_with_engine_kinds() {
        let mut seen = std::collections::HashSet::new();
        for s in Stat::ALL {
            assert!(seen.insert(s.name()));
            assert!(crate::schema::Kind::from_name(s.name()).is_none(), "{} is also a kind", s.name());
            assert!(s.doc().len() > 20);
        }
    }

    #[test]
    fn labels_cannot_break_the_name() {
        assert_eq!(label("chat.v1/x y"), "chat_v1_x_y");
        assert_eq!(label(""), "none");
        assert_eq!(label(&"a".repeat(100)).len(), 64);
        assert_eq!(metric_name("chat", "llama-cpp", "requests_seen"), "toolfit.route.chat.profile.llama-cpp.requests_seen");
    }
}
