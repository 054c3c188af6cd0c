//! Engine throughput per tools/list catalog (native): `cargo bench --bench engine -- FILE...`.
//! Prints one JSON line per catalog: toolfit's cold rewrite (parse, rewrite, serialise the changed
//! schemas), its warm rewrite (every schema from the rewrite cache) and, as the floor for any tree rewrite, serde_json parsing and re-serialising the same bytes.
//! Figures are the best of repeated runs (at least 0.3 s per measurement). `tests/bench_engine.py` puts
//! them beside mcp-schema-normalize and prints ratios.

use std::hint::black_box;
use std::time::{Duration, Instant};
use toolfit::api::cache::SiteCache;
use toolfit::api::{rewrite_body, rewrite_body_cached, Format};
use toolfit::schema::profile::LLAMA_CPP;

fn best_of(mut f: impl FnMut()) -> f64 {
    let (mut best, mut n, start) = (Duration::MAX, 0u32, Instant::now());
    while n < 5 || start.elapsed() < Duration::from_millis(300) {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed());
        n += 1;
    }
    best.as_secs_f64()
}

fn main() {
    let opts = LLAMA_CPP.default_options();
    for path in std::env::args().skip(1).filter(|a| !a.starts_with("--")) {
        let Ok(body) = std::fs::read(&path) else {
            eprintln!("cannot read {path}");
            continue;
        };
        let toolfit = best_of(|| {
            let _ = black_box(rewrite_body(black_box(&body), Format::Auto, &LLAMA_CPP, &opts));
        });
        // warm: the catalog was seen before; every schema comes from the cache
        let mut cache = SiteCache::new(256 << 20);
        let _ = rewrite_body_cached(&body, Format::Auto, &LLAMA_CPP, &opts, Some(&mut cache));
        let warm = best_of(|| {
            let _ = black_box(rewrite_body_cached(black_box(&body), Format::Auto, &LLAMA_CPP, &opts, Some(&mut cache)));
        });
        let serde = best_of(|| {
            let v: Result<serde_json::Value, _> = serde_json::from_slice(black_box(&body));
            let _ = black_box(v.map(|v| serde_json::to_vec(&v)));
        });
        println!(
            "{{\"file\":{:?},\"bytes\":{},\"toolfit_seconds\":{toolfit:e},\"warm_seconds\":{warm:e},\"serde_seconds\":{serde:e}}}",
            path,
            body.len()
        );
    }
}
