//! `toolfit mcp [--profile P] [--config FILE] [--stats FILE] -- <server command...>`: the MCP leg for a
//! stdio server, the kind an agent CLI starts itself (`command`/`args` in its MCP configuration), which
//! no gateway sees. The server runs as toolfit's child; its messages and the client's go through line
//! by line (newline-delimited JSON-RPC), each direction on its own thread and in order, a list
//! rewritten for the client that `initialize` (or `_meta`) names, a call given back its original name
//! (`toolfit::filter::mcp::stdio`). The server's stderr is the client's; toolfit's exit status is the
//! server's.
//!
//! Bounds as on a gateway: a line longer than `max_body_bytes` goes on in pieces as it comes, unread
//! and counted; a line that is not JSON-RPC goes as it came; toolfit never waits for more than the
//! next line, so neither side waits on it.

use clap::{Arg, ArgAction, ArgMatches, Command};
use std::io::{ErrorKind, Read, Write};
use std::process::{Child, ExitCode, ExitStatus, Stdio as Piped};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use toolfit::filter::config::Config;
use toolfit::filter::host::{Env, Level};
use toolfit::filter::log::LogLimiter;
use toolfit::filter::mcp::stdio::{Stdio, ROUTE};
use toolfit::filter::memory::Memory;
use toolfit::filter::prometheus::Registry;
use toolfit::filter::stats::{self, Stat};
use toolfit::schema::Profile;

/// A signal toolfit was sent that the server must get too (0: none yet).
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::Relaxed);
}

