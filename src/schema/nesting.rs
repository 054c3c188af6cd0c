//! Nesting bounds on the text of a schema, before it is parsed.
//!
//! serde_json refuses input nested deeper than 128 containers, and a schema nested 10,000 levels
//! (370 KB) makes llama.cpp's converter overflow its stack on every version. Such a schema must not
//! reach the backend as it came, and cannot be parsed to be rewritten, so this scan cuts it at the
//! byte level, without recursion: a subschema nested deeper than `max_depth` (counted as the `bounds`
//! pass counts: map keywords' own objects do not add a level) becomes `{}`, and so does the innermost
//! subschema holding anything nested deeper than [`MAX_JSON_DEPTH`] containers (a long `properties`
//! chain, or data under `default`/`enum`). The result parses, and the `bounds` pass sees a schema
//! it can finish. Runs only on a schema serde_json could not parse, so it costs nothing otherwise.

use crate::schema::walk::{push_escaped, ARRAY, MAP, SINGLE};
use crate::schema::Context;

/// Most levels of nested containers left in a cut schema (serde_json stops at 128; room to spare).
pub const MAX_JSON_DEPTH: usize = 120;

/// One subtree replaced: where (a JSON pointer within the schema) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    pub path: String,
    pub detail: String,
}

/// What a container's members are, as far as nesting is concerned.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Role {
    /// A schema object at this schema depth.
    Schema(usize),
    /// The object of a map keyword (`properties`) of a schema at this depth: its values are schemas.
    Map(usize),
    /// The array of an array keyword (`anyOf`) of a schema at this depth: its elements are schemas.
    Schemas(usize),
    /// Anything else: values, not schemas.
    Data,
}

struct Frame {
    role: Role,
    start: usize,
    /// Length of the path buffer when the container opened.
    path_len: usize,
    is_object: bool,
    /// Object: the member key just read (or none yet). Array: the next element's index.
    key: Option<String>,
    index: usize,
}

/// Returns `text` with every subtree past the bounds replaced, and one [`Cut`] per replacement; `None`
/// when nothing needed cutting or `text` is not well-formed JSON (the caller then keeps its error).
pub fn bound(text: &str, max_depth: usize, context: Context) -> Option<(String, Vec<Cut>)> {
    let scan = Scan { text, bytes: text.as_bytes(), max_depth, context, stack: Vec::new(), path: String::new(), cuts: Vec::new() };
    let cuts = scan.run()?;
    if cuts.is_empty() {
        return None;
    }
    splice(text, cuts, context)
}

/// One pass over the text: the open containers, the pointer to the value being read, and the
/// subtrees to replace (start, end, why).
struct Scan<'t> {
    text: &'t str,
    bytes: &'t [u8],
    max_depth: usize,
    context: Context,
    stack: Vec<Frame>,
    path: String,
    cuts: Vec<(usize, usize, Cut)>,
}

