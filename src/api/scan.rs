//! The body scan of [`super::skim`], piece by piece: a request body read as the proxy hands it over,
//! its top-level members found as they go by, so that toolfit holds only from the first member it may
//! change (a tool list, structured output) and lets everything before it go on at once.
//!
//! It accepts exactly the texts [`super::skim::object`] (after [`super::skim::text`]) accepts:
//! UTF-8, and serde_json's grammar for one object, whatever the sizes of the pieces (a property test
//! holds it to that over every way of cutting a text). A top-level key is decoded as the skim decodes
//! it; values are checked, not kept, except the short ones (`model`), which go to the engine as they
//! were. Strings, most of any body, are skipped 16 bytes at a time as the skim skips them.

use super::skim::{key_text, special};

/// The longest top-level key or member value kept whole, in bytes of its text.
pub const KEEP: usize = 1024;

/// One top-level member the scan went past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its key as serde_json decodes it; `None` past [`KEEP`].
    pub key: Option<String>,
    /// The offset of the key's opening quote.
    pub at: usize,
    /// The value's start and end offsets (the end past its last byte).
    pub value: (usize, usize),
    /// The value's text, when no longer than [`KEEP`].
    pub text: Option<String>,
}

/// How a piece of the body left the scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// Read to its end.
    Read,
    /// Stopped at a top-level key the caller holds from (`holds` said so): the offset of its quote.
    Held(usize),
    /// The body is not an object (its first byte but whitespace, at this offset, is not `{`): the
    /// scan says nothing more of it.
    NotObject(usize),
    /// The text so far is no JSON object serde_json reads (or not UTF-8).
    Bad,
}

/// Where the scan is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// Before the top-level `{`.
    Start,
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After a comma in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// A value must start.
    Value,
    /// After `[`: a value or `]`.
    ValueOrEnd,
    /// After a value: a comma or the container's end.
    After,
    /// Inside a string (`key`: an object's key), after a backslash, or in a `\u` escape's digits.
    Str {
        key: bool,
    },
    Esc {
        key: bool,
    },
    Hex {
        key: bool,
        left: u8,
    },
    Num(Num),
    Lit {
        word: &'static [u8],
        at: u8,
    },
    /// After the top-level `}`: only whitespace.
    Done,
    NotObject(usize),
    Bad,
}

/// Where in a number, by serde_json's grammar: one leading zero at most, a digit after a point and
/// after an exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    /// After `-`: a digit.
    Sign,
    /// After a leading `0`.
    Zero,
    Int,
    /// After `.`: a digit.
    Dot,
    Frac,
    /// After `e`: a sign or a digit.
    Exp,
    /// After the exponent's sign: a digit.
    ExpSign,
    ExpDigits,
}

impl Num {
    /// Whether the number may end here.
    fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }

    /// The state after byte `c`, or `None` if `c` is not part of the number.
    fn next(self, c: u8) -> Option<Num> {
        let digit = c.is_ascii_digit();
        match (self, c) {
            (Num::Sign, b'0') => Some(Num::Zero),
            (Num::Sign, _) if digit => Some(Num::Int),
            (Num::Int, _) if digit => Some(Num::Int),
            (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::Exp),
            (Num::Dot | Num::Frac, _) if digit => Some(Num::Frac),
            (Num::Exp, b'+' | b'-') => Some(Num::ExpSign),
            (Num::Exp | Num::ExpSign | Num::ExpDigits, _) if digit => Some(Num::ExpDigits),
            _ => None,
        }
    }
}

/// A container a value opens.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Object,
    Array,
}

/// Where a piece's read is: the offset the piece starts at, the byte read, and where the key or value
/// the top-level member keeps started in it.
struct At {
    base: usize,
    i: usize,
    mark: usize,
}

/// What the top-level member in progress keeps of its key or value.
#[derive(Default)]
struct Keep {
    bytes: Vec<u8>,
    /// Past [`KEEP`]: nothing kept.
    long: bool,
    on: bool,
}

impl Keep {
    fn start(&mut self) {
        self.bytes.clear();
        self.long = false;
        self.on = true;
    }

    fn add(&mut self, part: &[u8]) {
        if self.long {
            return;
        }
        if self.bytes.len() + part.len() > KEEP {
            self.long = true;
            self.bytes.clear();
            return;
        }
        self.bytes.extend_from_slice(part);
    }

    /// The text kept, its last part `part`; the keep ends.
    fn end(&mut self, part: &[u8]) -> Option<String> {
        self.add(part);
        self.on = false;
        if self.long {
            return None;
        }
        String::from_utf8(std::mem::take(&mut self.bytes)).ok()
    }
}

