//! ECMA-262 `pattern`s, re-emitted in the regex subset that every llama.cpp converter turns into the same
//! grammar: anchored `^...$`, plain groups, classes whose escapes GBNF knows, no shorthand classes.
//!
//! Hand-written on purpose: the job is to *emit* one narrow dialect, which a general regex crate does not
//! do, and the whole parser is smaller than such a crate in the wasm. Work is bounded by the pattern
//! length and a nesting limit.

use std::borrow::Cow;
use std::fmt::Write;

/// Why a pattern cannot be kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// Valid ECMA regex with no grammar equivalent (look-around, back-references, `\b`, `\p{..}`).
    Feature(String),
    /// Not a valid regex.
    Invalid(String),
}

/// A rewritten pattern and what the rewrite cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub pattern: String,
    /// A repetition count was clamped to the limit.
    pub clamped: bool,
}

#[derive(Debug, Clone)]
enum Node {
    Lit(char),
    Class { neg: bool, items: Vec<(char, char)> },
    Dot,
    Group(Vec<Vec<Node>>),
    Repeat(Box<Node>, u64, Option<u64>),
}

const MAX_PATTERN_LEN: usize = 8_192;
const MAX_NESTING: usize = 32;

/// One escape: a character, or a class (negated?, ranges) such as `\d` or `\p{Lu}`.
type Escape = Result<char, (bool, Cow<'static, [(char, char)]>)>;

/// The longest a pattern may grow to by written-out Unicode properties (or twice its length): the
/// schema, pattern and all, is in the model's prompt (`\p{L}` is about 4 KB as ranges).
pub const MAX_WRITTEN: usize = 2_048;

/// Where an alternation stands: the whole pattern (anchors allowed) or a group.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Top,
    Group,
}

/// Where an escape stands: in a character class (`\b` is a backspace there) or in the sequence.
#[derive(Clone, Copy, PartialEq, Eq)]
enum EscapeIn {
    Class,
    Sequence,
}

/// `\p{name}` (or, `neg`, `\P{name}`) as char ranges: surrogates, which no JSON string holds, left out.
fn property_ranges(name: &str, neg: bool) -> Option<Vec<(char, char)>> {
    let r = crate::schema::unicode::property(name)?;
    let r = if neg { crate::schema::unicode::complement(&r) } else { r };
    let mut out = Vec::with_capacity(r.len() + 1);
    for (lo, hi) in r {
        for (a, b) in [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi)] {
            if let (true, Some(a), Some(b)) = (a <= b, char::from_u32(a), char::from_u32(b)) {
                out.push((a, b));
            }
        }
    }
    Some(out)
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
    depth: usize,
    /// What written-out properties may still add, in ranges: the pattern stops here, not after.
    room: usize,
}

fn feature(m: &str) -> Unsupported {
    Unsupported::Feature(m.to_string())
}
fn invalid(m: &str) -> Unsupported {
    Unsupported::Invalid(m.to_string())
}

