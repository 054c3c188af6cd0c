//! agentgateway's MCP guardrail hook (`agentgateway.dev.ext_mcp.ExtMcp`), served beside ext_proc: the MCP
//! leg for a gateway that terminates MCP itself. agentgateway's MCP backend aggregates its targets and
//! re-originates their sessions, so the HTTP its route policies see is not the servers'; what it offers
//! instead is this hook, per MCP method (its `crates/protos/proto/ext_mcp.proto`): a request's params
//! (`CheckRequest`) or an answer's result (`CheckResponse`, once per `*/list` on the merged result), and
//! a `mutated` replacement.
//!
//! The protocol is young and the stored versions differ; all are read. Payloads are raw JSON bytes
//! (newest) or a `google.protobuf.Struct` (earlier), which hold the params/result or the whole JSON-RPC
//! message: [`read`] tells the shapes apart by their first byte, and an answer goes back in the shape
//! its message came in. `metadata_context` is a Struct of values or a `Metadata` of namespaced Structs
//! like Envoy's `filter_metadata`: kept as bytes and read either way. `service_names` is one name
//! (earlier) or one per backend (later): the same wire field. `CheckResponseStream` (a later addition,
//! tools/call with progress) is not served: a driver for toolfit lists `tools/list: Response` and
//! `tools/call: Request` only.
//!
//! Here: `tools/list` results rewritten for the client as on an MCP route (`toolfit::filter::mcp::Apart`),
//! a refused list (`unfit: error`) answered with the JSON-RPC error, `tools/call` names given back. The
//! profile comes from the metadata (values agentgateway's configuration computes with CEL): `profile` (a
//! profile's name) or `client` (the MCP client's name, through the first MCP route's `clients` map), and
//! `route` (the counters' label, `extmcp` unless given), flat or under the namespace `toolfit`.
//! Everything else passes.
//!
//! A Struct's numbers are doubles (protobuf's JSON mapping): an integer in a schema past 2^53 comes back
//! rounded, as it would from agentgateway itself. Raw JSON keeps them exact.

use crate::session::{with_env, Shared};
use crate::work::Work;
use envoy_types::pb::google::protobuf::{value::Kind, ListValue, Struct, Value};
use prost::Message;
use serde_json::{Map, Number, Value as Json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use toolfit::filter::mcp::{Apart, Listed};

/// The service's name on the wire.
pub const SERVICE: &str = "agentgateway.dev.ext_mcp.ExtMcp";

#[derive(Clone, PartialEq, prost::Message)]
pub struct McpRequest {
    /// One name (earlier) or one per backend a fan-out method reaches (later): the same wire field.
    #[prost(string, repeated, tag = "1")]
    pub service_names: Vec<String>,
    #[prost(string, tag = "2")]
    pub method: String,
    /// A Struct or a `Metadata` (see the module's notes), read by [`metadata`].
    #[prost(bytes = "vec", tag = "3")]
    pub metadata_context: Vec<u8>,
    /// A Struct or raw JSON (see the module's notes), read by [`Given::read`].
    #[prost(bytes = "vec", optional, tag = "4")]
    pub mcp_request: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct McpResponse {
    #[prost(string, repeated, tag = "1")]
    pub service_names: Vec<String>,
    #[prost(string, tag = "2")]
    pub method: String,
    #[prost(bytes = "vec", tag = "3")]
    pub metadata_context: Vec<u8>,
    #[prost(bytes = "vec", optional, tag = "4")]
    pub mcp_response: Option<Vec<u8>>,
}

/// The later protocol's metadata: Structs by namespace.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metadata {
    #[prost(map = "string, message", tag = "1")]
    pub filter_metadata: std::collections::HashMap<String, Struct>,
}

/// `McpRequestResult` and `McpResponseResult` have the same shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct McpResult {
    #[prost(oneof = "Outcome", tags = "1, 2, 3")]
    pub result: Option<Outcome>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Outcome {
    #[prost(message, tag = "1")]
    Pass(Pass),
    /// A Struct's encoding or raw JSON, in the shape the message came in.
    #[prost(bytes, tag = "2")]
    Mutated(Vec<u8>),
    #[prost(message, tag = "3")]
    Error(AuthorizationError),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Pass {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthorizationError {
    /// UNKNOWN 0, PERMISSION_DENIED 1, RESOURCE_EXHAUSTED 2, INVALID 3.
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub reason: String,
    /// A Struct's encoding or raw JSON, as `Mutated`.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub mcp_error: Option<Vec<u8>>,
}

const INVALID: i32 = 3;

fn pass() -> McpResult {
    McpResult { result: Some(Outcome::Pass(Pass {})) }
}

/// How a JSON payload travels: as a `google.protobuf.Struct` (earlier) or as its raw bytes (later).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Shape {
    Struct,
    Raw,
}

/// A message's JSON payload and the shape it came in. Raw JSON opens with `{` (after any blank); a
/// Struct's encoding opens with a field's tag (`0x0a`), and `{` read as a tag is a group, which a Struct
/// never holds: the first byte tells them apart.
pub fn read(bytes: &[u8]) -> Option<(Json, Shape)> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => serde_json::from_slice(bytes).ok().map(|j| (j, Shape::Raw)),
        _ => Struct::decode(bytes).ok().map(|s| (to_json(&s), Shape::Struct)),
    }
}

