//! A stand-in for the Gateway API Inference Extension's Endpoint Picker (EPP), for the placement tests
//! (`tests/envoy/placement.py`): an ext_proc server in `FULL_DUPLEX_STREAMED` mode, as Istio and Envoy
//! Gateway run the EPP. Like the EPP it waits for the whole request body before it answers, records
//! what it read (the headers and the body it would tokenize and score), names the pod in
//! `x-gateway-destination-endpoint` and sends the body on unchanged; responses pass through.
//!
//! `epp_standin --listen ADDR --record FILE --destination HOST:PORT`: one JSON line per request in FILE,
//! `{"headers": {name: value}, "body_hex": "..."}`, written before the request goes on.
//!
//! Test support, not shipped: it is an example of the processor's crate so that it builds with the
//! same Envoy types and gRPC stack.

use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption};
use envoy_types::pb::envoy::service::ext_proc::v3::external_processor_server::{ExternalProcessor, ExternalProcessorServer};
use envoy_types::pb::envoy::service::ext_proc::v3::{
    body_mutation, processing_request, processing_response, BodyMutation, BodyResponse, CommonResponse, HeaderMutation, HeadersResponse, ProcessingRequest,
    ProcessingResponse, StreamedBodyResponse, TrailersResponse,
};
use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

/// The header the EPP names the chosen endpoint in (the gateway's original-destination cluster reads it).
const DESTINATION: &str = "x-gateway-destination-endpoint";

struct Epp {
    record: Arc<Mutex<std::fs::File>>,
    destination: String,
}

type Answers = Pin<Box<dyn Stream<Item = Result<ProcessingResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ExternalProcessor for Epp {
    type ProcessStream = Answers;

    async fn process(&self, request: Request<Streaming<ProcessingRequest>>) -> Result<Response<Answers>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(16);
        let (record, destination) = (self.record.clone(), self.destination.clone());
        tokio::spawn(async move {
            let mut headers: Vec<(String, String)> = Vec::new();
            let mut body: Vec<u8> = Vec::new();
            while let Ok(Some(msg)) = inbound.message().await {
                let answers = match msg.request {
                    Some(processing_request::Request::RequestHeaders(h)) => {
                        headers = h
                            .headers
                            .map(|m| m.headers.into_iter().map(|v| (v.key, String::from_utf8_lossy(&v.raw_value).into_owned())).collect())
                            .unwrap_or_default();
                        if h.end_of_stream {
                            write_record(&record, &headers, &body);
                            vec![request_headers_answer(&destination)]
                        } else {
                            // the EPP answers the headers only once it has read the body
                            Vec::new()
                        }
                    }
                    Some(processing_request::Request::RequestBody(b)) => {
                        body.extend_from_slice(&b.body);
                        if b.end_of_stream {
                            write_record(&record, &headers, &body);
                            vec![request_headers_answer(&destination), body_answer(true, std::mem::take(&mut body), true)]
                        } else {
                            Vec::new()
                        }
                    }
                    Some(processing_request::Request::RequestTrailers(_)) => {
                        // the body ended with trailers: it goes on whole, then the trailers
                        write_record(&record, &headers, &body);
                        vec![request_headers_answer(&destination), body_answer(true, std::mem::take(&mut body), false), trailers_answer(true)]
                    }
                    Some(processing_request::Request::ResponseHeaders(_)) => vec![ProcessingResponse {
                        response: Some(processing_response::Response::ResponseHeaders(HeadersResponse::default())),
                        ..ProcessingResponse::default()
                    }],
                    Some(processing_request::Request::ResponseBody(b)) => vec![body_answer(false, b.body, b.end_of_stream)],
                    Some(processing_request::Request::ResponseTrailers(_)) => vec![trailers_answer(false)],
                    None => Vec::new(),
                };
                for a in answers {
                    if tx.send(Ok(a)).await.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))))
    }
}

fn request_headers_answer(destination: &str) -> ProcessingResponse {
    let set = HeaderValueOption {
        header: Some(HeaderValue { key: DESTINATION.into(), raw_value: destination.as_bytes().to_vec(), ..HeaderValue::default() }),
        ..HeaderValueOption::default()
    };
    let common = CommonResponse {
        header_mutation: Some(HeaderMutation { set_headers: vec![set], ..HeaderMutation::default() }),
        clear_route_cache: true,
        ..CommonResponse::default()
    };
    ProcessingResponse {
        response: Some(processing_response::Response::RequestHeaders(HeadersResponse { response: Some(common) })),
        ..ProcessingResponse::default()
    }
}

/// A body piece sent on as it came (the streamed mutation `FULL_DUPLEX_STREAMED` requires).
fn body_answer(request: bool, body: Vec<u8>, end_of_stream: bool) -> ProcessingResponse {
    let mutation = BodyMutation {
        mutation: Some(body_mutation::Mutation::StreamedResponse(StreamedBodyResponse { body, end_of_stream, ..StreamedBodyResponse::default() })),
    };
    let r = BodyResponse { response: Some(CommonResponse { body_mutation: Some(mutation), ..CommonResponse::default() }) };
    let response = if request { processing_response::Response::RequestBody(r) } else { processing_response::Response::ResponseBody(r) };
    ProcessingResponse { response: Some(response), ..ProcessingResponse::default() }
}

fn trailers_answer(request: bool) -> ProcessingResponse {
    let t = TrailersResponse::default();
    let response = if request { processing_response::Response::RequestTrailers(t) } else { processing_response::Response::ResponseTrailers(t) };
    ProcessingResponse { response: Some(response), ..ProcessingResponse::default() }
}

fn write_record(record: &Mutex<std::fs::File>, headers: &[(String, String)], body: &[u8]) {
    let hex: String = body.iter().map(|b| format!("{b:02x}")).collect();
    let headers: serde_json::Map<String, serde_json::Value> = headers.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
    let line = serde_json::json!({"headers": headers, "body_hex": hex}).to_string();
    if let Ok(mut f) = record.lock() {
        let _ = writeln!(f, "{line}");
        let _ = f.flush();
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(listen), Some(record), Some(destination)) = (arg(&args, "--listen"), arg(&args, "--record"), arg(&args, "--destination")) else {
        eprintln!("usage: epp_standin --listen ADDR --record FILE --destination HOST:PORT");
        std::process::exit(2);
    };
    let run = || -> Result<(), Box<dyn std::error::Error>> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(record)?;
        let epp = Epp { record: Arc::new(Mutex::new(file)), destination };
        let addr: std::net::SocketAddr = listen.parse()?;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            eprintln!("epp_standin: listening on {addr}");
            tonic::transport::Server::builder()
                .add_service(ExternalProcessorServer::new(epp).max_decoding_message_size(64 << 20).max_encoding_message_size(64 << 20))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)))
                .await?;
            Ok::<(), Box<dyn std::error::Error>>(())
        })
    };
    if let Err(e) = run() {
        eprintln!("epp_standin: {e}");
        std::process::exit(1);
    }
}