const DIGIT: &[(char, char)] = &[('0', '9')];
const WORD: &[(char, char)] = &[('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')];
const SPACE: &[(char, char)] = &[
    (' ', ' '),
    ('\t', '\r'),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{feff}', '\u{feff}'),
];

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }
    fn peek_at(&self, n: usize) -> Option<char> {
        self.s.get(self.i + n).copied()
    }

    /// alternatives until `)` or the end
    fn alternation(&mut self, level: Level) -> Result<Vec<(bool, Vec<Node>, bool)>, Unsupported> {
        let mut alts = Vec::new();
        loop {
            let mut start = false;
            if self.peek() == Some('^') {
                if level == Level::Group {
                    return Err(feature("anchor inside a group"));
                }
                start = true;
                self.i += 1;
            }
            let mut seq = Vec::new();
            let mut end = false;
            while let Some(c) = self.peek() {
                if c == '|' || c == ')' {
                    break;
                }
                if c == '$' {
                    if level == Level::Group {
                        return Err(feature("anchor inside a group"));
                    }
                    self.i += 1;
                    if !matches!(self.peek(), None | Some('|')) {
                        return Err(feature("anchor inside the pattern"));
                    }
                    end = true;
                    break;
                }
                if c == '^' {
                    return Err(feature("anchor inside the pattern"));
                }
                let atom = self.atom()?;
                let atom = self.quantifier(atom)?;
                seq.push(atom);
            }
            alts.push((start, seq, end));
            if self.peek() == Some('|') {
                self.i += 1;
                continue;
            }
            return Ok(alts);
        }
    }

    fn number(&mut self) -> Option<u64> {
        let st = self.i;
        let mut n: u64 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(u64::from(d));
            self.i += 1;
        }
        (self.i > st).then_some(n)
    }

    fn quantifier(&mut self, atom: Node) -> Result<Node, Unsupported> {
        let (min, max) = match self.peek() {
            Some('*') => {
                self.i += 1;
                (0, None)
            }
            Some('+') => {
                self.i += 1;
                (1, None)
            }
            Some('?') => {
                self.i += 1;
                (0, Some(1))
            }
            Some('{') => {
                let save = self.i;
                self.i += 1;
                let Some(lo) = self.number() else {
                    self.i = save;
                    return Ok(atom); // a literal `{` (ECMA Annex B)
                };
                let hi = if self.peek() == Some(',') {
                    self.i += 1;
                    self.number()
                } else {
                    Some(lo)
                };
                if self.peek() != Some('}') {
                    self.i = save;
                    return Ok(atom);
                }
                self.i += 1;
                if hi.is_some_and(|h| h < lo) {
                    return Err(invalid("numbers out of order in {} quantifier"));
                }
                (lo, hi)
            }
            _ => return Ok(atom),
        };
        if self.peek() == Some('?') {
            self.i += 1; // lazy: the same language
        }
        if matches!(self.peek(), Some('*' | '+' | '?')) {
            return Err(invalid("nothing to repeat"));
        }
        Ok(Node::Repeat(Box::new(atom), min, max))
    }

    fn hex(&mut self, n: usize) -> Option<char> {
        let mut v: u32 = 0;
        for k in 0..n {
            let d = self.peek_at(k)?.to_digit(16)?;
            v = v * 16 + d;
        }
        self.i += n;
        char::from_u32(v)
    }

    /// After a backslash: one char, or a class for \d \w \s.
    fn escape(&mut self, at: EscapeIn) -> Result<Escape, Unsupported> {
        let in_class = at == EscapeIn::Class;
        let Some(c) = self.peek() else { return Err(invalid("trailing backslash")) };
        self.i += 1;
        Ok(Ok(match c {
            'd' => return Ok(Err((false, Cow::Borrowed(DIGIT)))),
            'D' => return Ok(Err((true, Cow::Borrowed(DIGIT)))),
            'w' => return Ok(Err((false, Cow::Borrowed(WORD)))),
            'W' => return Ok(Err((true, Cow::Borrowed(WORD)))),
            's' => return Ok(Err((false, Cow::Borrowed(SPACE)))),
            'S' => return Ok(Err((true, Cow::Borrowed(SPACE)))),
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => '\0',
            'b' if in_class => '\u{8}',
            'b' | 'B' => return Err(feature("word boundary")),
            '1'..='9' => return Err(feature("back-reference")),
            'k' => return Err(feature("named back-reference")),
            // a Unicode property as its ranges (inside a class, `\P` as the complement's)
            'p' | 'P' => {
                let end = (self.peek() == Some('{')).then(|| self.s.get(self.i..)?.iter().position(|&x| x == '}')).flatten();
                let Some(end) = end else { return Err(invalid("\\p without {name}")) };
                let name: String = self.s.get(self.i + 1..self.i + end).unwrap_or_default().iter().collect();
                self.i += end + 1;
                let outside = c == 'P' && !in_class;
                let Some(r) = property_ranges(&name, c == 'P' && in_class) else { return Err(feature("Unicode property toolfit has no table for")) };
                // each range is at least two characters written out
                self.room = self.room.checked_sub(2 * r.len()).ok_or_else(|| feature("Unicode property too long written out"))?;
                return Ok(Err((outside, Cow::Owned(r))));
            }
            'c' => match self.peek() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.i += 1;
                    char::from_u32(l as u32 % 32).unwrap_or('\0')
                }
                _ => return Err(invalid("bad control escape")),
            },
            'x' => self.hex(2).ok_or_else(|| invalid("bad \\x escape"))?,
            'u' => {
                if self.peek() == Some('{') {
                    return Err(feature("\\u{...} escape"));
                }
                let save = self.i;
                let Some(hi) = self.s.get(self.i..self.i + 4).and_then(|h| u32::from_str_radix(&h.iter().collect::<String>(), 16).ok()) else {
                    return Err(invalid("bad \\u escape"));
                };
                self.i += 4;
                if (0xD800..0xDC00).contains(&hi) && self.peek() == Some('\\') && self.peek_at(1) == Some('u') {
                    let lo = self.s.get(self.i + 2..self.i + 6).and_then(|h| u32::from_str_radix(&h.iter().collect::<String>(), 16).ok());
                    if let Some(lo) = lo.filter(|l| (0xDC00..0xE000).contains(l)) {
                        self.i += 6;
                        return char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).map(Ok).ok_or_else(|| invalid("bad surrogate pair"));
                    }
                }
                match char::from_u32(hi) {
                    Some(ch) => ch,
                    None => {
                        self.i = save;
                        return Err(feature("lone surrogate"));
                    }
                }
            }
            c if c.is_ascii_alphanumeric() => return Err(invalid("unknown escape")),
            c => c, // identity escape of punctuation
        }))
    }

    fn class(&mut self) -> Result<Node, Unsupported> {
        let mut neg = false;
        if self.peek() == Some('^') {
            neg = true;
            self.i += 1;
        }
        let mut items: Vec<(char, char)> = Vec::new();
        loop {
            let Some(c) = self.peek() else { return Err(invalid("unterminated character class")) };
            if c == ']' {
                self.i += 1;
                break;
            }
            self.i += 1;
            let lo = if c == '\\' {
                match self.escape(EscapeIn::Class)? {
                    Ok(ch) => ch,
                    Err((false, set)) => {
                        items.extend_from_slice(&set);
                        continue;
                    }
                    Err((true, _)) => return Err(feature("negated shorthand inside a class")),
                }
            } else {
                c
            };
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|n| n != ']') {
                self.i += 1;
                let Some(h) = self.peek() else { return Err(invalid("unterminated character class")) };
                self.i += 1;
                let hi = if h == '\\' {
                    match self.escape(EscapeIn::Class)? {
                        Ok(ch) => ch,
                        Err(_) => return Err(invalid("class range with a shorthand")),
                    }
                } else {
                    h
                };
                if hi < lo {
                    return Err(invalid("range out of order in character class"));
                }
                items.push((lo, hi));
            } else {
                items.push((lo, lo));
            }
        }
        if items.is_empty() {
            if neg {
                return Ok(Node::Class { neg: false, items: vec![('\0', char::MAX)] });
            }
            return Err(feature("empty character class"));
        }
        Ok(Node::Class { neg, items })
    }

    fn atom(&mut self) -> Result<Node, Unsupported> {
        let Some(c) = self.peek() else { return Err(invalid("unexpected end")) };
        self.i += 1;
        match c {
            '.' => Ok(Node::Dot),
            '[' => self.class(),
            '(' => {
                if self.peek() == Some('?') {
                    match (self.peek_at(1), self.peek_at(2)) {
                        (Some(':'), _) => self.i += 2,
                        (Some('<'), Some(n)) if n != '=' && n != '!' => {
                            // named group: same language as a plain one
                            while let Some(x) = self.peek() {
                                self.i += 1;
                                if x == '>' {
                                    break;
                                }
                            }
                        }
                        _ => return Err(feature("look-around or inline flags")),
                    }
                }
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return Err(feature("nesting too deep"));
                }
                let alts = self.alternation(Level::Group)?;
                self.depth -= 1;
                if self.peek() != Some(')') {
                    return Err(invalid("unbalanced parentheses"));
                }
                self.i += 1;
                Ok(Node::Group(alts.into_iter().map(|(_, s, _)| s).collect()))
            }
            ')' => Err(invalid("unbalanced parentheses")),
            '*' | '+' | '?' => Err(invalid("nothing to repeat")),
            '\\' => match self.escape(EscapeIn::Sequence)? {
                Ok(ch) => Ok(Node::Lit(ch)),
                Err((neg, set)) => Ok(Node::Class { neg, items: set.into_owned() }),
            },
            c => Ok(Node::Lit(c)),
        }
    }
}

