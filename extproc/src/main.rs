//! `toolfit-extproc`: toolfit's filter as an Envoy external processor (`envoy.service.ext_proc.v3`),
//! for gateways that take an ext_proc service and no Wasm (agentgateway, GKE Service Extensions) or
//! where a team prefers a process to a VM in the proxy.
//!
//! `toolfit-extproc --config FILE --listen ADDR --metrics-listen ADDR [--max-streams N]
//! [--message-timeout-ms N]`. FILE is the Wasm plugin's configuration (the same JSON); an unknown key
//! or bad value stops the start with the key named. `--listen unix:PATH` serves on a Unix domain socket
//! (a processor beside Envoy in the same pod: Envoy's cluster names it as a `pipe` address).
//! `--tls-cert FILE --tls-key FILE` serve TLS on a TCP listener, `--client-ca FILE` requires a client
//! certificate that CA signed (mutual TLS); the files are read again when they change (`tls.rs`).

use envoy_types::pb::envoy::service::ext_proc::v3::external_processor_server::{ExternalProcessor, ExternalProcessorServer};
use envoy_types::pb::envoy::service::ext_proc::v3::{ProcessingRequest, ProcessingResponse};
use prost::Message;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};
use toolfit_extproc::extmcp::ExtMcpServer;
use toolfit_extproc::session::{GiveUp, Inbound, Session, Shared};
use toolfit_extproc::tls::{Handshakes, Reloading, TlsFiles};
use toolfit_extproc::work::{Undone, Work};