/// JSON in a shape (`None`: not an object, where a Struct is asked for).
pub fn write(j: &Json, shape: Shape) -> Option<Vec<u8>> {
    match shape {
        Shape::Raw => serde_json::to_vec(j).ok(),
        Shape::Struct => from_json(j).map(|s| s.encode_to_vec()),
    }
}

/// A Struct as JSON.
pub fn to_json(s: &Struct) -> Json {
    Json::Object(s.fields.iter().map(|(k, v)| (k.clone(), value_json(v))).collect())
}

fn value_json(v: &Value) -> Json {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => Json::Null,
        Some(Kind::NumberValue(n)) => number(*n),
        Some(Kind::StringValue(s)) => Json::String(s.clone()),
        Some(Kind::BoolValue(b)) => Json::Bool(*b),
        Some(Kind::StructValue(s)) => to_json(s),
        Some(Kind::ListValue(l)) => Json::Array(l.values.iter().map(value_json).collect()),
    }
}

/// A double as JSON: whole ones as integers (a schema's `maxItems: 3` stays `3`, not `3.0`).
fn number(n: f64) -> Json {
    // within 2^53 every whole double is exact as an i64
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        return Json::Number(Number::from(n as i64));
    }
    Number::from_f64(n).map_or(Json::Null, Json::Number)
}

/// JSON as a Struct (`None`: not an object).
pub fn from_json(j: &Json) -> Option<Struct> {
    match j {
        Json::Object(m) => Some(object(m)),
        _ => None,
    }
}

fn object(m: &Map<String, Json>) -> Struct {
    Struct { fields: m.iter().map(|(k, v)| (k.clone(), json_value(v))).collect() }
}

fn json_value(j: &Json) -> Value {
    let kind = match j {
        Json::Null => Kind::NullValue(0),
        Json::Bool(b) => Kind::BoolValue(*b),
        Json::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Json::String(s) => Kind::StringValue(s.clone()),
        Json::Array(a) => Kind::ListValue(ListValue { values: a.iter().map(json_value).collect() }),
        Json::Object(m) => Kind::StructValue(object(m)),
    };
    Value { kind: Some(kind) }
}

/// The hook's metadata as one Struct of values: the later protocol's `toolfit` namespace, else the
/// earlier protocol's Struct (its `toolfit` member, if it has one, else itself).
pub fn metadata(bytes: &[u8]) -> Struct {
    if bytes.is_empty() {
        return Struct::default();
    }
    // a Value that holds a string reads as an empty Struct too: the later shape counts only with values
    if let Ok(m) = Metadata::decode(bytes) {
        if let Some(ns) = m.filter_metadata.get("toolfit").filter(|ns| !ns.fields.is_empty()) {
            return ns.clone();
        }
    }
    let Ok(s) = Struct::decode(bytes) else { return Struct::default() };
    match s.fields.get("toolfit").and_then(|v| v.kind.as_ref()) {
        Some(Kind::StructValue(ns)) => ns.clone(),
        _ => s,
    }
}

