//! The function names an API accepts, and a valid name for one it refuses.

/// Which function names an API accepts: 1 to `max_len` ASCII letters, digits and `extra` characters,
/// starting with a letter or `_` where `letter_first`.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Names {
    pub max_len: usize,
    pub extra: &'static str,
    pub letter_first: bool,
}

impl Names {
    /// OpenAI: `^[a-zA-Z0-9_-]{1,64}$`.
    pub const OPENAI: Names = Names { max_len: 64, extra: "_-", letter_first: false };
    /// Anthropic: `^[a-zA-Z0-9_-]{1,128}$`.
    pub const ANTHROPIC: Names = Names { max_len: 128, extra: "_-", letter_first: false };
    /// Bedrock Converse (its `ToolName` shape): `[a-zA-Z0-9_-]+`, 1 to 64, as OpenAI's.
    pub const BEDROCK: Names = Names::OPENAI;
    /// Gemini: a letter or `_` first, then `[a-zA-Z0-9_.:-]`; 64 at most (the documented 128 is not
    /// what every client and model version takes; 64 is).
    pub const GEMINI: Names = Names { max_len: 64, extra: "_.:-", letter_first: true };

    fn char_ok(&self, c: char) -> bool {
        c.is_ascii_alphanumeric() || self.extra.contains(c)
    }

    /// Whether the API takes `name` as it is.
    pub fn allows(&self, name: &str) -> bool {
        let first_ok = name.chars().next().is_some_and(|c| !self.letter_first || c.is_ascii_alphabetic() || c == '_');
        first_ok && name.len() <= self.max_len && name.chars().all(|c| self.char_ok(c))
    }

    /// Gemini's property names in `parameters`: a letter or `_` first, then `[a-zA-Z0-9_]`, 64 at most.
    pub const GEMINI_PROPERTY: Names = Names { max_len: 64, extra: "_", letter_first: true };

    /// A valid name for `original`, unique among `taken`: the spelled name when it fits and is free,
    /// else a cut of it and `_` and eight hex digits of the original's hash (then a counter, should
    /// even that be taken). Deterministic: the same inputs give the same name in every request.
    pub fn assign(&self, original: &str, taken: &std::collections::HashSet<String>) -> String {
        let spelled = self.spell(original);
        if spelled.len() <= self.max_len && !taken.contains(&spelled) {
            return spelled;
        }
        let hash = format!("{:08x}", xxhash_rust::xxh3::xxh3_64(original.as_bytes()) as u32);
        let keep = self.max_len.saturating_sub(hash.len() + 1);
        // spelled is ASCII, so any byte index is a character boundary
        let head = spelled.get(..keep.min(spelled.len())).unwrap_or("");
        let mut name = format!("{head}_{hash}");
        let mut n = 0u32;
        while taken.contains(&name) {
            n += 1;
            let tail = format!("_{hash}{n}");
            let head = spelled.get(..self.max_len.saturating_sub(tail.len()).min(spelled.len())).unwrap_or("");
            name = format!("{head}{tail}");
        }
        name
    }

    /// `name` with every refused character as `_` (and a `_` in front where the first character may
    /// not start a name); the length is not cut here.
    pub fn spell(&self, name: &str) -> String {
        let mut out: String = name.chars().map(|c| if self.char_ok(c) { c } else { '_' }).collect();
        if out.is_empty() || (self.letter_first && !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')) {
            out.insert(0, '_');
        }
        out
    }
}
