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