fn push_class_char(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        ']' => out.push_str("\\]"),
        '[' => out.push_str("\\["),
        '"' => out.push_str("\\\""),
        '-' | '^' => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c => out.push(c),
    }
}

struct Emitter {
    out: String,
    max_rep: u64,
    clamped: bool,
    /// A single empty alternative cannot be written in every llama.cpp's grammar.
    empty_alt: bool,
}

impl Emitter {
    fn lit(&mut self, c: char) {
        match c {
            '^' | '$' | '.' | '[' | ']' | '(' | ')' | '|' | '{' | '}' | '*' | '+' | '?' => {
                self.out.push('\\');
                self.out.push(c);
            }
            '\\' => self.out.push_str("\\\\"),
            '\n' => self.out.push_str("\\n"),
            '\t' => self.out.push_str("\\t"),
            '\r' => self.out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(self.out, "\\x{:02X}", c as u32);
            }
            c => self.out.push(c),
        }
    }
    fn node(&mut self, n: &Node) {
        match n {
            Node::Lit(c) => self.lit(*c),
            Node::Dot => self.out.push('.'),
            Node::Class { neg, items } => {
                self.out.push('[');
                if *neg {
                    self.out.push('^');
                }
                for &(lo, hi) in items {
                    push_class_char(&mut self.out, lo);
                    if hi != lo {
                        self.out.push('-');
                        push_class_char(&mut self.out, hi);
                    }
                }
                self.out.push(']');
            }
            Node::Group(alts) => {
                self.out.push('(');
                self.alts(alts);
                self.out.push(')');
            }
            Node::Repeat(inner, min, max) => {
                let needs_group = matches!(**inner, Node::Repeat(..));
                if needs_group {
                    self.out.push('(');
                }
                self.node(inner);
                if needs_group {
                    self.out.push(')');
                }
                let mut lo = *min;
                let mut hi = *max;
                if lo > self.max_rep {
                    lo = self.max_rep;
                    self.clamped = true;
                }
                if hi.is_some_and(|h| h > self.max_rep) {
                    hi = None;
                    self.clamped = true;
                }
                match (lo, hi) {
                    (0, None) => self.out.push('*'),
                    (1, None) => self.out.push('+'),
                    (0, Some(1)) => self.out.push('?'),
                    (l, None) => {
                        let _ = write!(self.out, "{{{l},}}");
                    }
                    (l, Some(h)) if l == h => {
                        let _ = write!(self.out, "{{{l}}}");
                    }
                    (l, Some(h)) => {
                        let _ = write!(self.out, "{{{l},{h}}}");
                    }
                }
            }
        }
    }
    fn seq(&mut self, s: &[Node]) {
        for n in s {
            self.node(n);
        }
    }
    fn alts(&mut self, alts: &[Vec<Node>]) {
        if alts.len() > 1 && alts.iter().any(Vec::is_empty) {
            self.empty_alt = true;
        }
        for (i, s) in alts.iter().enumerate() {
            if i > 0 {
                self.out.push('|');
            }
            self.seq(s);
        }
    }
}

