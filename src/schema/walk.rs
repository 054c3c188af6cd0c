//! Which keywords hold schemas, and a traversal that visits only those.
//!
//! Keywords that hold data (`const`, `default`, `enum`, `examples`) are never entered, and the maps
//! (`properties`, `$defs`, ...) are entered as maps: a property *named* `not` or `$ref` is a property.

use crate::schema::lookup::{KeySet, Lookup};
use serde_json::{Map, Value};

/// Keywords whose value is one schema.
pub const SINGLE: &[&str] = &[
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "contentSchema",
];
/// Keywords whose value is an array of schemas (`items` in its draft-07 array form too).
pub const ARRAY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to schemas.
pub const MAP: &[&str] = &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];
/// Keywords whose value is data, never a schema.
pub const DATA: &[&str] = &["const", "default", "enum", "examples"];
/// Keywords that describe and never constrain.
pub const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "discriminator",
    "x-nullable",
];

/// Keywords that constrain a value (2020-12 and the older spellings `dialect` rewrites). Anything else,
/// unknown keywords included, is not a constraint: it is never moved into union branches or merged.
pub const CONSTRAINTS: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "required",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "maxProperties",
    "minProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "unevaluatedItems",
    "unevaluatedProperties",
    "nullable",
];

pub fn is_constraint(k: &str) -> bool {
    CONSTRAINTS.contains(&k)
}

pub fn is_annotation(k: &str) -> bool {
    ANNOTATIONS.contains(&k) || k.starts_with("x-")
}

/// The one walk over a node's subschemas, with `iter_mut` or `iter`: `$f(seg, child)` for each, in
/// document order. The segment is a [`Seg`], not text: most callers never need the text, and building
/// it for every child of every node was a tenth of the engine's time.
macro_rules! each_sub {
    ($node:expr, $f:expr, $iter:ident) => {{
        for (k, v) in $node.$iter() {
            let key = k.as_str();
            if MAP.contains(&key) {
                if let Value::Object(m) = v {
                    for (name, child) in m.$iter() {
                        if key == "dependencies" && !(child.is_object() || child.is_boolean()) {
                            continue; // draft-07 dependencies: arrays of names are not schemas
                        }
                        $f(Seg::Map(key, name), child);
                    }
                }
            } else if ARRAY.contains(&key) && v.is_array() {
                if let Value::Array(a) = v {
                    for (i, child) in a.$iter().enumerate() {
                        $f(Seg::Array(key, i), child);
                    }
                }
            } else if SINGLE.contains(&key) {
                $f(Seg::Single(key), v);
            }
        }
    }};
}

/// [`each_sub`] for the traversals that keep a path: each child's segment is appended to `buf` for
/// the call and cut off after it, so a traversal extends its own path without allocating.
macro_rules! each_child {
    ($node:expr, $buf:expr, $f:expr, $iter:ident) => {{
        let buf: &mut String = $buf;
        let base = buf.len();
        each_sub!(
            $node,
            |seg: Seg, child| {
                buf.truncate(base);
                seg.push_to(buf);
                $f(&mut *buf, seg.slot(), child);
            },
            $iter
        );
        buf.truncate(base);
    }};
}

/// Where a subschema sits below its node: the JSON-pointer suffix from the node to it ("/properties/a",
/// "/anyOf/0", "/items"), as parts; [`Seg::push_to`] and `Display` write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seg<'a> {
    /// Under a map keyword, by name.
    Map(&'a str, &'a str),
    /// In an array keyword, by index.
    Array(&'a str, usize),
    /// A keyword's value.
    Single(&'a str),
}

impl<'a> Seg<'a> {
    /// Appends the segment as JSON-pointer text.
    pub fn push_to(self, out: &mut String) {
        out.push('/');
        match self {
            Seg::Map(key, name) => {
                out.push_str(key);
                out.push('/');
                push_escaped(out, name);
            }
            Seg::Array(key, i) => {
                out.push_str(key);
                push_index(out, i);
            }
            Seg::Single(key) => out.push_str(key),
        }
    }

    /// The keyword the subschema sits under.
    pub fn key(self) -> &'a str {
        match self {
            Seg::Map(key, _) | Seg::Array(key, _) | Seg::Single(key) => key,
        }
    }

    pub fn slot(self) -> Slot {
        match self {
            Seg::Map(..) => Slot::Map,
            Seg::Array(..) => Slot::Array,
            Seg::Single(_) => Slot::Single,
        }
    }
}

