//! Golden files for `toolfit convert`: one MCP tools/list result (a namespaced name, `default` values, a
//! nullable enum, a `$ref` with a format, a tool without parameters, a recursive type) turned into every
//! API's tool list. A change in any converter shows as a diff against `tests/golden/convert/`; run with
//! `TOOLFIT_BLESS=1` to accept it after reading the diff.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use serde_json::Value;
use std::process::Command;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/convert");

fn convert(to: &str, strict: bool) -> (Value, Value) {
    let input = format!("{DIR}/input.json");
    let report = std::env::temp_dir().join(format!("toolfit-convert-{to}-{strict}-{}.json", std::process::id()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolfit"));
    cmd.args(["convert", "--to", to, "--report", report.to_str().unwrap(), &input]);
    if strict {
        cmd.arg("--strict-tools");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{to}: {}", String::from_utf8_lossy(&out.stderr));
    let rep: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(report);
    (serde_json::from_slice(&out.stdout).unwrap(), rep)
}

#[test]
fn every_target_matches_its_golden_file() {
    let before = std::fs::read(format!("{DIR}/input.json")).unwrap();
    let input: Value = serde_json::from_slice(&before).unwrap();
    let names: Vec<&str> = input["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    let cases = [
        ("openai", false),
        ("openai", true),
        ("openai-responses", false),
        ("openai-responses", true),
        ("anthropic", false),
        ("anthropic", true),
        ("gemini", false),
        ("gemini-json", false),
        ("cohere", false),
        ("ollama", false),
        ("mcp", false),
    ];
    for (to, strict) in cases {
        let (out, report) = convert(to, strict);
        let file = format!("{DIR}/{to}{}.json", if strict { "-strict" } else { "" });
        let got = serde_json::to_string_pretty(&serde_json::json!({"tools": out, "counters": report["counters"]})).unwrap() + "\n";
        if std::env::var_os("TOOLFIT_BLESS").is_some() {
            std::fs::write(&file, &got).unwrap();
        }
        let want = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e} (TOOLFIT_BLESS=1 writes it)"));
        assert_eq!(got, want, "{file} differs (TOOLFIT_BLESS=1 to accept)");
        // no tool dropped, none renamed but where the API refuses the name (then under the name the
        // report says), in order
        let text = out.to_string();
        let sent_as = |n: &str| -> String {
            let recs = report["records"].as_array().cloned().unwrap_or_default();
            let r = recs.iter().find(|r| r["kind"] == "name_mapped" && r["tool"] == n);
            r.and_then(|r| r["detail"].as_str()?.strip_prefix("sent as \"")?.split('"').next().map(str::to_string)).unwrap_or_else(|| n.to_string())
        };
        let mut at = 0;
        for n in &names {
            let sent = sent_as(n);
            if to != "mcp" && to != "ollama" && to != "cohere" && !to.starts_with("gemini") {
                assert!(
                    sent.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') && sent.len() <= 64,
                    "{to}: {sent} is not a name the API takes"
                );
            }
            let i = text[at..].find(&format!("\"name\":\"{sent}\"")).map(|i| i + at);
            assert!(i.is_some(), "{to}: tool {n} missing or out of order");
            at = i.unwrap();
        }
        // a default value the API refuses stays readable in the description
        // (where the API refuses `default`: OpenAI strict mode, Cohere's and Gemini's JSON Schema lists)
        if matches!(to, "cohere" | "gemini-json") || (strict && to != "anthropic") {
            assert!(!text.contains("\"default\""), "{to}: default left in");
            assert!(text.contains("(Default: [].)"), "{to}: default not in a description");
        }
    }
    assert_eq!(std::fs::read(format!("{DIR}/input.json")).unwrap(), before, "the input changed");
}

#[test]
fn input_that_is_not_a_tools_list_is_refused() {
    for (text, why) in [("{\"x\": 1}", "tools/list"), ("[{\"inputSchema\": {}}]", "no name"), ("{", "not JSON")] {
        let path = std::env::temp_dir().join(format!("toolfit-convert-bad-{}-{}.json", why.len(), std::process::id()));
        std::fs::write(&path, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_toolfit")).args(["convert", "--to", "openai", path.to_str().unwrap()]).output().unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(why), "{text}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