/// SIGTERM and SIGHUP are passed on to the server (a client stops its stdio server with SIGTERM; the
/// server would otherwise learn of it only from its closed stdin, which some servers ignore). SIGINT
/// from a terminal reaches the whole process group, the server too, so it is left as it is.
fn pass_signals_on() {
    for sig in [libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores into an atomic, which is async-signal-safe
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// How long the server's last words may take to arrive after it exits (a child it left holding its
/// stdout cannot keep toolfit running longer).
const DRAIN: Duration = Duration::from_secs(2);

pub fn command() -> Command {
    Command::new("mcp")
        .about("Run a stdio MCP server as a child, rewriting its tools/list for the client's profile (the MCP leg without a gateway)")
        .arg(
            Arg::new("profile")
                .long("profile")
                .value_name("PROFILE")
                .value_parser(super::profile_names())
                .help("the client's profile, whatever its initialize says (default: from the clients map by clientInfo.name, else the route's)"),
        )
        .arg(
            Arg::new("config")
                .long("config")
                .value_name("FILE")
                .help("a plugin configuration (JSON, as Envoy's): its first format: mcp route's clients, unfit, declare_2020_12 and mode, and max_body_bytes"),
        )
        .arg(
            Arg::new("stats")
                .long("stats")
                .value_name("FILE")
                .help("write the counters to FILE in Prometheus' text format (node_exporter's textfile collector reads it) after each list and at exit"),
        )
        .arg(Arg::new("quiet").long("quiet").action(ArgAction::SetTrue).help("no summary line on stderr at exit"))
        .arg(Arg::new("server").value_name("COMMAND").num_args(1..).required(true).last(true).help("the server's command and its arguments, after --"))
}

/// What both directions share.
struct Shared {
    config: Config,
    session: Mutex<Stdio>,
    registry: Registry,
    memory: Arc<Memory>,
    stats: Option<String>,
}

impl Shared {
    /// Runs `f` with an [`Env`] of this session (a log limiter and rewrite cache of the thread's own).
    fn with_env<T>(&self, logs: &mut LogLimiter, cache: &mut Option<toolfit::api::cache::SiteCache>, f: impl FnOnce(&mut Env) -> T) -> T {
        let mut metrics = &self.registry;
        let mut log = |level: Level, text: &str| eprintln!("toolfit mcp: {}: {text}", if level == Level::Warn { "warn" } else { "info" });
        let mut env = Env { config: &self.config, metrics: &mut metrics, logs, cache: cache.as_mut(), memory: &self.memory, now_us, log: &mut log };
        f(&mut env)
    }

    fn profile(&self) -> &'static str {
        self.session.lock().map_or("none", |s| s.client().0)
    }

    /// A line past `max_body_bytes` went on unread.
    fn too_large(&self) {
        stats::count(&mut &self.registry, ROUTE, self.profile(), Stat::SkippedTooLarge, 1);
    }

    /// The counters in Prometheus' text format, written whole (a reader never sees half a file).
    fn write_stats(&self) {
        let Some(path) = &self.stats else { return };
        let part = format!("{path}.part");
        if let Err(e) = std::fs::write(&part, self.registry.render()).and_then(|_| std::fs::rename(&part, path)) {
            eprintln!("toolfit mcp: cannot write --stats {path}: {e}");
        }
    }

    fn summary(&self) -> String {
        let (profile, client) = self.session.lock().map_or(("none", String::new()), |s| (s.client().0, s.client().1.to_string()));
        let n = |s: Stat| self.registry.total(&format!("toolfit_{}", s.name()));
        format!(
            "toolfit mcp: client {client} (profile {profile}): {} messages from the client, {} tools listed, {} changes that lose meaning, {} calls given their original names, {} lines too large to read, {} errors of toolfit's own (every one forwarded as it came)",
            n(Stat::RequestsSeen),
            n(Stat::McpToolsListed),
            n(Stat::LossyTotal),
            n(Stat::NamesRestored),
            n(Stat::SkippedTooLarge),
            n(Stat::InternalErrors)
        )
    }
}

fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// The configuration `--config` names (defaults without it); the error names the file.
fn config_of(a: &ArgMatches) -> Result<Config, String> {
    let Some(path) = a.get_one::<String>("config") else { return Ok(Config::default()) };
    let bytes = std::fs::read(path).map_err(|e| format!("--config {path}: {e}"))?;
    Config::parse(&bytes).map_err(|e| format!("--config {path}: {e}"))
}

pub fn run(a: &ArgMatches) -> ExitCode {
    let argv: Vec<&String> = a.get_many::<String>("server").map(Iterator::collect).unwrap_or_default();
    let Some((program, args)) = argv.split_first() else { return super::fail(2, "mcp: no server command after --") };
    let config = match config_of(a) {
        Ok(c) => c,
        Err(e) => return super::fail(2, &e),
    };
    let profile = a.get_one::<String>("profile").and_then(|p| Profile::by_name(p));
    let mut child = match std::process::Command::new(program).args(args).stdin(Piped::piped()).stdout(Piped::piped()).stderr(Piped::inherit()).spawn() {
        Ok(c) => c,
        Err(e) => {
            // as a shell says it: 127 not found, 126 found but not run
            return super::fail(if e.kind() == ErrorKind::NotFound { 127 } else { 126 }, &format!("mcp: cannot start {program:?}: {e}"));
        }
    };
    let (Some(to_server), Some(from_server)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        return super::fail(126, "mcp: the server's pipes were not made");
    };
    pass_signals_on();
    let shared = Arc::new(Shared {
        session: Mutex::new(Stdio::new(&config, profile, program)),
        config,
        registry: Registry::default(),
        memory: Memory::new(),
        stats: a.get_one::<String>("stats").cloned(),
    });
    let s = shared.clone();
    // the client's messages: when it closes stdin, so does toolfit the server's
    std::thread::spawn(move || {
        let mut to_server = to_server;
        let _ = pump(std::io::stdin().lock(), &mut to_server, &s, Direction::FromClient);
    });
    let (done, ended) = mpsc::channel();
    let s = shared.clone();
    std::thread::spawn(move || {
        let out = std::io::stdout();
        let r = pump(from_server, &mut out.lock(), &s, Direction::FromServer);
        let _ = done.send(r.is_ok());
    });
    let status = wait(&mut child, &ended);
    shared.write_stats();
    if !a.get_flag("quiet") {
        eprintln!("{}", shared.summary());
    }
    ExitCode::from(exit_code(status))
}

/// Waits for the server to exit (ended early: the client stopped reading, and the server is stopped),
/// then for what it wrote before to go out.
fn wait(child: &mut Child, ended: &mpsc::Receiver<bool>) -> Option<ExitStatus> {
    let mut read_all = false;
    let mut passed_on = 0;
    loop {
        let sig = SIGNALLED.load(Ordering::Relaxed);
        if sig != 0 && sig != passed_on {
            passed_on = sig;
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) on the child's own pid, which it keeps until it is waited for
                unsafe {
                    libc::kill(pid, sig);
                }
            }
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                if !read_all {
                    let _ = ended.recv_timeout(DRAIN);
                }
                return Some(status);
            }
            Ok(None) => {}
            Err(_) => return None,
        }
        if read_all {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        match ended.recv_timeout(Duration::from_millis(50)) {
            // the client is gone: nobody reads the server
            Ok(false) => {
                let _ = child.kill();
                return child.wait().ok();
            }
            Ok(true) | Err(mpsc::RecvTimeoutError::Disconnected) => read_all = true,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

/// The server's exit status as a shell gives it (a signal: 128 + its number).
fn exit_code(status: Option<ExitStatus>) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => u8::try_from(c & 0xff).unwrap_or(1),
            (None, Some(sig)) => u8::try_from(128 + (sig & 0x7f)).unwrap_or(1),
            (None, None) => 1,
        },
        None => 1,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    FromClient,
    FromServer,
}