/// Where a UTF-8 sequence that `b` ends inside (too few continuation bytes after its lead byte)
/// begins, or `b.len()`: what is after it is checked with the next piece.
fn incomplete(b: &[u8]) -> usize {
    let from = b.len().saturating_sub(3);
    for at in (from..b.len()).rev() {
        let Some(&c) = b.get(at) else { break };
        if c & 0xc0 == 0x80 {
            continue;
        }
        let width = match c {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xff => 4,
            _ => 1,
        };
        return if b.len() - at < width { at } else { b.len() };
    }
    b.len()
}

/// The scan of one body, fed its pieces in order.
pub struct Scan {
    /// Bytes fed before the piece being read.
    seen: usize,
    st: St,
    /// One bit per open container (set for an object), and how many are open (the top-level object
    /// is the first).
    stack: Vec<u64>,
    depth: usize,
    /// The top-level member in progress: its key (decoded), its key's offset, its value's offset.
    key: Option<String>,
    key_at: usize,
    value_at: usize,
    keep: Keep,
    /// The bytes of a UTF-8 sequence the last piece ended inside.
    carry: Vec<u8>,
    /// Top-level members gone past since the caller last took them.
    pub members: Vec<Member>,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            seen: 0,
            st: St::Start,
            stack: Vec::new(),
            depth: 0,
            key: None,
            key_at: 0,
            value_at: 0,
            keep: Keep::default(),
            carry: Vec::new(),
            members: Vec::new(),
        }
    }
}

impl Scan {
    /// Bytes fed so far.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// The offset of a top-level key the scan is inside (not decided yet: the bytes from there cannot
    /// go on before it ends).
    pub fn pending(&self) -> Option<usize> {
        match self.st {
            St::Str { key: true } | St::Esc { key: true } | St::Hex { key: true, .. } if self.depth == 1 => Some(self.key_at),
            _ => None,
        }
    }

    /// Whether the text fed is one whole object (whitespace after it aside), valid UTF-8.
    pub fn complete(&self) -> bool {
        self.st == St::Done && self.carry.is_empty()
    }

    /// Reads the next piece. `holds(key)` says whether the caller holds from a top-level key on (its
    /// decoded text; `None` for a key past [`KEEP`]): the scan stops there, and reads no more.
    pub fn feed(&mut self, piece: &[u8], holds: &mut dyn FnMut(Option<&str>) -> bool) -> Fed {
        let fed = match self.st {
            St::Bad => Fed::Bad,
            St::NotObject(at) => Fed::NotObject(at),
            _ => {
                if self.utf8(piece) {
                    self.read(piece, holds)
                } else {
                    self.bad()
                }
            }
        };
        self.seen += piece.len();
        fed
    }

    /// Checks `piece` as the continuation of valid UTF-8 (a sequence may be cut between pieces).
    fn utf8(&mut self, piece: &[u8]) -> bool {
        let mut rest = piece;
        if let Some(&lead) = self.carry.first() {
            let width = match lead {
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                _ => 4,
            };
            let need = width - self.carry.len().min(width);
            let Some((head, tail)) = rest.split_at_checked(need) else {
                self.carry.extend_from_slice(rest);
                return true;
            };
            self.carry.extend_from_slice(head);
            if std::str::from_utf8(&self.carry).is_err() {
                return false;
            }
            self.carry.clear();
            rest = tail;
        }
        // a sequence the piece ends inside is carried over to the next: the rest is checked whole
        let cut = incomplete(rest);
        let (whole, tail) = rest.split_at(cut);
        if simdutf8::basic::from_utf8(whole).is_err() {
            return false;
        }
        self.carry.extend_from_slice(tail);
        true
    }

    /// Whether the innermost open container is an object.
    fn in_object(&self) -> bool {
        let Some(d) = self.depth.checked_sub(1) else { return false };
        self.stack.get(d / 64).is_some_and(|w| w & (1 << (d % 64)) != 0)
    }

    fn open(&mut self, kind: Open) {
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if word == self.stack.len() {
            self.stack.push(0);
        }
        if let Some(w) = self.stack.get_mut(word) {
            *w = if kind == Open::Object { *w | (1 << bit) } else { *w & !(1 << bit) };
        }
        self.depth += 1;
    }

    /// A value has ended at offset `end`: a top-level member's, if it was at the top level.
    fn value_done(&mut self, end: usize, text: Option<String>) {
        if self.depth == 1 {
            self.members.push(Member { key: self.key.take(), at: self.key_at, value: (self.value_at, end), text });
        }
        self.st = St::After;
    }