/// Where the gRPC service listens.
enum Listen {
    Tcp(SocketAddr),
    /// A Unix domain socket at this path (`unix:PATH`).
    Unix(std::path::PathBuf),
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(a) => write!(f, "{a}"),
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// What the command line says.
struct Args {
    config: String,
    listen: Listen,
    metrics_listen: SocketAddr,
    /// Streams processed at once; past it a new stream is refused (`RESOURCE_EXHAUSTED`), which Envoy's
    /// `failure_mode_allow: true` turns into the request going on unchanged.
    max_streams: usize,
    /// Longest a message may take here; past it the stream is closed (unchanged). Envoy's own
    /// `message_timeout` should sit above it.
    message_timeout: Duration,
    /// Longest a new stream may wait for its first message (Envoy sends the request headers at once).
    first_message_timeout: Duration,
    /// Longest a stream may wait for its next message (a model may think minutes before its first
    /// token): past it the stream is closed and its permit freed, so idle streams cannot hold them all.
    idle_timeout: Duration,
    /// Streams one HTTP/2 connection may have open (its SETTINGS): one client cannot take every permit
    /// over one connection; Envoy opens another connection when it needs more.
    streams_per_connection: u32,
    /// Longest a request body toolfit reads may take to arrive, from its headers: past it what the
    /// stream keeps goes on unchanged and the stream in pass-through (its permit freed).
    request_deadline: Duration,
    /// Slowest a full-duplex request body may come (bytes a second, judged from `RATE_GRACE` after its
    /// headers; 0: not judged): a client slower than that gets the same.
    min_request_rate: u64,
    /// TLS on the gRPC listener, mutual with a client CA.
    tls: Option<TlsFiles>,
}

const USAGE: &str = "usage: toolfit-extproc --config FILE --listen ADDR|unix:PATH --metrics-listen ADDR [--tls-cert FILE --tls-key FILE [--client-ca FILE [--client-san NAME]...]] [--max-streams N] [--max-streams-per-connection N] [--message-timeout-ms N] [--first-message-timeout-ms N] [--idle-timeout-ms N] [--request-deadline-ms N] [--min-request-bytes-per-s N]";

/// How long a full-duplex request body may come slowly before its rate is judged (a client's first
/// bytes may wait on its own start).
const RATE_GRACE: Duration = Duration::from_secs(5);

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut config, mut listen, mut metrics_listen) = (None, None, None);
    let (mut max_streams, mut timeout_ms) = (1024usize, 1000u64);
    let (mut first_ms, mut idle_ms, mut per_connection) = (10_000u64, 300_000u64, 256u32);
    let (mut deadline_ms, mut min_rate) = (60_000u64, 1024u64);
    let (mut cert, mut key, mut client_ca) = (None, None, None);
    let mut client_sans: Vec<String> = Vec::new();
    while let Some(arg) = it.next() {
        if arg == "--help" || arg == "-h" {
            return Err(USAGE.to_string());
        }
        // `--flag value` or `--flag=value` (a Deployment's args are often written the second way)
        let (flag, value) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), v.to_string()),
            _ => {
                let value = it.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))?;
                (arg, value)
            }
        };
        let addr = |v: &str| v.parse::<SocketAddr>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--config" => config = Some(value),
            "--listen" => {
                listen = Some(match value.strip_prefix("unix:") {
                    Some("") => return Err(format!("--listen {value}: the socket's path is empty")),
                    Some(path) => Listen::Unix(path.into()),
                    None => Listen::Tcp(addr(&value)?),
                })
            }
            "--metrics-listen" => metrics_listen = Some(addr(&value)?),
            "--max-streams" => max_streams = value.parse().map_err(|e| format!("--max-streams {value}: {e}"))?,
            "--message-timeout-ms" => timeout_ms = value.parse().map_err(|e| format!("--message-timeout-ms {value}: {e}"))?,
            "--first-message-timeout-ms" => first_ms = value.parse().map_err(|e| format!("--first-message-timeout-ms {value}: {e}"))?,
            "--idle-timeout-ms" => idle_ms = value.parse().map_err(|e| format!("--idle-timeout-ms {value}: {e}"))?,
            "--max-streams-per-connection" => per_connection = value.parse().map_err(|e| format!("--max-streams-per-connection {value}: {e}"))?,
            "--request-deadline-ms" => deadline_ms = value.parse().map_err(|e| format!("--request-deadline-ms {value}: {e}"))?,
            "--min-request-bytes-per-s" => min_rate = value.parse().map_err(|e| format!("--min-request-bytes-per-s {value}: {e}"))?,
            "--tls-cert" => cert = Some(std::path::PathBuf::from(value)),
            "--tls-key" => key = Some(std::path::PathBuf::from(value)),
            "--client-ca" => client_ca = Some(std::path::PathBuf::from(value)),
            // repeatable: the client certificate must be valid for one of these names
            "--client-san" => client_sans.push(value),
            _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
        }
    }
    fn need<T>(v: Option<T>, f: &str) -> Result<T, String> {
        v.ok_or_else(|| format!("{f} is required\n{USAGE}"))
    }
    let tls = match (cert, key, client_ca) {
        (None, None, None) => None,
        (Some(cert), Some(key), client_ca) => {
            if client_ca.is_none() && !client_sans.is_empty() {
                return Err(format!("--client-san needs --client-ca (it narrows which client certificates mutual TLS takes)\n{USAGE}"));
            }
            Some(TlsFiles { cert, key, client_ca, client_sans })
        }
        (None, _, Some(_)) | (Some(_), None, _) | (None, Some(_), None) => {
            return Err(format!("--tls-cert and --tls-key go together (and --client-ca needs both)\n{USAGE}"));
        }
    };
    let listen = need(listen, "--listen")?;
    if let (Some(_), Listen::Unix(p)) = (&tls, &listen) {
        // a socket in the pod's own emptyDir is reached by nothing outside it: TLS there protects nothing
        return Err(format!("--listen unix:{}: TLS is for a TCP listener (a Unix socket stays in its pod)", p.display()));
    }
    Ok(Args {
        config: need(config, "--config")?,
        listen,
        metrics_listen: need(metrics_listen, "--metrics-listen")?,
        max_streams: max_streams.max(1),
        message_timeout: Duration::from_millis(timeout_ms.max(1)),
        first_message_timeout: Duration::from_millis(first_ms.max(1)),
        idle_timeout: Duration::from_millis(idle_ms.max(1)),
        streams_per_connection: per_connection.max(1),
        request_deadline: Duration::from_millis(deadline_ms.max(1)),
        min_request_rate: min_rate,
        tls,
    })
}