impl std::fmt::Display for Seg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Seg::Map(key, name) if needs_escape(name.as_bytes()) => {
                let mut escaped = String::new();
                push_escaped(&mut escaped, name);
                write!(f, "/{key}/{escaped}")
            }
            Seg::Map(key, name) => write!(f, "/{key}/{name}"),
            Seg::Array(key, i) => write!(f, "/{key}/{i}"),
            Seg::Single(key) => write!(f, "/{key}"),
        }
    }
}

/// Calls `f(segment, child)` for every direct subschema of `node`, in document order.
pub fn children_mut(node: &mut Map<String, Value>, mut f: impl FnMut(Seg, &mut Value)) {
    each_sub!(node, f, iter_mut)
}

/// Where a subschema sits in its parent: under a map keyword (`properties/a`), in an array keyword
/// (`anyOf/0`), or as a keyword's value (`items`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Map,
    Array,
    Single,
}

/// [`children_mut`] for walks that keep their own path: each child's segment is appended to `path`
/// for the call (and cut off after it), with the kind of slot the child sits in.
pub fn children_at(node: &mut Map<String, Value>, path: &mut String, mut f: impl FnMut(&mut String, Slot, &mut Value)) {
    each_child!(node, path, |p: &mut String, slot, c| f(p, slot, c), iter_mut)
}

/// Read-only [`children_mut`]: the same subschemas, in the same order.
pub fn children<'a>(node: &'a Map<String, Value>, mut f: impl FnMut(Seg<'a>, &'a Value)) {
    each_sub!(node, f, iter)
}

/// Appends `/i` without a temporary string.
fn push_index(seg: &mut String, i: usize) {
    use std::fmt::Write;
    let _ = write!(seg, "/{i}");
}

/// Appends a JSON-pointer reference token (RFC 6901: `~` is `~0`, `/` is `~1`).
pub fn push_escaped(out: &mut String, token: &str) {
    if !needs_escape(token.as_bytes()) {
        out.push_str(token); // almost every name: no character to escape
        return;
    }
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// Whether `b` holds a `~` or a `/`, eight bytes a step (every traversal asks this of every property
/// name it passes).
fn needs_escape(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // some byte of `w` equals `x` exactly when `w ^ x...x` has a zero byte (the has-zero-byte test)
    let has = |w: u64, x: u8| {
        let v = w ^ (ONES * u64::from(x));
        v.wrapping_sub(ONES) & !v & HIGH != 0
    };
    let mut words = b.chunks_exact(8);
    for c in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let w = u64::from_le_bytes(w);
        if has(w, b'~') || has(w, b'/') {
            return true;
        }
    }
    words.remainder().iter().any(|c| *c == b'~' || *c == b'/')
}

/// Depth at which every traversal stops descending. The bounds pass cuts schemas far shallower
/// (64 by default); this is the backstop that keeps recursion off the end of the stack whatever a
/// later pass builds.
pub const HARD_DEPTH: usize = 512;

/// Post-order traversal: children first, then `f(node, path)`. Only object nodes are passed to `f`;
/// booleans were turned into objects by an earlier pass, and other values are not schemas.
pub fn post_order(root: &mut Value, path: &str, f: &mut dyn FnMut(&mut Map<String, Value>, &Path)) {
    traverse(root, path, Order::Post, f);
}

/// What one read-only walk finds in `root`, over the same nodes the traversals visit: which of the
/// census keywords are keywords of some node, and which of `tests` some node answers yes to.
pub struct Survey {
    pub found: Vec<&'static str>,
    /// Bit `i`: test `i` said yes at some node (each test is asked until one node does). All set when
    /// the root is not an object, or a node at the walk's hard depth has subschemas: no node was
    /// there to ask.
    pub acting: u64,
    /// How many nodes it met.
    pub nodes: usize,
}

/// Where a node a survey asks about sits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Place {
    pub root: bool,
    /// Its nesting as the schema bounds count it: one level per subschema, two for one in an array
    /// keyword (the array is a level of its own).
    pub levels: usize,
    /// How many nodes the walk has met, this one included.
    pub count: usize,
}

/// A survey's question to one node: `test(i, node, place)` for each test `i`.
pub type Test<'t> = dyn Fn(usize, &Map<String, Value>, &Place) -> bool + 't;

