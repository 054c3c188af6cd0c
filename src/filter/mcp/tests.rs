//! The MCP leg's tests: sessions, lists, calls, streams, names.

use super::*;
use crate::filter::exchange::Exchange;
use crate::filter::host::{Env, Headed, Level, ResponseHeaders};
use crate::filter::log::LogLimiter;
use crate::filter::memory::Memory;
use crate::filter::stats::testing::{client_metric, Counts};
use crate::schema::target::Names;
use crate::schema::Kind;

#[test]
fn listed_names_come_back_and_nothing_else_does() {
    for (name, sent) in [("github.create_issue", "github_create_issue__062e"), ("a/b.c", "a_b_c__012f032e"), ("ns:tool x", "ns_tool_x__023a0720")] {
        assert_eq!(names::encode(name, &Names::OPENAI).as_deref(), Some(sent));
        assert_eq!(names::decode(sent).as_deref(), Some(name));
    }
    // allowed names are listed as they are, and a name that only looks encoded is not read back
    assert_eq!(names::encode("get_weather", &Names::OPENAI), None);
    assert_eq!(names::encode("get.weather", &Names::GEMINI), None, "Gemini takes dots");
    for n in ["get_weather", "x__062e", "a_b__0x2e", "github_create_issue__0630", "__", "a__", "é.x__012e"] {
        assert_eq!(names::decode(n), None, "{n}");
    }
    // past the length, or not ASCII: as it is
    assert_eq!(names::encode(&format!("{}.x", "a".repeat(60)), &Names::OPENAI), None);
    assert_eq!(names::encode("ünï.x", &Names::OPENAI), None);
    // a server's own name spelled like a listed one is listed apart, so each listed name reads back
    // to the one tool it came from (issue 57: `get_weather__032e` ran `get.weather`)
    assert_eq!(names::encode("get_weather__032e", &Names::OPENAI).as_deref(), Some("get_weather__032e__ff00"));
    assert_eq!(names::decode("get_weather__032e__ff00").as_deref(), Some("get_weather__032e"));
    assert_eq!(names::decode("get_weather__032e").as_deref(), Some("get.weather"));
    assert_eq!(names::encode("get_weather__032e__ff00", &Names::OPENAI).as_deref(), Some("get_weather__032e__ff00__ff00"));
    assert_eq!(names::decode("get_weather__ff00"), None, "a plain name that reads as nothing needs no mark");
    let all = ["get.weather", "get_weather__032e", "get_weather__032e__ff00", "get_weather", "a.b__012e", "a_b__012e__012e"];
    let listed: Vec<String> = all.iter().map(|n| names::encode(n, &Names::OPENAI).unwrap_or_else(|| n.to_string())).collect();
    for (n, l) in all.iter().zip(&listed) {
        assert_eq!(names::decode(l).unwrap_or_else(|| l.clone()), *n, "{l} reads back to {n}");
        assert_eq!(listed.iter().filter(|x| *x == l).count(), 1, "{l} listed once");
    }
    // one that cannot be listed apart (past the length) is left out; names never read back to control
    // characters (a header could not carry them)
    let long = format!("a_{}__012e", "a".repeat(60));
    assert!(names::ambiguous(&long, &Names::OPENAI) && !names::ambiguous("get.weather", &Names::OPENAI));
    assert_eq!(names::decode("x_y__010d020a"), None);
    assert_eq!(names::encode("x\ry", &Names::OPENAI), None);
}

#[test]
fn session_tags_round_trip_and_bad_ones_are_ignored() {
    let p = Profile::by_name("openai").unwrap_or(&schema::profile::MCP);
    for server in [Some("abc-123"), None, Some("a.tf.b")] {
        let sid = tag(server, p, "codex-mcp-client");
        let t = untag(&sid).unwrap_or_else(|| panic!("{sid}"));
        assert_eq!((t.server, t.profile.name, t.client), (server, "openai", "codex-mcp-client"));
    }
    for bad in ["abc", "abc.tf.nope.x", "tf.openai.", "tf.openai.a b", "tf.openai"] {
        assert!(untag(bad).is_none(), "{bad}");
    }
}

use crate::filter::host::testing::Recorder as Host;

fn now() -> u64 {
    1
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"get.weather","inputSchema":{"type":"object","properties":{"city":{"type":"string","pattern":"^\\p{Lu}"}},"$schema":"https://json-schema.org/draft/2020-12/schema"},"outputSchema":{"type":"object","properties":{"t":{"type":"number","format":"float"}},"required":["t"]}},{"name":"plain","inputSchema":{"type":"object"}}]}}"#;

/// One exchange on an MCP route: the request's headers and body, then the answer's.
fn exchange(config: &Config, m: &mut Counts, h: &Headers, body: &str, session: Option<&str>, answer: (&str, &str)) -> (Host, Host) {
    exchange_cached(config, m, None, h, body, session, answer)
}

/// [`exchange`] with the host's rewrite cache.
fn exchange_cached(
    config: &Config,
    m: &mut Counts,
    cache: Option<&mut crate::api::cache::SiteCache>,
    h: &Headers,
    body: &str,
    session: Option<&str>,
    answer: (&str, &str),
) -> (Host, Host) {
    let mut logs = LogLimiter::default();
    let mut log = |_: Level, _: &str| {};
    let mut env = Env { config, metrics: m, logs: &mut logs, cache, memory: &Memory::new(), now_us: now, log: &mut log };
    let mut x = Exchange::default();
    let mut req = Host::default();
    let headed = x.request_headers(&mut env, h, Some("mcp"), &RouteMeta::default(), &mut req);
    assert_ne!(headed, Headed::Ignore);
    if x.reading() {
        let _ = x.request_end(&mut env, |_| Some(body.as_bytes()), body.len(), &mut req);
    }
    let mut res = Host::default();
    let _ = x.response_headers(&mut env, &ResponseHeaders { status: 200, content_type: Some(answer.0), session, ..Default::default() }, &mut res);
    res.chunk = answer.1.as_bytes().to_vec();
    let _ = x.response_body(&mut env, &mut res, answer.1.len(), true);
    x.done(&mut env);
    (req, res)
}