    fn read(&mut self, b: &[u8], holds: &mut dyn FnMut(Option<&str>) -> bool) -> Fed {
        // where the key or value the top-level member keeps started in this piece
        let mut at = At { base: self.seen, i: 0, mark: 0 };
        while let Some(&c) = b.get(at.i) {
            let step = match self.st {
                St::Str { key } => self.string(b, &mut at, key, holds),
                St::Esc { .. } | St::Hex { .. } | St::Num(_) | St::Lit { .. } => self.token(b, &mut at, c),
                _ if matches!(c, b' ' | b'\t' | b'\n' | b'\r') => Ok(true),
                _ => self.structure(b, &mut at, c),
            };
            match step {
                Ok(true) => at.i += 1,
                Ok(false) => {}
                Err(fed) => return fed,
            }
        }
        if self.keep.on {
            self.keep.add(b.get(at.mark..).unwrap_or_default());
        }
        Fed::Read
    }

    /// Inside a string: past its run of plain bytes, to its end or its next escape. `Ok(false)`: the
    /// position moved itself.
    fn string(&mut self, b: &[u8], at: &mut At, key: bool, holds: &mut dyn FnMut(Option<&str>) -> bool) -> Result<bool, Fed> {
        let j = special(b, at.i);
        match b.get(j) {
            None => at.i = j,
            Some(b'"') => {
                at.i = j + 1;
                let top = self.depth == 1;
                if !key {
                    let text = if top { self.keep.end(b.get(at.mark..at.i).unwrap_or_default()) } else { None };
                    self.value_done(at.base + at.i, text);
                    return Ok(false);
                }
                if top {
                    let raw = self.keep.end(b.get(at.mark..at.i).unwrap_or_default());
                    let decoded = match raw.as_deref() {
                        Some(q) => Some(key_text(q).ok_or_else(|| self.bad())?),
                        None => None,
                    };
                    if holds(decoded.as_deref()) {
                        return Err(Fed::Held(self.key_at));
                    }
                    self.key = decoded;
                }
                self.st = St::Colon;
            }
            Some(b'\\') => {
                self.st = St::Esc { key };
                at.i = j + 1;
            }
            Some(_) => return Err(self.bad()),
        }
        Ok(false)
    }

    /// A byte of an escape, a number or a literal. `Ok(false)`: the byte ends a number and is read
    /// again, as what follows a value.
    fn token(&mut self, b: &[u8], at: &mut At, c: u8) -> Result<bool, Fed> {
        match self.st {
            St::Esc { key } => {
                self.st = match c {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => St::Str { key },
                    b'u' => St::Hex { key, left: 4 },
                    _ => return Err(self.bad()),
                };
            }
            St::Hex { key, left } => {
                if !c.is_ascii_hexdigit() {
                    return Err(self.bad());
                }
                self.st = if left > 1 { St::Hex { key, left: left - 1 } } else { St::Str { key } };
            }
            St::Num(n) => match n.next(c) {
                Some(next) => self.st = St::Num(next),
                None if n.complete() => {
                    let text = self.kept(b, at, at.i);
                    self.value_done(at.base + at.i, text);
                    return Ok(false);
                }
                None => return Err(self.bad()),
            },
            St::Lit { word, at: k } => {
                if word.get(usize::from(k)) != Some(&c) {
                    return Err(self.bad());
                }
                if usize::from(k) + 1 == word.len() {
                    let text = self.kept(b, at, at.i + 1);
                    self.value_done(at.base + at.i + 1, text);
                } else {
                    self.st = St::Lit { word, at: k + 1 };
                }
            }
            _ => return Err(self.bad()),
        }
        Ok(true)
    }

    /// The text a top-level member keeps of its scalar value, which ends before `end` in this piece.
    fn kept(&mut self, b: &[u8], at: &At, end: usize) -> Option<String> {
        if self.depth != 1 {
            return None;
        }
        self.keep.end(b.get(at.mark..end).unwrap_or_default())
    }

