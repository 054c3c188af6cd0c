//! The gRPC floor `make bench-envoy` measures `toolfit-extproc` against: an ext_proc server that
//! answers every message Envoy sends in `envoy/extproc.yaml`'s processing mode (request headers and
//! `BUFFERED` body, response headers and `STREAMED` body, trailers) at once and with no change,
//! reading and deciding nothing. What it costs is what any external processor costs there: the round
//! trips and the body copied into and out of protobuf.
//!
//! `extproc_floor --listen ADDR`. Benchmark support, not shipped: an example of the processor's crate
//! so that it builds with the same Envoy types and gRPC stack, run as toolfit-extproc runs it (tonic on
//! tokio's multi-thread runtime, the same HTTP/2 windows, no Nagle).

use envoy_types::pb::envoy::service::ext_proc::v3::external_processor_server::{ExternalProcessor, ExternalProcessorServer};
use envoy_types::pb::envoy::service::ext_proc::v3::{
    processing_request, processing_response, BodyResponse, HeadersResponse, ProcessingRequest, ProcessingResponse, TrailersResponse,
};
use std::pin::Pin;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

struct Floor;

type Answers = Pin<Box<dyn Stream<Item = Result<ProcessingResponse, Status>> + Send>>;

/// The answer that lets `msg` go on unchanged.
fn pass(msg: processing_request::Request) -> processing_response::Response {
    use processing_request::Request as In;
    use processing_response::Response as Out;
    match msg {
        In::RequestHeaders(_) => Out::RequestHeaders(HeadersResponse::default()),
        In::RequestBody(_) => Out::RequestBody(BodyResponse::default()),
        In::RequestTrailers(_) => Out::RequestTrailers(TrailersResponse::default()),
        In::ResponseHeaders(_) => Out::ResponseHeaders(HeadersResponse::default()),
        In::ResponseBody(_) => Out::ResponseBody(BodyResponse::default()),
        In::ResponseTrailers(_) => Out::ResponseTrailers(TrailersResponse::default()),
    }
}

#[tonic::async_trait]
impl ExternalProcessor for Floor {
    type ProcessStream = Answers;

    async fn process(&self, request: Request<Streaming<ProcessingRequest>>) -> Result<Response<Answers>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            while let Ok(Some(msg)) = inbound.message().await {
                let Some(m) = msg.request else { continue };
                let answer = ProcessingResponse { response: Some(pass(m)), ..ProcessingResponse::default() };
                if tx.send(Ok(answer)).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(listen) = args.iter().position(|a| a == "--listen").and_then(|i| args.get(i + 1)).cloned() else {
        eprintln!("usage: extproc_floor --listen ADDR");
        std::process::exit(2);
    };
    let run = || -> Result<(), Box<dyn std::error::Error>> {
        let addr: std::net::SocketAddr = listen.parse()?;
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            tonic::transport::Server::builder()
                .initial_stream_window_size(Some(4 << 20))
                .initial_connection_window_size(Some(16 << 20))
                .add_service(ExternalProcessorServer::new(Floor).max_decoding_message_size(64 << 20).max_encoding_message_size(64 << 20))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)))
                .await?;
            Ok::<(), Box<dyn std::error::Error>>(())
        })
    };
    if let Err(e) = run() {
        eprintln!("extproc_floor: {e}");
        std::process::exit(1);
    }
}
