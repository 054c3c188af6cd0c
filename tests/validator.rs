//! The response path's validator (`schema::validate`, behind `tool_calls_invalid` and the `reject` 502)
//! judged by the JSON-Schema-Test-Suite: 2020-12, 2019-09 and draft-07 (`tests/corpus/jsts-*.jsonl`, the
//! suite as the `jsonschema` 4.26.0 sdist vendors it; `optional/` included).
//!
//! Its rule is "unknown means valid": a call it cannot judge is never called invalid. So:
//! - a valid instance is never judged invalid, with no exception;
//! - an invalid instance is judged invalid, except in the groups of `UNKNOWN`: the keywords the validator
//!   does not check, each with its reason, in this one place. An entry that excuses nothing fails too
//!   (the validator learned the keyword, or the suite moved: the list must say so).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // tests may fail loudly

use serde_json::Value;
use std::collections::BTreeMap;
use toolfit::schema::validate::validate;

/// Where an invalid instance may be judged valid (unknown): a suite file (its keyword), the groups in it
/// (none listed: all of them), and why the validator does not judge it.
const UNKNOWN: &[(&str, &[&str], &str)] = &[
    ("unevaluatedProperties.json", &[], UNEVALUATED),
    ("unevaluatedItems.json", &[], UNEVALUATED),
    ("not.json", &["collect annotations inside a 'not', even if collection is disabled"], UNEVALUATED),
    ("dynamicRef.json", &[], DYNAMIC),
    ("optional/dynamicRef.json", &[], DYNAMIC),
    ("recursiveRef.json", &[], DYNAMIC),
    ("refRemote.json", &[], REMOTE),
    ("optional/cross-draft.json", &[], REMOTE),
    ("defs.json", &["validate definition against metaschema"], REMOTE),
    ("definitions.json", &["validate definition against metaschema"], REMOTE),
    (
        "ref.json",
        &[
            "$id must be resolved against nearest parent, not just immediate parent",
            "$ref prevents a sibling $id from changing the base uri",
            "$ref with $recursiveAnchor",
            "Location-independent identifier with base URI change in subschema",
            "Location-independent identifier",
            "Recursive references between schemas",
            "Reference an anchor with a non-relative URI",
            "URN base URI with URN and JSON pointer ref",
            "URN base URI with URN and anchor ref",
            "URN ref with nested pointer ref",
            "order of evaluation: $id and $anchor and $ref",
            "order of evaluation: $id and $ref on nested schema",
            "order of evaluation: $id and $ref",
            "ref creates new scope when adjacent to keywords",
            "ref to else",
            "ref to if",
            "ref to then",
            "ref with absolute-path-reference",
            "refs with relative uris and defs",
            "relative refs with absolute uris and defs",
            "remote ref, containing refs itself",
            "simple URN base URI with $ref via the URN",
        ],
        IDS,
    ),
    ("anchor.json", &[], IDS),
    ("optional/anchor.json", &[], IDS),
    ("optional/id.json", &[], IDS),
    ("optional/unknownKeyword.json", &[], IDS),
    ("vocabulary.json", &[], METASCHEMA),
    ("optional/format-assertion.json", &[], METASCHEMA),
    ("pattern.json", &["pattern with Unicode property escape requires unicode mode"], REGEX),
    (
        "optional/ecmascript-regex.json",
        &[
            "ECMA 262 regex escapes control codes with \\c and lower letter",
            "ECMA 262 regex escapes control codes with \\c and upper letter",
            "pattern with non-ASCII digits",
            "patternProperties with non-ASCII digits",
            "patterns always use unicode semantics with pattern",
            "patterns always use unicode semantics with patternProperties",
        ],
        REGEX,
    ),
    ("optional/format/*", &[], FORMAT),
    ("optional/content.json", &[], CONTENT),
];
const UNEVALUATED: &str =
    "unevaluatedProperties/unevaluatedItems need every applicator's annotations; the validator does not collect them, so a node with one is unknown";
