//! An array says `items` and an object `properties`, where the API requires them
//! ([`crate::schema::Target::spelled_structure`]): OpenAI answers 400 "array schema missing items" and
//! "object schema missing properties" even without strict mode. `items: {}` and `properties: {}` mean
//! what their absence meant. Exact.

use crate::schema::lookup::Lookup;
use crate::schema::types::Types;
use crate::schema::walk::post_order;
use crate::schema::{Cx, Kind};
use serde_json::{json, Value};

/// Passes that must run before this one in a profile's list: nothing (it reads `type` as given).
pub const AFTER: &[&str] = &[];

pub fn run(root: &mut Value, cx: &mut Cx) {
    if !cx.target.spelled_structure {
        return;
    }
    let mut recs: Vec<(String, String)> = Vec::new();
    post_order(root, "", &mut |node, path| {
        let Some(t) = Types::of(node) else { return };
        if t.contains(Types::ARRAY) && !node.has("items") && !node.has("prefixItems") {
            node.insert("items".into(), json!({}));
            recs.push((path.to_string(), "items: {} (any item) written out".into()));
        }
        if t.contains(Types::OBJECT) && !node.has("properties") {
            node.insert("properties".into(), json!({}));
            recs.push((path.to_string(), "properties: {} written out".into()));
        }
    });
    for (p, d) in recs {
        cx.record(&p, Kind::StructureSpelled, d);
    }
}