    /// A structural byte: the object's start, a key's, a colon, a value's start, a comma or a
    /// container's end.
    fn structure(&mut self, b: &[u8], at: &mut At, c: u8) -> Result<bool, Fed> {
        let end = at.base + at.i + 1;
        match self.st {
            St::Start => {
                if c != b'{' {
                    self.st = St::NotObject(at.base + at.i);
                    return Err(Fed::NotObject(at.base + at.i));
                }
                self.open(Open::Object);
                self.st = St::KeyOrEnd;
            }
            St::KeyOrEnd | St::Key => match c {
                b'"' => {
                    if self.depth == 1 {
                        self.key_at = at.base + at.i;
                        self.keep.start();
                        at.mark = at.i;
                    }
                    self.st = St::Str { key: true };
                }
                b'}' if self.st == St::KeyOrEnd => self.close(end, b.get(at.mark..at.i + 1)),
                _ => return Err(self.bad()),
            },
            St::Colon if c == b':' => self.st = St::Value,
            St::ValueOrEnd if c == b']' => self.close(end, b.get(at.mark..at.i + 1)),
            St::Value | St::ValueOrEnd => {
                if self.depth == 1 {
                    self.value_at = at.base + at.i;
                    self.keep.start();
                    at.mark = at.i;
                }
                self.st = self.value(c).ok_or_else(|| self.bad())?;
            }
            St::After => match c {
                b',' => self.st = if self.in_object() { St::Key } else { St::Value },
                b'}' if self.in_object() => self.close(end, b.get(at.mark..at.i + 1)),
                b']' if !self.in_object() => self.close(end, b.get(at.mark..at.i + 1)),
                _ => return Err(self.bad()),
            },
            _ => return Err(self.bad()),
        }
        Ok(true)
    }

    /// The state a value's first byte `c` starts (`None`: no value starts so).
    fn value(&mut self, c: u8) -> Option<St> {
        Some(match c {
            b'"' => St::Str { key: false },
            b'{' => {
                self.open(Open::Object);
                St::KeyOrEnd
            }
            b'[' => {
                self.open(Open::Array);
                St::ValueOrEnd
            }
            b't' => St::Lit { word: b"true", at: 1 },
            b'f' => St::Lit { word: b"false", at: 1 },
            b'n' => St::Lit { word: b"null", at: 1 },
            b'-' => St::Num(Num::Sign),
            b'0' => St::Num(Num::Zero),
            b'1'..=b'9' => St::Num(Num::Int),
            _ => return None,
        })
    }

    /// The innermost container ends at offset `end` (past its closing byte); `last`: the part of
    /// this piece a top-level member keeps ends with, if this container was that member's value.
    fn close(&mut self, end: usize, last: Option<&[u8]>) {
        self.depth = self.depth.saturating_sub(1);
        match self.depth {
            0 => self.st = St::Done,
            1 => {
                let text = self.keep.end(last.unwrap_or_default());
                self.value_done(end, text);
            }
            _ => self.st = St::After,
        }
    }

