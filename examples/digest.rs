//! `make digest`: one hash per profile (and per API for `convert`) over everything the engine writes
//! for the corpus: each MCP server's tools/list result through every profile, release and option set,
//! each API's request body (`convert`, strict and not), and each JSON-Schema-Test-Suite schema in both
//! contexts. Bodies, reports and name maps all go into the hash.
//!
//! A refactoring that must not change output runs it before and after and compares the lines; a
//! change that should change output shows which profiles it touched.

use std::collections::BTreeMap;
use std::hash::Hasher;
use toolfit::api::convert::{convert, To};
use toolfit::api::{rewrite_body, Format};
use toolfit::schema::{self, profile, Context, LlamaCpp};

struct Digests(BTreeMap<String, (xxhash_rust::xxh3::Xxh3, usize)>);

impl Digests {
    fn add(&mut self, key: &str, bytes: &[u8]) {
        let e = self.0.entry(key.to_string()).or_insert_with(|| (xxhash_rust::xxh3::Xxh3::new(), 0));
        e.0.write(bytes);
        e.0.write(&[0xff]);
        e.1 += 1;
    }
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for dir in ["tests/corpus/servers", "tests/corpus/synthetic", "tests/corpus/issues"] {
        let Ok(rd) = std::fs::read_dir(dir) else { continue };
        let mut names: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
        names.sort();
        for p in names {
            if let Ok(b) = std::fs::read(&p) {
                files.push((p.display().to_string(), b));
            }
        }
    }
    files
}

fn main() {
    let mut d = Digests(BTreeMap::new());
    let files = corpus();
    for (name, input) in &files {
        for p in profile::ALL {
            let base = p.default_options();
            let mut variants = vec![("default", base.clone())];
            variants.push(("no-promote", schema::Options { promote_to_description: false, ..base.clone() }));
            variants.push(("open-objects", schema::Options { open_objects: !base.open_objects, ..base.clone() }));
            for r in LlamaCpp::ALL {
                variants.push((r.name(), schema::Options { llama_cpp: *r, ..base.clone() }));
            }
            for (v, opts) in variants {
                let key = format!("profile {}", p.name);
                match rewrite_body(input, Format::McpTools, p, &opts) {
                    Ok(o) => {
                        d.add(&key, name.as_bytes());
                        d.add(&key, v.as_bytes());
                        d.add(&key, o.body.as_deref().unwrap_or(b"<unchanged>"));
                        d.add(&key, o.report.to_json().to_string().as_bytes());
                        d.add(&key, format!("{:?}", o.names).as_bytes());
                    }
                    Err(_) => d.add(&key, b"<skip>"),
                }
            }
        }
        for to in To::names() {
            let Some(t) = To::by_name(to) else { continue };
            for strict in [false, true] {
                let key = format!("convert {to}{}", if strict { " --strict-tools" } else { "" });
                match convert(input, t, strict, &schema::Options::default()) {
                    Ok((out, report)) => {
                        d.add(&key, &out);
                        d.add(&key, report.to_json().to_string().as_bytes());
                        // the tool list as a request body, read as each format and as `auto`
                        let body = [b"{\"tools\":".as_slice(), &out, b"}"].concat();
                        // every format and `auto`, from the code's one list
                        let formats = toolfit::api::format::ALL.iter().map(|d| d.format).chain([Format::Auto]);
                        for format in formats {
                            let f = format.name();
                            let key = format!("body {to} as {f}");
                            for p in [&profile::LLAMA_CPP, &profile::OPENAI_STRICT, &profile::GEMINI] {
                                match rewrite_body(&body, format, p, &p.default_options()) {
                                    Ok(o) => {
                                        d.add(&key, o.body.as_deref().unwrap_or(b"<unchanged>"));
                                        d.add(&key, o.report.to_json().to_string().as_bytes());
                                        d.add(&key, format!("{:?}", o.names).as_bytes());
                                    }
                                    Err(_) => d.add(&key, b"<skip>"),
                                }
                            }
                        }
                    }
                    Err(e) => d.add(&key, e.as_bytes()),
                }
            }
        }
    }
    let jsts = std::fs::read_to_string("tests/corpus/jsts-2020-12.jsonl").unwrap_or_default();
    for line in jsts.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let Some(s) = v.get("schema") else { continue };
        for p in profile::ALL {
            for (c, cname) in [(Context::Output, "output"), (Context::Tool, "tool")] {
                let mut s = s.clone();
                let out = schema::normalize_or_loose(&mut s, p, &p.default_options(), c, "t");
                let key = format!("jsts {} {cname}", p.name);
                d.add(&key, s.to_string().as_bytes());
                d.add(&key, out.report.to_json().to_string().as_bytes());
            }
        }
    }
    let mut all = xxhash_rust::xxh3::Xxh3::new();
    for (k, (h, n)) in &d.0 {
        let x = h.finish();
        all.write_u64(x);
        println!("{x:016x} {n:>6}  {k}");
    }
    println!("{:016x}         all ({} corpus files, {} JSTS schemas)", all.finish(), files.len(), jsts.lines().count());
}
