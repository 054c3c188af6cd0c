//! Older dialects into 2020-12: draft-04/07 `items` arrays and `additionalItems` (refs pointing into
//! them follow), boolean `exclusiveMinimum`/`exclusiveMaximum`, `dependencies`, keywords beside `$ref`
//! (ignored before 2019-09), `$id` fragments (anchors), OpenAPI 3.0 `nullable`, upper-case or unknown
//! type names, boolean `items`, and `$schema`/`$id` below the root. A schema stamped with an older
//! draft whose keywords this changed (or that holds 2020-12's own) is stamped 2020-12, its
//! `definitions` moved to `$defs` with the refs into them, so no schema declares one dialect and holds
//! another's keywords; with [`crate::schema::Options::declare_2020_12`] every older stamp is.

use crate::schema::arrays::boolean_items;
use crate::schema::lookup::{KeySet, Lookup};
use crate::schema::types::Types;
use crate::schema::walk::{children_mut, is_annotation, pre_order_cx, Path, MAP};
use crate::schema::{Cx, Kind};
use serde_json::{Map, Value};
use std::sync::LazyLock;

/// Passes that must run before this one in a profile's list: nothing: it makes the 2020-12 spelling the others read.
pub const AFTER: &[&str] = &[];

/// The keys the per-node steps but `fix_type` and `malformed` act on (`additionalItems` becomes `items`
/// only where one of these was there).
const OLDER: &[&str] = &["$id", "$schema", "items", "additionalItems", "exclusiveMinimum", "exclusiveMaximum", "dependencies", "nullable"];

/// [`OLDER`] as a [`KeySet`]: the node test asks it of every key of every node.
static OLDER_KEYS: LazyLock<KeySet> = LazyLock::new(|| KeySet::new(OLDER.iter().copied()));

/// Whether the pass may change `node` ([`super::Pass::acts`]): a key of [`OLDER`] (but the root's
/// `$schema`, which stays), a `type` not spelled as one known name, keywords beside `$ref` (a draft
/// before 2019-09 ignores them), a malformed keyword or subschema.
pub fn acts(node: &Map<String, Value>, probe: &super::Probe, place: &crate::schema::walk::Place) -> bool {
    if place.root && older_stamp(node).is_some() && (probe.opts.declare_2020_12 || holds_newer(node)) {
        return true;
    }
    let mut bad = false;
    crate::schema::walk::children(node, |_, child| bad = bad || bad_child(child));
    bad || empty_prefix(node)
        || (node.has("$ref") && node.len() > 1)
        || node.at("type").is_some_and(|t| t.as_str().is_none_or(|s| Types::from_name(s).is_none()))
        || node.iter().any(|(k, v)| (OLDER_KEYS.contains(k) && !(place.root && k == "$schema")) || bad_member(k, v))
}

pub fn run(root: &mut Value, cx: &mut Cx) {
    let normalized = |cx: &Cx| cx.report.counters.get(&Kind::DialectNormalized).copied().unwrap_or(0);
    let before = normalized(cx);
    translate(root, cx);
    let translated = normalized(cx) != before;
    // a schema keeping 2019-09's recursion (translated only when declaring) keeps its stamp
    let declares = match root {
        Value::Object(o) => older_stamp(o).is_some() && (cx.opts.declare_2020_12 || ((translated || holds_newer(o)) && !mentions(o, RECURSION))),
        _ => false,
    };
    if declares {
        declare(root, cx);
    }
}

/// The 2020-12 stamp.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The older draft a root's `$schema` names (draft-03 to 2019-09), if it names one.
fn older_stamp(root: &Map<String, Value>) -> Option<&str> {
    let s = root.at("$schema")?.as_str()?;
    ["draft-03", "draft-04", "draft-06", "draft-07", "draft/2019-09"].into_iter().find(|d| s.contains(d))
}

/// The keywords of 2019-09 and 2020-12 an older stamp lacks.
const NEWER: &[&str] =
    &["prefixItems", "$defs", "dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$anchor"];

/// 2019-09's recursion keywords (translated only when declaring 2020-12).
const RECURSION: &[&str] = &["$recursiveRef", "$recursiveAnchor"];

/// Whether a schema holds a keyword its older stamp lacks, anywhere.
fn holds_newer(node: &Map<String, Value>) -> bool {
    mentions(node, NEWER)
}