fn config(route: &str) -> Config {
    Config::parse(format!(r#"{{"routes": [{{"path": "/mcp", "format": "mcp"{route}}}]}}"#).as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

fn post<'a>(session: Option<&'a str>) -> Headers<'a> {
    Headers { method: "POST", path: "/mcp", content_type: Some("application/json"), session, authority: Some("mcp.local"), ..Headers::default() }
}

#[test]
fn a_session_learns_its_client_and_its_lists_are_rewritten_for_it() {
    let cfg = config("");
    let mut m = Counts::default();
    // initialize: codex -> openai, the server's session id tagged
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"codex-mcp-client","version":"0.169.0"}}}"#;
    let (_, res) = exchange(&cfg, &mut m, &post(None), init, Some("s1"), ("application/json", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
    let sid = res.set.iter().find(|(k, _)| k == SESSION_HEADER).map(|(_, v)| v.clone()).unwrap_or_default();
    assert_eq!(sid, "s1.tf.openai.codex-mcp-client");
    // tools/list on another exchange (any replica): the tag comes off, the list is rewritten
    let (req, res) = exchange(&cfg, &mut m, &post(Some(&sid)), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", LIST));
    assert!(req.set.contains(&(SESSION_HEADER.into(), "s1".into())), "{:?}", req.set);
    let out = String::from_utf8(res.chunk).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    assert_eq!(v["result"]["tools"][0]["name"], "get_weather__032e", "{out}");
    assert!(v["result"]["tools"][0]["inputSchema"]["properties"]["city"].get("pattern").is_none(), "Python's re has no \\p: {out}");
    assert_eq!(v["result"]["tools"][1], serde_json::json!({"name":"plain","inputSchema":{"type":"object","properties":{}}}), "{out}");
    // the output schema lost `format` (widening), never gained `additionalProperties: false`
    assert!(v["result"]["tools"][0]["outputSchema"].get("additionalProperties").is_none(), "{out}");
    // a server that sends its session id on every answer: it leaves tagged every time
    let (_, res) = exchange(&cfg, &mut m, &post(Some(&sid)), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, Some("s1"), ("application/json", ""));
    assert!(res.set.contains(&(SESSION_HEADER.into(), sid.clone())), "{:?}", res.set);
    // a call by the listed name reaches the server under the original
    let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather__032e","arguments":{"city":"X"}}}"#;
    let (req, _) = exchange(&cfg, &mut m, &post(Some(&sid)), call, None, ("application/json", "{}"));
    assert_eq!(String::from_utf8(req.body.unwrap_or_default()).unwrap_or_default(), call.replace("get_weather__032e", "get.weather"));
    // a call naming what toolfit never listed: counted, forwarded as it came
    let call = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get.weather","arguments":{}}}"#;
    let (req, _) = exchange(&cfg, &mut m, &post(Some(&sid)), call, None, ("application/json", "{}"));
    assert!(req.body.is_none());
    let client = |s: Stat| m.0.get(&client_metric("mcp", "openai", "codex-mcp-client", s)).copied().unwrap_or(0);
    assert_eq!((client(Stat::McpSessions), client(Stat::McpToolsListed), client(Stat::McpCallsUnmapped)), (1, 2, 1));
}

#[test]
fn a_stateless_request_names_its_client_in_meta() {
    let cfg = config("");
    let mut m = Counts::default();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.328"}}}}"#;
    let (_, res) = exchange(&cfg, &mut m, &post(None), list, None, ("application/json", LIST));
    let out = String::from_utf8(res.chunk).unwrap_or_default();
    assert!(out.contains("get_weather__032e"), "anthropic refuses the dot: {out}");
    assert_eq!(m.0.get(&client_metric("mcp", "anthropic", "claude-code", Stat::McpToolsListed)).copied(), Some(2));
    // its call names the tool in the Mcp-Name header too: the original goes in both
    let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather__032e","arguments":{}}}"#;
    let h = Headers { mcp_name: Some("get_weather__032e"), ..post(None) };
    let (req, _) = exchange(&cfg, &mut m, &h, call, None, ("application/json", "{}"));
    assert!(req.set.contains(&(NAME_HEADER.into(), "get.weather".into())), "{:?}", req.set);
    assert!(String::from_utf8(req.body.unwrap_or_default()).unwrap_or_default().contains(r#""name":"get.weather""#));
    // without the _meta, the route's profile (mcp) lists the name as it is
    let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", LIST));
    assert!(String::from_utf8(res.chunk).unwrap_or_default().contains("\"get.weather\""));
}

#[test]
fn a_list_and_a_call_handed_apart() {
    let cfg = config(r#", "unfit": "error", "clients": {"codex*": "openai"}"#);
    let mut m = Counts::default();
    let mut logs = LogLimiter::default();
    let mut log = |_: Level, _: &str| {};
    let mut env = Env { config: &cfg, metrics: &mut m, logs: &mut logs, cache: None, memory: &Memory::new(), now_us: now, log: &mut log };
    let result = r#"{"tools":[{"name":"get.weather","inputSchema":{"type":"object"}}]}"#;
    let a = Apart { route: "agw", profile: None, client: Some("codex-mcp-client") };
    let Listed::Replace(out) = a.list(&mut env, result) else { panic!("not replaced") };
    assert!(out.starts_with(r#"{"tools":[{"name":"get_weather__032e""#), "{out}");
    assert_eq!(a.call(&mut env, "get_weather__032e").as_deref(), Some("get.weather"));
    assert_eq!(a.call(&mut env, "get.weather"), None);
    // the route's profile (mcp) takes the name as it is: nothing to change
    assert_eq!(Apart { route: "agw", profile: None, client: None }.list(&mut env, result), Listed::Keep);
    // a lossy tool under unfit: error is refused with a JSON-RPC error object
    let lossy = r#"{"tools":[{"name":"t","inputSchema":{"type":"object","not":{"required":["a"]}}}]}"#;
    let Listed::Refuse(err) = (Apart { route: "agw", profile: Some("llama-cpp"), client: None }).list(&mut env, lossy) else { panic!("not refused") };
    assert!(err.contains(r#""code":-32603"#) && err.contains(r#""tool":"t""#), "{err}");
    let got = |s: Stat| m.0.get(&client_metric("agw", "openai", "codex_", s)).copied().unwrap_or(0); // the pattern `codex*` as a label
    assert_eq!((got(Stat::McpToolsListed), got(Stat::McpCallsUnmapped)), (1, 1));
}

#[test]
fn answers_under_other_ids_and_batches() {
    let cfg = config("");
    let mut m = Counts::default();
    let other = LIST.replace(r#""id":2"#, r#""id":"x""#);
    let (_, res) =
        exchange(&cfg, &mut m, &post(Some("s.tf.openai.other")), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", &other));
    assert_eq!(String::from_utf8(res.chunk).unwrap_or_default(), other, "an answer under another id goes as it came");
    let batch = format!("[{},{LIST}]", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let req = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#;
    let (_, res) = exchange(&cfg, &mut m, &post(Some("s.tf.openai.other")), req, None, ("application/json", &batch));
    let out = String::from_utf8(res.chunk).unwrap_or_default();
    assert!(out.starts_with(r#"[{"jsonrpc":"2.0","id":1,"result":{}},"#) && out.contains("get_weather__032e"), "{out}");
}

#[test]
fn the_header_wins_and_unknown_clients_get_the_route_profile() {
    let cfg = config(r#", "profile": "gemini-json""#);
    let mut m = Counts::default();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"some-agent"}}}"#;
    let (_, res) = exchange(&cfg, &mut m, &post(None), init, None, ("application/json", "{}"));
    assert!(res.set.contains(&(SESSION_HEADER.into(), "tf.gemini-json.other".into())), "{:?}", res.set);
    let h = Headers { profile: Some("anthropic"), ..post(None) };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"codex-mcp-client"}}}"#;
    let (req, res) = exchange(&cfg, &mut m, &h, init, None, ("application/json", "{}"));
    assert!(res.set.contains(&(SESSION_HEADER.into(), "tf.anthropic.codex-mcp-client".into())), "{:?}", res.set);
    assert!(req.removed.contains(&PROFILE_HEADER.to_string()), "the header is toolfit's: the server never sees it");
    // a session toolfit made itself: the header goes before the server sees it
    let (req, _) = exchange(&cfg, &mut m, &post(Some("tf.anthropic.other")), r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#, None, ("application/json", "{}"));
    assert!(req.removed.contains(&SESSION_HEADER.to_string()));
}

#[test]
fn sse_answers_are_rewritten_event_by_event_in_any_pieces() {
    let cfg = config("");
    let note = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
    let stream = format!("{note}event: message\ndata: {LIST}\n\n");
    let whole = {
        let mut m = Counts::default();
        let (_, res) =
            exchange(&cfg, &mut m, &post(Some("s.tf.openai.other")), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("text/event-stream", &stream));
        String::from_utf8(res.chunk).unwrap_or_default()
    };
    assert!(whole.starts_with(note) && whole.contains("get_weather__032e") && !whole.contains("\"pattern\""), "{whole}");
    // the same in pieces of every size: the same bytes out
    for step in [1, 7, 64] {
        let mut m = Counts::default();
        let mut logs = LogLimiter::default();
        let mut log = |_: Level, _: &str| {};
        let mut env = Env { config: &cfg, metrics: &mut m, logs: &mut logs, cache: None, memory: &Memory::new(), now_us: now, log: &mut log };
        let mut x = Exchange::default();
        let mut h = Host::default();
        let _ = x.request_headers(&mut env, &post(Some("s.tf.openai.other")), Some("mcp"), &RouteMeta::default(), &mut h);
        let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        let _ = x.request_end(&mut env, |_| Some(body.as_bytes()), body.len(), &mut h);
        let _ = x.response_headers(&mut env, &ResponseHeaders { status: 200, content_type: Some("text/event-stream"), ..Default::default() }, &mut h);
        let mut out = Vec::new();
        let bytes = stream.as_bytes();
        for (i, piece) in bytes.chunks(step).enumerate() {
            h.chunk = piece.to_vec();
            let _ = x.response_body(&mut env, &mut h, piece.len(), (i + 1) * step >= bytes.len());
            out.extend_from_slice(&h.chunk);
        }
        assert_eq!(String::from_utf8(out).unwrap_or_default(), whole, "step {step}");
    }
}

#[test]
fn unfit_tools_pass_drop_or_refuse_the_list() {
    // strict OpenAI cannot keep `\p{Lu}`... take a schema every profile loses: a recursion cut is
    // lossy for llama-cpp, so use it as the client profile
    let lossy = r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"deep","inputSchema":{"type":"object","properties":{"n":{"type":"integer","multipleOf":0.5,"minimum":1.5}},"not":{"required":["n"]}}},{"name":"ok","inputSchema":{"type":"object"}}]}}"#;
    let run = |unfit: &str| {
        let cfg = config(&format!(r#", "profile": "llama-cpp", "unfit": "{unfit}""#));
        let mut m = Counts::default();
        let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#, None, ("application/json", lossy));
        (String::from_utf8(res.chunk).unwrap_or_default(), m)
    };
    let (rewritten, _) = run("rewrite");
    assert!(rewritten.contains("\"deep\"") && !rewritten.contains("\"not\""), "{rewritten}");
    let (passed, _) = run("pass");
    assert!(passed.contains(r#""not":{"required":["n"]}"#), "{passed}");
    let (dropped, m) = run("drop");
    assert!(!dropped.contains("\"deep\"") && dropped.contains("\"ok\""), "{dropped}");
    assert_eq!(m.0.get(&client_metric("mcp", "llama-cpp", OTHER, Stat::McpToolsDropped)).copied(), Some(1));
    let (refused, _) = run("error");
    let v: serde_json::Value = serde_json::from_str(&refused).unwrap_or_default();
    assert_eq!(
        (v["id"].clone(), v["error"]["data"]["tool"].clone(), v["error"]["data"]["server"].clone()),
        (serde_json::json!(7), serde_json::json!("deep"), serde_json::json!("mcp.local/mcp")),
        "{refused}"
    );
    assert!(v["error"]["message"].as_str().is_some_and(|s| s.contains("deep") && s.contains("mcp.local/mcp")), "{refused}");
}

#[test]
fn output_schemas_only_widen() {
    // openai-strict would close the object and make every property required: kept as it came
    let strict = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}]}}"#;
    let cfg = config(r#", "profile": "openai-strict""#);
    let mut m = Counts::default();
    let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, None, ("application/json", strict));
    let out = String::from_utf8(res.chunk).unwrap_or_default();
    assert!(out.contains(r#""outputSchema":{"type":"object","properties":{"a":{"type":"string"}}}"#), "{out}");
    assert_eq!(m.0.get(&client_metric("mcp", "openai-strict", OTHER, Stat::McpOutputsKept)).copied(), Some(1));
    assert!(Kind::ALL.iter().any(|k| !widens(*k)) && Kind::ALL.iter().any(|k| widens(*k)));
}

#[test]
fn other_messages_and_methods_pass_byte_for_byte() {
    let cfg = config("");
    let mut m = Counts::default();
    let odd = r#"{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"\"tools\""}]}}"#;
    let (req, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#, None, ("application/json", odd));
    assert_eq!((req.body, String::from_utf8(res.chunk).unwrap_or_default()), (None, odd.to_string()));
    // a DELETE with no tag is not toolfit's at all
    let mut logs = LogLimiter::default();
    let mut log = |_: Level, _: &str| {};
    let mut env = Env { config: &cfg, metrics: &mut m, logs: &mut logs, cache: None, memory: &Memory::new(), now_us: now, log: &mut log };
    let del = Headers { method: "DELETE", path: "/mcp", session: Some("abc"), ..Headers::default() };
    assert_eq!(Exchange::default().request_headers(&mut env, &del, Some("mcp"), &RouteMeta::default(), &mut Host::default()), Headed::Ignore);
    let del = Headers { session: Some("abc.tf.openai.other"), ..del };
    let mut h = Host::default();
    assert_eq!(Exchange::default().request_headers(&mut env, &del, Some("mcp"), &RouteMeta::default(), &mut h), Headed::Continue);
    assert_eq!(h.set, vec![(SESSION_HEADER.to_string(), "abc".to_string())]);
}

/// Any client can name a profile in `x-toolfit-profile`: a flood of unknown names writes no more
/// lines than the route's rate limit lets through in a second (the first says how many were held).
#[test]
fn unknown_profile_headers_cannot_flood_the_log() {
    let cfg = config("");
    let (mut m, mut logs, mut lines) = (Counts::default(), LogLimiter::default(), Vec::new());
    let mut log = |_: Level, l: &str| lines.push(l.to_string());
    let mut env = Env { config: &cfg, metrics: &mut m, logs: &mut logs, cache: None, memory: &Memory::new(), now_us: now, log: &mut log };
    for i in 0..1000 {
        let name = format!("nope-{i}");
        let h = Headers { profile: Some(&name), ..post(None) };
        let _ = Exchange::default().request_headers(&mut env, &h, Some("mcp"), &RouteMeta::default(), &mut Host::default());
    }
    let per_second = cfg.log_lines_per_second as usize;
    assert!(per_second > 0 && per_second < 1000);
    assert_eq!(lines.len(), per_second, "{lines:?}");
    assert!(lines[0].contains("names unknown profile \"nope-0\""), "{lines:?}");
    // a header of 50,000 bytes is quoted to 128 characters
    lines.clear();
    let name = "x".repeat(50_000);
    let mut env = Env {
        config: &cfg,
        metrics: &mut m,
        logs: &mut LogLimiter::default(),
        cache: None,
        memory: &Memory::new(),
        now_us: now,
        log: &mut |_: Level, l: &str| lines.push(l.to_string()),
    };
    let _ = Exchange::default().request_headers(
        &mut env,
        &Headers { profile: Some(&name), ..post(None) },
        Some("mcp"),
        &RouteMeta::default(),
        &mut Host::default(),
    );
    assert!(lines.len() == 1 && lines[0].len() < 400 && lines[0].contains("(+49872 characters)"), "{lines:?}");
}

/// A server that lists `get.weather` and, literally, `get_weather__032e`: the client sees two names,
/// and a call by each reaches the tool it named (issue 57 saw the literal's call run `get.weather`).
#[test]
fn a_server_name_spelled_like_a_listed_one_keeps_its_own_tool() {
    let cfg = config(r#", "profile": "openai""#);
    let mut m = Counts::default();
    let list = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"get.weather","inputSchema":{"type":"object"}},{"name":"get_weather__032e","inputSchema":{"type":"object"}}]}}"#;
    let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", list));
    let v: serde_json::Value = serde_json::from_slice(&res.chunk).unwrap_or_default();
    let listed: Vec<&str> = v["result"]["tools"].as_array().map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect()).unwrap_or_default();
    assert_eq!(listed, ["get_weather__032e", "get_weather__032e__ff00"]);
    for (called, reaches) in [("get_weather__032e", "get.weather"), ("get_weather__032e__ff00", "get_weather__032e")] {
        let call = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"{called}","arguments":{{}}}}}}"#);
        let (req, _) = exchange(&cfg, &mut m, &post(None), &call, None, ("application/json", "{}"));
        let sent = String::from_utf8(req.body.unwrap_or_default()).unwrap_or_default();
        assert!(sent.contains(&format!(r#""name":"{reaches}""#)), "{called}: {sent}");
    }
    // one that cannot be listed apart (its mark would pass the length) is left out, counted
    let long = format!("a_{}__012e", "a".repeat(60));
    let list = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"tools":[{{"name":"a.{0}","inputSchema":{{"type":"object"}}}},{{"name":"{long}","inputSchema":{{"type":"object"}}}}]}}}}"#,
        "a".repeat(60)
    );
    let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", &list));
    let v: serde_json::Value = serde_json::from_slice(&res.chunk).unwrap_or_default();
    assert_eq!(v["result"]["tools"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(m.0.get(&client_metric("mcp", "openai", "other", Stat::McpToolsDropped)).copied(), Some(1));
}

/// Gemini's `parameters` refuse `-` and `.` in property names, but the MCP leg lists the server's keys
/// as they are: a call's arguments could not be given their keys back (issue 57 saw `issue-key` listed
/// as `issue_key` and the server receive `issue_key`). The inference leg renames them where the API is.
#[test]
fn the_mcp_leg_lists_property_names_as_the_server_wrote_them() {
    let cfg = config(r#", "profile": "gemini""#);
    let mut m = Counts::default();
    let list = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"jira","inputSchema":{"type":"object","properties":{"issue-key":{"type":"string"},"page":{"type":"object","properties":{"page.size":{"type":"integer"}}}},"required":["issue-key"]}}]}}"#;
    let (_, res) = exchange(&cfg, &mut m, &post(None), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", list));
    let out = if res.chunk.is_empty() { list.as_bytes().to_vec() } else { res.chunk };
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
    let schema = &v["result"]["tools"][0]["inputSchema"];
    assert!(schema["properties"].get("issue-key").is_some() && schema["properties"]["page"]["properties"].get("page.size").is_some(), "{schema}");
    assert_eq!(schema["required"], serde_json::json!(["issue-key"]));
    // the control: the inference leg's engine, same profile, renames them
    let body = format!(
        r#"{{"tools":[{{"type":"function","function":{{"name":"jira","parameters":{}}}}}]}}"#,
        serde_json::json!({"type":"object","properties":{"issue-key":{"type":"string"}}})
    );
    let opts = crate::schema::Profile::by_name("gemini").map(|p| p.default_options());
    let out = opts.and_then(|o| crate::api::rewrite_body(body.as_bytes(), crate::api::Format::Auto, crate::schema::Profile::by_name("gemini")?, &o).ok());
    assert!(out.and_then(|o| o.body).is_some_and(|b| String::from_utf8_lossy(&b).contains("issue_key")));
}

