//! `$ref` resolved the way JSON Schema defines it (`#`, any JSON pointer with `~0`/`~1` and
//! percent-encoding, `$anchor`, a base equal to the root `$id`), then written in the one form every
//! the backend resolves: `#/$defs/Name` (or `#/definitions/Name`, where the target reads it) with a plain
//! name that is none of the target's reserved rule names.
//!
//! A ref already in that form, without constraining siblings, is left alone. Others are inlined (the
//! target merged with the siblings) when the target is not on a reference cycle and the inlining budget
//! allows; otherwise the target is kept (or copied) under a root `$defs` entry and the ref points
//! there, so recursive types keep working. Refs to other documents are never fetched.

use crate::schema::definitions::count_objects;
use crate::schema::lookup::{Lookup, Take};
use crate::schema::merge::{intersect, never, never_map, Merged};
use crate::schema::walk::{children, children_mut, collect_refs, has_ref, is_constraint, push_escaped, Path, HARD_DEPTH};
use crate::schema::{Context, Cx, Kind};
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Longest chain of refs followed at one node (`A` -> `B` -> ... ) before giving up.
const MAX_HOPS: usize = 32;
/// Most targets a cycle search visits before it assumes a cycle (keeps the ref, never loops).
const MAX_CYCLE_SEARCH: usize = 2_000;

/// A schema without a `$ref` key anywhere needs nothing from this pass (but its unused definitions, for
/// a backend that reads them): the census skips its walk.
pub const WANTS: &[&str] = &["$ref", "$defs", "definitions"];

/// Passes that must run before this one in a profile's list: refs into a draft-07 `items` array follow it to `prefixItems`.
pub const AFTER: &[&str] = &["dialect"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    if !has_ref(root, 0) {
        if let (true, Value::Object(r)) = (cx.target.reads_unused_defs, root) {
            // no ref: every definition is unused
            let n = [r.remove("$defs"), r.remove("definitions")].into_iter().flatten().count();
            if n > 0 {
                cx.record(&Path::root(""), Kind::KeywordNormalized, UNUSED);
            }
        }
        return;
    }
    let orig = root.clone();
    // Definitions below the root are reached only through pointers, which are resolved against the
    // original document and rewritten to root `$defs` entries, so their copies in place are dead
    // weight: other passes would rewrite them again and unions would copy them into branches.
    let kept = if strip_nested_defs(root, 0) { Some(orig.clone()) } else { None };
    // only `$defs` where the target reads no other (a shared namespace, or an API whose keyword list lacks `definitions`)
    let defs_only = cx.target.shared_defs || cx.target.keywords.is_some_and(|k| !k.contains(&"definitions"));
    let mut st = State::new(orig, defs_only, cx.target.reserved_names);
    let before = cx.report.counters.clone();
    walk(root, &Path::root(""), 0, &mut st, cx);
    if let Some(untouched) = kept {
        if cx.report.counters == before && st.pending.is_empty() {
            // nothing to rewrite after all: a body that needs no change stays as it was
            *root = untouched;
            return;
        }
    }
    let mut added: Vec<(String, Value)> = Vec::new();
    while let Some((name, ptr)) = st.pending.pop() {
        let mut v = st.target(&ptr).unwrap_or(Value::Object(Map::new()));
        if let Value::Object(m) = &mut v {
            if ptr.is_empty() {
                // a copy of the root: its definitions stay at the root
                for k in ["$defs", "definitions", "$schema", "$id"] {
                    m.remove(k);
                }
            }
        }
        let path = format!("/$defs/{name}");
        walk(&mut v, &Path::root(&path), 1, &mut st, cx);
        added.push((name, v));
    }
    if let Value::Object(r) = root {
        if !added.is_empty() {
            let defs = r.entry("$defs").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(d) = defs {
                for (n, v) in added.into_iter().rev() {
                    d.insert(n, v);
                }
            }
        }
    }
    if cx.report.counters != before || cx.target.reads_unused_defs {
        let unused = drop_orphans(root, &st.targets, cx.target.reads_unused_defs);
        if unused > 0 {
            cx.record(&Path::root(""), Kind::KeywordNormalized, UNUSED);
        }
    }
}