/// The census of `keys` and `tests` node tests (at most 64, later ones count as answered yes), in
/// one walk.
pub fn survey(root: &Value, keys: &KeySet, tests: usize, test: &Test) -> Survey {
    fn go(v: &Value, keys: &KeySet, tests: usize, test: &Test, depth: usize, levels: usize, s: &mut Survey) {
        let Value::Object(node) = v else { return };
        s.nodes += 1;
        let place = Place { root: depth == 0, levels, count: s.nodes };
        for k in node.keys() {
            if let Some(w) = keys.get(k) {
                if !s.found.contains(&w) {
                    s.found.push(w);
                }
            }
        }
        for i in 0..tests.min(64) {
            if s.acting & (1 << i) == 0 && test(i, node, &place) {
                s.acting |= 1 << i;
            }
        }
        if depth < HARD_DEPTH {
            each_sub!(node, |seg: Seg, c| go(c, keys, tests, test, depth + 1, levels + if seg.slot() == Slot::Array { 2 } else { 1 }, s), iter);
        } else {
            // subschemas past the walk's reach cannot be asked, but a pass at this node may read them
            let mut deeper = false;
            each_sub!(node, |_, _| deeper = true, iter);
            if deeper {
                s.acting = u64::MAX;
            }
        }
    }
    let beyond = if tests >= 64 { 0 } else { u64::MAX << tests };
    let mut s = Survey { found: Vec::new(), acting: if root.is_object() { beyond } else { u64::MAX }, nodes: 0 };
    go(root, keys, tests, test, 0, 0, &mut s);
    s
}

/// Which of `keys` are keywords of some schema node of `root` ([`survey`] without tests).
pub fn census(root: &Value, keys: &[&'static str]) -> Vec<&'static str> {
    survey(root, &KeySet::new(keys.iter().copied()), 0, &|_, _, _| false).found
}

/// Whether some schema node of `v` has a string `$ref`.
pub fn has_ref(v: &Value, depth: usize) -> bool {
    let Value::Object(m) = v else { return false };
    if m.at("$ref").is_some_and(Value::is_string) {
        return true;
    }
    let mut found = false;
    if depth <= HARD_DEPTH {
        children(m, |_, c| found = found || has_ref(c, depth + 1));
    }
    found
}

/// Every string `$ref` of the schema nodes of `v`, in document order.
pub fn collect_refs(v: &Value, out: &mut Vec<String>, depth: usize) {
    let Value::Object(m) = v else { return };
    if let Some(r) = m.at("$ref").and_then(Value::as_str) {
        out.push(r.to_string());
    }
    if depth <= HARD_DEPTH {
        children(m, |_, c| collect_refs(c, out, depth + 1));
    }
}

/// Pre-order traversal: `f(node, path)` first, then the children of what `f` left behind.
pub fn pre_order(root: &mut Value, path: &str, f: &mut dyn FnMut(&mut Map<String, Value>, &Path)) {
    traverse(root, path, Order::Pre, f);
}

/// A node's JSON pointer during a traversal, written out only when asked for.
///
/// Each level of the walk holds its own segment and a reference to its parent's `Path`, on the
/// stack; the text is built (and kept) the first time a pass reads it, which is where it records a
/// change. Building every node's pointer for every pass was a seventh of the engine's time, and
/// almost none of them is ever read. It reads as a `&str` wherever one is expected (`Deref`).
pub struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    /// `None` for the node the traversal starts at.
    seg: Option<Seg<'p>>,
    /// The starting node's own pointer.
    base: &'p str,
    text: std::cell::OnceCell<String>,
}

impl<'p> Path<'p> {
    pub fn root(base: &'p str) -> Path<'p> {
        Path { parent: None, seg: None, base, text: std::cell::OnceCell::new() }
    }

    /// The path of a child at `seg` below this one.
    pub fn child(&'p self, seg: Seg<'p>) -> Path<'p> {
        Path { parent: Some(self), seg: Some(seg), base: self.base, text: std::cell::OnceCell::new() }
    }

    /// Whether this is the root pointer (`""`), without writing it.
    pub fn is_empty(&self) -> bool {
        self.seg.is_none() && self.base.is_empty()
    }

    /// The segment this node sits at below its parent (`None` at the start).
    pub fn seg(&self) -> Option<Seg<'p>> {
        self.seg
    }

    fn build(&self) -> String {
        // the segments from here up to the nearest level whose text is already written
        let mut segs: Vec<Seg> = Vec::new();
        let mut at = Some(self);
        let mut start = self.base;
        while let Some(p) = at {
            if let Some(t) = p.text.get() {
                start = t;
                break;
            }
            match p.seg {
                Some(s) => segs.push(s),
                None => break,
            }
            at = p.parent;
        }
        let mut out = String::with_capacity(start.len() + 16 * segs.len());
        out.push_str(start);
        for s in segs.iter().rev() {
            s.push_to(&mut out);
        }
        out
    }
}