/// A string value of the metadata.
fn meta<'a>(m: &'a Struct, key: &str) -> Option<&'a str> {
    match &m.fields.get(key)?.kind {
        Some(Kind::StringValue(v)) if !v.is_empty() => Some(v.as_str()),
        _ => None,
    }
}

fn apart(m: &Struct) -> Apart<'_> {
    Apart { route: meta(m, "route").unwrap_or("extmcp"), profile: meta(m, "profile"), client: meta(m, "client") }
}

/// `CheckResponse`: a `tools/list` result rewritten for the client; anything else passes.
pub fn check_response(shared: &Shared, r: &McpResponse) -> McpResult {
    let (Some(given), "tools/list") = (r.mcp_response.as_deref(), r.method.as_str()) else { return pass() };
    // the result itself, or a whole JSON-RPC message holding it, handed to the core as it is: raw JSON
    // as its bytes, a Struct as its JSON text
    let (text, shape) = match given.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => match std::str::from_utf8(given) {
            Ok(t) => (std::borrow::Cow::Borrowed(t), Shape::Raw),
            Err(_) => return pass(),
        },
        _ => match Struct::decode(given) {
            Ok(s) => (std::borrow::Cow::Owned(to_json(&s).to_string()), Shape::Struct),
            Err(_) => return pass(),
        },
    };
    let meta = metadata(&r.metadata_context);
    let a = apart(&meta);
    match with_env(shared, |env| a.list(env, &text)) {
        Listed::Keep => pass(),
        Listed::Replace(new) => {
            let out = match shape {
                Shape::Raw => Some(new.into_bytes()),
                Shape::Struct => serde_json::from_str::<Json>(&new).ok().and_then(|j| write(&j, shape)),
            };
            out.map_or_else(pass, |b| McpResult { result: Some(Outcome::Mutated(b)) })
        }
        Listed::Refuse(err) => {
            let e: Json = serde_json::from_str(&err).unwrap_or(Json::Null);
            let reason = e.get("message").and_then(Json::as_str).unwrap_or("toolfit: a tool cannot be listed").to_string();
            McpResult { result: Some(Outcome::Error(AuthorizationError { code: INVALID, reason, mcp_error: write(&e, shape) })) }
        }
    }
}

/// `CheckRequest`: a `tools/call` naming a tool under the name toolfit listed gets the server's name.
pub fn check_request(shared: &Shared, r: &McpRequest) -> McpResult {
    let (Some(given), "tools/call") = (r.mcp_request.as_deref(), r.method.as_str()) else { return pass() };
    let Some((given, shape)) = read(given) else { return pass() };
    // the params, or a whole request holding them
    let mut params = match given.get("params") {
        Some(p @ Json::Object(_)) => p.clone(),
        _ => given,
    };
    let Some(name) = params.get("name").and_then(Json::as_str) else { return pass() };
    let meta = metadata(&r.metadata_context);
    let a = apart(&meta);
    match with_env(shared, |env| a.call(env, name)) {
        Some(original) => {
            if let Some(o) = params.as_object_mut() {
                o.insert("name".into(), Json::String(original));
            }
            write(&params, shape).map_or_else(pass, |b| McpResult { result: Some(Outcome::Mutated(b)) })
        }
        None => pass(),
    }
}

/// The gRPC service (what tonic's code generator would write for the two unary methods).
#[derive(Clone)]
pub struct ExtMcpServer {
    shared: Arc<Shared>,
    /// The processor's stream permits (`--max-streams`): a call holds one from before its message is
    /// read until its answer, so ext_proc streams and hook calls together stay within them.
    streams: Arc<Semaphore>,
    /// Calls refused for want of a permit (counted with the streams refused).
    refused: Arc<AtomicU64>,
    /// The processor's work slots, shared with ext_proc's heavy messages, and how long a call may take
    /// (`--message-timeout-ms`): one that cannot start in time, or ends past it, goes on as it came.
    work: Arc<Work>,
    timeout: Duration,
}

