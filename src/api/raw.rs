//! Borrowed views of JSON text: objects and arrays whose members stay unparsed slices of the body,
//! so the bytes around a schema are never re-serialised and their offsets are known.

/// An object's members in document order, duplicates kept (a proxy must rewrite every `tools`
/// a backend might read, first or last).
pub struct RawObject<'a>(pub Vec<(String, Raw<'a>)>);
pub struct RawArray<'a>(pub Vec<Raw<'a>>);

/// One JSON value's text, a slice of the body, checked to be JSON but not parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    pub fn get(&self) -> &'a str {
        self.0
    }
}

/// One element of a `tools` array, read in the same scan as the array: its members stay unparsed
/// slices, except `function` (OpenAI chat, Ollama), whose members are split out in that scan too.
/// Each byte of a catalog is scanned once here instead of once per nesting level.
pub struct RawTool<'a> {
    /// Every member but the split one.
    pub members: RawObject<'a>,
    /// Each split member (`function`) that is an object.
    pub functions: Vec<RawObject<'a>>,
    /// Whether a split member is present at all (an object or not).
    pub has_function: bool,
}

/// The elements of a list of tools that are objects (others are skipped, as a backend would fail on
/// them anyway), read by the body scan ([`super::skim::objects`]), each member `split` split out too
/// (the format's, see [`super::format::Tools::split`]). `None` when `text` is not an array.
pub fn tools<'t>(text: &'t str, split: Option<&str>) -> Option<Vec<RawTool<'t>>> {
    Some(super::skim::objects(text, split)?.into_iter().map(tool).collect())
}

/// A request's `tools` lists, each beside the text of the member that holds it.
pub type ToolLists<'a> = Vec<(&'a str, Vec<RawTool<'a>>)>;

/// [`object`], and each top-level list of tools `list.0` read as [`tools`]`(_, list.1)` reads it, in
/// the same scan.
pub fn object_and_tools<'t>(text: &'t str, list: (&str, Option<&str>)) -> Option<(RawObject<'t>, ToolLists<'t>)> {
    let (members, lists) = super::skim::object_with_lists(text, Some(list))?;
    Some((raw_object(members), lists.into_iter().map(|(at, list)| (at, list.into_iter().map(tool).collect())).collect()))
}

pub(super) fn raw_object(m: Vec<(String, &str)>) -> RawObject<'_> {
    RawObject(m.into_iter().map(|(k, v)| (k, Raw(v))).collect())
}

fn tool(s: super::skim::Split<'_>) -> RawTool<'_> {
    RawTool { members: raw_object(s.members), functions: s.expanded.into_iter().map(raw_object).collect(), has_function: s.named }
}

/// The members of a JSON object that is the whole of `text` (whitespace aside: trailing bytes make it
/// not JSON, so nothing is rewritten in front of them). The fast scan of [`super::skim`].
pub fn object(text: &str) -> Option<RawObject<'_>> {
    super::skim::object(text).map(raw_object)
}

/// The elements of a JSON array that is the whole of `text`.
pub fn array(text: &str) -> Option<RawArray<'_>> {
    super::skim::array(text).map(|a| RawArray(a.into_iter().map(Raw).collect()))
}

/// The document `text` as one raw value, if it is JSON.
pub fn value(text: &str) -> Option<Raw<'_>> {
    super::skim::whole(text).map(Raw)
}

impl<'a> RawObject<'a> {
    /// Every member with this key (usually one).
    pub fn all<'s>(&'s self, key: &'s str) -> impl Iterator<Item = Raw<'a>> + 's {
        self.0.iter().filter(move |(k, _)| k == key).map(|(_, v)| *v)
    }
    pub fn get(&self, key: &str) -> Option<Raw<'a>> {
        self.all(key).last()
    }
    /// A string member's value.
    pub fn str(&self, key: &str) -> Option<String> {
        self.get(key).and_then(|r| serde_json::from_str::<String>(r.get()).ok())
    }
}

/// Byte offset of a borrowed slice inside the text it was parsed from.
pub fn offset(base: &str, part: &str) -> Option<usize> {
    let b = base.as_ptr() as usize;
    let p = part.as_ptr() as usize;
    let at = (p >= b && p + part.len() <= b + base.len()).then(|| p - b);
    if at.is_none() {
        // a slice from another text: toolfit's own mistake, which `placed` reports
        MISPLACED.with(|m| m.set(m.get().saturating_add(1)));
    }
    at
}

