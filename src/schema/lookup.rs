//! Keyword lookups on schema nodes. serde_json's map hashes every key with SipHash; a schema node has a
//! handful of keys, and the passes ask for keywords on every node of every schema, so comparing the
//! keys in order is several times cheaper (it was a third of the engine's time). Maps with many keys
//! (`properties` of a large tool) still use the hash index.

use serde_json::{Map, Value};

/// Maps up to this many keys are searched in order.
const LINEAR: usize = 12;

pub trait Lookup {
    /// The value under keyword `k`, if this is an object that has it.
    fn at(&self, k: &str) -> Option<&Value>;
    fn at_mut(&mut self, k: &str) -> Option<&mut Value>;
    fn has(&self, k: &str) -> bool {
        self.at(k).is_some()
    }
}

/// Removal that costs a scan, not a hash, when the keyword is absent (the usual case on a node).
pub trait Take {
    /// `remove(k)` (with its order semantics), skipped when `k` is not there.
    fn take(&mut self, k: &str) -> Option<Value>;
}

impl Take for Map<String, Value> {
    fn take(&mut self, k: &str) -> Option<Value> {
        if self.has(k) {
            self.remove(k)
        } else {
            None
        }
    }
}

impl Lookup for Map<String, Value> {
    fn at(&self, k: &str) -> Option<&Value> {
        if self.len() <= LINEAR {
            self.iter().find_map(|(n, v)| (n == k).then_some(v))
        } else {
            self.get(k)
        }
    }

    fn at_mut(&mut self, k: &str) -> Option<&mut Value> {
        if self.len() <= LINEAR {
            self.iter_mut().find_map(|(n, v)| (n == k).then_some(v))
        } else {
            self.get_mut(k)
        }
    }
}

impl Lookup for Value {
    fn at(&self, k: &str) -> Option<&Value> {
        self.as_object().and_then(|m| m.at(k))
    }

    fn at_mut(&mut self, k: &str) -> Option<&mut Value> {
        self.as_object_mut().and_then(|m| m.at_mut(k))
    }
}

/// A few keywords, asked about for every key of every node: a small open-addressing table keyed on a
/// key's length, first and last byte, so a key that is none of them (nearly every key: `type`,
/// `description`, `properties`) costs a hash of three numbers and one empty slot, not a comparison with
/// each keyword of its length (`type` and `then`, `enum` and `else` share one).
pub struct KeySet {
    words: Vec<&'static str>,
    /// `1 + index` into `words` of the keyword at each place, 0 where none is.
    slots: [u8; SLOTS],
    /// More words than the table holds at half load: each key is compared with every word.
    linear: bool,
}

const SLOTS: usize = 128;

impl KeySet {
    pub fn new(words: impl IntoIterator<Item = &'static str>) -> Self {
        let words: Vec<&'static str> = words.into_iter().collect();
        let mut slots = [0u8; SLOTS];
        let linear = words.len() > SLOTS / 2;
        if !linear {
            for (i, w) in words.iter().enumerate() {
                let mut at = KeySet::slot(w);
                // at most half the places are taken: a free one is always found
                while slots.get(at).is_some_and(|s| *s != 0) {
                    at = (at + 1) % SLOTS;
                }
                if let Some(s) = slots.get_mut(at) {
                    *s = (i + 1) as u8;
                }
            }
        }
        KeySet { words, slots, linear }
    }

    /// Where a key's search starts: its length, first and last byte, mixed.
    fn slot(k: &str) -> usize {
        let b = k.as_bytes();
        let (first, last) = (b.first().copied().unwrap_or(0), b.last().copied().unwrap_or(0));
        let h = (b.len() as u32).wrapping_mul(0x9E37_79B1) ^ u32::from(first).wrapping_mul(0x85EB_CA77) ^ u32::from(last).wrapping_mul(0xC2B2_AE3D);
        (h >> 25) as usize % SLOTS
    }

    /// The keyword equal to `k`, if there is one.
    pub fn get(&self, k: &str) -> Option<&'static str> {
        if self.linear {
            return self.words.iter().copied().find(|w| *w == k);
        }
        let mut at = KeySet::slot(k);
        // ends at the first free place (half of them are)
        loop {
            let i = usize::from(*self.slots.get(at)?);
            let w = *self.words.get(i.checked_sub(1)?)?;
            if w == k {
                return Some(w);
            }
            at = (at + 1) % SLOTS;
        }
    }

    pub fn contains(&self, k: &str) -> bool {
        self.get(k).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::{KeySet, Lookup};
    use serde_json::{json, Value};

    #[test]
    fn finds_keys_in_small_and_large_maps() {
        let small = json!({"type": "object", "anyOf": []});
        assert_eq!(small.at("anyOf"), Some(&json!([])));
        assert!(small.at("oneOf").is_none());
        assert!(json!(1).at("type").is_none());
        let mut big = serde_json::Map::new();
        for i in 0..40 {
            big.insert(format!("k{i}"), json!(i));
        }
        let mut big = Value::Object(big);
        assert_eq!(big.at("k39"), Some(&json!(39)));
        assert!(!big.has("k40"));
        if let Some(v) = big.at_mut("k3") {
            *v = json!("x");
        }
        assert_eq!(big["k3"], "x");
    }

    #[test]
    fn key_sets_answer_as_the_list_does() {
        let words = ["if", "then", "uniqueItems", "contains", "unevaluatedProperties", "x-a-keyword-name-longer-than-sixty-four-bytes-to-share-the-last-bit"];
        let set = KeySet::new(words);
        for k in words.iter().copied().chain(["", "type", "item", "description", "x-a-keyword-name-longer-than-sixty-four-bytes-to-share-the-last-bi7"]) {
            assert_eq!(set.get(k), words.iter().copied().find(|w| *w == k), "{k:?}");
        }
        // every keyword list the engine asks, and more words than the table holds (compared in turn)
        let many: Vec<&'static str> = crate::schema::walk::CONSTRAINTS.iter().chain(crate::schema::walk::ANNOTATIONS).copied().collect();
        let lots: Vec<&'static str> = (0..70).map(|i| &*Box::leak(format!("k{i}").into_boxed_str())).collect();
        let probes: Vec<&str> = many.iter().copied().chain(lots.iter().copied()).collect();
        for list in [&many[..], &many[..40], crate::schema::walk::ANNOTATIONS, &[][..], &lots[..]] {
            let set = KeySet::new(list.iter().copied());
            for k in probes.iter().copied().chain(["", "typ", "types", "x-nullable", "descriptio", "k7O", "\u{e9}t\u{e9}"]) {
                assert_eq!(set.get(k), list.iter().copied().find(|w| *w == k), "{k:?} in {} words", list.len());
            }
        }
    }
}