/// Stamps the root 2020-12 and moves its `definitions` to `$defs` (where no `$defs` is there), every
/// `#/definitions/..` ref following: the same schema, declared in the dialect its keywords are in.
fn declare(root: &mut Value, cx: &mut Cx) {
    let Value::Object(o) = root else { return };
    let was = older_stamp(o).unwrap_or("an older draft").to_string();
    o.insert("$schema".into(), Value::String(DRAFT_2020_12.into()));
    let mut what = format!("declared 2020-12 (was {was}), the dialect its keywords are in");
    if o.at("definitions").is_some_and(Value::is_object) && !o.has("$defs") {
        if let Some(d) = o.remove("definitions") {
            o.insert("$defs".into(), d);
            let id = match &*root {
                Value::Object(o) => o.at("$id").and_then(Value::as_str).unwrap_or("").to_string(),
                _ => String::new(),
            };
            retarget(root, &id);
            what.push_str("; definitions moved to $defs");
        }
    }
    cx.record("", Kind::DialectNormalized, what);
}

/// Every ref into the root's `definitions` (by fragment, or by the root's `$id` and a fragment)
/// pointed at `$defs` (subschemas only: a literal's `$ref` member is data).
fn retarget(v: &mut Value, id: &str) {
    let Value::Object(o) = v else { return };
    if let Some(Value::String(r)) = o.get_mut("$ref") {
        let (base, frag) = r.split_once('#').unwrap_or((r.as_str(), ""));
        if let Some(rest) = frag.strip_prefix("/definitions/").filter(|_| base.is_empty() || base == id) {
            *r = format!("{base}#/$defs/{rest}");
        }
    }
    children_mut(o, |_, child| retarget(child, id));
}

/// Whether one of `keys` is a keyword of `node` or of any subschema of it.
fn mentions(node: &Map<String, Value>, keys: &[&str]) -> bool {
    let mut found = node.keys().any(|k| keys.contains(&k.as_str()));
    crate::schema::walk::children(node, |_, child| {
        if let Value::Object(o) = child {
            found = found || mentions(o, keys);
        }
    });
    found
}

/// The anchor name 2019-09's `$recursiveAnchor: true` becomes.
const RECURSIVE: &str = "recursive";

/// 2019-09's recursion in 2020-12's words: a resource's `$recursiveAnchor: true` as `$dynamicAnchor`
/// (`false` has no effect: removed); `$recursiveRef: "#"` as a `$dynamicRef` to it where its resource
/// has the anchor, else as the plain `$ref: "#"` it then is. `enclosing`: whether the enclosing
/// resource's root has `$recursiveAnchor: true` (`None`: this node starts the document).
fn recursive(node: &mut Map<String, Value>, enclosing: Option<bool>, n: &mut usize) {
    let anchored = match enclosing {
        Some(a) if !node.at("$id").is_some_and(Value::is_string) => a,
        _ => node.at("$recursiveAnchor") == Some(&Value::Bool(true)),
    };
    if let Some(a) = node.remove("$recursiveAnchor") {
        *n += 1;
        if a == Value::Bool(true) {
            node.insert("$dynamicAnchor".into(), Value::String(RECURSIVE.into()));
        }
    }
    if node.at("$recursiveRef").and_then(Value::as_str) == Some("#") {
        node.remove("$recursiveRef");
        *n += 1;
        if anchored {
            node.insert("$dynamicRef".into(), Value::String(format!("#{RECURSIVE}")));
        } else {
            node.insert("$ref".into(), Value::String("#".into()));
        }
    }
    children_mut(node, |_, child| {
        if let Value::Object(o) = child {
            recursive(o, Some(anchored), n);
        }
    });
}

