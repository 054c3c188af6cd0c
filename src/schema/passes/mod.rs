//! One file per transformation. A pass rewrites the schema in place and records every change it makes.

pub mod all_of;
pub mod boolean_schemas;
pub mod bounds;
pub mod dialect;
pub mod enums;
pub mod explicit_types;
pub mod fixed_fields;
pub mod integer_bounds;
pub mod item_counts;
pub mod keywords;
pub mod multiple_of;
pub mod never;
pub mod open_objects;
pub mod openapi;
pub mod patterns;
pub mod prefix_items;
pub mod property_names;
pub mod refs;
pub mod refs_listed;
pub mod regex_dialect;
pub mod repetition;
pub mod root_union;
pub mod strict_objects;
pub mod structure;
pub mod tool_root;
pub mod unevaluated;
pub mod unions;
pub mod unroll;
pub mod unspellable_names;
pub mod unsupported;

use super::lookup::KeySet;
use super::walk::Place;
use super::{Cx, Options, Target};
use serde_json::{Map, Value};

/// A named step of a profile.
pub struct Pass {
    pub name: &'static str,
    pub run: fn(&mut Value, &mut Cx),
    /// Keywords without one of which (anywhere in the schema) the pass changes nothing, so
    /// [`crate::schema::normalize`] skips its walk; empty for passes that look at every node.
    pub wants: &'static [&'static str],
    /// Passes that must have run before it in the same list (its preconditions); checked for every
    /// profile by a test.
    pub after: &'static [&'static str],
    /// For a pass that changes a schema only where some node asks for it: whether `node` may (never
    /// false where the pass would change something). Where no node of the schema says yes, the pass
    /// changes nothing and [`crate::schema::normalize`] skips its walk: one walk asks every pass's test
    /// (with the census), where each pass would walk the whole schema. Most schemas need no change at
    /// all, and then that walk is all the passes cost. `None`: the pass walks every schema.
    pub acts: Option<Acts>,
}

/// A pass's test of one node (see [`Pass::acts`]).
pub type Acts = fn(&Map<String, Value>, &Probe, &Place) -> bool;

/// What the passes' node tests may read, made once per schema.
pub struct Probe<'a> {
    pub target: &'a Target,
    pub opts: &'a Options,
    /// The keywords the target does not enforce ([`Target::unenforced_keywords`]), from the profile's
    /// [`crate::schema::profile::PassPlan`].
    pub unenforced: &'a KeySet,
}

/// Whether a node's values are given by something other than its own `type` (a ref, a union, an
/// intersection, a literal): passes that reason from `type` leave such nodes alone.
pub(crate) fn typed_elsewhere(node: &serde_json::Map<String, Value>) -> bool {
    use crate::schema::lookup::Lookup;
    ["$ref", "anyOf", "oneOf", "allOf", "const", "enum"].iter().any(|k| node.has(k))
}

/// The types a node's `type` keyword allows, without `null`; `None` when untyped.
pub(crate) fn primary_type(node: &serde_json::Map<String, Value>) -> Option<super::types::Types> {
    super::types::Types::of(node).map(|t| t.minus(super::types::Types::NULL))
}

/// What the passes' unit tests share: one pass run on one schema for one target.
#[cfg(test)]
pub(crate) mod testing {
    use crate::schema::{Context, Cx, Kind, Options, Report, Target};
    use serde_json::Value;

    /// Runs `pass` on `v` as `target`'s profile would, in `context`, with `opts`: the schema it
    /// wrote and its report.
    pub fn apply_with(pass: fn(&mut Value, &mut Cx), mut v: Value, target: &Target, context: Context, opts: &Options) -> (Value, Report) {
        let mut cx = Cx::new("t", context, opts, target);
        pass(&mut v, &mut cx);
        (v, cx.report)
    }

    /// [`apply_with`] a tool's parameters with the default options.
    pub fn apply(pass: fn(&mut Value, &mut Cx), v: Value, target: &Target) -> (Value, Report) {
        apply_with(pass, v, target, Context::Tool, &Options::default())
    }

    /// How often the report counted `kind`.
    pub fn count(report: &Report, kind: Kind) -> u64 {
        report.counters.get(&kind).copied().unwrap_or(0)
    }

    /// Every keyword of every schema node (property names are not keywords).
    pub fn keywords(v: &Value) -> Vec<String> {
        let mut v = v.clone();
        let mut out = Vec::new();
        crate::schema::walk::post_order(&mut v, "", &mut |node, _| out.extend(node.keys().cloned()));
        out
    }
}
