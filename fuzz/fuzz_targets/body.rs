//! Arbitrary bytes as a request body, every format, every profile. Invariants: no panic; a rewritten
//! body is JSON and rewriting it again changes nothing; an untouched body is reported as untouched
//! (the filter then forwards the original bytes); the output stays within a bound of the input; a run
//! through the rewrite cache (one cache for the whole fuzzing process, so entries from earlier inputs
//! are there) gives exactly what a run without it gives.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::Mutex;
use toolfit::api::cache::SiteCache;
use toolfit::api::{rewrite_body, rewrite_body_cached, Format};
use toolfit::schema::{profile, Options};

const FORMATS: &[&str] = &["auto", "openai-chat", "openai-responses", "anthropic", "ollama", "llama-completion", "gemini", "cohere", "mcp-tools"];

static CACHE: Mutex<Option<SiteCache>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(|| SiteCache::new(8 << 20));
    for f in FORMATS {
        let Some(format) = Format::by_name(f) else { continue };
        for p in profile::ALL {
            let plain = rewrite_body(data, format, p, &Options::default());
            let cached = rewrite_body_cached(data, format, p, &Options::default(), Some(cache));
            match (&plain, &cached) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.body, b.body, "cache changed the body ({f}, {})", p.name);
                    assert_eq!(a.report.counters, b.report.counters, "cache changed the counters ({f}, {})", p.name);
                    assert_eq!((a.tools, a.schemas_changed), (b.tools, b.schemas_changed));
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                _ => panic!("cache changed the outcome ({f}, {})", p.name),
            }
            let Ok(out) = plain else { continue };
            let Some(new) = out.body else { continue };
            assert!(serde_json::from_slice::<serde_json::Value>(&new).is_ok(), "rewritten body is not JSON");
            assert!(new.len() <= 64 * data.len() + 16_384);
            let again = rewrite_body(&new, format, p, &Options::default()).expect("a rewritten body is readable");
            assert!(again.body.is_none(), "second rewrite changed the body ({f}, {})", p.name);
        }
    }
});
