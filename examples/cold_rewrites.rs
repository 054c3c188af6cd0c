//! N cold rewrites (no cache) of each request body named on the command line, with the llama-cpp
//! profile: a fixed amount of work for `valgrind --tool=callgrind`, whose instruction count does not
//! move with the machine's load the way a timing does. docs/performance.md names the
//! catalogs and the figures:
//!
//! `N=3 valgrind --tool=callgrind target/release/examples/cold_rewrites BODY.json...`
use toolfit::api::{rewrite_body, Format};
use toolfit::schema::profile::LLAMA_CPP;

fn main() {
    let n: usize = std::env::var("N").ok().and_then(|n| n.parse().ok()).unwrap_or(3);
    let bodies: Vec<Vec<u8>> = std::env::args().skip(1).filter_map(|p| std::fs::read(p).ok()).collect();
    let opts = LLAMA_CPP.default_options();
    for _ in 0..n {
        for b in &bodies {
            std::hint::black_box(rewrite_body(b, Format::Auto, &LLAMA_CPP, &opts).ok());
        }
    }
}
