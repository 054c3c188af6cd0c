//! Engine throughput per tools/list catalog (native): `cargo bench --bench engine -- [--profile NAME]
//! [--format NAME] FILE...` (default: the llama-cpp profile, the body's format detected).
//! Prints one JSON line per catalog: toolfit's cold rewrite (parse, rewrite, serialise the changed
//! schemas), its warm rewrite (every schema from the rewrite cache) and, as the floor for any tree rewrite, serde_json parsing and re-serialising the same bytes.
//! Figures are the best of repeated runs (at least 0.3 s per measurement). `bench/bench_engine.py` puts
//! them beside mcp-schema-normalize and prints ratios.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use toolfit::api::cache::SiteCache;
use toolfit::api::{rewrite_body, rewrite_body_cached, Format};
use toolfit::schema::profile::{Profile, LLAMA_CPP};

/// Counts heap bytes in use and their high-water mark: the memory one rewrite needs on top of the body.
struct Counting;
static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = IN_USE.fetch_add(l.size(), Relaxed) + l.size();
        PEAK.fetch_max(now, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        IN_USE.fetch_sub(l.size(), Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak heap bytes above what was in use before, during one call of `f`.
fn peak_during(f: impl FnOnce()) -> usize {
    let base = IN_USE.load(Relaxed);
    PEAK.store(base, Relaxed);
    f();
    PEAK.load(Relaxed).saturating_sub(base)
}

mod common;
use common::best_of;

/// The value after `--NAME` on the command line.
fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let profile: &Profile = match flag(&args, "--profile").map(|n| (Profile::by_name(&n), n)) {
        Some((Some(p), _)) => p,
        Some((None, name)) => return eprintln!("no profile {name}"),
        None => &LLAMA_CPP,
    };
    let format = match flag(&args, "--format").map(|n| (Format::by_name(&n), n)) {
        Some((Some(f), _)) => f,
        Some((None, name)) => return eprintln!("no format {name}"),
        None => Format::Auto,
    };
    let opts = profile.default_options();
    let values: Vec<&String> = ["--profile", "--format"].iter().filter_map(|f| args.iter().position(|a| a == f).and_then(|i| args.get(i + 1))).collect();
    for path in args.iter().filter(|a| !a.starts_with("--") && !values.contains(a)) {
        let Ok(body) = std::fs::read(path) else {
            eprintln!("cannot read {path}");
            continue;
        };
        // one cold rewrite's memory: the parsed schemas, their rewrites and the output body
        let peak = peak_during(|| {
            let _ = black_box(rewrite_body(black_box(&body), format, profile, &opts));
        });
        let toolfit = best_of(|| {
            let _ = black_box(rewrite_body(black_box(&body), format, profile, &opts));
        });
        // warm: the catalog was seen before; every schema comes from the cache (the filter's default
        // 8 MiB, or CACHE_MIB)
        let mut cache = SiteCache::new(std::env::var("CACHE_MIB").ok().and_then(|m| m.parse().ok()).unwrap_or(8) << 20);
        let _ = rewrite_body_cached(&body, format, profile, &opts, Some(&mut cache));
        let warm = best_of(|| {
            let _ = black_box(rewrite_body_cached(black_box(&body), format, profile, &opts, Some(&mut cache)));
        });
        let serde = best_of(|| {
            let v: Result<serde_json::Value, _> = serde_json::from_slice(black_box(&body));
            let _ = black_box(v.map(|v| serde_json::to_vec(&v)));
        });
        println!(
            "{{\"file\":{:?},\"bytes\":{},\"toolfit_seconds\":{toolfit:e},\"warm_seconds\":{warm:e},\"serde_seconds\":{serde:e},\"peak_bytes\":{peak}}}",
            path,
            body.len()
        );
    }
}