/// 2026-07-28's caching hints: a list rewritten for the client that asked (its profile not the
/// route's) goes `private`, its `ttlMs` kept, so no shared cache hands it to another client; a list
/// the route alone chose stays as the server said. The control: the same client on a route whose own
/// profile is the client's keeps `public`.
#[test]
fn a_list_tailored_to_its_client_is_cached_privately() {
    let hinted = LIST.replacen(r#""result":{"#, r#""result":{"cacheScope":"public","ttlMs":60000,"#, 1);
    let ttl_only = LIST.replacen(r#""result":{"#, r#""result":{"ttlMs":5,"#, 1);
    let stateless = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"claude-code"}}}}"#;
    let list = |cfg: &Config, body: &str, answer: &str| {
        let mut m = Counts::default();
        let (_, res) = exchange(cfg, &mut m, &post(None), body, None, ("application/json", answer));
        let out = String::from_utf8(res.chunk).unwrap_or_default();
        serde_json::from_str::<serde_json::Value>(&out).unwrap_or_default()["result"].clone()
    };
    let cfg = config("");
    let v = list(&cfg, stateless, &hinted);
    assert_eq!((v["cacheScope"].as_str(), v["ttlMs"].as_u64(), v["tools"][0]["name"].as_str()), (Some("private"), Some(60000), Some("get_weather__032e")));
    let v = list(&cfg, stateless, &ttl_only);
    assert_eq!((v["cacheScope"].as_str(), v["ttlMs"].as_u64()), (Some("private"), Some(5)), "a hinted result gets the scope");
    let v = list(&cfg, stateless, LIST);
    assert!(v.get("cacheScope").is_none() && v["tools"][0]["name"] == "get_weather__032e", "no hints, none added: {v}");
    // the route's own profile: as the server said
    let v = list(&cfg, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, &hinted);
    assert_eq!(v["cacheScope"].as_str(), Some("public"));
    // the control: the client's profile is the route's, so every client gets this list
    let v = list(&config(r#", "profile": "anthropic""#), stateless, &hinted);
    assert_eq!((v["cacheScope"].as_str(), v["tools"][0]["name"].as_str()), (Some("public"), Some("get_weather__032e")));
    assert_eq!(list::private(r#"{"result":{"cacheScope":"private","ttlMs":1}}"#), None);
    assert_eq!(list::private(r#"{"tools":[],"cacheScope":"public"}"#).as_deref(), Some(r#"{"tools":[],"cacheScope":"private"}"#));
}

/// `x-mcp-header` is read by the client (it builds a call's `Mcp-Param-*` headers from it), not by
/// the model's API: kept under every profile on the MCP leg, where the inference rewrite for the same
/// profile removes it (the control: Gemini's API refuses the keyword).
#[test]
fn x_mcp_header_survives_every_profile_on_the_mcp_leg() {
    let list = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"w","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region","pattern":"^\\p{Lu}"}}}}]}}"#;
    let cfg = config("");
    let mut removed_by_inference = 0;
    for p in schema::profile::ALL {
        let mut m = Counts::default();
        let h = Headers { profile: Some(p.name), ..post(None) };
        let (_, res) = exchange(&cfg, &mut m, &h, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", list));
        let out = if res.chunk.is_empty() { list.to_string() } else { String::from_utf8(res.chunk).unwrap_or_default() };
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["result"]["tools"][0]["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region", "{}: {out}", p.name);
        let schema = r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}"#;
        let (new, _) = crate::api::rewrite_schema(schema, ("w", schema::Context::Tool), p, &p.default_options(), None).unwrap_or((None, Default::default()));
        removed_by_inference += usize::from(new.is_some_and(|n| !n.contains("x-mcp-header")));
    }
    assert!(removed_by_inference > 0, "the control: some profile's API refuses the keyword");
}

