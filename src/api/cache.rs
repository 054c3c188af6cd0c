//! The rewrite cache: agents resend the same tool catalog on every turn, so each schema's rewrite is
//! kept, keyed by its exact bytes (with the tool name, context, profile and options). A hit reuses the
//! rewritten text and the report, so counters move exactly as on a miss. Bounded by bytes (LRU); the
//! input is stored and compared on a hit, so two schemas that differ by one byte never share an entry,
//! whatever the hash does.
//!
//! Two levels share one budget: each schema, and each schema-bearing member of a body as a whole (a
//! `tools` array): a catalog resent unchanged costs one scan of the body, one hash and one compare.
//! A third kind of entry, a memo, keeps whatever a caller made of one input ([`SiteCache::memo`]):
//! the MCP leg's whole `tools/list` result, so a list sent again costs one hash and one compare.

use crate::schema::{Context, Report};
use lru::LruCache;
use std::any::Any;
use xxhash_rust::xxh3::Xxh3;

struct Entry {
    input: Box<str>,
    tool: Box<str>,
    context: Context,
    /// The rewritten schema, `None` when it needed no change.
    output: Option<Box<str>>,
    report: Report,
    counts: Counts,
    size: usize,
    /// A memo's value (then `tool`, `output` and `report` are empty).
    memo: Option<Box<dyn Any + Send>>,
}

/// The tool name a memo is stored under, beside the schemas (a memo is told apart by its value too).
const MEMO: &str = "\0memo";

/// One worker's cache (the Wasm VM is single-threaded; nothing here is shared between workers).
pub struct SiteCache {
    lru: LruCache<u64, Entry>,
    /// The lengths of the whole members stored last, each with its scope and name's hash: where a
    /// body's member may be one of them, which lengths to look it up at ([`SiteCache::lengths`]).
    recent: std::collections::VecDeque<(u64, usize)>,
    bytes: usize,
    max_bytes: usize,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
}

/// What a cache lookup gives back: the rewritten text (or `None`: unchanged) and its report.
pub struct Hit {
    pub output: Option<String>,
    pub report: Report,
    pub counts: Counts,
}

/// For a whole member (a `tools` array): what it holds. Zero for a single schema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Schema sites inside (each a hit when the member is one).
    pub schemas: usize,
    /// Of those, tool parameter schemas.
    pub tools: usize,
    /// Of those, schemas the rewrite changed.
    pub changed: usize,
}

impl SiteCache {
    pub fn new(max_bytes: usize) -> SiteCache {
        SiteCache { lru: LruCache::unbounded(), recent: std::collections::VecDeque::new(), bytes: 0, max_bytes, hits: 0, misses: 0, evictions: 0 }
    }

    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn key(scope: u64, tool: &str, context: Context, input: &str) -> u64 {
        let mut h = Xxh3::with_seed(scope);
        h.update(&[context as u8]);
        h.update(&(tool.len() as u64).to_le_bytes());
        h.update(tool.as_bytes());
        h.update(input.as_bytes());
        h.digest()
    }

    /// `scope` identifies the profile and options (see [`scope`]).
    /// The stored rewrite for exactly this input, if any. Callers count hits and misses per schema
    /// (a member hit serves every schema in it).
    pub fn get(&mut self, scope: u64, tool: &str, context: Context, input: &str) -> Option<Hit> {
        let k = Self::key(scope, tool, context, input);
        match self.lru.get(&k) {
            Some(e) if e.memo.is_none() && same(e.input.as_bytes(), input.as_bytes()) && &*e.tool == tool && e.context == context => {
                Some(Hit { output: e.output.as_deref().map(String::from), report: e.report.clone(), counts: e.counts })
            }
            _ => None,
        }
    }

    /// The lengths of the inputs stored last under `scope` and `tool` with [`SiteCache::put_sized`],
    /// newest first, each once.
    pub fn lengths(&self, scope: u64, tool: &str) -> Vec<usize> {
        let id = Self::key(scope, tool, Context::Tool, "");
        let mut out: Vec<usize> = Vec::new();
        for (k, len) in self.recent.iter().rev() {
            if *k == id && !out.contains(len) {
                out.push(*len);
            }
        }
        out
    }

    /// [`SiteCache::put`], and the input's length kept among the last few under `scope` and `tool`.
    pub fn put_sized(&mut self, scope: u64, tool: &str, context: Context, input: &str, value: Hit) {
        const RECENT: usize = 32;
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((Self::key(scope, tool, Context::Tool, ""), input.len()));
        self.put(scope, tool, context, input, value);
    }

    pub fn put(&mut self, scope: u64, tool: &str, context: Context, input: &str, value: Hit) {
        let Hit { output, report, counts } = value;
        let size = input.len() + tool.len() + output.as_ref().map_or(0, String::len) + report.records.len() * 96 + 64;
        // One entry may take half the cache, no more: the largest real catalog (1,409 tools, 1.3 MB in
        // and out) must fit whole in the default budget, or every resend of it costs a schema-by-schema
        // lookup (about 3.5x the time of one member hit, measured natively).
        if self.max_bytes == 0 || size > self.max_bytes / 2 {
            return;
        }
        let k = Self::key(scope, tool, context, input);
        let e = Entry { input: input.into(), tool: tool.into(), context, output: output.map(Into::into), report, counts, size, memo: None };
        self.insert(k, e);
    }