thread_local! {
    /// Slices [`offset`] could not place, on this thread, ever.
    static MISPLACED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Runs `f`, and says whether every slice it asked [`offset`] to place was from the text it was
/// placed in. An edit that cannot be placed would be skipped while the others apply: the caller
/// forwards the original instead and counts its own error.
pub fn placed<R>(f: impl FnOnce() -> R) -> (R, bool) {
    let before = MISPLACED.with(std::cell::Cell::get);
    let r = f();
    (r, MISPLACED.with(std::cell::Cell::get) == before)
}

/// The byte range of member `key` whose value starts at `at` (`len` bytes) in `text`, with one comma
/// beside it, so removing the range leaves valid JSON: `, "key": v` when a member comes before it,
/// else `"key": v ,`. `None` when the text before the value is not `"key" :`.
pub fn member_span(text: &str, key: &str, at: usize, len: usize) -> Option<(usize, usize)> {
    let before = text.get(..at)?.trim_end();
    let before = before.strip_suffix(':')?.trim_end();
    let quoted = format!("\"{key}\"");
    let key_at = before.len().checked_sub(quoted.len())?;
    if before.get(key_at..)? != quoted {
        return None;
    }
    let lead = text.get(..key_at)?.trim_end();
    let end = at + len;
    if lead.ends_with(',') {
        return Some((lead.len() - 1, end));
    }
    // the first member: take the comma after it instead
    let after = text.get(end..)?;
    let trimmed = after.trim_start();
    let comma = trimmed.strip_prefix(',')?;
    let rest = comma.trim_start();
    Some((key_at, end + (after.len() - rest.len())))
}

/// One step of a path through a JSON document: a member, or every element of an array.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    Key(&'static str),
    Each,
}

/// Every value at `path` under `v` (members that are not objects or arrays where the path needs one
/// are passed over).
pub fn walk<'a>(v: Raw<'a>, path: &[Step], out: &mut Vec<Raw<'a>>) {
    match path.split_first() {
        None => out.push(v),
        Some((Step::Key(k), rest)) => {
            if let Some(o) = object(v.get()) {
                for m in o.all(k) {
                    walk(m, rest, out);
                }
            }
        }
        Some((Step::Each, rest)) => {
            if let Some(a) = array(v.get()) {
                for m in a.0 {
                    walk(m, rest, out);
                }
            }
        }
    }
}

/// serde_json's own reading of the same texts: the reference the body scan is tested against.
/// The values at `path` from the top level (every duplicate member on the way).
pub(crate) fn values_at<'a>(top: &RawObject<'a>, path: &[&str]) -> Vec<Raw<'a>> {
    let Some((first, rest)) = path.split_first() else { return Vec::new() };
    let mut at: Vec<Raw<'a>> = top.all(first).collect();
    for key in rest {
        at = at.iter().filter_map(|v| object(v.get())).flat_map(|o| o.all(key).collect::<Vec<_>>()).collect();
    }
    at
}

#[cfg(test)]
pub mod serde_reading {
    use super::{Raw, RawArray, RawObject, RawTool};
    use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
    use serde_json::value::RawValue;
    use std::fmt;

    impl<'a> From<&'a RawValue> for Raw<'a> {
        fn from(v: &'a RawValue) -> Self {
            Raw(v.get())
        }
    }

    struct ObjVisitor;
    impl<'de> Visitor<'de> for ObjVisitor {
        type Value = RawObject<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut v = Vec::new();
            while let Some((k, val)) = map.next_entry::<String, &'de RawValue>()? {
                v.push((k, val.into()));
            }
            Ok(RawObject(v))
        }
    }

    struct ArrVisitor;
    impl<'de> Visitor<'de> for ArrVisitor {
        type Value = RawArray<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut v = Vec::new();
            while let Some(x) = seq.next_element::<&'de RawValue>()? {
                v.push(x.into());
            }
            Ok(RawArray(v))
        }
    }

    /// [`super::object`] as serde_json reads it.
    pub fn serde_object(text: &str) -> Option<RawObject<'_>> {
        let mut de = serde_json::Deserializer::from_str(text);
        let v = de.deserialize_map(ObjVisitor).ok()?;
        de.end().ok().map(|_| v)
    }

    /// [`super::array`] as serde_json reads it.
    pub fn serde_array(text: &str) -> Option<RawArray<'_>> {
        let mut de = serde_json::Deserializer::from_str(text);
        let v = de.deserialize_seq(ArrVisitor).ok()?;
        de.end().ok().map(|_| v)
    }

    /// [`super::tools`] from serde_json's raw values: the array, each object element, each object
    /// `function` member; an object whose keys serde_json cannot decode (a lone surrogate) makes the
    /// list unread.
    pub fn serde_tools(text: &str) -> Option<Vec<RawTool<'_>>> {
        fn object(v: Raw<'_>) -> Option<Option<RawObject<'_>>> {
            if v.get().starts_with('{') {
                serde_object(v.get()).map(Some)
            } else {
                Some(None)
            }
        }
        let mut out = Vec::new();
        for item in serde_array(text)?.0 {
            let Some(members) = object(item)? else { continue };
            let mut t = RawTool { members: RawObject(Vec::new()), functions: Vec::new(), has_function: false };
            for (k, v) in members.0 {
                if k == "function" {
                    t.has_function = true;
                    t.functions.extend(object(v)?);
                } else {
                    t.members.0.push((k, v));
                }
            }
            out.push(t);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_tells_a_slice_of_the_text_from_one_of_another() {
        let text = String::from(r#"{"a": 1}"#);
        let other = String::from("1");
        let (at, ok) = placed(|| offset(&text, text.get(6..7).unwrap_or_default()));
        assert_eq!((at, ok), (Some(6), true));
        let (at, ok) = placed(|| offset(&text, &other));
        assert_eq!((at, ok), (None, false));
        assert!(placed(|| ()).1, "nothing asked, nothing misplaced");
    }
}
