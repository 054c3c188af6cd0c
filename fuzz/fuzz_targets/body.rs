//! Arbitrary bytes as a request body, every format, every profile. Invariants: no panic; a rewritten
//! body is JSON and rewriting it again changes nothing; an untouched body is reported as untouched
//! (the filter then forwards the original bytes); the output stays within a bound of the input.
#![no_main]
use libfuzzer_sys::fuzz_target;
use toolfit::api::{rewrite_body, Format};
use toolfit::schema::{profile, Options};

const FORMATS: &[&str] = &["auto", "openai-chat", "openai-responses", "anthropic", "ollama", "llama-completion", "mcp-tools"];

fuzz_target!(|data: &[u8]| {
    for f in FORMATS {
        let Some(format) = Format::by_name(f) else { continue };
        for p in profile::ALL {
            let Ok(out) = rewrite_body(data, format, p, &Options::default()) else { continue };
            let Some(new) = out.body else { continue };
            assert!(serde_json::from_slice::<serde_json::Value>(&new).is_ok(), "rewritten body is not JSON");
            assert!(new.len() <= 64 * data.len() + 16_384);
            let again = rewrite_body(&new, format, p, &Options::default()).expect("a rewritten body is readable");
            assert!(again.body.is_none(), "second rewrite changed the body ({f}, {})", p.name);
        }
    }
});
