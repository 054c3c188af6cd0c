//! Patterns in the dialect the target compiles them with ([`crate::schema::target::Regex`]): for
//! Python's `re` (OpenAI), every ECMA-262 `pattern` translated with the same meaning
//! ([`crate::schema::python_re`]); one `re` cannot say is removed, visibly, since one pattern `re`
//! refuses fails the whole request.

use crate::schema::lookup::Lookup;
use crate::schema::pattern::Unsupported;
use crate::schema::python_re::{self, LookAround};
use crate::schema::target::Regex;
use crate::schema::walk::post_order_cx;
use crate::schema::{Cx, Kind};
use serde_json::Value;

/// Passes that must run before this one in a profile's list: none (`pattern` is spelled alike in every
/// draft). Where a profile also writes the grammar subset (`patterns`), that runs first, since its
/// parser reads ECMA-262, not `re` (the profile tests hold every list to it).
pub const AFTER: &[&str] = &[];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["pattern"];

/// The longest a translation may grow a pattern to (or twice its length, if longer). Every written-out Unicode class costs the request
/// that many bytes (`\\p{L}` is about 6 KB); past this the pattern is removed and said in the
/// description in its original words, which is all a backend that does not enforce it reads.
pub const MAX_WRITTEN: usize = 2_048;

pub fn run(root: &mut Value, cx: &mut Cx) {
    let look = match cx.target.regex {
        Regex::Ecma => return,
        Regex::Python { look_around: true } => LookAround::Taken,
        Regex::Python { look_around: false } => LookAround::Refused,
    };
    post_order_cx(root, cx, &mut |node, path, cx| {
        let Some(p) = node.at("pattern").and_then(Value::as_str).map(str::to_string) else { return };
        match python_re::translate_with(&p, look) {
            Ok(out) if out == p => {}
            Ok(out) if out.len() > MAX_WRITTEN.max(2 * p.len()) => {
                node.remove("pattern");
                let why = format!("written out for Python's re it is {} bytes, past {MAX_WRITTEN}", out.len());
                cx.lost(node, path, Kind::PatternRemoved, &format!("pattern {p}"), format!("pattern {p:?} removed ({why})"));
            }
            Ok(out) => {
                cx.record(path, Kind::PatternRewritten, format!("{p:?} in Python's re: {out:?}"));
                node.insert("pattern".into(), Value::String(out));
            }
            Err(e) => {
                let why = match e {
                    Unsupported::Feature(w) => format!("Python's re cannot say it: {w}"),
                    Unsupported::Invalid(w) => format!("invalid regex: {w}"),
                };
                node.remove("pattern");
                cx.lost(node, path, Kind::PatternRemoved, &format!("pattern {p}"), format!("pattern {p:?} removed ({why})"));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use crate::schema::{normalize, profile, Context, Kind, Options};
    use serde_json::{json, Value};

    fn openai(pattern: &str) -> (Value, crate::schema::Report) {
        let mut v = json!({"type": "object", "properties": {"a": {"type": "string", "pattern": pattern}}});
        let out = normalize(&mut v, &profile::OPENAI, &Options::default(), Context::Tool, "t");
        (v["properties"]["a"].clone(), out.report)
    }

    #[test]
    fn a_pattern_is_translated_unless_writing_it_out_costs_too_much() {
        let (a, r) = openai("^\\p{Cc}\\d+$");
        assert!(a["pattern"].as_str().is_some_and(|p| p.starts_with("^[\\x00-\\x1f\\x7f-\\x9f][0-9]+") && !p.contains("\\p")), "{a}");
        assert_eq!((r.counters.get(&Kind::PatternRewritten), r.counters.get(&Kind::PatternRemoved)), (Some(&1), None));
        // \p{L} written out is about 6 KB in every request: removed, said in the description as written
        let (a, r) = openai("^\\p{L}+$");
        assert!(a.get("pattern").is_none(), "{a}");
        assert!(a["description"].as_str().is_some_and(|d| d.contains("^\\p{L}+$")), "{a}");
        assert_eq!(r.counters.get(&Kind::PatternRemoved), Some(&1));
        // a long pattern needing a small change keeps it
        let long = format!("^{}$", "ab".repeat(1500));
        let (a, _) = openai(&long);
        assert!(a["pattern"].as_str().is_some_and(|p| p.len() > 3000), "kept");
        // a fixed point: toolfit on its own output changes nothing
        let mut again = json!({"type": "object", "properties": {"a": openai("^\\p{Cc}\\d+$").0}});
        assert!(!normalize(&mut again, &profile::OPENAI, &Options::default(), Context::Tool, "t").changed);
    }
}