/// Chunked framing drops `Content-Length` from a message whose body may change. The stateless
/// protocol's `Mcp-Method` (and `Mcp-Name`) say at the headers that it cannot: such a message keeps
/// its length, and its body goes as it came, even if it names a listed tool against its headers. The
/// control: the same messages without the header, or a call by a listed name, lose the length.
#[test]
fn a_message_its_headers_say_cannot_change_keeps_its_length() {
    let cfg = config("");
    let mut m = Counts::default();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather__032e","arguments":{}}}"#;
    let kept = |req: &Host| !req.removed.iter().any(|h| h == "content-length");
    let (req, _) = exchange(&cfg, &mut m, &Headers { mcp_method: Some("tools/list"), ..post(None) }, list, None, ("application/json", "{}"));
    assert!(kept(&req), "{:?}", req.calls);
    let (req, _) =
        exchange(&cfg, &mut m, &Headers { mcp_method: Some("tools/call"), mcp_name: Some("plain"), ..post(None) }, call, None, ("application/json", "{}"));
    assert!(kept(&req) && req.body.is_none(), "headers and body disagree: as it came {:?}", req.calls);
    // the controls
    let (req, _) = exchange(&cfg, &mut m, &post(None), list, None, ("application/json", "{}"));
    assert!(!kept(&req));
    let h = Headers { mcp_method: Some("tools/call"), mcp_name: Some("get_weather__032e"), ..post(None) };
    let (req, _) = exchange(&cfg, &mut m, &h, call, None, ("application/json", "{}"));
    assert!(!kept(&req) && req.body.is_some_and(|b| b.windows(11).any(|w| w == b"get.weather")), "{:?}", req.calls);
}