/// Log lines on stderr, one JSON object each.
struct JsonLog;

impl log::Log for JsonLog {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
            let line = serde_json::json!({"ts": ts, "level": r.level().as_str().to_ascii_lowercase(), "msg": r.args().to_string()});
            eprintln!("{line}");
        }
    }
    fn flush(&self) {}
}

static LOG: JsonLog = JsonLog;

struct Processor {
    shared: Arc<Shared>,
    streams: Arc<Semaphore>,
    /// Streams past `streams` served in pass-through (as many again): past both, refused.
    overflow: Arc<Semaphore>,
    /// The request's deadline and slowest rate (`Args`).
    request_deadline: Duration,
    min_request_rate: u64,
    timeout: Duration,
    active: Arc<AtomicUsize>,
    /// Streams refused at `--max-streams` (the gateway fails open for them).
    refused: Arc<AtomicU64>,
    /// How long a stream may wait for its first message, and for each next one.
    first_message_timeout: Duration,
    idle_timeout: Duration,
    /// Streams closed for waiting past those.
    idle_closed: Arc<AtomicU64>,
    /// Answers to a message Envoy no longer waited for (its `message_timeout` passed: the request went
    /// on as it came, though its rewrite was counted).
    late: Arc<AtomicU64>,
    /// Where heavy messages are processed: one at a time per core.
    work: Arc<Work>,
}

/// `s.take(msg)` on a work slot within `timeout`; `Err`: it did not answer (no slot in time or expected
/// too slow, counted by `Work`; a failure or a message past the timeout, said), and the stream's
/// rescue is to answer instead.
async fn on_slot(work: &Work, mut s: Session, msg: Inbound, timeout: Duration) -> Result<(Session, Vec<ProcessingResponse>), GiveUp> {
    let cost = read_at(&msg, s.kept());
    // what the processing reads at once, not the message's own size: in full duplex the small last
    // piece is what makes a 14 MB body's rewrite, and what it freed stayed with the allocator
    let large = cost.max(msg.message().encoded_len().saturating_add(msg.body_len())) >= toolfit_extproc::RETURN_MEMORY_FROM;
    let whole = s.must_finish(&msg);
    let job = move || {
        let answers = s.take(msg);
        if large {
            toolfit_extproc::return_memory();
        }
        (s, answers)
    };
    let done = if whole { work.run_whole(cost, job).await } else { work.run(cost, job, timeout).await };
    match done {
        Ok(done) => Ok(done),
        Err(Undone::Busy) => Err(GiveUp::Declined),
        Err(Undone::Failed(e)) => {
            log::error!("toolfit: a message's processing failed ({e}); what the stream kept goes on unchanged");
            Err(GiveUp::Failed)
        }
        Err(Undone::Late) => {
            log::warn!("toolfit: a message took over --message-timeout-ms ({} ms); it and what the stream kept go on unchanged", timeout.as_millis());
            Err(GiveUp::Late)
        }
    }
}

/// `t` plus `d`, or a year past `t` where that would not fit an `Instant` (a huge flag value).
fn after(t: Instant, d: Duration) -> Instant {
    t.checked_add(d).or_else(|| t.checked_add(Duration::from_secs(365 * 86_400))).unwrap_or(t)
}

