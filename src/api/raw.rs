//! Borrowed views of JSON text: objects and arrays whose members stay unparsed slices of the body,
//! so the bytes around a schema are never re-serialised and their offsets are known.

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// An object's members in document order, duplicates kept (a proxy must rewrite every `tools`
/// a backend might read, first or last).
pub struct RawObject<'a>(pub Vec<(String, &'a RawValue)>);
pub struct RawArray<'a>(pub Vec<&'a RawValue>);

struct ObjVisitor;
impl<'de> Visitor<'de> for ObjVisitor {
    type Value = RawObject<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut v = Vec::new();
        while let Some((k, val)) = map.next_entry::<String, &'de RawValue>()? {
            v.push((k, val));
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
            v.push(x);
        }
        Ok(RawArray(v))
    }
}

/// The members of a JSON object that is the whole of `text` (whitespace aside: trailing bytes make it
/// not JSON, so nothing is rewritten in front of them).
pub fn object(text: &str) -> Option<RawObject<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = de.deserialize_map(ObjVisitor).ok()?;
    de.end().ok().map(|_| v)
}

/// The elements of a JSON array that is the whole of `text`.
pub fn array(text: &str) -> Option<RawArray<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = de.deserialize_seq(ArrVisitor).ok()?;
    de.end().ok().map(|_| v)
}

impl<'a> RawObject<'a> {
    /// Every member with this key (usually one).
    pub fn all<'s>(&'s self, key: &'s str) -> impl Iterator<Item = &'a RawValue> + 's {
        self.0.iter().filter(move |(k, _)| k == key).map(|(_, v)| *v)
    }
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
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
    (p >= b && p + part.len() <= b + base.len()).then(|| p - b)
}