/// Older dialects' keywords in their 2020-12 spelling (the module's list).
fn translate(root: &mut Value, cx: &mut Cx) {
    let legacy = legacy_draft(root);
    // only for a client that validates with 2020-12: a grammar's passes read no `$dynamicRef` (they
    // count 2019-09's own keywords as lost, which a `$dynamicRef` would hide)
    if let (Value::Object(o), true) = (&mut *root, cx.opts.declare_2020_12) {
        if mentions(o, RECURSION) {
            let mut n = 0;
            recursive(o, None, &mut n);
            if n > 0 {
                cx.record("", Kind::DialectNormalized, format!("{n} $recursiveRef/$recursiveAnchor in 2020-12's $dynamicRef/$dynamicAnchor (or $ref)"));
            }
        }
    }
    // `items: true` evaluates what it allows: beside an `unevaluatedItems` it is not a no-op
    let evaluated = matches!(&*root, Value::Object(o) if mentions(o, &["unevaluatedItems"]));
    let openapi = cx.target.openapi;
    // pointers that moved: refs into a draft-07 `items` array follow it to `prefixItems`
    let mut moved: Vec<(String, String)> = Vec::new();
    let older = &*OLDER_KEYS;
    pre_order_cx(root, cx, &mut |node, path, cx| {
        let mut changes: Vec<String> = Vec::new();
        let mut lossy: Vec<(String, Value)> = Vec::new();
        let mut normalized: Vec<String> = Vec::new();
        if legacy {
            legacy_ref(node, &mut normalized);
        }
        // the steps below `fix_type` and `malformed` act only on keys of `OLDER`, which no step adds:
        // a node without one (most nodes) is not asked about each
        let acts = node.keys().any(|k| older.contains(k));
        if acts {
            id_anchor(node, &mut changes);
        }
        fix_type(node, &mut changes, &mut lossy);
        malformed(node, &mut lossy);
        if empty_prefix(node) {
            // it constrains nothing, and the metaschema refuses it
            node.remove("prefixItems");
            normalized.push("an empty prefixItems has no effect".into());
        }
        if acts {
            item_arrays(node, path, &mut moved, &mut changes, &mut normalized);
            if let Some(c) = (!evaluated).then(|| boolean_items(node)).flatten() {
                changes.push(c.into());
            }
            bounds_and_dependencies(node, &mut changes);
            nullable_and_ids(node, path, openapi, &mut changes, &mut normalized);
        }
        if !changes.is_empty() {
            cx.record(path, Kind::DialectNormalized, changes.join("; "));
        }
        if !normalized.is_empty() {
            cx.record(path, Kind::KeywordNormalized, normalized.join("; "));
        }
        cx.removed(node, path, Kind::KeywordRemoved, &lossy);
    });
    if !moved.is_empty() {
        follow_moves(root, &moved, cx);
    }
}

/// Before 2019-09 every keyword beside `$ref` is ignored: removed (definitions stay reachable).
fn legacy_ref(node: &mut Map<String, Value>, normalized: &mut Vec<String>) {
    if node.at("$ref").is_some_and(Value::is_string) {
        // before 2019-09 every keyword beside `$ref` is ignored (definitions stay reachable)
        let ignored: Vec<String> =
            node.keys().filter(|k| !(k.as_str() == "$ref" || is_annotation(k) || k.as_str() == "definitions" || k.as_str() == "$defs")).cloned().collect();
        for k in &ignored {
            node.remove(k);
        }
        if !ignored.is_empty() {
            normalized.push(format!("{} beside $ref ignored in this draft", ignored.join(", ")));
        }
    }
}

/// A plain-name `$id` fragment is an anchor: 2020-12 spells it `$anchor`, which refs resolve.
fn id_anchor(node: &mut Map<String, Value>, changes: &mut Vec<String>) {
    if let Some(Value::String(id)) = node.at("$id") {
        // a plain-name fragment is an anchor: 2020-12 spells it `$anchor`, which refs resolve
        if let Some(name) = id.strip_prefix('#').filter(|n| !n.is_empty() && !n.starts_with('/')).map(str::to_string) {
            node.remove("$id");
            if !node.has("$anchor") {
                node.insert("$anchor".into(), Value::String(name));
            }
            changes.push("$id fragment became $anchor".into());
        }
    }
}