impl std::ops::Deref for Path<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.text.get_or_init(|| self.build())
    }
}

impl AsRef<str> for Path<'_> {
    fn as_ref(&self) -> &str {
        self
    }
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl std::fmt::Debug for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// What a pass does at one node, with its context: the node, its JSON pointer, the pass's `Cx`.
pub type AtNode<'f, 'a> = dyn FnMut(&mut Map<String, Value>, &Path, &mut crate::schema::Cx<'a>) + 'f;

/// [`post_order`] from the root, handing the pass's context to `f` with each node: a pass records
/// (and says removals) as it goes, the one way every pass reports.
pub fn post_order_cx<'a>(root: &mut Value, cx: &mut crate::schema::Cx<'a>, f: &mut AtNode<'_, 'a>) {
    traverse(root, "", Order::Post, &mut |node, path| f(node, path, cx));
}

/// [`pre_order`] from the root, handing the pass's context to `f` (see [`post_order_cx`]).
pub fn pre_order_cx<'a>(root: &mut Value, cx: &mut crate::schema::Cx<'a>, f: &mut AtNode<'_, 'a>) {
    traverse(root, "", Order::Pre, &mut |node, path| f(node, path, cx));
}

/// When a traversal visits a node: before its subschemas, or after them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Pre,
    Post,
}

/// The one traversal. Generic over the visit, so the per-node call of the few wrappers above is a
/// direct one (theirs calls the pass's own visit once more).
fn traverse<F: FnMut(&mut Map<String, Value>, &Path) + ?Sized>(root: &mut Value, path: &str, order: Order, f: &mut F) {
    fn go<F: FnMut(&mut Map<String, Value>, &Path) + ?Sized>(v: &mut Value, path: &Path, depth: usize, order: Order, f: &mut F) {
        let Value::Object(node) = v else { return };
        if order == Order::Pre {
            f(node, path);
        }
        if depth < HARD_DEPTH {
            each_sub!(node, |seg, child| go(child, &path.child(seg), depth + 1, order, f), iter_mut);
        }
        if order == Order::Post {
            f(node, path);
        }
    }
    go(root, &Path::root(path), 0, order, f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #[test]
        fn needs_escape_finds_every_tilde_and_slash(s in "[a-z._ -]{0,30}[~/]?[a-z._ -]{0,30}") {
            prop_assert_eq!(needs_escape(s.as_bytes()), s.contains(['~', '/']));
        }
    }

    #[test]
    fn a_segment_displays_as_it_is_pushed() {
        for seg in [Seg::Map("properties", "a"), Seg::Map("properties", "a/b~c"), Seg::Map("$defs", ""), Seg::Array("anyOf", 12), Seg::Single("items")] {
            let mut pushed = String::new();
            seg.push_to(&mut pushed);
            assert_eq!(seg.to_string(), pushed);
        }
        assert_eq!(Seg::Map("properties", "a/b~c").to_string(), "/properties/a~1b~0c");
    }

    #[test]
    fn paths_are_written_when_read_and_equal_the_pointer() {
        let mut v = json!({"properties": {"a/b": {"anyOf": [{"items": {"type": "string"}}]}}, "$defs": {"x~": {}}});
        let mut seen = Vec::new();
        let mut empty = Vec::new();
        post_order(&mut v, "", &mut |_, p| {
            empty.push(p.is_empty());
            seen.push(p.to_string());
        });
        assert_eq!(seen, ["/properties/a~1b/anyOf/0/items", "/properties/a~1b/anyOf/0", "/properties/a~1b", "/$defs/x~0", ""]);
        assert_eq!(empty, [false, false, false, false, true]);
        let mut below = Vec::new();
        pre_order(&mut v, "/base", &mut |_, p| below.push(p.to_string()));
        assert_eq!(below.first().map(String::as_str), Some("/base"));
        assert_eq!(below.get(1).map(String::as_str), Some("/base/properties/a~1b"));
    }
}
