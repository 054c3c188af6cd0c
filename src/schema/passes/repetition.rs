//! Repetition counts a grammar can hold (`minProperties`/`maxProperties` too, where the target keeps
//! them: compilers refuse `2.0` there). `minLength`/`maxLength`/`minItems`/`maxItems`
//! become repetitions in the GBNF, and its parser refuses counts past about 2,000 (older versions far
//! less; some windows fail even for `maxItems`), so counts past `max_repetition` are clamped. Counts
//! that are not whole non-negative numbers are made so.

use crate::schema::lookup::Lookup;
use crate::schema::merge::never_map;
use crate::schema::walk::post_order_cx;
use crate::schema::{Cx, Kind};
use serde_json::Value;

/// Passes that must run before this one in a profile's list: nothing: counts are read wherever they are.
pub const AFTER: &[&str] = &[];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let max = cx.opts.limits.max_repetition;
    post_order_cx(root, cx, &mut |node, path, cx| {
        for (lo_k, hi_k) in [("minLength", "maxLength"), ("minItems", "maxItems"), ("minProperties", "maxProperties")] {
            let mut lo = None;
            let mut hi = None;
            for (k, is_min) in [(lo_k, true), (hi_k, false)] {
                let Some(v) = node.at(k).cloned() else { continue };
                let n = v.as_f64();
                let fixed = match n {
                    None => {
                        node.remove(k);
                        cx.record(path, Kind::KeywordRemoved, format!("{k}: {v} is not a number"));
                        continue;
                    }
                    Some(x) if x < 0.0 => {
                        node.remove(k);
                        cx.record(path, Kind::KeywordNormalized, format!("negative {k} removed"));
                        continue;
                    }
                    Some(x) => {
                        let w = if is_min { x.ceil() } else { x.floor() };
                        w.min(u64::MAX as f64) as u64
                    }
                };
                if is_min && fixed > max {
                    node.insert(k.into(), Value::from(max));
                    cx.record(path, Kind::RepetitionClamped, format!("{k} {fixed} clamped to {max}"));
                    lo = Some(max);
                } else if !is_min && fixed > max {
                    node.remove(k);
                    cx.record(path, Kind::RepetitionClamped, format!("{k} {fixed} over {max}: removed"));
                } else {
                    if !(v.is_u64()) {
                        node.insert(k.into(), Value::from(fixed));
                        cx.record(path, Kind::KeywordNormalized, format!("{k} made a whole number"));
                    }
                    if is_min {
                        lo = Some(fixed);
                    } else {
                        hi = Some(fixed);
                    }
                }
            }
            if let (Some(l), Some(h)) = (lo, hi) {
                if l > h {
                    *node = never_map();
                    cx.record(path, Kind::NeverDropped, format!("{lo_k} {l} over {hi_k} {h}: no value matches"));
                    return;
                }
            }
        }
    });
}