/// When a stream's request body must have come by, in full or at the slowest rate, and which limit
/// that is (`None`: neither applies).
fn request_limit(s: &Session, started: Instant, received: u64, deadline: Duration, min_rate: u64) -> Option<(Instant, GiveUp)> {
    if s.passing() || s.request_ended() {
        return None;
    }
    let by_deadline = (after(started, deadline), GiveUp::Deadline);
    if !s.request_streaming() || min_rate == 0 {
        return Some(by_deadline);
    }
    // at `min_rate`, the bytes received so far were due by this time
    let due = Duration::from_millis(received.saturating_mul(1000) / min_rate);
    let by_rate = (after(after(started, RATE_GRACE), due), GiveUp::Slow);
    Some(if by_rate.0 < by_deadline.0 { by_rate } else { by_deadline })
}

type Answers = Pin<Box<dyn Stream<Item = Result<ProcessingResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ExternalProcessor for Processor {
    type ProcessStream = Answers;

    async fn process(&self, request: Request<Streaming<ProcessingRequest>>) -> Result<Response<Answers>, Status> {
        // past --max-streams a stream is served in pass-through (nothing read or kept: every message
        // answered as it came), as many again; past those it is refused. A refused full-duplex stream
        // is a 5xx at Envoy, not a request passed on unchanged.
        let (permit, overflow) = match self.streams.clone().try_acquire_owned() {
            Ok(p) => (Some(p), None),
            Err(_) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                let Ok(o) = self.overflow.clone().try_acquire_owned() else {
                    return Err(Status::resource_exhausted("toolfit-extproc: too many streams"));
                };
                self.shared.passed_on(GiveUp::Overflow);
                (None, Some(o))
            }
        };
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel::<Result<ProcessingResponse, Status>>(4);
        let shared = self.shared.clone();
        let timeout = self.timeout;
        let (first_wait, idle_wait, idle_closed, late) = (self.first_message_timeout, self.idle_timeout, self.idle_closed.clone(), self.late.clone());
        let (deadline, min_rate) = (self.request_deadline, self.min_request_rate);
        let (active, work) = (self.active.clone(), self.work.clone());
        active.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let (mut permit, _overflow) = (permit, overflow);
            let started = Instant::now();
            let mut received = 0u64;
            let mut session = Some(if permit.is_some() { Session::new(shared.clone()) } else { Session::passthrough(shared.clone()) });
            let mut wait = first_wait;
            while let Some(mut s) = session.take() {
                if s.passing() {
                    // nothing read or kept any more: the permit goes to a stream that may need it
                    drop(permit.take());
                }
                let limit = request_limit(&s, started, received, deadline, min_rate);
                let now = Instant::now();
                let idle_at = after(now, wait);
                let (until, why) = match limit {
                    Some((at, why)) if at < idle_at => (at, why),
                    _ => (idle_at, GiveUp::Idle),
                };
                let msg = match tokio::time::timeout_at(until.into(), inbound.message()).await {
                    Ok(Ok(Some(m))) => m,
                    Ok(Ok(None)) => {
                        session = Some(s);
                        break;
                    }
                    Ok(Err(e)) => {
                        // a frame that does not decode, or one past the message size limit: the stream
                        // ends with an error status, not OK (Envoy then fails open for the request)
                        let _ = tx.send(Err(Status::invalid_argument(format!("toolfit-extproc: a message could not be read: {}", e.message())))).await;
                        session = Some(s);
                        break;
                    }
                    Err(_) => {
                        // in full duplex a piece may be on its way: the stream is never closed while the
                        // request body comes, nor while it keeps bytes. What it keeps of the request goes
                        // on unchanged, and the stream in pass-through
                        let giving_up = !s.passing() && (why != GiveUp::Idle || s.request_streaming());
                        if giving_up {
                            shared.passed_on(why);
                            let (p, answers) = s.rescue(None).answers();
                            session = Some(p);
                            if send_all(&tx, answers).await.is_err() {
                                break;
                            }
                            continue;
                        }
                        let waits = s.request_streaming() || s.kept() > 0;
                        session = Some(s);
                        if waits {
                            continue;
                        }
                        // a stream that sends nothing frees its permit (counted, not logged: any client
                        // could open such streams, and a line each would be a way to fill the log)
                        idle_closed.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                };
                wait = idle_wait;
                let msg = Inbound::from(msg);
                if is_request_body(msg.message()) {
                    received = received.saturating_add(msg.body_len() as u64);
                }
                // a message that may carry a rewrite (a body piece of some size) runs off the async
                // workers, bounded by --message-timeout-ms: past it, or declined, what the stream kept
                // and the message go on unchanged (the rescue, taken first) and the late answer is
                // dropped. Headers, trailers, small body pieces and a stream in pass-through take
                // microseconds: they run here, which saves two thread hand-offs per message
                if s.passing() || !heavy(&msg, s.kept()) {
                    let answers = s.take(msg);
                    session = Some(s);
                    if send_all(&tx, answers).await.is_err() {
                        break;
                    }
                    continue;
                }
                let rescue = s.rescue(Some(&msg));
                let answers = match on_slot(&work, s, msg, timeout).await {
                    Ok((s, answers)) => {
                        session = Some(s);
                        answers
                    }
                    Err(why) => {
                        shared.passed_on(why);
                        let (p, answers) = rescue.answers();
                        session = Some(p);
                        answers
                    }
                };
                if send_all(&tx, answers).await.is_err() {
                    // Envoy closed the stream while the message was processed
                    late.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
            if let Some(mut s) = session {
                s.end();
            }
            active.fetch_sub(1, Ordering::Relaxed);
        });
        Ok(Response::new(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))))
    }
}

