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

/// A few keywords, asked about for every key of every node: a key whose length no keyword has (most
/// of them) is answered by one bit test, the rest by comparing with the keywords of that length.
pub struct KeySet<'k> {
    words: &'k [&'static str],
    /// Bit `n` set: some keyword is `n` bytes long (64 and longer share bit 63).
    lengths: u64,
}

impl<'k> KeySet<'k> {
    pub fn new(words: &'k [&'static str]) -> Self {
        KeySet { words, lengths: words.iter().fold(0, |m, w| m | KeySet::bit(w)) }
    }

    fn bit(k: &str) -> u64 {
        1u64 << k.len().min(63)
    }

    /// The keyword equal to `k`, if there is one.
    pub fn get(&self, k: &str) -> Option<&'static str> {
        if self.lengths & KeySet::bit(k) == 0 {
            return None;
        }
        self.words.iter().copied().find(|w| *w == k)
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
        let set = KeySet::new(&words);
        for k in words.iter().copied().chain(["", "type", "item", "description", "x-a-keyword-name-longer-than-sixty-four-bytes-to-share-the-last-bi7"]) {
            assert_eq!(set.get(k), words.iter().copied().find(|w| *w == k), "{k:?}");
        }
    }
}