/// Draft-07 `items` arrays become `prefixItems` (and `additionalItems` their `items`); the pointers
/// that moved are listed for the refs into them.
fn item_arrays(node: &mut Map<String, Value>, path: &Path, moved: &mut Vec<(String, String)>, changes: &mut Vec<String>, normalized: &mut Vec<String>) {
    // taken out only when it is an array: a schema-valued `items` (the usual case) is not copied
    if let Some(Value::Array(items)) = node.at("items").is_some_and(Value::is_array).then(|| node.remove("items")).flatten() {
        let extra = node.remove("additionalItems");
        let mut rebuilt = Map::new();
        for (k, v) in std::mem::take(node) {
            if k == "prefixItems" {
                continue;
            }
            rebuilt.insert(k, v);
        }
        rebuilt.insert("prefixItems".into(), Value::Array(items));
        moved.push((format!("{path}/items/"), format!("{path}/prefixItems/")));
        if let Some(x) = extra {
            rebuilt.insert("items".into(), x);
            moved.push((format!("{path}/additionalItems"), format!("{path}/items")));
        }
        *node = rebuilt;
        changes.push("array items became prefixItems".into());
    } else if node.has("additionalItems") {
        node.remove("additionalItems");
        normalized.push("additionalItems without an items array has no effect".into());
    }
}

/// Draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum` as 2020-12 numbers; draft-07
/// `dependencies` split into `dependentRequired` and `dependentSchemas`.
fn bounds_and_dependencies(node: &mut Map<String, Value>, changes: &mut Vec<String>) {
    for (ex, inc) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(&Value::Bool(b)) = node.at(ex) {
            node.remove(ex);
            if b {
                if let Some(v) = node.remove(inc) {
                    node.insert(ex.into(), v);
                }
            }
            changes.push(format!("boolean {ex} became 2020-12"));
        }
    }
    if let Some(Value::Object(deps)) = node.at("dependencies").cloned() {
        node.remove("dependencies");
        let mut req = Map::new();
        let mut sch = Map::new();
        for (k, v) in deps {
            if v.is_array() {
                req.insert(k, v);
            } else {
                sch.insert(k, v);
            }
        }
        if !req.is_empty() {
            node.insert("dependentRequired".into(), Value::Object(req));
        }
        if !sch.is_empty() {
            node.insert("dependentSchemas".into(), Value::Object(sch));
        }
        changes.push("dependencies split into dependentRequired/dependentSchemas".into());
    }
}

/// OpenAPI's `nullable` as a `null` type; `$schema` and fragment `$id` below the root removed.
fn nullable_and_ids(node: &mut Map<String, Value>, path: &Path, openapi: bool, changes: &mut Vec<String>, normalized: &mut Vec<String>) {
    match node.at("nullable") {
        // a target that reads OpenAPI types keeps it (see `passes::openapi`)
        Some(Value::Bool(true)) if openapi => {}
        Some(Value::Bool(true)) => {
            node.remove("nullable");
            if let Some(t) = Types::of(node) {
                if !t.contains(Types::NULL) {
                    node.insert("type".into(), t.union(Types::NULL).to_json());
                }
            }
            if let Some(Value::Array(e)) = node.at_mut("enum") {
                if !e.contains(&Value::Null) {
                    e.push(Value::Null);
                }
            }
            changes.push("nullable: true became a null type".into());
        }
        Some(Value::Bool(false)) => {
            node.remove("nullable");
            normalized.push("nullable: false has no effect".into());
        }
        Some(_) => {
            node.remove("nullable");
            normalized.push("nullable that is not a boolean has no effect".into());
        }
        None => {}
    }
    if !path.is_empty() {
        for k in ["$schema", "$id"] {
            if let Some(v) = node.at(k) {
                // a `$id` that is a URI may be a base other refs name: kept
                if k == "$id" && !v.as_str().is_some_and(|s| s.starts_with('#')) {
                    continue;
                }
                node.remove(k);
                normalized.push(format!("{k} below the root removed"));
            }
        }
    }
}

/// Whether the document declares a draft before 2019-09 (draft-03 to draft-07), whose `$ref` replaces
/// its whole node.
fn legacy_draft(root: &Value) -> bool {
    root.at("$schema").and_then(Value::as_str).is_some_and(|s| ["draft-03", "draft-04", "draft-06", "draft-07"].iter().any(|d| s.contains(d)))
}

/// Rewrites same-document refs whose pointer starts with a moved prefix.
fn follow_moves(root: &mut Value, moved: &[(String, String)], cx: &mut Cx) {
    pre_order_cx(root, cx, &mut |node, path, cx| {
        let Some(Value::String(r)) = node.at("$ref") else { return };
        let Some(frag) = r.strip_prefix('#') else { return };
        let frag = percent_encoding::percent_decode_str(frag).decode_utf8_lossy().into_owned();
        for (old, new) in moved {
            let hit = frag.starts_with(old.as_str()) || (!old.ends_with('/') && (frag == *old || frag.starts_with(&format!("{old}/"))));
            if hit {
                let now = format!("#{new}{}", frag.get(old.len()..).unwrap_or(""));
                cx.record(path, Kind::DialectNormalized, format!("$ref {r} now {now}: array items became prefixItems"));
                node.insert("$ref".into(), Value::String(now));
                return;
            }
        }
    });
}