/// Rewrites an ECMA-262 pattern into the subset every llama.cpp version compiles identically.
/// Returns the pattern unchanged when it already is in that subset.
pub fn rewrite(pattern: &str, max_repetition: u64) -> Result<Rewritten, Unsupported> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(feature("pattern too long"));
    }
    let chars: Vec<char> = pattern.chars().collect();
    let budget = MAX_WRITTEN.max(2 * pattern.len());
    let mut p = Parser { s: &chars, i: 0, depth: 0, room: budget };
    let alts = p.alternation(Level::Top)?;
    if p.i < chars.len() {
        return Err(invalid("unbalanced parentheses"));
    }
    let mut e = Emitter { out: String::with_capacity(pattern.len() + 8), max_rep: max_repetition, clamped: false, empty_alt: false };
    e.out.push('^');
    let single = alts.len() == 1;
    if !single {
        e.out.push('(');
    }
    for (i, (start, seq, end)) in alts.iter().enumerate() {
        if i > 0 {
            e.out.push('|');
        }
        if !start {
            e.out.push_str(".*");
        }
        e.seq(seq);
        if seq.is_empty() && *start && *end && !single {
            e.empty_alt = true;
        }
        if !end {
            e.out.push_str(".*");
        }
    }
    if !single {
        e.out.push(')');
    }
    e.out.push('$');
    if e.empty_alt {
        return Err(feature("empty alternative"));
    }
    // written-out properties are held to the budget as a whole (other escapes were always kept)
    if p.room < budget && e.out.len() > budget {
        return Err(feature("Unicode property too long written out"));
    }
    if e.out == "^$" && !(alts.len() == 1 && alts.first().is_some_and(|a| a.0 && a.2)) {
        return Err(invalid("empty pattern"));
    }
    Ok(Rewritten { pattern: e.out, clamped: e.clamped })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(p: &str) -> String {
        match rewrite(p, 1000) {
            Ok(r) => r.pattern,
            Err(e) => format!("ERR {e:?}"),
        }
    }

    #[test]
    fn safe_patterns_are_kept_byte_for_byte() {
        for p in ["^[a-z]+$", "^[A-Z]{2}[0-9]{3}$", "^(a|b)*c$", "^\\.x$", "^[^/]+/x$", "^a\\\\b$"] {
            assert_eq!(rw(p), p);
        }
    }

    #[test]
    fn shorthands_and_groups_become_the_common_subset() {
        assert_eq!(rw("^\\d{3}-\\w+$"), "^[0-9]{3}-[a-zA-Z0-9_]+$");
        assert_eq!(rw("^[A-Z][A-Z0-9_]+-\\d+(?:-\\d+)*$"), "^[A-Z][A-Z0-9_]+-[0-9]+(-[0-9]+)*$");
        assert_eq!(rw("^[\\w.-]+$"), "^[a-zA-Z0-9_.\\x2D]+$");
        assert_eq!(rw("^hello there indeed\\!$"), "^hello there indeed!$");
        assert_eq!(rw("^a+?$"), "^a+$");
    }

    #[test]
    fn unanchored_patterns_search_anywhere() {
        assert_eq!(rw("[a-z]+"), "^.*[a-z]+.*$");
        assert_eq!(rw("^ab"), "^ab.*$");
        assert_eq!(rw("^a|b$"), "^(a.*|.*b)$");
    }

    #[test]
    fn what_no_grammar_can_say_is_refused() {
        assert!(matches!(rewrite("^(?=.*\\d)[a-z\\d]+$", 1000), Err(Unsupported::Feature(_))));
        assert!(matches!(rewrite("^(a)\\1$", 1000), Err(Unsupported::Feature(_))));
        assert!(matches!(rewrite("^\\p{L}+$", 1000), Err(Unsupported::Feature(_))), "4 KB written out: past the budget");
        // what fits is written out as ranges, astral ones as themselves, and reads back the same
        let cf = rewrite("^\\p{Cf}+$", 1000).map(|r| r.pattern).unwrap_or_default();
        assert!(cf.starts_with("^[\u{ad}\u{600}-\u{605}") && cf.contains("\u{e0001}"), "{cf}");
        assert_eq!(rewrite(&cf, 1000).map(|r| r.pattern), Ok(cf.clone()), "idempotent");
        assert!(rewrite("^(ab$", 1000).is_err());
        assert!(matches!(rewrite("^[b-a]$", 1000), Err(Unsupported::Invalid(_))));
    }

    /// Every construct of the parser and the emitter: what it becomes, or why it is refused (F: a
    /// feature no grammar has, I: not a valid ECMA-262 pattern).
    #[test]
    fn each_construct_becomes_its_spelling_or_its_refusal() {
        let out = |p: &str| match rewrite(p, 1000) {
            Ok(r) => r.pattern,
            Err(Unsupported::Feature(m)) => format!("F: {m}"),
            Err(Unsupported::Invalid(m)) => format!("I: {m}"),
        };
        let cases: &[(&str, &str)] = &[
            // quantifiers, lazy ones, and braces that are not one (ECMA Annex B: literal)
            ("^ab?$", "^ab?$"),
            ("^ab*c+$", "^ab*c+$"),
            ("^a{2}$", "^a{2}$"),
            ("^a{12}$", "^a{12}$"),
            ("^a{2,}$", "^a{2,}$"),
            ("^a{2,15}$", "^a{2,15}$"),
            ("^a{2,2}$", "^a{2}$"),
            ("^a{0,1}$", "^a?$"),
            ("^a{1,}$", "^a+$"),
            ("^a{0,}$", "^a*$"),
            ("^a*?b??c{2}?$", "^a*b?c{2}$"),
            ("^a{,5}$", "^a\\{,5\\}$"),
            ("^a{}$", "^a\\{\\}$"),
            ("^a{x}$", "^a\\{x\\}$"),
            ("^a{3$", "^a\\{3$"),
            ("^a{5,2}$", "I: numbers out of order in {} quantifier"),
            ("^a**$", "I: nothing to repeat"),
            ("^a?+$", "I: nothing to repeat"),
            ("^*a$", "I: nothing to repeat"),
            ("^(a*)*$", "^(a*)*$"),
            // escapes
            ("^\\x41\\x7a$", "^Az$"),
            ("^\\x4g$", "I: bad \\x escape"),
            ("^\\x4$", "I: bad \\x escape"),
            ("^\\u0041\\u00e9$", "^Aé$"),
            ("^\\uD83D\\uDE00$", "^\u{1F600}$"),
            ("^\\uD800$", "F: lone surrogate"),
            // a pair only where a high surrogate is followed by `\u` and a low one
            ("^\\u0041\\uDC00$", "F: lone surrogate"),
            ("^\\uD83D\\xDE00$", "F: lone surrogate"),
            ("^\\u{41}$", "F: \\u{...} escape"),
            ("^\\u00G1$", "I: bad \\u escape"),
            ("^\\n\\t\\r\\f\\v\\0$", "^\\n\\t\\r\\x0C\\x0B\\x00$"),
            ("^\\cJ$", "^\\n$"),
            // `\0` before a digit would be a legacy octal escape: not taken
            ("^\\01$", "I: unknown escape"),
            ("^\\c1$", "I: bad control escape"),
            ("^\\-\\/\\.\\\\$", "^-/\\.\\\\$"),
            ("^\\q$", "I: unknown escape"),
            ("\\bfoo", "F: word boundary"),
            ("^(a)\\1$", "F: back-reference"),
            ("^\\k<x>$", "F: named back-reference"),
            ("^\\P{L}$", "F: Unicode property too long written out"),
            ("^\\p{Zl}\\P{Cc}$", "^[\u{2028}][^\\x00-\\x1F\\x7F-\u{9f}]$"),
            ("^[\\p{Zl}\\p{Zp}x]$", "^[\u{2028}\u{2029}x]$"),
            ("^\\p{Script=Greek}$", "F: Unicode property toolfit has no table for"),
            ("^\\p{Lu$", "I: \\p without {name}"),
            ("^a\\", "I: trailing backslash"),
            // classes
            ("^[^a-z]$", "^[^a-z]$"),
            ("^[a\\-z]$", "^[a\\x2Dz]$"),
            ("^[a-]$", "^[a\\x2D]$"),
            ("^[\\d_]$", "^[0-9_]$"),
            ("^[\\x41-\\x43\\b]$", "^[A-C\\x08]$"),
            ("^[\\]\\^\"\\\\]$", "^[\\]\\x5E\\\"\\\\]$"),
            ("^[\\D]$", "F: negated shorthand inside a class"),
            ("^[z-a]$", "I: range out of order in character class"),
            ("^[a-\\d]$", "I: class range with a shorthand"),
            ("^[]$", "F: empty character class"),
            ("^[^]$", "^[\\x00-\u{10FFFF}]$"),
            ("^[a", "I: unterminated character class"),
            ("^[a-", "I: unterminated character class"),
            ("^\\W\\S$", "^[^a-zA-Z0-9_][^ \\x09-\\x0D\u{a0}\u{1680}\u{2000}-\u{200a}\u{2028}-\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}]$"),
            // groups and anchors
            ("^(?:a|b)$", "^(a|b)$"),
            ("^(?<name>a)$", "^(a)$"),
            ("^(?=a)$", "F: look-around or inline flags"),
            ("^(?<=a)b$", "F: look-around or inline flags"),
            ("^(?<!a)b$", "F: look-around or inline flags"),
            ("^(?i)a$", "F: look-around or inline flags"),
            ("^(ab", "I: unbalanced parentheses"),
            ("^(a$", "F: anchor inside a group"),
            ("^a)$", "I: unbalanced parentheses"),
            ("^(^a)$", "F: anchor inside a group"),
            ("^(a$)$", "F: anchor inside a group"),
            ("^a$b", "F: anchor inside the pattern"),
            ("^a^b$", "F: anchor inside the pattern"),
            ("^(a|)$", "F: empty alternative"),
            ("^a$|^$", "F: empty alternative"),
            ("^$", "^$"),
            ("^a.b$", "^a.b$"),
            ("a|^b$", "^(.*a.*|b)$"),
            // what the emitter escapes
            ("^\\{\\}\\*\\+\\?\\|\\(\\)\\[\\]\\^\\$$", "^\\{\\}\\*\\+\\?\\|\\(\\)\\[\\]\\^\\$$"),
            ("^\u{1}\u{7f}é$", "^\\x01\\x7Fé$"),
        ];
        for (p, want) in cases {
            assert_eq!(out(p), *want, "{p}");
        }
        // bounds: nesting and length, each at its limit and one past it
        let nest = |n: usize| format!("^{}a{}$", "(".repeat(n), ")".repeat(n));
        assert_eq!(out(&nest(MAX_NESTING)), nest(MAX_NESTING));
        assert_eq!(out(&nest(MAX_NESTING + 1)), "F: nesting too deep");
        let long = |n: usize| format!("^{}$", "a".repeat(n - 2));
        assert_eq!(out(&long(MAX_PATTERN_LEN)), long(MAX_PATTERN_LEN));
        assert_eq!(out(&long(MAX_PATTERN_LEN + 1)), "F: pattern too long");
    }

    #[test]
    fn counts_are_clamped_only_past_the_limit() {
        let r = |p: &str| rewrite(p, 1000).map(|r| (r.pattern, r.clamped)).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(r("^a{1000}$"), ("^a{1000}$".into(), false));
        assert_eq!(r("^a{3,1000}$"), ("^a{3,1000}$".into(), false));
        assert_eq!(r("^a{1001}$"), ("^a{1000,}$".into(), true));
        assert_eq!(r("^a{2,2000}$"), ("^a{2,}$".into(), true));
        assert_eq!(r("^a{99999999999999999999999}$"), ("^a{1000,}$".into(), true), "a count past u64 saturates");
    }

    #[test]
    fn big_counts_are_clamped() {
        let r = rewrite("^x{2001}$", 1000).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(r.pattern, "^x{1000,}$");
        assert!(r.clamped);
    }
}