/// Whether a message is a piece of the request body.
fn is_request_body(msg: &ProcessingRequest) -> bool {
    use envoy_types::pb::envoy::service::ext_proc::v3::processing_request::Request;
    matches!(msg.request, Some(Request::RequestBody(_)))
}

/// Body pieces from this size on are processed off the async workers (see `process`): a body this
/// small is read and rewritten in well under a millisecond.
const INLINE_BODY_BYTES: usize = 64 << 10;

/// Whether a message may take long: a body piece that, with what the stream keeps (`kept`: a
/// streamed request body is rewritten whole at its end, a held JSON reply repaired whole), reaches
/// `INLINE_BODY_BYTES`; trailers that end such a body.
fn heavy(msg: &Inbound, kept: usize) -> bool {
    use envoy_types::pb::envoy::service::ext_proc::v3::processing_request::Request;
    match &msg.message().request {
        Some(Request::RequestBody(_) | Request::ResponseBody(_)) => msg.body_len().saturating_add(kept) >= INLINE_BODY_BYTES,
        Some(Request::RequestTrailers(_) | Request::ResponseTrailers(_)) => kept >= INLINE_BODY_BYTES,
        _ => false,
    }
}

/// The bytes a message makes the session read at once: the whole body when it ends it (the rewrite,
/// or the scan that finds none), none for a piece that is only kept.
fn read_at(msg: &Inbound, kept: usize) -> usize {
    use envoy_types::pb::envoy::service::ext_proc::v3::processing_request::Request;
    match &msg.message().request {
        Some(Request::RequestBody(b) | Request::ResponseBody(b)) if b.end_of_stream => msg.body_len().saturating_add(kept),
        Some(Request::RequestTrailers(_) | Request::ResponseTrailers(_)) => kept,
        _ => 0,
    }
}

async fn send_all(tx: &mpsc::Sender<Result<ProcessingResponse, Status>>, answers: Vec<ProcessingResponse>) -> Result<(), ()> {
    for a in answers {
        tx.send(Ok(a)).await.map_err(|_| ())?;
    }
    Ok(())
}