/// Copies `input` to `output` line by line, each whole line of at most `max_body_bytes` read (and
/// rewritten where the leg says), its line ending kept; a longer line goes on in pieces as they come,
/// unread. Ends at the input's end (a last line without its newline goes as it came) or the first
/// error writing.
fn pump(mut input: impl Read, output: &mut impl Write, shared: &Shared, dir: Direction) -> std::io::Result<()> {
    let max = shared.config.max_body_bytes;
    let mut logs = LogLimiter::default();
    let mut cache = if dir == Direction::FromServer { shared.config.new_cache() } else { None };
    let mut buf = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::new();
    // inside a line too long to hold
    let mut passing = false;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut chunk = buf.get(..n).unwrap_or_default();
        while !chunk.is_empty() {
            let Some(at) = chunk.iter().position(|b| *b == b'\n') else {
                if passing {
                    output.write_all(chunk)?;
                } else {
                    line.extend_from_slice(chunk);
                    if line.len() > max {
                        shared.too_large();
                        // a call's name sits in its start: given back there, the rest goes on unread
                        let start = if dir == Direction::FromClient {
                            shared.with_env(&mut logs, &mut cache, |env| shared.session.lock().ok()?.from_client_start(env, &line))
                        } else {
                            None
                        };
                        output.write_all(start.as_deref().unwrap_or(&line))?;
                        line.clear();
                        passing = true;
                    }
                }
                break;
            };
            let (head, rest) = chunk.split_at(at + 1);
            chunk = rest;
            if passing {
                output.write_all(head)?;
                passing = false;
                continue;
            }
            line.extend_from_slice(head);
            let out = shared.with_env(&mut logs, &mut cache, |env| one_line(shared, env, &line, dir));
            output.write_all(out.as_deref().unwrap_or(&line))?;
            line.clear();
        }
        output.flush()?;
    }
    output.write_all(&line)?;
    output.flush()
}

/// One whole line (its newline included): the line that goes on instead, when it changed.
fn one_line(shared: &Shared, env: &mut Env, line: &[u8], dir: Direction) -> Option<Vec<u8>> {
    let ending = if line.ends_with(b"\r\n") { 2 } else { 1 };
    let body = line.get(..line.len().saturating_sub(ending))?;
    let end = line.get(body.len()..)?;
    let new = match dir {
        Direction::FromClient => shared.session.lock().ok()?.from_client(env, body)?,
        Direction::FromServer => {
            // the lock is held to see whether the line answers a list, not while it is rewritten
            let answer = shared.session.lock().ok()?.answers(body)?;
            let new = answer.rewrite(env, body);
            shared.write_stats();
            new?
        }
    };
    Some([new.as_slice(), end].concat())
}