impl ExtMcpServer {
    pub fn new(shared: Arc<Shared>, streams: Arc<Semaphore>, refused: Arc<AtomicU64>, work: Arc<Work>, timeout: Duration) -> ExtMcpServer {
        ExtMcpServer { shared, streams, refused, work, timeout }
    }
}

impl tonic::server::NamedService for ExtMcpServer {
    const NAME: &'static str = SERVICE;
}

/// One unary method: a request message in, a result out, computed on a work slot (a list may be a
/// large catalog); a call with no result in time passes as it came.
struct Unary<M> {
    shared: Arc<Shared>,
    f: fn(&Shared, &M) -> McpResult,
    work: Arc<Work>,
    timeout: Duration,
}

impl<M: Message + Send + Sync + 'static> tonic::server::UnaryService<M> for Unary<M> {
    type Response = McpResult;
    type Future = tonic::codegen::BoxFuture<tonic::Response<McpResult>, tonic::Status>;
    fn call(&mut self, request: tonic::Request<M>) -> Self::Future {
        let (shared, f, work, timeout) = (self.shared.clone(), self.f, self.work.clone(), self.timeout);
        Box::pin(async move {
            let m = request.into_inner();
            let size = m.encoded_len();
            let large = size >= crate::RETURN_MEMORY_FROM;
            let job = move || {
                let out = f(&shared, &m);
                drop(m);
                if large {
                    crate::return_memory();
                }
                out
            };
            Ok(tonic::Response::new(work.run(size, job, timeout).await.unwrap_or_else(|_| pass())))
        })
    }
}

