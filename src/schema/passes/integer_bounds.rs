//! Numeric bounds, as far as the target enforces them ([`crate::schema::target::Numbers`]).
//! - `Integers` (llama.cpp): enforced on integers only and read differently across releases (up to
//!   2025-08 fractional bounds are truncated and bounds past 32 bits overflow; 2026-10 ignores
//!   `exclusiveMinimum` beside `minimum`). Integer bounds become whole, inclusive `minimum`/`maximum`
//!   within the range every served release enforces (32 bits, or 2^53 - 1 when the route serves
//!   2026-10 on); bounds on non-integer numbers are removed visibly.
//! - `Unenforced`: every bound is removed visibly.
//! - `All`: nothing to do (an empty integer range still becomes "never", which is exact).

use super::primary_type;
use crate::schema::lookup::Lookup;
use crate::schema::merge::never_map;
use crate::schema::target::Numbers;
use crate::schema::types::Types;
use crate::schema::walk::post_order_cx;
use crate::schema::{number_text, Cx, Kind};
use serde_json::{Map, Value};

const KEYS: [&str; 4] = ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"];
/// Largest bound magnitude releases up to 2025-08 enforce.
const LIMIT_32: f64 = 2_147_483_647.0;
/// Largest bound magnitude written when the route serves 2026-10 on (which enforces at least 2^62):
/// the largest integer a JSON number read as f64 holds exactly.
const LIMIT_53: f64 = 9_007_199_254_740_991.0;

/// Passes that must run before this one in a profile's list: exclusive bounds are numbers, not draft-04 booleans.
pub const AFTER: &[&str] = &["dialect"];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &KEYS;

pub fn run(root: &mut Value, cx: &mut Cx) {
    let numbers = cx.target.numbers;
    let limit = match numbers {
        Numbers::Integers if cx.release().is_some_and(|r| r.wide_integer_bounds()) => LIMIT_53,
        Numbers::Integers => LIMIT_32,
        Numbers::All | Numbers::Unenforced => f64::INFINITY,
    };
    post_order_cx(root, cx, &mut |node, path, cx| {
        if !KEYS.iter().any(|k| node.has(k)) {
            return;
        }
        let t = primary_type(node);
        let mut removed: Vec<(String, Value)> = Vec::new();
        let mut beyond: Vec<(String, Value)> = Vec::new();
        if numbers == Numbers::All {
            return;
        }
        if numbers == Numbers::Unenforced || t.is_some_and(|t| t.contains(Types::FRACTION)) || t.is_none() {
            for k in KEYS {
                if let Some(v) = node.remove(k) {
                    removed.push((k.to_string(), v));
                }
            }
        } else if t.is_some_and(|t| t.contains(Types::INTEGER)) {
            for k in KEYS {
                if node.at(k).is_some_and(|v| v.as_f64().is_none()) {
                    if let Some(v) = node.remove(k) {
                        removed.push((k.to_string(), v));
                    }
                }
            }
            let (lo, hi) = integer_range(node);
            if let (Some(l), Some(h)) = (lo, hi) {
                if l > h {
                    *node = never_map();
                    cx.record(path, Kind::NeverDropped, format!("no integer lies between {} and {}", number_text(l), number_text(h)));
                    return;
                }
            }
            let in_range = |x: Option<f64>| x.is_none_or(|x| x.abs() <= limit);
            let whole = KEYS.iter().all(|k| node.at(k).is_none_or(|v| v.is_i64() || v.is_u64()));
            let doubled = (node.has("minimum") && node.has("exclusiveMinimum")) || (node.has("maximum") && node.has("exclusiveMaximum"));
            // bounds already whole, single and in range stay as written; a bound that was not a number
            // is still reported below (removed above)
            if !(whole && !doubled && in_range(lo) && in_range(hi)) {
                for k in KEYS {
                    node.remove(k);
                }
                for (k, x) in [("minimum", lo), ("maximum", hi)] {
                    match x {
                        Some(x) if x.abs() <= limit => {
                            node.insert(k.into(), Value::from(x as i64));
                        }
                        Some(x) => beyond.push((k.to_string(), Value::from(x))),
                        None => {}
                    }
                }
                cx.record(path, Kind::BoundsNormalized, "integer bounds made whole and inclusive");
            }
        }
        for (list, past) in [(&removed, false), (&beyond, true)] {
            if list.is_empty() {
                continue;
            }
            // written only for a record: most nodes with bounds keep them
            let why =
                if past { format!("past {}, beyond what the served releases enforce", number_text(limit)) } else { "not enforced for this type".to_string() };
            let text: Vec<String> = list.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            let text = text.join("; ");
            cx.lost(node, path, Kind::KeywordRemoved, &text, format!("removed {text}: {why}"));
        }
    });
}

/// The whole, inclusive range of integers a node's bounds allow: (least, greatest), `None` where
/// unbounded.
fn integer_range(node: &Map<String, Value>) -> (Option<f64>, Option<f64>) {
    let f = |k: &str| node.at(k).and_then(Value::as_f64);
    let lo = [f("minimum").map(f64::ceil), f("exclusiveMinimum").map(|x| x.floor() + 1.0)]
        .into_iter()
        .flatten()
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    let hi = [f("maximum").map(f64::floor), f("exclusiveMaximum").map(|x| x.ceil() - 1.0)]
        .into_iter()
        .flatten()
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.min(b))));
    (lo, hi)
}