/// A Claude client validates with 2020-12 only (the route's `declare_2020_12`, `claude*` by default):
/// a draft-07 `outputSchema` reaches it declared 2020-12, `definitions` as `$defs`. The control: Codex
/// gets the server's draft-07 stamp, and a route that lists no client declares none.
#[test]
fn claude_clients_get_draft_07_schemas_declared_2020_12() {
    let list = r##"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"read","inputSchema":{"type":"object"},"outputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"$ref":"#/definitions/n"}},"definitions":{"n":{"type":"integer"}}}}]}}"##;
    let listed = |cfg: &Config, client: &str| {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/clientInfo":{{"name":"{client}"}}}}}}}}"#);
        let mut m = Counts::default();
        let (_, res) = exchange(cfg, &mut m, &post(None), &body, None, ("application/json", list));
        let out = if res.chunk.is_empty() { list.to_string() } else { String::from_utf8(res.chunk).unwrap_or_default() };
        serde_json::from_str::<serde_json::Value>(&out).unwrap_or_default()["result"]["tools"][0]["outputSchema"].clone()
    };
    for client in ["claude-code", "claude-ai"] {
        let out = listed(&config(""), client);
        assert_eq!(
            (out["$schema"].as_str(), out["properties"]["n"]["$ref"].as_str()),
            (Some("https://json-schema.org/draft/2020-12/schema"), Some("#/$defs/n")),
            "{client}: {out}"
        );
    }
    assert_eq!(listed(&config(""), "codex-mcp-client")["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(listed(&config(r#", "declare_2020_12": []"#), "claude-code")["$schema"], "http://json-schema.org/draft-07/schema#");
    assert!(Config::parse(br#"{"routes": [{"path": "/m", "format": "mcp", "declare_2020_12": "claude*"}]}"#).is_err());
}

/// One line through a stdio session, as the binary hands it (no newline).
fn stdio_line(s: &mut stdio::Stdio, m: &mut Counts, line: &str, from_client: bool) -> Option<String> {
    let config = Config::default();
    let mut logs = LogLimiter::default();
    let mut log = |_: Level, _: &str| {};
    let mut env = Env { config: &config, metrics: m, logs: &mut logs, cache: None, memory: &Memory::new(), now_us: now, log: &mut log };
    let out =
        if from_client { s.from_client(&mut env, line.as_bytes()) } else { s.answers(line.as_bytes()).and_then(|a| a.rewrite(&mut env, line.as_bytes())) };
    out.map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[test]
fn a_stdio_session_rewrites_the_lists_its_client_asked_for_and_nothing_else() {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"codex-mcp-client","version":"1"}}}"#;
    let mut m = Counts::default();
    let mut s = stdio::Stdio::new(&Config::default(), None, "server");
    assert_eq!(stdio_line(&mut s, &mut m, init, true), None, "initialize goes as it came");
    assert_eq!(s.client(), ("openai", "codex-mcp-client"));
    // a list nobody asked for (the control: the same bytes answering a request toolfit saw change)
    assert_eq!(stdio_line(&mut s, &mut m, LIST, false), None);
    assert_eq!(stdio_line(&mut s, &mut m, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, true), None);
    let other = LIST.replace(r#""id":2"#, r#""id":3"#);
    assert_eq!(stdio_line(&mut s, &mut m, &other, false), None, "an answer under another id");
    let listed = stdio_line(&mut s, &mut m, LIST, false).unwrap_or_default();
    assert!(listed.contains("get_weather__032e") && !listed.contains(r#""name":"get.weather""#), "{listed}");
    assert_eq!(stdio_line(&mut s, &mut m, LIST, false), None, "each list answered once");
    // the call under the listed name reaches the server under its own; garbage and other methods pass
    let call = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_weather__032e","arguments":{"city":"Paris"}}}"#;
    let sent = stdio_line(&mut s, &mut m, call, true).unwrap_or_default();
    assert_eq!(sent, call.replace("get_weather__032e", "get.weather"));
    for line in ["not json", "", r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#, r#"[1,2]"#] {
        assert_eq!(stdio_line(&mut s, &mut m, line, true), None, "{line}");
        assert_eq!(stdio_line(&mut s, &mut m, line, false), None, "{line}");
    }
    assert_eq!(m.get(stdio::ROUTE, "openai", "names_restored"), 1);
    assert_eq!(m.0.get(&client_metric(stdio::ROUTE, "openai", "codex-mcp-client", Stat::McpToolsListed)).copied(), Some(2));
}

/// A `tools/call` past max_body_bytes naming a listed name (`get_weather__032e`, for `get.weather`)
/// cannot be given its server's name without reading it whole: it is refused with a JSON-RPC error
/// under its id, counted and never sent (it would run the server's literal `get_weather__032e`, or
/// nothing). The controls: a call of the server's own name past the limit goes on as it came; the
/// same listed call within the limit is mapped; observe mode only counts.
#[test]
fn a_listed_call_past_max_body_bytes_is_refused_not_sent_to_another_tool() {
    let call = |name: &str, pad: usize| {
        format!(r#"{{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{{"name":"{name}","arguments":{{"city":"{}"}}}}}}"#, "P".repeat(pad))
    };
    let run = |extra: &str, body: &str| {
        let config =
            Config::parse(format!(r#"{{"max_body_bytes": 4000, "routes": [{{"path": "/mcp", "format": "mcp"{extra}}}]}}"#).as_bytes()).unwrap_or_default();
        let (mut m, mut logs, mut lines) = (Counts::default(), LogLimiter::default(), Vec::new());
        let mut log = |_: Level, t: &str| lines.push(t.to_string());
        let mut env = Env { config: &config, metrics: &mut m, logs: &mut logs, cache: None, memory: &Memory::new(), now_us: now, log: &mut log };
        let (mut x, mut host) = (Exchange::default(), Host::default());
        let _ = x.request_headers(&mut env, &post(None), Some("mcp"), &RouteMeta::default(), &mut host);
        let (mut total, mut go) = (0, 0);
        for piece in body.as_bytes().chunks(1000) {
            total += piece.len();
            go = x.request_piece(&mut env, total, piece.len(), || Some(piece), &mut host);
            if x.answered() || !x.reading() {
                break;
            }
        }
        if x.reading() {
            let _ = x.request_end(&mut env, |_| Some(body.as_bytes()), body.len(), &mut host);
        }
        let rejected = host.calls.iter().find(|c| c.starts_with("reject ")).cloned();
        (x.answered(), go, rejected, host.body.clone(), m, lines)
    };
    let (answered, go, rejected, _, m, lines) = run("", &call("get_weather__032e", 9000));
    let rejected = rejected.unwrap_or_default();
    assert!(answered && go == usize::MAX, "refused, nothing held");
    let error: serde_json::Value = serde_json::from_str(rejected.trim_start_matches("reject 200 ")).unwrap_or_default();
    assert_eq!(error["id"], "c-7", "{rejected}");
    assert!(error["error"]["message"].as_str().unwrap_or_default().contains("get.weather"), "{rejected}");
    assert_eq!((m.get("mcp", "mcp", "skipped_too_large"), m.0.values().filter(|n| **n > 0).count() > 0), (1, true));
    assert!(lines.iter().any(|l| l.contains("past max_body_bytes 4000") && l.contains("get_weather__032e")), "{lines:?}");
    // the controls
    let (answered, go, rejected, _, _, _) = run("", &call("get_weather", 9000));
    assert!(!answered && go == usize::MAX && rejected.is_none(), "the server's own name goes on as it came");
    let (answered, _, rejected, sent, _, _) = run("", &call("get_weather__032e", 100));
    let sent = String::from_utf8_lossy(sent.as_deref().unwrap_or_default()).into_owned();
    assert!(!answered && rejected.is_none() && sent.contains(r#""name":"get.weather""#), "within the limit: mapped: {sent}");
    let (answered, _, rejected, _, _, lines) = run(r#", "mode": "observe""#, &call("get_weather__032e", 9000));
    assert!(!answered && rejected.is_none() && lines.iter().any(|l| l.contains("observe")), "observe: said, not refused");
}

/// `toolfit mcp`: the start of a client line too long to read gives a listed call its server's name
/// (the rest of the line goes on unread); the control: the server's own name, and a call whose name
/// comes after the cut, are left alone.
#[test]
fn a_stdio_line_past_the_limit_has_its_call_mapped_in_its_start() {
    let mut m = Counts::default();
    let mut s = stdio::Stdio::new(&Config::default(), None, "server");
    let config = Config::default();
    let mut logs = LogLimiter::default();
    let mut log = |_: Level, _: &str| {};
    let mut env = Env { config: &config, metrics: &mut m, logs: &mut logs, cache: None, memory: &Memory::new(), now_us: now, log: &mut log };
    let start = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_weather__032e","arguments":{"city":"PPPP"#;
    let out = s.from_client_start(&mut env, start).unwrap_or_default();
    assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(start).replace("get_weather__032e", "get.weather"));
    assert!(s.from_client_start(&mut env, &String::from_utf8_lossy(start).replace("get_weather__032e", "get_weather").into_bytes()).is_none());
    assert!(s.from_client_start(&mut env, &start[..60]).is_none(), "cut before the name's end");
    assert_eq!(m.get(stdio::ROUTE, "mcp", "names_restored"), 1);
}

/// An awaited list answered with an error is no longer awaited: a later result with `tools` under the
/// same id (reused, which MCP forbids) goes as it came. The control: without the error first, that
/// result is rewritten.
#[test]
fn a_stdio_list_answered_with_an_error_is_not_awaited_any_more() {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"codex-mcp-client","version":"1"}}}"#;
    let error = r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"tools are not ready"}}"#;
    for errored in [true, false] {
        let mut m = Counts::default();
        let mut s = stdio::Stdio::new(&Config::default(), None, "server");
        let _ = stdio_line(&mut s, &mut m, init, true);
        let _ = stdio_line(&mut s, &mut m, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, true);
        if errored {
            assert_eq!(stdio_line(&mut s, &mut m, error, false), None, "the error goes as it came");
        }
        let later = stdio_line(&mut s, &mut m, LIST, false);
        assert_eq!(later.is_some(), !errored, "errored first: {errored}");
    }
}

#[test]
fn a_stdio_profile_given_holds_and_batches_are_read() {
    let mut m = Counts::default();
    let gemini = Profile::by_name("gemini-json");
    let mut s = stdio::Stdio::new(&Config::default(), gemini, "server");
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"codex-mcp-client"}}},{"jsonrpc":"2.0","id":"l","method":"tools/list"}]"#;
    assert_eq!(stdio_line(&mut s, &mut m, batch, true), None);
    assert_eq!(s.client().0, "gemini-json", "--profile over the client's name");
    let answer = format!("[{},{}]", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, LIST.replace(r#""id":2"#, r#""id":"l""#));
    let out = stdio_line(&mut s, &mut m, &answer, false).unwrap_or_default();
    assert!(out.starts_with(r#"[{"jsonrpc":"2.0","id":1,"result":{}},"#) && out.contains("get.weather") && !out.contains(r#""pattern":"#), "{out}");
}

/// A list sent again (another session, another id) is answered from the rewrite cache's memo of its
/// `result`: the same message but for its id, the same counters moved, and no schema looked up. A
/// result one byte apart, or another client's profile, is rewritten afresh.
#[test]
fn a_list_sent_again_is_answered_from_its_memo() {
    let cfg = config("");
    let mut cache = crate::api::cache::SiteCache::new(8 << 20);
    let list = |m: &mut Counts, c: &mut crate::api::cache::SiteCache, sid: &str, id: u32, answer: &str| {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
        let answer = answer.replacen(r#""id":2"#, &format!(r#""id":{id}"#), 1);
        let (_, res) = exchange_cached(&cfg, m, Some(c), &post(Some(sid)), &body, None, ("application/json", &answer));
        String::from_utf8(res.chunk).unwrap_or_default()
    };
    let codex = "s1.tf.openai.codex-mcp-client";
    let (mut once, mut twice) = (Counts::default(), Counts::default());
    let first = list(&mut once, &mut cache, codex, 2, LIST);
    let looked = (cache.hits, cache.misses);
    assert!(looked.1 > 0, "the first list's schemas were rewritten, not found");
    let again = list(&mut twice, &mut cache, codex, 7, LIST);
    assert_eq!(again, first.replacen(r#""id":2"#, r#""id":7"#, 1), "the memo's answer is the rewrite's, under the new id");
    assert!(again.contains("get_weather__032e"), "{again}");
    assert_eq!((cache.hits, cache.misses), looked, "no schema was looked up: the memo answered");
    let mut counted: Vec<_> = once.0.iter().filter(|(_, n)| **n > 0).collect();
    let mut recounted: Vec<_> = twice.0.iter().filter(|(_, n)| **n > 0).collect();
    counted.sort();
    recounted.sort();
    assert!(!counted.is_empty());
    assert_eq!(counted, recounted, "a hit counts what the rewrite did");
    // controls: one byte apart is no hit; Gemini's client gets its own rewrite (dots kept)
    let other = list(&mut Counts::default(), &mut cache, codex, 8, &LIST.replace("^\\\\p{Lu}", "^\\\\p{Ll}"));
    assert_ne!(cache.misses, looked.1, "a changed result is rewritten afresh: {other}");
    let gemini = list(&mut Counts::default(), &mut cache, "s1.tf.gemini.gemini-cli-mcp-client", 9, LIST);
    assert!(gemini.contains(r#""name":"get.weather""#) && !gemini.contains("get_weather__032e"), "{gemini}");
    // every layout answers from the memo as it would without a cache: the result first (the TypeScript
    // SDK's order), whitespace, an id with braces and the word result in it, a batch
    let result = LIST.split_once(r#""result":"#).map_or("", |(_, r)| &r[..r.len() - 1]);
    let uncached = |sid: &str, answer: &str| {
        let (_, res) =
            exchange(&cfg, &mut Counts::default(), &post(Some(sid)), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, None, ("application/json", answer));
        String::from_utf8(res.chunk).unwrap_or_default()
    };
    assert_eq!(uncached(codex, LIST), first);
    for (i, answer) in [
        format!(r#"{{"result":{result},"jsonrpc":"2.0","id":2}}"#),
        format!("{{ \"jsonrpc\" : \"2.0\", \"id\" : 2, \"result\" :\n {result} \n}}\n"),
        format!(r#"{{"jsonrpc":"2.0","id":"}}\"result\":{{","result":{result}}}"#),
        format!(r#"{{"result":{result},"id":"a}}b"}}"#),
        format!(r#"[{{"jsonrpc":"2.0","id":2,"result":{result}}}]"#),
    ]
    .iter()
    .enumerate()
    {
        let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        let (_, res) = exchange_cached(&cfg, &mut Counts::default(), Some(&mut cache), &post(Some(codex)), body, None, ("application/json", answer));
        let got = String::from_utf8(res.chunk).unwrap_or_default();
        let want = uncached(codex, answer);
        assert_eq!(got, want, "{answer}");
        // the ones answering id 2 are lists rewritten; the others answer another request
        assert_eq!(got.contains("get_weather__032e"), ![2, 3].contains(&i), "{got}");
    }
}