impl<B> tonic::codegen::Service<http::Request<B>> for ExtMcpServer
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = tonic::codegen::BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let (shared, work, timeout) = (self.shared.clone(), self.work.clone(), self.timeout);
        // a permit before the message is read: past --max-streams the call is refused unread (the hook
        // fails open: the message goes on as it came)
        let Ok(permit) = self.streams.clone().try_acquire_owned() else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Box::pin(async { Ok(tonic::Status::resource_exhausted("toolfit-extproc: too many streams").into_http()) });
        };
        // a list is a catalog's worth of JSON: room as for ext_proc's bodies
        let max = shared.config.max_body_bytes.saturating_mul(2).saturating_add(1 << 20);
        match req.uri().path().strip_prefix("/agentgateway.dev.ext_mcp.ExtMcp/") {
            Some("CheckRequest") => Box::pin(async move {
                let _permit = permit;
                let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default()).apply_max_message_size_config(Some(max), Some(max));
                Ok(grpc.unary(Unary::<McpRequest> { shared, f: check_request, work, timeout }, req).await)
            }),
            Some("CheckResponse") => Box::pin(async move {
                let _permit = permit;
                let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default()).apply_max_message_size_config(Some(max), Some(max));
                Ok(grpc.unary(Unary::<McpResponse> { shared, f: check_response, work, timeout }, req).await)
            }),
            _ => Box::pin(async move { Ok(tonic::Status::unimplemented("toolfit-extproc: no such method").into_http()) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolfit::filter::config::Config;

    fn shared(cfg: &str) -> Shared {
        Shared::new(Config::parse(cfg.as_bytes()).unwrap_or_default())
    }

    fn meta_of(pairs: &[(&str, &str)]) -> Struct {
        Struct { fields: pairs.iter().map(|(k, v)| (k.to_string(), Value { kind: Some(Kind::StringValue(v.to_string())) })).collect() }
    }

    /// The metadata as the earlier protocol sends it (a flat Struct).
    fn flat(pairs: &[(&str, &str)]) -> Vec<u8> {
        meta_of(pairs).encode_to_vec()
    }

    /// As the later protocol sends it (`filter_metadata`, the `toolfit` namespace).
    fn namespaced(pairs: &[(&str, &str)]) -> Vec<u8> {
        Metadata { filter_metadata: [("toolfit".to_string(), meta_of(pairs))].into_iter().collect() }.encode_to_vec()
    }

    const LIST: &str = r#"{"tools":[{"name":"get.weather","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":3}}}},{"name":"ok","inputSchema":{"type":"object","properties":{}}}]}"#;

    fn struct_of(text: &str) -> Struct {
        serde_json::from_str::<Json>(text).ok().as_ref().and_then(from_json).unwrap_or_default()
    }

    /// A payload as the earlier protocol sends it (a Struct's encoding).
    fn st(text: &str) -> Vec<u8> {
        struct_of(text).encode_to_vec()
    }

    /// A payload read back, whatever its shape.
    fn back(bytes: &[u8]) -> Json {
        read(bytes).map(|(j, _)| j).unwrap_or_default()
    }

    #[test]
    fn raw_json_payloads_come_back_raw_with_their_numbers_exact() {
        // the later protocol: params, results, mutations and errors as raw JSON bytes
        let s = shared(r#"{"routes": [{"path": "/mcp", "format": "mcp", "unfit": "error"}]}"#);
        let list = r#"{"tools":[{"name":"get.weather","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993}}}}]}"#;
        let r = McpResponse {
            service_names: vec!["a".into(), "b".into()],
            method: "tools/list".into(),
            metadata_context: flat(&[("client", "codex-mcp-client")]),
            mcp_response: Some(list.as_bytes().to_vec()),
        };
        let Some(Outcome::Mutated(out)) = check_response(&s, &r).result else { panic!("not mutated") };
        assert_eq!(read(&out).map(|(_, shape)| shape), Some(Shape::Raw));
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("get_weather__032e") && text.contains("9007199254740993"), "{text}");
        // a whole answer, raw: it comes back as it came but for the rewritten spans (its spacing, its id)
        let spaced = format!("{{ \"jsonrpc\": \"2.0\", \"id\": \"x\",\n  \"result\": {list} }}\n");
        let whole = McpResponse { mcp_response: Some(spaced.as_bytes().to_vec()), ..r.clone() };
        let Some(Outcome::Mutated(out)) = check_response(&s, &whole).result else { panic!("not mutated") };
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.starts_with("{ \"jsonrpc\": \"2.0\", \"id\": \"x\",\n  \"result\": {\"tools\":[{\"name\":\"get_weather__032e") && text.ends_with("}]} }\n"),
            "{text}"
        );
        let call = McpRequest {
            service_names: vec!["a".into()],
            method: "tools/call".into(),
            metadata_context: Vec::new(),
            mcp_request: Some(br#" {"name":"get_weather__032e","arguments":{"n":1}}"#.to_vec()),
        };
        let Some(Outcome::Mutated(p)) = check_request(&s, &call).result else { panic!("not mapped") };
        assert_eq!(p, br#"{"name":"get.weather","arguments":{"n":1}}"#.to_vec());
        // a refusal's JSON-RPC error comes raw too; broken JSON passes (the control)
        let lossy = r#"{"tools":[{"name":"t","inputSchema":{"type":"object","not":{"required":["a"]}}}]}"#;
        let r2 = McpResponse { metadata_context: flat(&[("profile", "llama-cpp")]), mcp_response: Some(lossy.as_bytes().to_vec()), ..r.clone() };
        let Some(Outcome::Error(e)) = check_response(&s, &r2).result else { panic!("not refused") };
        assert!(e.mcp_error.as_deref().is_some_and(|b| b.starts_with(b"{")), "{e:?}");
        let broken = McpResponse { mcp_response: Some(b"{\"tools\":[".to_vec()), ..r };
        assert_eq!(check_response(&s, &broken).result, Some(Outcome::Pass(Pass {})));
    }

    #[test]
    fn json_and_structs_round_trip_with_whole_numbers_whole() {
        let j: Json = serde_json::from_str(r#"{"a":[1,2.5,null,true,"x",{"b":{}}],"n":-3}"#).unwrap_or_default();
        let back = to_json(&from_json(&j).unwrap_or_default());
        assert_eq!(back, j);
        assert!(!back.to_string().contains("1.0"));
    }

    #[test]
    fn a_list_is_rewritten_for_the_client_the_metadata_names() {
        let s = shared(r#"{"routes": [{"path": "/mcp", "format": "mcp"}]}"#);
        let r = McpResponse {
            service_names: vec!["weather".into()],
            method: "tools/list".into(),
            metadata_context: flat(&[("client", "codex-mcp-client")]),
            mcp_response: Some(st(LIST)),
        };
        let Some(Outcome::Mutated(out)) = check_response(&s, &r).result else { panic!("not mutated") };
        let out = back(&out);
        assert_eq!(out["tools"][0]["name"], "get_weather__032e", "{out}");
        assert_eq!(out["tools"][0]["inputSchema"]["properties"]["n"]["maximum"], 3, "a whole number stays whole: {out}");
        // the control: no client, the route's profile (mcp) changes nothing; another method passes
        let r2 = McpResponse { metadata_context: Vec::new(), ..r.clone() };
        assert_eq!(check_response(&s, &r2).result, Some(Outcome::Pass(Pass {})));
        let r3 = McpResponse { method: "resources/list".into(), ..r };
        assert_eq!(check_response(&s, &r3).result, Some(Outcome::Pass(Pass {})));
        // the call comes back under the server's name
        let call = McpRequest {
            service_names: vec!["weather".into()],
            method: "tools/call".into(),
            metadata_context: Vec::new(),
            mcp_request: Some(st(r#"{"name":"get_weather__032e","arguments":{"city":"Oslo"}}"#)),
        };
        let Some(Outcome::Mutated(p)) = check_request(&s, &call).result else { panic!("not mapped") };
        assert_eq!(back(&p), serde_json::json!({"name": "get.weather", "arguments": {"city": "Oslo"}}));
        let plain = McpRequest { mcp_request: Some(st(r#"{"name":"ok"}"#)), ..call };
        assert_eq!(check_request(&s, &plain).result, Some(Outcome::Pass(Pass {})));
    }

    #[test]
    fn both_protocol_shapes_are_read() {
        // the metadata: a flat Struct, a Struct with a toolfit member, Envoy-style filter_metadata
        let nested =
            Struct { fields: [("toolfit".to_string(), Value { kind: Some(Kind::StructValue(meta_of(&[("client", "claude-code")]))) })].into_iter().collect() };
        for bytes in [flat(&[("client", "claude-code")]), nested.encode_to_vec(), namespaced(&[("client", "claude-code")])] {
            assert_eq!(meta(&metadata(&bytes), "client"), Some("claude-code"));
        }
        assert_eq!(meta(&metadata(&namespaced(&[("client", "x")])), "profile"), None);
        assert!(metadata(b"\xff\xff").fields.is_empty(), "bytes of neither shape: no metadata");
        // a whole JSON-RPC answer comes back whole, its result rewritten
        let s = shared(r#"{"routes": [{"path": "/mcp", "format": "mcp"}]}"#);
        let whole = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{LIST}}}"#);
        let r = McpResponse {
            service_names: vec!["w".into()],
            method: "tools/list".into(),
            metadata_context: namespaced(&[("client", "codex-mcp-client")]),
            mcp_response: Some(st(&whole)),
        };
        let Some(Outcome::Mutated(out)) = check_response(&s, &r).result else { panic!("not mutated") };
        let out = back(&out);
        assert_eq!((out["id"].clone(), out["result"]["tools"][0]["name"].clone()), (serde_json::json!(7), serde_json::json!("get_weather__032e")), "{out}");
        // a whole request: the params come back, mapped
        let call = McpRequest {
            service_names: vec!["w".into()],
            method: "tools/call".into(),
            metadata_context: Vec::new(),
            mcp_request: Some(st(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_weather__032e","arguments":{}}}"#)),
        };
        let Some(Outcome::Mutated(p)) = check_request(&s, &call).result else { panic!("not mapped") };
        assert_eq!(back(&p), serde_json::json!({"name": "get.weather", "arguments": {}}));
    }

    #[test]
    fn a_list_that_cannot_fit_is_refused_with_the_json_rpc_error() {
        let s = shared(r#"{"routes": [{"path": "/mcp", "format": "mcp", "unfit": "error"}]}"#);
        let lossy = r#"{"tools":[{"name":"t","inputSchema":{"type":"object","not":{"required":["a"]}}}]}"#;
        let r = McpResponse {
            service_names: vec!["s".into()],
            method: "tools/list".into(),
            metadata_context: flat(&[("profile", "llama-cpp")]),
            mcp_response: Some(st(lossy)),
        };
        let Some(Outcome::Error(e)) = check_response(&s, &r).result else { panic!("not refused") };
        assert!(e.code == INVALID && e.reason.contains("\"t\"") && e.mcp_error.is_some(), "{e:?}");
    }

    /// The service over gRPC, as agentgateway calls it: a real HTTP/2 connection and tonic's client.
    #[tokio::test]
    async fn over_grpc() {
        let s = Arc::new(shared(r#"{"routes": [{"path": "/mcp", "format": "mcp"}]}"#));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let (permits, refused) = (Arc::new(Semaphore::new(1)), Arc::new(AtomicU64::new(0)));
        let server = tonic::transport::Server::builder().add_service(ExtMcpServer::new(
            s,
            permits.clone(),
            refused.clone(),
            Arc::new(crate::work::Work::per_core()),
            Duration::from_secs(5),
        ));
        tokio::spawn(server.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)));
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap_or_else(|e| panic!("{e}"))
            .connect()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.unwrap_or_else(|e| panic!("{e}"));
        let r = McpResponse {
            service_names: vec!["weather".into()],
            method: "tools/list".into(),
            metadata_context: namespaced(&[("client", "claude-code")]),
            mcp_response: Some(st(LIST)),
        };
        let path = http::uri::PathAndQuery::from_static("/agentgateway.dev.ext_mcp.ExtMcp/CheckResponse");
        let got: tonic::Response<McpResult> =
            grpc.unary(tonic::Request::new(r), path.clone(), tonic_prost::ProstCodec::default()).await.unwrap_or_else(|e| panic!("{e}"));
        let Some(Outcome::Mutated(out)) = got.into_inner().result else { panic!("not mutated") };
        assert_eq!(back(&out)["tools"][0]["name"], "get_weather__032e");
        grpc.ready().await.unwrap_or_else(|e| panic!("{e}"));
        let bad = http::uri::PathAndQuery::from_static("/agentgateway.dev.ext_mcp.ExtMcp/Nope");
        let r: Result<tonic::Response<McpResult>, tonic::Status> = grpc.unary(tonic::Request::new(Pass {}), bad, tonic_prost::ProstCodec::default()).await;
        assert_eq!(r.err().map(|e| e.code()), Some(tonic::Code::Unimplemented));
        // every permit taken (by ext_proc streams, say): the call is refused unread, counted
        let held = permits.clone().try_acquire_owned().unwrap_or_else(|e| panic!("{e}"));
        grpc.ready().await.unwrap_or_else(|e| panic!("{e}"));
        let r = McpResponse { service_names: vec![], method: "tools/list".into(), metadata_context: vec![], mcp_response: Some(st(LIST)) };
        let got: Result<tonic::Response<McpResult>, tonic::Status> = grpc.unary(tonic::Request::new(r), path, tonic_prost::ProstCodec::default()).await;
        assert_eq!((got.err().map(|e| e.code()), refused.load(Ordering::Relaxed)), (Some(tonic::Code::ResourceExhausted), 1));
        drop(held);
    }

    /// A list whose rewrite would take the process past max_held_bytes goes on as it came, counted.
    #[test]
    fn a_list_past_the_memory_budget_passes_unread() {
        let s = shared(r#"{"max_held_bytes": 100, "routes": [{"path": "/mcp", "format": "mcp"}]}"#);
        let r =
            McpResponse { service_names: vec![], method: "tools/list".into(), metadata_context: flat(&[("profile", "openai")]), mcp_response: Some(st(LIST)) };
        assert!(LIST.len() * toolfit::filter::memory::REWRITE_FACTOR > 100);
        assert!(matches!(check_response(&s, &r).result, Some(Outcome::Pass(_))), "passed unchanged");
        assert!(s.metrics.render().contains("skipped_over_budget{route=\"extmcp\",profile=\"openai\"} 1"), "{}", s.metrics.render());
        assert_eq!(s.memory.held(), 0);
        let roomy = shared(r#"{"routes": [{"path": "/mcp", "format": "mcp"}]}"#);
        assert!(matches!(check_response(&roomy, &r).result, Some(Outcome::Mutated(_))), "the control: with room it is rewritten");
    }
}