    /// What a caller made of exactly this `input` under `scope` (a value of type `T` it stored with
    /// [`SiteCache::remember`]), if it is still here. Callers count what the value says, as on a miss.
    pub fn memo<T: Any + Clone>(&mut self, scope: u64, input: &str) -> Option<T> {
        let k = Self::key(scope, MEMO, Context::Tool, input);
        let e = self.lru.get(&k)?;
        if !same(e.input.as_bytes(), input.as_bytes()) {
            return None;
        }
        e.memo.as_ref()?.downcast_ref::<T>().cloned()
    }

    /// Stores `value`, what the caller made of `input` under `scope`, taking `size` bytes beside the
    /// input (the same budget as the schemas, one entry at most half of it).
    pub fn remember<T: Any + Send>(&mut self, scope: u64, input: &str, value: T, size: usize) {
        let size = input.len().saturating_add(size).saturating_add(64);
        if self.max_bytes == 0 || size > self.max_bytes / 2 {
            return;
        }
        let k = Self::key(scope, MEMO, Context::Tool, input);
        let e = Entry {
            input: input.into(),
            tool: Box::default(),
            context: Context::Tool,
            output: None,
            report: Report::default(),
            counts: Counts::default(),
            size,
            memo: Some(Box::new(value)),
        };
        self.insert(k, e);
    }

    fn insert(&mut self, k: u64, e: Entry) {
        let size = e.size;
        if let Some(old) = self.lru.put(k, e) {
            self.bytes = self.bytes.saturating_sub(old.size);
        }
        self.bytes += size;
        while self.bytes > self.max_bytes {
            let Some((_, old)) = self.lru.pop_lru() else { break };
            self.bytes = self.bytes.saturating_sub(old.size);
            self.evictions += 1;
        }
    }
}

/// Whether two byte strings are equal, sixteen bytes a step: a hit compares the whole stored input (a
/// catalog can be megabytes), and the wasm target's `memcmp` (wasi-libc's) goes a byte at a time.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (x, y) = (a.chunks_exact(16), b.chunks_exact(16));
    let tails = x.remainder() == y.remainder();
    tails && x.zip(y).all(|(p, q)| u128::from_ne_bytes(p.try_into().unwrap_or_default()) == u128::from_ne_bytes(q.try_into().unwrap_or_default()))
}

/// A cache scope for a profile and its options: entries made under other options never match.
pub fn scope(profile: &str, opts: &crate::schema::Options) -> u64 {
    use std::hash::{Hash, Hasher};
    // hashed field by field (the derived `Hash`), not through its `Debug` text: once per body
    let mut h = Xxh3::new();
    profile.hash(&mut h);
    opts.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(output: Option<&str>) -> Hit {
        Hit { output: output.map(String::from), report: Report::default(), counts: Counts::default() }
    }

    #[test]
    fn hits_only_for_identical_inputs() {
        let mut c = SiteCache::new(1 << 20);
        c.put(1, "t", Context::Tool, "{\"a\":1}", hit(Some("{\"b\":1}")));
        assert_eq!(c.get(1, "t", Context::Tool, "{\"a\":1}").and_then(|h| h.output), Some("{\"b\":1}".into()));
        assert!(c.get(1, "t", Context::Tool, "{\"a\":2}").is_none());
        assert!(c.get(1, "u", Context::Tool, "{\"a\":1}").is_none());
        assert!(c.get(1, "t", Context::Output, "{\"a\":1}").is_none());
        assert!(c.get(2, "t", Context::Tool, "{\"a\":1}").is_none());
    }

    #[test]
    fn scope_follows_the_profile_and_every_option() {
        use crate::schema::{LlamaCpp, Options};
        let base = Options::default();
        let s = scope("llama-cpp", &base);
        assert_eq!(s, scope("llama-cpp", &base.clone()));
        assert_ne!(s, scope("vllm", &base));
        let changed: Vec<fn(&mut Options)> = vec![
            |o| o.promote_to_description = !o.promote_to_description,
            |o| o.open_objects = !o.open_objects,
            |o| o.llama_cpp = LlamaCpp::V2026_10,
            |o| o.limits.max_depth += 1,
            |o| o.limits.max_nodes += 1,
            |o| o.limits.inline_budget += 1,
            |o| o.limits.max_branches += 1,
            |o| o.limits.max_repetition += 1,
            |o| o.limits.max_open_properties += 1,
        ];
        for (i, change) in changed.iter().enumerate() {
            let mut o = base.clone();
            change(&mut o);
            assert_ne!(s, scope("llama-cpp", &o), "option {i} left the scope unchanged");
        }
    }

    #[test]
    fn bounded_by_bytes_least_recent_first() {
        let mut c = SiteCache::new(4096);
        for i in 0..100 {
            c.put(1, "t", Context::Tool, &format!("{{\"i\":{i}}}{}", " ".repeat(100)), hit(None));
            assert!(c.bytes() <= 4096);
        }
        assert!(c.evictions > 50);
        assert!(c.get(1, "t", Context::Tool, &format!("{{\"i\":99}}{}", " ".repeat(100))).is_some());
        assert!(c.get(1, "t", Context::Tool, &format!("{{\"i\":0}}{}", " ".repeat(100))).is_none());
        // one entry may take half the cache, not more
        let mut c = SiteCache::new(4096);
        c.put(1, "t", Context::Tool, &" ".repeat(1900), hit(None));
        assert!(c.get(1, "t", Context::Tool, &" ".repeat(1900)).is_some());
        c.put(1, "t", Context::Tool, &" ".repeat(2100), hit(None));
        assert!(c.get(1, "t", Context::Tool, &" ".repeat(2100)).is_none());
        let mut off = SiteCache::new(0);
        off.put(1, "t", Context::Tool, "{}", hit(None));
        assert!(off.get(1, "t", Context::Tool, "{}").is_none());
    }
}