/// What a backend that reads every definition gets said of the unused ones toolfit removed.
const UNUSED: &str = "definitions no $ref reaches removed: the backend's pre-check reads them anyway";

enum Fail {
    External,
    Missing,
}

struct State {
    orig: Value,
    root_id: Option<String>,
    anchors: HashMap<String, String>,
    /// pointer of a target -> name of the root `$defs` entry that holds it
    def_of: HashMap<String, String>,
    used: HashSet<String>,
    pending: Vec<(String, String)>,
    inlined: usize,
    on_cycle: HashMap<String, bool>,
    refs_in: HashMap<String, Vec<String>>,
    /// every pointer some ref resolved to
    targets: HashSet<String>,
    /// the keywords whose entries a ref may name as they are (`definitions` only where the target reads
    /// it: see [`crate::schema::Target::shared_defs`])
    plain: &'static [&'static str],
    /// definition names the backend's converter keeps for its own rules (renamed when met)
    reserved: &'static [&'static str],
}

impl State {
    fn new(orig: Value, shared_defs: bool, reserved: &'static [&'static str]) -> Self {
        let mut anchors = HashMap::new();
        collect_anchors(&orig, &Path::root(""), &mut anchors, 0);
        let root_id = orig.at("$id").and_then(Value::as_str).map(|s| s.trim_end_matches('#').to_string());
        let plain: &'static [&'static str] = if shared_defs { &["$defs"] } else { &["$defs", "definitions"] };
        let mut used = HashSet::new();
        for k in plain {
            if let Some(Value::Object(d)) = orig.get(k) {
                used.extend(d.keys().cloned());
            }
        }
        State {
            orig,
            root_id,
            anchors,
            def_of: HashMap::new(),
            used,
            pending: Vec::new(),
            inlined: 0,
            on_cycle: HashMap::new(),
            refs_in: HashMap::new(),
            targets: HashSet::new(),
            plain,
            reserved,
        }
    }

    fn target(&self, ptr: &str) -> Option<Value> {
        let v = self.orig.pointer(ptr)?;
        Some(match v {
            Value::Bool(true) => Value::Object(Map::new()),
            Value::Bool(false) => never(),
            v => v.clone(),
        })
    }

    /// The JSON pointer a ref designates in this document.
    fn resolve(&self, r: &str) -> Result<String, Fail> {
        let (base, frag) = match r.split_once('#') {
            Some((b, f)) => (b, f),
            None => (r, ""),
        };
        if !base.is_empty() {
            let same = self.root_id.as_deref().is_some_and(|id| id == base || id.ends_with(&format!("/{base}")));
            if !same {
                return Err(Fail::External);
            }
        }
        let frag = percent_decode_str(frag).decode_utf8().map_err(|_| Fail::Missing)?;
        let ptr = if frag.is_empty() {
            String::new()
        } else if frag.starts_with('/') {
            frag.to_string()
        } else {
            self.anchors.get(frag.as_ref()).cloned().ok_or(Fail::Missing)?
        };
        match self.orig.pointer(&ptr) {
            Some(Value::Object(_) | Value::Bool(_)) => Ok(ptr),
            _ => Err(Fail::Missing),
        }
    }

    fn refs_in(&mut self, ptr: &str) -> Vec<String> {
        if let Some(r) = self.refs_in.get(ptr) {
            return r.clone();
        }
        let mut raw = Vec::new();
        if let Some(v) = self.orig.pointer(ptr) {
            collect_refs(v, &mut raw, 0);
        }
        let out: Vec<String> = raw.iter().filter_map(|r| self.resolve(r).ok()).collect();
        self.refs_in.insert(ptr.to_string(), out.clone());
        out
    }

    /// Whether following refs from `ptr` can lead back to `ptr` (inlining it would never end).
    /// Whether following refs from `ptr` comes back to a visited target with nothing but refs between.
    fn pure_cycle(&self, ptr: &str) -> bool {
        let mut seen: Vec<String> = vec![ptr.to_string()];
        let mut cur = ptr.to_string();
        while seen.len() <= MAX_HOPS {
            let Some(Value::Object(t)) = self.target(&cur) else { return false };
            if t.keys().any(|k| constrains(k)) {
                return false;
            }
            let Some(next) = t.at("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r).ok()) else { return false };
            if seen.contains(&next) {
                return true;
            }
            seen.push(next.clone());
            cur = next;
        }
        false
    }

    /// Where a chain of definitions that are only refs (`A` -> `B` -> `C`) ends: the first target that
    /// is more than a ref. Cycles were ruled out by [`State::pure_cycle`]; the hop bound still holds.
    /// The links passed count as targets, so they are dropped with the rest when nothing reaches them.
    fn chain_end(&mut self, mut ptr: String) -> String {
        for _ in 0..MAX_HOPS {
            self.targets.insert(ptr.clone());
            let Some(Value::Object(t)) = self.target(&ptr) else { break };
            if t.keys().any(|k| constrains(k)) {
                break;
            }
            match t.at("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r).ok()) {
                Some(next) if next != ptr => ptr = next,
                _ => break,
            }
        }
        ptr
    }

    fn on_cycle(&mut self, ptr: &str) -> bool {
        if let Some(&b) = self.on_cycle.get(ptr) {
            return b;
        }
        let mut seen = HashSet::new();
        let mut stack = self.refs_in(ptr);
        let mut found = false;
        while let Some(p) = stack.pop() {
            if p == ptr || seen.len() > MAX_CYCLE_SEARCH {
                found = true;
                break;
            }
            if seen.insert(p.clone()) {
                stack.extend(self.refs_in(&p));
            }
        }
        self.on_cycle.insert(ptr.to_string(), found);
        found
    }

    /// Whether `r` already is the spelling [`State::def_ref`] gives `ptr` (without creating an entry).
    fn is_plain(&self, ptr: &str, r: &str) -> bool {
        for k in self.plain {
            if let Some(name) = ptr.strip_prefix(&format!("/{k}/")) {
                if safe_name(name, self.reserved) {
                    return r == format!("#/{k}/{name}");
                }
            }
        }
        self.def_of.get(ptr).is_some_and(|n| r == format!("#/$defs/{n}"))
    }

    /// A `$ref` string to a root `$defs` entry holding the target, creating the entry if needed.
    fn def_ref(&mut self, ptr: &str) -> String {
        for k in self.plain {
            if let Some(name) = ptr.strip_prefix(&format!("/{k}/")) {
                if safe_name(name, self.reserved) {
                    return format!("#/{k}/{name}");
                }
            }
        }
        if let Some(n) = self.def_of.get(ptr) {
            return format!("#/$defs/{n}");
        }
        let last = ptr.rsplit('/').next().unwrap_or("").replace("~1", "/").replace("~0", "~");
        let mut base: String = last.chars().filter(char::is_ascii_alphanumeric).collect();
        if !base.starts_with(|c: char| c.is_ascii_alphabetic()) {
            base = format!("Def{base}");
        }
        let mut name = base.clone();
        let mut i = 2;
        while self.used.contains(&name) || self.reserved.contains(&name.to_ascii_lowercase().as_str()) {
            name = format!("{base}{i}");
            i += 1;
        }
        self.used.insert(name.clone());
        self.def_of.insert(ptr.to_string(), name.clone());
        self.pending.push((name.clone(), ptr.to_string()));
        format!("#/$defs/{name}")
    }
}

