//! Regexes into the narrow subset every grammar compiler reads the same way (see `schema::pattern`):
//! llama.cpp up to 2025-08 crashes on `(?:` and rejects `\d` and unanchored patterns, 2026-10 turns them
//! into "any string" with a warning; other compilers refuse look-around or Unicode classes. What no
//! grammar can express is removed, visibly. What the target does not enforce beside a pattern or a
//! known format ([`crate::schema::target::BesidePattern`]) is removed with a record.

use crate::schema::lookup::Lookup;
use crate::schema::pattern::{rewrite, Unsupported};
use crate::schema::target::BesidePattern;
use crate::schema::walk::post_order_cx;
use crate::schema::{Cx, Kind};
use serde_json::Value;

/// Passes that must run before this one in a profile's list: keywords are in their 2020-12 spelling.
pub const AFTER: &[&str] = &["dialect"];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["pattern", "format"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let max_rep = cx.opts.limits.max_repetition;
    let target = cx.target;
    post_order_cx(root, cx, &mut |node, path, cx| {
        let mut removed: Vec<(String, Value)> = Vec::new();
        if let Some(p) = node.at("pattern").cloned() {
            match p.as_str().map(|s| rewrite(s, max_rep)) {
                Some(Ok(r)) => {
                    if Some(r.pattern.as_str()) != p.as_str() {
                        cx.record(path, Kind::PatternRewritten, format!("{p} became {}", r.pattern));
                        node.insert("pattern".into(), Value::String(r.pattern));
                    }
                    if r.clamped {
                        cx.record(path, Kind::RepetitionClamped, format!("regex repetition over {max_rep} clamped"));
                    }
                }
                other => {
                    let why = match other {
                        Some(Err(Unsupported::Feature(w))) => format!("no grammar equivalent: {w}"),
                        Some(Err(Unsupported::Invalid(w))) => format!("invalid regex: {w}"),
                        _ => "not a string".to_string(),
                    };
                    node.remove("pattern");
                    cx.lost(node, path, Kind::PatternRemoved, &format!("pattern {p}"), format!("pattern {p} removed ({why})"));
                }
            }
        }
        // what the target compiles beside a pattern or a known format; the rest is ignored there
        let has_pattern = node.has("pattern");
        let has_format = node.at("format").and_then(Value::as_str).is_some_and(|f| target.formats.is_some_and(|l| l.contains(&f)));
        if (has_pattern || has_format) && target.beside_pattern != BesidePattern::Everything {
            let mut beside = vec!["minLength", "maxLength"];
            if has_pattern && target.beside_pattern == BesidePattern::Nothing {
                beside.push("format");
            }
            for k in beside {
                if let Some(v) = node.remove(k) {
                    removed.push((k.to_string(), v));
                }
            }
        }
        if !removed.is_empty() {
            let text: Vec<String> = removed.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            let text = text.join("; ");
            let what = if has_pattern { "pattern" } else { "format" };
            cx.lost(node, path, Kind::PatternRemoved, &text, format!("{text} removed: not enforced beside the {what}"));
        }
    });
}