/// glibc gives threads that allocate at once arenas of their own (up to eight per core), and what the
/// tokio workers free stays in theirs: under `make load` the processor's RSS crept from 44 to 78 MiB over
/// 60,000 requests, rising and falling with no leak behind it. Two arenas held it at 18-30 MiB on the same
/// load (2026-11-26). `MALLOC_ARENA_MAX` in the environment, where an operator set one, wins.
fn cap_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt takes two integers and changes a malloc tunable; called once, before the
        // runtime's threads exist
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

fn main() {
    cap_malloc_arenas();
    let _ = log::set_logger(&LOG).map(|()| log::set_max_level(log::LevelFilter::Info));
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let config = match std::fs::read(&args.config).map_err(|e| format!("{}: {e}", args.config)).and_then(|b| toolfit::filter::config::Config::parse(&b)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("toolfit-extproc: configuration refused: {e}");
            std::process::exit(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolfit-extproc: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(serve(args, config)) {
        eprintln!("toolfit-extproc: {e}");
        std::process::exit(1);
    }
}

async fn serve(args: Args, config: toolfit::filter::config::Config) -> Result<(), Box<dyn std::error::Error>> {
    log::info!(
        "toolfit-extproc {} configured: profile={} routes={} max_body_bytes={} strict={} listen={}{} metrics={}",
        env!("CARGO_PKG_VERSION"),
        config.profile.name,
        config.routes.len(),
        config.max_body_bytes,
        config.strict,
        args.listen,
        match &args.tls {
            Some(t) if t.client_ca.is_some() => " (mutual TLS)",
            Some(_) => " (TLS)",
            None => "",
        },
        args.metrics_listen
    );
    // the certificate files are checked before anything listens: a bad pair refuses the start
    let tls = match args.tls.clone() {
        Some(files) => Some(Arc::new(Reloading::load(files).map_err(|e| format!("TLS refused: {e}"))?)),
        None => None,
    };
    let handshakes = Arc::new(Handshakes::default());
    // a message carries a whole buffered body (up to max_body_bytes) and its answer the rewrite, which
    // may be larger; tonic's default 4 MiB would refuse a larger body (and Envoy would fail open
    // without a rewrite). Room for the protobuf framing and a grown rewrite.
    let max_message = config.max_body_bytes.saturating_mul(2).saturating_add(1 << 20);
    let shared = Arc::new(Shared::new(config));
    let ready = Arc::new(AtomicBool::new(false));
    let active = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let idle_closed = Arc::new(AtomicU64::new(0));
    let late = Arc::new(AtomicU64::new(0));
    let work = Arc::new(Work::per_core());
    let metrics = tokio::net::TcpListener::bind(args.metrics_listen).await?;
    let gauges = Gauges {
        ready: ready.clone(),
        active: active.clone(),
        refused: refused.clone(),
        idle_closed: idle_closed.clone(),
        late: late.clone(),
        declined: work.declined.clone(),
        tls: tls.clone(),
        handshakes: handshakes.clone(),
    };
    tokio::spawn(metrics_server(metrics, shared.clone(), gauges));
    // agentgateway's MCP hook on the same listener (its backend calls it by service name)
    let streams = Arc::new(Semaphore::new(args.max_streams));
    let extmcp = ExtMcpServer::new(shared.clone(), streams.clone(), refused.clone(), work.clone(), args.message_timeout);
    let processor = Processor {
        shared,
        overflow: Arc::new(Semaphore::new(args.max_streams)),
        request_deadline: args.request_deadline,
        min_request_rate: args.min_request_rate,
        streams,
        timeout: args.message_timeout,
        active: active.clone(),
        refused,
        first_message_timeout: args.first_message_timeout,
        idle_timeout: args.idle_timeout,
        idle_closed: idle_closed.clone(),
        late: late.clone(),
        work: work.clone(),
    };
    // bound before readiness is said, so a probe that passes means Envoy can connect
    let incoming = match (&args.listen, tls) {
        (Listen::Tcp(a), Some(tls)) => Incoming::Tls(toolfit_extproc::tls::incoming(tokio::net::TcpListener::bind(a).await?, tls, handshakes)),
        (Listen::Tcp(a), None) => Incoming::Tcp(tokio::net::TcpListener::bind(a).await?),
        (Listen::Unix(p), _) => Incoming::Unix(bind_unix(p)?),
    };
    ready.store(true, Ordering::SeqCst);
    let stop = {
        let ready = ready.clone();
        async move {
            shutdown_signal().await;
            // readiness goes first, so a load balancer stops sending new streams while these drain
            ready.store(false, Ordering::SeqCst);
            log::info!("toolfit-extproc: stopping, draining open streams");
        }
    };
    let router = tonic::transport::Server::builder()
        // HTTP/2 flow-control windows that take a typical request body (hundreds of KB) in one go: with
        // h2's 64 KiB default, Envoy would wait for window updates several times per body
        .initial_stream_window_size(Some(4 << 20))
        .initial_connection_window_size(Some(16 << 20))
        .max_frame_size(Some(1 << 20))
        .max_concurrent_streams(Some(args.streams_per_connection))
        .add_service(ExternalProcessorServer::new(processor).max_decoding_message_size(max_message).max_encoding_message_size(max_message))
        .add_service(extmcp);
    match incoming {
        // no Nagle on the stream to Envoy: each answer is a small frame Envoy waits for, and a delayed
        // ACK would hold it about 40 ms
        Incoming::Tcp(l) => router.serve_with_incoming_shutdown(tonic::transport::server::TcpIncoming::from(l).with_nodelay(Some(true)), stop).await?,
        Incoming::Unix(l) => router.serve_with_incoming_shutdown(tokio_stream::wrappers::UnixListenerStream::new(l), stop).await?,
        Incoming::Tls(conns) => router.serve_with_incoming_shutdown(conns, stop).await?,
    }
    log::info!("toolfit-extproc: stopped ({} streams open at the end)", active.load(Ordering::SeqCst));
    Ok(())
}

/// A bound gRPC listener.
enum Incoming {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
    /// Connections whose TLS handshake completed (tls.rs).
    Tls(tokio_stream::wrappers::ReceiverStream<Result<toolfit_extproc::tls::TlsConn, std::io::Error>>),
}

/// Binds a Unix domain socket at `path`, replacing a socket left there by a processor that stopped (a
/// restarted container keeps its emptyDir); anything else at the path is an error, never removed.
/// The socket is mode 0660 whatever the umask (with umask 000 any local user could connect): Envoy
/// must run as the processor's user or in its group.
fn bind_unix(path: &std::path::Path) -> Result<tokio::net::UnixListener, Box<dyn std::error::Error>> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => return Err(format!("--listen unix:{}: something other than a socket is there", path.display()).into()),
        Err(_) => {}
    }
    // the socket is made with the umask's mode: no window where others may connect (nothing else
    // creates files while the listener is bound, at start)
    // SAFETY: umask only swaps the process's file mode mask and returns the old one
    #[allow(unsafe_code)]
    let old = unsafe { libc::umask(0o117) };
    let bound = tokio::net::UnixListener::bind(path);
    // SAFETY: as above, putting the old mask back
    #[allow(unsafe_code)]
    unsafe {
        libc::umask(old);
    }
    let listener = bound?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
    Ok(listener)
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = term => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// The processor's own state, beside the filter's counters.
#[derive(Clone)]
struct Gauges {
    ready: Arc<AtomicBool>,
    active: Arc<AtomicUsize>,
    refused: Arc<AtomicU64>,
    idle_closed: Arc<AtomicU64>,
    late: Arc<AtomicU64>,
    declined: Arc<AtomicU64>,
    tls: Option<Arc<Reloading>>,
    handshakes: Arc<Handshakes>,
}

/// `/metrics` (Prometheus text), `/healthz` (the process runs), `/readyz` (it takes streams).
/// The process's resident memory, from `VmRSS` in `/proc/self/status` (in kB whatever the page
/// size; Linux only, `None` elsewhere).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

async fn metrics_server(listener: tokio::net::TcpListener, shared: Arc<Shared>, g: Gauges) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let (shared, g) = (shared.clone(), g.clone());
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let (status, body) = match req.uri().path() {
                    "/metrics" => {
                        let mut text = shared.metrics.render();
                        text.push_str(&format!(
                            "# TYPE toolfit_extproc_streams_active gauge\ntoolfit_extproc_streams_active {}\n\
                             # TYPE toolfit_extproc_streams_refused counter\ntoolfit_extproc_streams_refused {}\n\
                             # TYPE toolfit_extproc_streams_idle_closed counter\ntoolfit_extproc_streams_idle_closed {}\n\
                             # TYPE toolfit_extproc_answers_late counter\ntoolfit_extproc_answers_late {}\n\
                             # TYPE toolfit_extproc_declined_busy counter\ntoolfit_extproc_declined_busy {}\n",
                            g.active.load(Ordering::Relaxed),
                            g.refused.load(Ordering::Relaxed),
                            g.idle_closed.load(Ordering::Relaxed),
                            g.late.load(Ordering::Relaxed),
                            g.declined.load(Ordering::Relaxed)
                        ));
                        if let Some(tls) = &g.tls {
                            text.push_str(&format!(
                                "# TYPE toolfit_extproc_tls_handshakes_failed counter\ntoolfit_extproc_tls_handshakes_failed {}\n\
                                 # TYPE toolfit_extproc_tls_reloads counter\ntoolfit_extproc_tls_reloads{{result=\"ok\"}} {}\ntoolfit_extproc_tls_reloads{{result=\"refused\"}} {}\n",
                                g.handshakes.failed.load(Ordering::Relaxed),
                                tls.reloads.load(Ordering::Relaxed),
                                tls.reload_failures.load(Ordering::Relaxed)
                            ));
                        }
                        // the Wasm filter's memory gauge, so the dashboard's memory panel reads both: here the
                        // process's resident memory
                        if let Some(rss) = resident_bytes() {
                            text.push_str(&format!("# TYPE toolfit_vm_memory_bytes gauge\ntoolfit_vm_memory_bytes {rss}\n"));
                        }
                        text.push_str("# TYPE toolfit_extproc_streams_passed_on counter\n");
                        for (why, n) in GiveUp::ALL.iter().zip(shared.passed_on.iter()) {
                            text.push_str(&format!("toolfit_extproc_streams_passed_on{{reason=\"{}\"}} {}\n", why.label(), n.load(Ordering::Relaxed)));
                        }
                        // what the requests in flight hold (max_held_bytes bounds it), as the Wasm filter's
                        text.push_str(&format!("# TYPE toolfit_held_bytes gauge\ntoolfit_held_bytes {}\n", shared.memory.held()));
                        // toolfit's own time, as the Wasm filter's per-VM counters (here the core's handling of
                        // each message, gRPC aside)
                        let spent = &shared.spent;
                        for (name, n) in [("request_ns", &spent.request_ns), ("response_ns", &spent.response_ns), ("streams", &spent.streams)] {
                            text.push_str(&format!("# TYPE toolfit_vm_{name} counter\ntoolfit_vm_{name} {}\n", n.load(Ordering::Relaxed)));
                        }
                        (200, text)
                    }
                    "/healthz" => (200, "ok\n".to_string()),
                    "/readyz" if g.ready.load(Ordering::SeqCst) => (200, "ready\n".to_string()),
                    "/readyz" => (503, "not ready\n".to_string()),
                    _ => (404, "not found\n".to_string()),
                };
                let resp = hyper::Response::builder().status(status).header("content-type", "text/plain; version=0.0.4").body(Full::new(Bytes::from(body)));
                async move { resp }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, svc).await;
        });
    }
}