/// Whether the node at `path` refers to itself or to an ancestor it is applied in place of (`allOf`
/// branches, `then`, ...): checking it would loop without consuming anything of the value.
fn refers_in_place(path: &str, ptr: &str) -> bool {
    let Some(rest) = path.strip_prefix(ptr) else { return false };
    if !rest.is_empty() && !rest.starts_with('/') {
        return false;
    }
    let mut segs = rest.split('/').skip(1);
    while let Some(k) = segs.next() {
        match k {
            "allOf" | "anyOf" | "oneOf" => {
                if segs.next().is_none() {
                    return false;
                }
            }
            "not" | "if" | "then" | "else" => {}
            _ => return false,
        }
    }
    true
}

/// Whether a keyword beside `$ref` constrains the value (definitions and annotations do not).
fn constrains(k: &str) -> bool {
    k != "$ref" && is_constraint(k)
}

fn safe_name(n: &str, reserved: &[&str]) -> bool {
    n.starts_with(|c: char| c.is_ascii_alphabetic()) && n.chars().all(|c| c.is_ascii_alphanumeric()) && !reserved.contains(&n.to_ascii_lowercase().as_str())
}

fn collect_anchors(v: &Value, path: &Path, out: &mut HashMap<String, String>, depth: usize) {
    let Value::Object(m) = v else { return };
    for k in ["$anchor", "$dynamicAnchor"] {
        if let Some(a) = m.at(k).and_then(Value::as_str) {
            out.entry(a.to_string()).or_insert_with(|| path.to_string());
        }
    }
    if let Some(id) = m.at("$id").and_then(Value::as_str).and_then(|s| s.strip_prefix('#')) {
        out.entry(id.to_string()).or_insert_with(|| path.to_string());
    }
    if depth > HARD_DEPTH {
        return;
    }
    children(m, |seg, c| collect_anchors(c, &path.child(seg), out, depth + 1));
}