impl Scan<'_> {
    /// The cuts, or `None` when the text is not well-formed JSON.
    fn run(mut self) -> Option<Vec<(usize, usize, Cut)>> {
        let mut i = 0usize;
        while i < self.bytes.len() {
            let b = *self.bytes.get(i)?;
            i = match b {
                b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' => {
                    if b == b',' {
                        if let Some(f) = self.stack.last_mut() {
                            if !f.is_object {
                                f.index += 1;
                            } else {
                                f.key = None;
                            }
                        }
                    }
                    i + 1
                }
                b'}' | b']' => {
                    self.stack.pop();
                    i + 1
                }
                b'"' if self.stack.last().is_some_and(|f| f.is_object && f.key.is_none()) => self.key(i)?,
                _ => self.value(i, b)?,
            };
        }
        self.stack.is_empty().then_some(self.cuts)
    }

    /// A member key at `i`; returns where it ends.
    fn key(&mut self, i: usize) -> Option<usize> {
        let end = string_end(self.bytes, i)?;
        let raw = self.text.get(i..end)?;
        let key = if raw.contains('\\') { serde_json::from_str::<String>(raw).ok()? } else { raw.get(1..raw.len() - 1)?.to_string() };
        if let Some(f) = self.stack.last_mut() {
            f.key = Some(key);
        }
        Some(end)
    }

    /// A value starting at `i` with byte `b`: a scalar is skipped, a container within the bounds
    /// opened, one past them cut. Returns where reading goes on.
    fn value(&mut self, i: usize, b: u8) -> Option<usize> {
        let (role, seg) = match self.stack.last() {
            None => (Role::Schema(0), None),
            Some(f) => (child_role(f, b), Some(segment(f))),
        };
        let depth_here = self.stack.last().map_or(0, |f| f.path_len);
        self.path.truncate(depth_here);
        if let Some(s) = &seg {
            self.path.push('/');
            push_escaped(&mut self.path, s);
        }
        if b != b'{' && b != b'[' {
            return scalar_end(self.bytes, i);
        }
        let too_deep_schema = matches!(role, Role::Schema(d) if d > self.max_depth);
        let too_deep_json = self.stack.len() + 1 > MAX_JSON_DEPTH;
        if !too_deep_schema && !too_deep_json {
            self.stack.push(Frame { role, start: i, path_len: self.path.len(), is_object: b == b'{', key: None, index: 0 });
            return Some(i + 1);
        }
        self.cut(i, role, too_deep_json)
    }

    /// Cuts at the container opening at `i`: a schema too deep where it stands; past the JSON bound,
    /// the innermost schema already open, so its `{}` stays within the bound. Returns the end of the
    /// subtree cut.
    fn cut(&mut self, i: usize, role: Role, too_deep_json: bool) -> Option<usize> {
        let max_depth = self.max_depth;
        // an array keyword's schemas at the bound would sit two levels past it: the schema holding
        // them is cut instead, as the `bounds` pass does
        let past_by_two = matches!(role, Role::Schema(d) if d > max_depth + 1);
        let (at, cut_path, why) = if !too_deep_json && !past_by_two {
            (self.stack.len(), self.path.clone(), format!("nesting deeper than {max_depth}"))
        } else {
            let j = self.stack.iter().rposition(|f| matches!(f.role, Role::Schema(_)))?;
            let f = self.stack.get(j)?;
            let why = if too_deep_json { format!("nested deeper than {MAX_JSON_DEPTH} JSON levels") } else { format!("nesting deeper than {max_depth}") };
            (j, self.path.get(..f.path_len)?.to_string(), why)
        };
        let start = self.stack.get(at).map_or(i, |f| f.start);
        let end = container_end(self.bytes, i, self.stack.len().saturating_sub(at))?;
        self.stack.truncate(at);
        self.cuts.retain(|(s, _, _)| *s < start);
        let what = if at == 0 && self.context == Context::Tool { "any object" } else { "any value" };
        self.cuts.push((start, end, Cut { path: cut_path, detail: format!("{why}: subtree replaced by {what}") }));
        Some(end)
    }
}

