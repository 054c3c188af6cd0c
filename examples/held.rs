//! What a request body costs in memory while toolfit rewrites it, against its size: the figure behind
//! `filter::memory::REWRITE_FACTOR`. Each body of `make bench-envoy` (catalogs from tests/corpus, with
//! messages), for two profiles, goes through the core as a host drives it (the body handed over, the
//! rewrite, the body put back); a counting allocator reports the most bytes live at once above what
//! was live before, over the body's size. `cargo run --release --example held`
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use toolfit::filter::config::Config;
use toolfit::filter::exchange::Exchange;
use toolfit::filter::host::{Env, Headers, Level, RequestHost, RouteMeta};
use toolfit::filter::log::LogLimiter;
use toolfit::filter::memory::{Memory, REWRITE_FACTOR};
use toolfit::filter::stats::{Metrics, Series};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

struct Nothing;
impl Metrics for Nothing {
    fn add(&mut self, _: &Series, _: u64) {}
    fn record(&mut self, _: &Series, _: u64) {}
}

/// A host that takes the new body (kept until the request is done, as a proxy's buffer would).
#[derive(Default)]
struct Host(Option<Vec<u8>>);
impl RequestHost for Host {
    fn set_header(&mut self, _: &str, _: &str) -> bool {
        true
    }
    fn remove_header(&mut self, _: &str) -> bool {
        true
    }
    fn set_body(&mut self, _: usize, _: usize, b: &[u8]) -> bool {
        self.0 = Some(b.to_vec());
        true
    }
    fn reject(&mut self, _: u16, _: &[u8]) -> bool {
        true
    }
}

fn catalog(name: &str, n: usize) -> Vec<serde_json::Value> {
    let path = format!("{}/tests/corpus/servers/{name}", env!("CARGO_MANIFEST_DIR"));
    let v: serde_json::Value = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    let tools = v.get("tools").and_then(|t| t.as_array()).cloned().unwrap_or_default();
    tools
        .iter()
        .take(n)
        .map(|t| serde_json::json!({"type": "function", "function": {"name": t["name"], "description": t.get("description").cloned().unwrap_or_default(), "parameters": t["inputSchema"]}}))
        .collect()
}

fn body(tools: Vec<serde_json::Value>, message_bytes: usize) -> Vec<u8> {
    let msgs: Vec<_> = (0..(message_bytes / 1030).max(1)).map(|_| serde_json::json!({"role": "user", "content": "x".repeat(1000)})).collect();
    serde_json::to_vec(&serde_json::json!({"model": "m", "messages": msgs, "tools": tools})).unwrap_or_default()
}

fn now() -> u64 {
    0
}

fn main() {
    let cases = [
        ("small", body(catalog("filesystem.json", 5), 2000)),
        ("typical", body(catalog("azure-all.json", 40), 200_000)),
        ("conversation", body(catalog("azure-all.json", 40), 1_000_000)),
        ("huge", body(catalog("twilio-all-services.json", usize::MAX), 0)),
        ("rewritten", body(catalog("atlassian.json", 40), 200_000)),
    ];
    println!("peak bytes live while one body is read and rewritten, over its size (REWRITE_FACTOR: {REWRITE_FACTOR})");
    println!("{:<14} {:>9} {:>14} {:>14}", "case", "KB", "llama-cpp", "openai-strict");
    let mut worst: f64 = 0.0;
    for (name, b) in &cases {
        let mut row = format!("{name:<14} {:>9}", b.len() / 1024);
        for profile in ["llama-cpp", "openai-strict"] {
            let config = Config::parse(format!(r#"{{"profile": "{profile}", "cache_bytes": 0}}"#).as_bytes()).unwrap_or_default();
            let (mut metrics, mut logs, memory) = (Nothing, LogLimiter::default(), Memory::new());
            let mut log = |_: Level, _: &str| {};
            let mut env = Env { config: &config, metrics: &mut metrics, logs: &mut logs, cache: None, memory: &memory, now_us: now, log: &mut log };
            let h = Headers { method: "POST", path: "/v1/chat/completions", content_type: Some("application/json"), ..Headers::default() };
            let mut x = Exchange::default();
            let mut host = Host::default();
            let _ = x.request_headers(&mut env, &h, Some("chat"), &RouteMeta::default(), &mut host);
            let before = LIVE.load(Ordering::Relaxed);
            PEAK.store(before, Ordering::Relaxed);
            // the host's copy of the body is made inside, as the Wasm shim reads it
            let _ = x.request_end(&mut env, |_| Some(b.clone()), b.len(), &mut host);
            let factor = (PEAK.load(Ordering::Relaxed) - before) as f64 / b.len() as f64;
            worst = worst.max(factor);
            row.push_str(&format!(" {factor:>13.2}x"));
        }
        println!("{row}");
    }
    println!("worst: {worst:.2}x ({})", if worst <= REWRITE_FACTOR as f64 { "within REWRITE_FACTOR" } else { "PAST REWRITE_FACTOR" });
}