fn walk(v: &mut Value, path: &Path, depth: usize, st: &mut State, cx: &mut Cx) {
    let Value::Object(node) = v else { return };
    let mut hops = 0;
    while let Some(r) = node.at("$ref").and_then(Value::as_str).map(str::to_string) {
        hops += 1;
        if hops > MAX_HOPS {
            node.remove("$ref");
            cx.record(path, Kind::RefsUnresolved, format!("$ref {r}: chain of refs longer than {MAX_HOPS}"));
            break;
        }
        if !follow(node, &r, path, depth, st, cx) {
            break;
        }
    }
    if depth >= HARD_DEPTH {
        return;
    }
    children_mut(node, |seg, child| walk(child, &path.child(seg), depth + 1, st, cx));
}

/// One `$ref` of a node: removed where it leads nowhere, the target inlined where it may be, else
/// pointed at its definition. True when the target was inlined (the node may hold another ref).
fn follow(node: &mut Map<String, Value>, r: &str, path: &str, depth: usize, st: &mut State, cx: &mut Cx) -> bool {
    let Some(ptr) = resolve(node, r, path, st, cx) else { return false };
    // a definition that is only a ref compiles as "any object" on older llama.cpp: point past it
    // (pointing past it is exact, so a backend without releases gets it too)
    let ptr = if cx.release().is_some_and(|r| r.ref_chains()) { ptr } else { st.chain_end(ptr) };
    st.targets.insert(ptr.clone());
    let constraining = node.keys().any(|k| constrains(k));
    let tool_root = path.is_empty() && cx.context == Context::Tool;
    let plain = st.is_plain(&ptr, r);
    let target = st.target(&ptr).unwrap_or_default();
    // a ref to a schema nothing matches: llama.cpp would read the target's `not: {}` as any value,
    // so the (tiny) target is inlined and the `never` pass deals with it where it stands
    let never_target = target.as_object().is_some_and(crate::schema::merge::is_never);
    if plain && !constraining && !tool_root && !never_target {
        return false;
    }
    let size = count_objects(&target);
    let fits = st.inlined + size <= cx.opts.limits.inline_budget && depth < cx.opts.limits.max_depth;
    // a tool's root must be an object schema, not a ref: one level is inlined even for a recursive
    // target (the copy's own refs keep pointing at the definition)
    if (!st.on_cycle(&ptr) && fits) || (tool_root && !ptr.is_empty()) || never_target {
        st.inlined += size;
        inline(node, target, if ptr.is_empty() { RefTo::Document } else { RefTo::Definition }, r, path, cx);
        return true;
    }
    let new_ref = st.def_ref(&ptr);
    if new_ref != r {
        node.insert("$ref".into(), Value::String(new_ref.clone()));
        cx.record(path, Kind::RefsRetargeted, format!("$ref {r} now {new_ref}"));
    }
    if constraining {
        let dropped: Vec<(String, Value)> = node.iter().filter(|(k, _)| constrains(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
        for (k, _) in &dropped {
            node.remove(k);
        }
        cx.removed(node, path, Kind::RefSiblingsDropped, &dropped);
    }
    false
}

/// Where a ref leads, or `None` after removing a ref that leads nowhere (another document, nothing
/// there, or only back to itself).
fn resolve(node: &mut Map<String, Value>, r: &str, path: &str, st: &State, cx: &mut Cx) -> Option<String> {
    let ptr = match st.resolve(r) {
        Ok(p) => p,
        Err(f) => {
            node.remove("$ref");
            let (kind, why) = match f {
                Fail::External => (Kind::RefExternal, "another document; never fetched"),
                Fail::Missing => (Kind::RefsUnresolved, "nothing at that location"),
            };
            cx.record(path, kind, format!("$ref {r}: {why}; any value allowed"));
            return None;
        }
    };
    if st.pure_cycle(&ptr) || refers_in_place(path, &ptr) {
        // `{"$ref": "#"}` and friends: refs that lead back to themselves without a constraint on the
        // way. No value is ever checked against anything; llama.cpp would recurse without end.
        node.remove("$ref");
        cx.record(path, Kind::RefsUnresolved, format!("$ref {r}: only refers back to itself; any value allowed"));
        return None;
    }
    Some(ptr)
}

/// What a ref points at: the whole document (`#`), or a definition in it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RefTo {
    Document,
    Definition,
}

/// The node becomes its ref's target intersected with the keywords beside the ref.
fn inline(node: &mut Map<String, Value>, target: Value, points_at: RefTo, r: &str, path: &str, cx: &mut Cx) {
    node.remove("$ref");
    let siblings = std::mem::take(node);
    let mut t = match target {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if points_at == RefTo::Document {
        t.remove("$defs");
        t.remove("definitions");
    }
    t.remove("$schema");
    t.remove("$id");
    let mut lost = Vec::new();
    *node = match intersect(&t, &siblings, &mut lost) {
        Merged::Schema(m) => m,
        Merged::Never => never_map(),
    };
    cx.record(path, Kind::RefsInlined, format!("$ref {r} replaced by its target"));
    cx.removed(node, path, Kind::KeywordRemoved, &lost);
}

/// Removes `$defs`/`definitions` everywhere below the root; true if any were there.
fn strip_nested_defs(v: &mut Value, depth: usize) -> bool {
    let Value::Object(node) = v else { return false };
    let mut found = false;
    if depth > 0 {
        found |= node.take("$defs").is_some();
        found |= node.take("definitions").is_some();
    }
    if depth < HARD_DEPTH {
        children_mut(node, |_, child| found |= strip_nested_defs(child, depth + 1));
    }
    found
}

/// Removes root definitions that some ref used to reach but no ref reaches any more (with `all`: every
/// definition no ref reaches, for a backend that reads them anyway).
fn drop_orphans(root: &mut Value, targets: &HashSet<String>, all: bool) -> usize {
    let snapshot = root.clone();
    let Value::Object(r) = root else { return 0 };
    let mut unused = 0;
    let mut reached: HashSet<String> = HashSet::new();
    let mut queue: Vec<String> = Vec::new();
    let mut body = r.clone();
    body.remove("$defs");
    body.remove("definitions");
    collect_refs(&Value::Object(body), &mut queue, 0);
    while let Some(q) = queue.pop() {
        let Some(ptr) = q.strip_prefix('#') else { continue };
        if !reached.insert(ptr.to_string()) {
            continue;
        }
        if let Some(v) = snapshot.pointer(ptr) {
            collect_refs(v, &mut queue, 0);
        }
    }
    for k in ["$defs", "definitions"] {
        let Some(Value::Object(d)) = r.get_mut(k) else { continue };
        let names: Vec<String> = d.keys().cloned().collect();
        for n in names {
            let mut p = format!("/{k}/");
            push_escaped(&mut p, &n);
            let inside = format!("{p}/");
            let used = reached.iter().any(|x| x == &p || x.starts_with(&inside));
            if (all || targets.contains(&p)) && !used {
                d.remove(&n);
                unused += usize::from(!targets.contains(&p));
            }
        }
        if d.is_empty() {
            r.remove(k);
        }
    }
    unused
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::passes::testing::{apply, count};
    use crate::schema::Target;
    use serde_json::json;

    /// A ref to this document by its `$id` (whole, or its last segments) resolves here; a ref to
    /// another document is never fetched.
    #[test]
    fn refs_through_the_documents_own_id_resolve_and_others_are_external() {
        let v = json!({"$id": "https://ex.com/schemas/s.json", "type": "object", "properties": {
            "a": {"$ref": "https://ex.com/schemas/s.json#/$defs/A"}, "b": {"$ref": "s.json#/$defs/A"}, "c": {"$ref": "other.json#/$defs/A"}},
            "$defs": {"A": {"type": "string", "minLength": 1}}});
        let (out, r) = apply(run, v, &Target::LLAMA_CPP);
        assert_eq!(out["properties"]["a"], json!({"type": "string", "minLength": 1}), "{out}");
        assert_eq!(out["properties"]["b"], json!({"type": "string", "minLength": 1}), "{out}");
        assert!(out["properties"]["c"].get("$ref").is_none(), "{out}");
        assert_eq!((count(&r, Kind::RefsInlined), count(&r, Kind::RefExternal)), (2, 1));
    }

    /// Definitions that only refer to each other constrain nothing and would recurse without end in a
    /// grammar: the ref goes, said.
    #[test]
    fn a_cycle_of_bare_refs_becomes_any_value() {
        let v = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}, "y": {"$ref": "#/$defs/C"}},
                       "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}, "C": {"type": "integer"}}});
        let (out, r) = apply(run, v, &Target::LLAMA_CPP);
        assert_eq!(out["properties"]["x"], json!({}), "{out}");
        let mut at: Vec<&str> = r.records.iter().filter(|x| x.kind == Kind::RefsUnresolved).map(|x| x.path.as_str()).collect();
        at.sort_unstable();
        assert_eq!(at, ["/$defs/A", "/$defs/B", "/properties/x"], "the use and each definition of the cycle: {out}");
        assert!(r.records.iter().any(|x| x.detail.contains("only refers back to itself")));
    }

    /// Definitions below the root are resolved from the original: where that changes nothing the
    /// schema comes back as it was, nested definitions and all; where it does, they go.
    #[test]
    fn nested_definitions_stay_only_when_nothing_changed() {
        let same = json!({"type": "object", "$defs": {"A": {"type": "string"}}, "properties": {
            "a": {"type": "object", "$defs": {"X": {"type": "string"}}}, "b": {"$ref": "#/$defs/A"}}});
        let (out, r) = apply(run, same.clone(), &Target::LLAMA_CPP);
        assert_eq!(out, same);
        assert!(r.is_empty(), "{:?}", r.records);
        let into = json!({"type": "object", "properties": {"a": {"$defs": {"X": {"type": "string"}}, "$ref": "#/properties/a/$defs/X"}}});
        let (out, r) = apply(run, into, &Target::LLAMA_CPP);
        assert_eq!(out, json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert_eq!(count(&r, Kind::RefsInlined), 1);
    }

    /// A ref inlined leaves no `$defs` behind where there was none.
    #[test]
    fn inlining_alone_adds_no_definitions() {
        let v = json!({"type": "object", "properties": {"a": {"$ref": "#/properties/b"}, "b": {"type": "string"}}});
        let (out, _) = apply(run, v, &Target::LLAMA_CPP);
        assert_eq!(out, json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}));
    }

    /// A ref applied in place of itself or of an ancestor (`allOf`, or the node itself) would be
    /// checked without consuming anything: it goes, said, even where the node constrains.
    #[test]
    fn refs_in_place_of_themselves_go() {
        let in_place = [
            json!({"type": "object", "allOf": [{"$ref": "#"}]}),
            json!({"type": "object", "then": {"$ref": "#"}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "$ref": "#/properties/a"}}}),
        ];
        for v in in_place {
            let (out, r) = apply(run, v.clone(), &Target::LLAMA_CPP);
            assert!(!out.to_string().contains("$ref"), "{v} -> {out}");
            assert_eq!(count(&r, Kind::RefsUnresolved), 1, "{v}");
        }
    }

    /// A sibling whose name starts with the referring one's is not an ancestor: its ref is followed.
    #[test]
    fn a_ref_to_a_sibling_with_a_longer_name_is_followed() {
        let v = json!({"type": "object", "properties": {"a": {"type": "string"}, "ab": {"minLength": 2, "$ref": "#/properties/a"}}});
        let (out, r) = apply(run, v, &Target::LLAMA_CPP);
        assert_eq!(out["properties"]["ab"], json!({"type": "string", "minLength": 2}), "{out}");
        assert_eq!((count(&r, Kind::RefsInlined), count(&r, Kind::RefsUnresolved)), (1, 0));
    }

    /// Recursive targets whose names reduce to the same definition name get distinct ones.
    #[test]
    fn definitions_made_for_recursive_targets_get_unique_names() {
        let rec = |n: &str| json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/{n}")}}});
        let v = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/my-a"}, "b": {"$ref": "#/$defs/my_a"}, "c": {"$ref": "#/$defs/my.a"}},
                       "$defs": {"my-a": rec("my-a"), "my_a": rec("my_a"), "my.a": rec("my.a")}});
        let (out, _) = apply(run, v, &Target::LLAMA_CPP);
        let mut names: Vec<&str> = out["$defs"].as_object().map(|d| d.keys().map(String::as_str).collect()).unwrap_or_default();
        names.sort_unstable();
        assert_eq!(names, ["mya", "mya2", "mya3"], "{out}");
    }

    /// The search for a cycle through a target's refs stops after 2,000 targets and then takes the
    /// target as recursive (kept as a definition rather than copied): one target short of that, a
    /// chain without a cycle is still copied in.
    #[test]
    fn the_cycle_search_is_bounded_at_its_edge() {
        let chain = |n: usize| {
            let mut defs = Map::new();
            let link = |next: String| json!({"type": "object", "properties": {"n": {"$ref": next}}});
            defs.insert("d-0".into(), link("#/$defs/D1".into()));
            for i in 1..n {
                defs.insert(format!("D{i}"), link(format!("#/$defs/D{}", i + 1)));
            }
            defs.insert(format!("D{n}"), json!({"type": "string"}));
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/d-0"}}, "$defs": defs})
        };
        // d-0 reaches D1..Dn: n targets
        let (out, r) = apply(run, chain(MAX_CYCLE_SEARCH + 1), &Target::LLAMA_CPP);
        assert_eq!(out["properties"]["a"]["properties"]["n"], json!({"$ref": "#/$defs/D1"}), "copied in");
        assert_eq!((count(&r, Kind::RefsInlined), count(&r, Kind::RefsRetargeted)), (1, 0));
        let (out, r) = apply(run, chain(MAX_CYCLE_SEARCH + 2), &Target::LLAMA_CPP);
        assert_eq!(out["properties"]["a"], json!({"$ref": "#/$defs/d0"}), "kept as a definition");
        assert_eq!((count(&r, Kind::RefsInlined), count(&r, Kind::RefsRetargeted)), (0, 1));
    }
}