/// `text` with each cut subtree replaced by `{}` (the root of a tool by `{"type":"object"}`).
fn splice(text: &str, cuts: Vec<(usize, usize, Cut)>, context: Context) -> Option<(String, Vec<Cut>)> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    let mut list = Vec::with_capacity(cuts.len());
    for (s, e, cut) in cuts {
        out.push_str(text.get(pos..s)?);
        out.push_str(if s == first_value(bytes) && context == Context::Tool { r#"{"type":"object"}"# } else { "{}" });
        pos = e;
        list.push(cut);
    }
    out.push_str(text.get(pos..)?);
    Some((out, list))
}

/// The offset of the first non-whitespace byte: where the root value starts.
fn first_value(bytes: &[u8]) -> usize {
    bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(0)
}

/// The role of a value that opens with byte `b` inside frame `f`.
fn child_role(f: &Frame, b: u8) -> Role {
    match f.role {
        Role::Schema(d) => {
            let k = f.key.as_deref().unwrap_or("");
            if MAP.contains(&k) && b == b'{' {
                Role::Map(d)
            } else if ARRAY.contains(&k) && b == b'[' {
                Role::Schemas(d)
            } else if SINGLE.contains(&k) {
                Role::Schema(d + 1)
            } else {
                Role::Data
            }
        }
        Role::Map(d) => Role::Schema(d + 1),
        // an array keyword's array is a level of its own, as in the `bounds` pass
        Role::Schemas(d) => Role::Schema(d + 2),
        Role::Data => Role::Data,
    }
}

/// The JSON-pointer token of the value about to start in frame `f`.
fn segment(f: &Frame) -> String {
    if f.is_object {
        f.key.clone().unwrap_or_default()
    } else {
        f.index.to_string()
    }
}

/// The offset just past the string that starts (with its quote) at `i`.
fn string_end(bytes: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The offset just past a number, `true`, `false`, `null` or string starting at `i`.
fn scalar_end(bytes: &[u8], i: usize) -> Option<usize> {
    if bytes.get(i) == Some(&b'"') {
        return string_end(bytes, i);
    }
    let mut j = i;
    while j < bytes.len() && !matches!(bytes.get(j)?, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b':') {
        j += 1;
    }
    (j > i).then_some(j)
}

/// From the container opening at `i`, inside `open` other containers still open, the offset just past
/// the close of the outermost of them (`open` = 0: just this container).
fn container_end(bytes: &[u8], i: usize, open: usize) -> Option<usize> {
    let mut depth = open;
    let mut j = i;
    while j < bytes.len() {
        match bytes.get(j)? {
            b'"' => {
                j = string_end(bytes, j)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn nested_properties(n: usize) -> String {
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(r#"{"type":"object","properties":{"a":"#);
        }
        s.push_str(r#"{"type":"string"}"#);
        for _ in 0..n {
            s.push_str("}}");
        }
        s
    }

    fn depth(v: &Value) -> usize {
        match v {
            Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn a_schema_too_deep_to_parse_is_cut_and_then_parses() {
        let text = nested_properties(10_000);
        assert!(serde_json::from_str::<Value>(&text).is_err());
        let (out, cuts) = bound(&text, 64, Context::Tool).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(depth(&v) <= MAX_JSON_DEPTH, "{}", depth(&v));
        assert_eq!(cuts.len(), 1);
        // a `properties` chain reaches the JSON limit before the schema depth: cut where it does
        assert!(cuts[0].path.starts_with("/properties/a/properties/a/"), "{}", cuts[0].path);
        assert!(cuts[0].detail.contains("nested deeper than 120 JSON levels"), "{}", cuts[0].detail);
        assert_eq!(v.pointer(&cuts[0].path), Some(&serde_json::json!({})));
    }

    #[test]
    fn schema_depth_is_counted_as_the_bounds_pass_counts_it() {
        // items chains: one JSON level per schema level, so the schema bound cuts first
        let mut s = String::new();
        for _ in 0..200 {
            s.push_str(r#"{"type":"array","items":"#);
        }
        s.push_str("{}");
        s.push_str(&"}".repeat(200));
        let (out, cuts) = bound(&s, 64, Context::Output).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(cuts.len(), 1);
        assert_eq!(cuts[0].path, "/items".repeat(65));
        assert!(cuts[0].detail.starts_with("nesting deeper than 64"), "{}", cuts[0].detail);
        assert_eq!(v.pointer(&cuts[0].path), Some(&serde_json::json!({})));
        assert!(v.pointer(&"/items".repeat(64)).is_some_and(|n| n["type"] == "array"));
    }

    #[test]
    fn deep_data_cuts_the_schema_that_holds_it() {
        let data = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        let text = format!(r#"{{"type":"object","properties":{{"x":{{"type":"array","default":{data}}},"y":{{"type":"string"}}}}}}"#);
        let (out, cuts) = bound(&text, 64, Context::Tool).unwrap();
        assert_eq!(out, r#"{"type":"object","properties":{"x":{},"y":{"type":"string"}}}"#);
        assert_eq!(cuts[0].path, "/properties/x");
        // at the root, a tool keeps an object
        let text = format!(r#"{{"type":"object","const":{data}}}"#);
        let (out, cuts) = bound(&text, 64, Context::Tool).unwrap();
        assert_eq!((out.as_str(), cuts[0].path.as_str()), (r#"{"type":"object"}"#, ""));
        let (out, _) = bound(&text, 64, Context::Output).unwrap();
        assert_eq!(out, "{}");
    }

    #[test]
    fn keys_with_escapes_strings_with_brackets_and_shallow_schemas() {
        let deep = format!("{}{{}}{}", r#"{"anyOf":["#.repeat(80), "]}".repeat(80));
        let text = format!(r#"{{"properties":{{"a\"/b":{deep},"s":{{"const":"[[{{"}}}}}}"#);
        let (out, cuts) = bound(&text, 64, Context::Output).unwrap();
        assert!(serde_json::from_str::<Value>(&out).is_ok());
        assert!(cuts[0].path.starts_with("/properties/a\"~1b/anyOf/0/anyOf/0"), "{}", cuts[0].path);
        assert!(out.contains(r#""s":{"const":"[[{"}"#));
        // nothing to cut, or not JSON: None
        assert!(bound(r#"{"type":"string"}"#, 64, Context::Output).is_none());
        assert!(bound(&nested_properties(10)[..40], 64, Context::Output).is_none());
        assert!(bound("{\"a\":[1,2", 64, Context::Output).is_none());
    }
}