    fn bad(&mut self) -> Fed {
        self.st = St::Bad;
        Fed::Bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::skim;
    use proptest::prelude::*;

    /// What the scan makes of `text` cut at `cuts` (sorted offsets): whether it read one whole object,
    /// and its members as (key, value text) read back from their offsets; `None` for a text that is
    /// not an object.
    fn scanned(text: &[u8], cuts: &[usize]) -> Option<Vec<(String, String)>> {
        let mut s = Scan::default();
        let mut members = Vec::new();
        let mut last = 0;
        for &cut in cuts.iter().chain([text.len()].iter()) {
            let cut = cut.clamp(last, text.len());
            let fed = s.feed(&text[last..cut], &mut |_| false);
            assert_eq!(s.seen(), cut);
            last = cut;
            members.append(&mut s.members);
            match fed {
                Fed::Read => {}
                Fed::NotObject(_) | Fed::Bad => return None,
                Fed::Held(_) => panic!("nothing is held"),
            }
        }
        if !s.complete() {
            return None;
        }
        Some(
            members
                .into_iter()
                .map(|m| {
                    let value = String::from_utf8(text[m.value.0..m.value.1].to_vec()).unwrap();
                    if let Some(t) = &m.text {
                        assert_eq!(t, &value, "the kept text is the value's");
                    } else {
                        assert!(value.len() > KEEP, "a short value is kept: {value:?}");
                    }
                    let key = m.key.unwrap_or_else(|| panic!("a key past KEEP in a test text"));
                    let quoted = std::str::from_utf8(&text[m.at..]).unwrap();
                    assert!(quoted.starts_with('"'), "the key's offset is its quote: {quoted:.20}");
                    (key, value)
                })
                .collect(),
        )
    }

    /// The skim's reading of the same text (UTF-8 first, as the engine reads a body).
    fn skimmed(text: &[u8]) -> Option<Vec<(String, String)>> {
        skim::object(skim::text(text)?).map(|m| m.into_iter().map(|(k, v)| (k, v.to_string())).collect())
    }

    fn same(text: &[u8], cuts: &[usize]) {
        assert_eq!(scanned(text, cuts), skimmed(text), "{:?} cut at {cuts:?}", String::from_utf8_lossy(text));
    }

    /// Whole, byte by byte, and cut at every offset once.
    fn every_cut(text: &[u8]) {
        same(text, &[]);
        same(text, &(1..text.len()).collect::<Vec<_>>());
        for at in 0..=text.len() {
            same(text, &[at]);
        }
    }

    #[test]
    fn agrees_with_the_skim_on_edge_cases_cut_anywhere() {
        for t in skim::tests::EDGES {
            every_cut(t.as_bytes());
        }
        // UTF-8 cut inside a sequence, and not UTF-8 at all
        every_cut("{\"é😀\":\"—😀é\",\"b\":[\"😀\"]}".as_bytes());
        every_cut(b"{\"a\":\"\xff\"}");
        every_cut(b"{\"a\":\"\xe2\x80\"}");
        every_cut(b"{\"a\":\"x\"}\xe2\x80");
        every_cut(b"{\"a\":\"\xed\xa0\x80\"}");
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
        every_cut(deep.as_bytes());
    }

    #[test]
    fn long_keys_and_values_are_not_kept() {
        let long = "k".repeat(KEEP + 1);
        let text = format!(r#"{{"{long}":1,"v":"{}","w":[{}]}}"#, "x".repeat(KEEP), "1,".repeat(KEEP) + "1");
        let mut s = Scan::default();
        let mut keys = Vec::new();
        assert_eq!(
            s.feed(text.as_bytes(), &mut |k| {
                keys.push(k.map(str::to_owned));
                false
            }),
            Fed::Read
        );
        assert!(s.complete());
        assert_eq!(keys, [None, Some("v".to_string()), Some("w".to_string())]);
        let kept: Vec<Option<usize>> = s.members.iter().map(|m| m.text.as_ref().map(String::len)).collect();
        assert_eq!(kept, [Some(1), None, None], "a value of KEEP bytes and its quotes is past KEEP");
    }

    #[test]
    fn it_stops_at_a_key_held_from_and_says_what_is_pending() {
        let text = br#"{"model":"m","messages":[{"role":"user"}],"tools":[1],"x":2}"#;
        let at = text.windows(7).position(|w| w == br#""tools""#).unwrap();
        for cut in 0..text.len() {
            let mut s = Scan::default();
            let mut holds = |k: Option<&str>| k == Some("tools");
            let first = s.feed(&text[..cut], &mut holds);
            if first == Fed::Held(at) {
                assert!(cut > at + 6);
                continue;
            }
            assert_eq!(first, Fed::Read);
            // the pending key: only inside a top-level key
            let inside = [(1, 8), (13, 23), (at, at + 7), (55, 58)].iter().any(|&(a, b)| cut > a && cut < b);
            assert_eq!(s.pending().is_some(), inside, "cut {cut}");
            assert_eq!(s.feed(&text[cut..], &mut holds), Fed::Held(at), "cut {cut}");
            let keys: Vec<_> = s.members.iter().map(|m| m.key.clone().unwrap_or_default()).collect();
            assert_eq!(keys, ["model", "messages"]);
            assert_eq!(s.members[0].text.as_deref(), Some("\"m\""));
        }
        let mut s = Scan::default();
        assert_eq!(s.feed(b" ", &mut |_| true), Fed::Read);
        assert_eq!(s.feed(b" [1]", &mut |_| true), Fed::NotObject(2));
        assert_eq!(s.feed(b"{}", &mut |_| true), Fed::NotObject(2), "and stays so");
    }

    fn cuts() -> impl Strategy<Value = Vec<usize>> {
        prop::collection::vec(0usize..400, 0..8).prop_map(|mut v| {
            v.sort_unstable();
            v
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Valid documents and each with one byte removed, doubled or changed, in random pieces: the
        /// scan accepts what the skim accepts and finds the same members.
        #[test]
        fn agrees_with_the_skim_in_any_pieces(doc in skim::tests::json(), at in any::<prop::sample::Index>(), byte in prop::sample::select(b"{}[],:\"\\ 0123456789-+.eEtfnul\x01xu\xc3".to_vec()), cuts in cuts()) {
            let top = format!("{{\"a\": {doc}, \"b\" : [{doc}], \"c\":{doc}}}");
            let bytes = top.as_bytes();
            same(bytes, &cuts);
            let i = at.index(bytes.len());
            for variant in [[&bytes[..i], &bytes[i + 1..]].concat(), [&bytes[..i], &[byte], &bytes[i..]].concat(), [&bytes[..i], &[byte], &bytes[i + 1..]].concat()] {
                same(&variant, &cuts);
            }
        }
    }
}