/// Schema keywords whose value is not a schema (or a map/list of them), and subschemas that are neither
/// objects nor booleans: an invalid schema constrains nothing anyone can rely on, so it becomes "any
/// value" (lossy) instead of reaching a converter that would reject or misread it.
fn malformed(node: &mut Map<String, Value>, lossy: &mut Vec<(String, Value)>) {
    let bad: Vec<String> = node.iter().filter(|(k, v)| bad_member(k, v)).map(|(k, _)| k.clone()).collect();
    for k in bad {
        if let Some(v) = node.remove(&k) {
            lossy.push((k, v));
        }
    }
    children_mut(node, |seg, child| {
        if bad_child(child) {
            lossy.push((seg.to_string().trim_start_matches('/').to_string(), std::mem::replace(child, Value::Object(Map::new()))));
        }
    });
}

/// `prefixItems: []`.
fn empty_prefix(node: &Map<String, Value>) -> bool {
    node.get("prefixItems").is_some_and(|p| p.as_array().is_some_and(Vec::is_empty))
}

/// A keyword whose value is not of the kind it must be.
fn bad_member(k: &str, v: &Value) -> bool {
    match k {
        k if MAP.contains(&k) => !(v.is_object() || k == "dependencies" && v.is_null()),
        "allOf" | "anyOf" | "oneOf" | "prefixItems" | "enum" => !v.is_array(),
        "$ref" | "pattern" | "format" => !v.is_string(),
        "required" => !v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        _ => false,
    }
}

/// A subschema that is neither an object nor a boolean.
fn bad_child(child: &Value) -> bool {
    !child.is_object() && !child.is_boolean()
}

/// `type` into lower-case known names; "any" means no type; anything unusable is dropped (lossy).
fn fix_type(node: &mut Map<String, Value>, changes: &mut Vec<String>, lossy: &mut Vec<(String, Value)>) {
    // the common case, one type already spelled right: nothing to copy or lower-case
    let Some(t) = node.at("type") else { return };
    if t.as_str().is_some_and(|s| Types::from_name(s).is_some()) {
        return;
    }
    let t = t.clone();
    let norm = |s: &str| -> Option<Option<String>> {
        let l = s.to_ascii_lowercase();
        if l == "any" {
            return Some(None);
        }
        Types::from_name(&l).map(|_| Some(l))
    };
    match &t {
        Value::String(s) => match norm(s) {
            Some(Some(l)) if &l == s => {}
            Some(Some(l)) => {
                node.insert("type".into(), Value::String(l));
                changes.push(format!("type {s} spelled in lower case"));
            }
            Some(None) => {
                node.remove("type");
                changes.push("type any means no type".into());
            }
            None => {
                node.remove("type");
                lossy.push(("type".into(), t.clone()));
            }
        },
        Value::Array(a) => {
            let mut out: Vec<Value> = Vec::new();
            let mut any = false;
            for v in a {
                match v.as_str().and_then(norm) {
                    Some(Some(l)) => {
                        let l = Value::String(l);
                        if !out.contains(&l) {
                            out.push(l);
                        }
                    }
                    Some(None) => any = true,
                    None => lossy.push(("type".into(), v.clone())),
                }
            }
            if a.is_empty() {
                // not a valid 2020-12 `type` (the metaschema asks for one name or more); what a
                // validator makes of it is "no type matches": said as such
                node.remove("type");
                node.insert("not".into(), Value::Object(Map::new()));
                changes.push("an empty type list matches nothing: not: {}".into());
            } else if any || out.is_empty() {
                node.remove("type");
                changes.push("type list without usable names means no type".into());
            } else if &out != a {
                node.insert("type".into(), Value::Array(out));
                changes.push("type list normalised".into());
            }
        }
        _ => {
            node.remove("type");
            lossy.push(("type".into(), t.clone()));
        }
    }
}