const DYNAMIC: &str = "$dynamicRef and $recursiveRef resolve through the dynamic scope, which the validator does not track: unknown";
const REMOTE: &str = "the schema refers to another document (a remote ref or a metaschema); toolfit never fetches: unknown";
const IDS: &str = "refs are resolved as JSON pointers into the document; by `$id` base URIs and `$anchor` names they are unknown";
const METASCHEMA: &str = "a custom metaschema can switch vocabularies off: a `$schema` the validator does not know leaves the whole call unknown";
const REGEX: &str = "regex-lite has no Unicode property classes (`\\p{..}`) and no `\\c` escapes: such a pattern is unknown";
const FORMAT: &str = "format is an annotation (2020-12's default): the validator never asserts it, so a malformed value is valid";
const CONTENT: &str = "contentEncoding, contentMediaType and contentSchema are annotations: never asserted";

/// The `UNKNOWN` entry that excuses an invalid instance judged valid in `file`'s group `group`.
fn excuse(file: &str, group: &str) -> Option<usize> {
    UNKNOWN.iter().position(|(f, groups, _)| {
        let in_file = f.strip_suffix('*').map_or(file == *f, |dir| file.starts_with(dir));
        in_file && (groups.is_empty() || groups.contains(&group))
    })
}

struct Outcome {
    judged: usize,
    /// invalid instances judged invalid
    caught: usize,
    valid_refused: Vec<String>,
    /// (file, group) -> invalid instances judged valid there
    invalid_passed: BTreeMap<(String, String), Vec<String>>,
}

fn judge(draft: &str) -> Outcome {
    let path = format!("{}/tests/corpus/jsts-{draft}.jsonl", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Outcome { judged: 0, caught: 0, valid_refused: Vec::new(), invalid_passed: BTreeMap::new() };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let g: Value = serde_json::from_str(line).expect("a suite line is JSON");
        let file = g["file"].as_str().expect("file").to_owned();
        let group = g["description"].as_str().expect("description").to_owned();
        let tests = g["tests"].as_array().expect("tests");
        for t in tests {
            out.judged += 1;
            let valid = t["valid"].as_bool().expect("valid");
            let what = format!("{draft} {file}: {}: {}: {}", g["description"], t["description"], t["data"]);
            match (valid, validate(&g["schema"], &t["data"])) {
                (true, Err(v)) => out.valid_refused.push(format!("{what} ({} at {})", v.reason, v.schema)),
                (false, Err(_)) => out.caught += 1,
                (false, Ok(())) => out.invalid_passed.entry((file.clone(), group.clone())).or_default().push(what),
                _ => {}
            }
        }
    }
    out
}

#[test]
fn the_test_suite_judges_the_validator() {
    let mut excused = vec![0usize; UNKNOWN.len()];
    let mut failures = Vec::new();
    for draft in ["2020-12", "2019-09", "draft7"] {
        let o = judge(draft);
        assert!(o.judged > 1000, "{draft}: only {} instances judged", o.judged);
        failures.extend(o.valid_refused.iter().map(|v| format!("valid judged invalid: {v}")));
        let mut passed = 0;
        for ((file, group), cases) in &o.invalid_passed {
            passed += cases.len();
            match excuse(file, group) {
                Some(n) => excused[n] += cases.len(),
                None => failures.extend(cases.iter().map(|c| format!("invalid judged valid: {c}"))),
            }
        }
        eprintln!(
            "{draft}: {} instances, {} valid judged invalid, {} invalid judged invalid, {passed} invalid judged valid",
            o.judged,
            o.valid_refused.len(),
            o.caught
        );
        assert!(o.caught > 300, "{draft}: only {} invalid instances judged invalid", o.caught);
    }
    for ((file, groups, _), n) in UNKNOWN.iter().zip(&excused) {
        if *n == 0 {
            failures.push(format!("UNKNOWN lists {file} {groups:?}, yet no invalid instance there was judged valid: remove it"));
        }
    }
    // the controls: the suite's invalid instances are mostly judged invalid, and a group the list does
    // not name is not excused
    assert_eq!(excuse("type.json", "integer type matches integers"), None);
    assert_eq!(excuse("ref.json", "root pointer ref"), None);
    assert!(excuse("optional/format/date.json", "validation of date strings").is_some());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
