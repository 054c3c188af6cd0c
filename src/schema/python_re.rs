//! ECMA-262 `pattern`s (the `u` flag's syntax) written in the subset that ECMA-262 and Python's `re`
//! both read, with the same meaning in both: what OpenAI's API compiles every `pattern` with (a pattern
//! `re` refuses is a 400 for the whole request), while the schema stays valid JSON Schema. Token by
//! token: Unicode property classes written out as ranges ([`crate::schema::unicode`]), the shorthand
//! classes as ECMA defines them (`\d` is ASCII there, Unicode in `re`), `.` without line terminators,
//! `$` as "no character follows" (`re`'s `$` also matches before a final newline), named groups as
//! numbered ones, `[^]` and `[]`; astral characters written as themselves (`\u{..}` is ECMA's only,
//! `\U` `re`'s only). The output translates to itself, so running toolfit again changes nothing. What
//! `re` cannot say (a look-behind whose width is not fixed, an unknown property) is
//! [`Unsupported::Feature`].

use crate::schema::pattern::Unsupported;
use crate::schema::unicode::{self, Ranges};
use std::fmt::Write;

/// Longest pattern translated, in bytes: room for a few written-out classes (`\p{L}` is about 9 KB), which
/// the translation must read again as its own output.
const MAX_LEN: usize = 65_536;
/// The most characters a property or group name (with its braces) is looked for in.
const NAME_WINDOW: usize = 80;

/// ECMA's `\w` and `\s` (the `u` flag without `i`).
const WORD: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)];
const DIGIT: &[(u32, u32)] = &[(0x30, 0x39)];
const SPACE: &[(u32, u32)] = &[
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
];
/// What ECMA's `.` does not match.
const LINE_TERMINATORS: &[(u32, u32)] = &[(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)];
/// An ASCII word boundary and its negation, as `re` writes them (`re`'s `\b` is Unicode's).
const BOUNDARY: &str = "(?:(?<=[0-9A-Z_a-z])(?![0-9A-Z_a-z])|(?<![0-9A-Z_a-z])(?=[0-9A-Z_a-z]))";
/// The end of the input in both dialects: no character follows.
const END: &str = "(?![\\s\\S])";
/// Any one character in both dialects (a class and its complement).
const ANY: &str = "[\\s\\S]";
const NOT_BOUNDARY: &str = "(?:(?<=[0-9A-Z_a-z])(?=[0-9A-Z_a-z])|(?<![0-9A-Z_a-z])(?![0-9A-Z_a-z]))";

/// Whether the reader takes look-around (OpenAI's strict mode refuses it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookAround {
    Taken,
    /// Refused: `$` stays `$` (the end in every reading but `re` matching before a final newline,
    /// which strict mode's own matcher does not do), and `\b`, look-around and `[]` cannot be said.
    Refused,
}

/// `pattern` in the common subset; the same text when nothing needs a change.
pub fn translate(pattern: &str) -> Result<String, Unsupported> {
    translate_with(pattern, LookAround::Taken)
}

/// [`translate`] for a reader that may refuse look-around.
pub fn translate_with(pattern: &str, look: LookAround) -> Result<String, Unsupported> {
    let no_look = || Unsupported::Feature("look-around (the API refuses it here)".into());
    if pattern.len() > MAX_LEN {
        return Err(Unsupported::Feature(format!("pattern longer than {MAX_LEN} bytes")));
    }
    let s: Vec<char> = pattern.chars().collect();
    let groups = named_groups(&s);
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    let mut class: Option<usize> = None; // where the open class's items start in `out`
    while let Some(&c) = s.get(i) {
        i += 1;
        // bounded as it grows: each written-out class can add kilobytes
        if out.len() > MAX_LEN {
            return Err(Unsupported::Feature(format!("written out, longer than {MAX_LEN} bytes")));
        }
        match c {
            '\\' => {
                let (set, text, used) = escape(&s, i, class.is_some(), &groups)?;
                i += used;
                if look == LookAround::Refused && class.is_none() && (text == BOUNDARY || text == NOT_BOUNDARY) {
                    return Err(no_look());
                }
                write_escape(&mut out, set, &text, class.is_some());
            }
            '[' if class.is_none() && matches!(s.get(i..i + 5), Some(['\\', 's', '\\', 'S', ']'])) => {
                // any one character, already in the common form
                i += 5;
                out.push_str(ANY);
            }
            '[' if class.is_none() => {
                let negated = s.get(i) == Some(&'^');
                i += usize::from(negated);
                if s.get(i) == Some(&']') {
                    // ECMA's empty class matches nothing, its negation any one character
                    i += 1;
                    if !negated && look == LookAround::Refused {
                        return Err(no_look());
                    }
                    out.push_str(if negated { ANY } else { "(?!)" });
                    continue;
                }
                out.push_str(if negated { "[^" } else { "[" });
                class = Some(out.len());
            }
            ']' if class.is_some() => {
                class = None;
                out.push(']');
            }
            // `re` warns of a `[` in a class as a nested set to come; escaped, both read a `[`
            '[' => out.push_str("\\["),
            '.' if class.is_none() => {
                out.push_str("[^");
                items(&mut out, LINE_TERMINATORS);
                out.push(']');
            }
            '$' if class.is_none() && look == LookAround::Refused => out.push('$'),
            '$' if class.is_none() => out.push_str(END),
            '(' if class.is_none() && look == LookAround::Refused && opens_look_around(&s, i) => {
                return Err(no_look());
            }
            '(' if class.is_none() && s.get(i) == Some(&'?') && s.get(i + 1) == Some(&'<') => {
                i += angle_group(&s, i)?;
                out.push('(');
            }
            c => out.push(c),
        }
    }
    if class.is_some() {
        return Err(Unsupported::Invalid("unterminated class".into()));
    }
    if out.len() > MAX_LEN {
        return Err(Unsupported::Feature(format!("written out, longer than {MAX_LEN} bytes")));
    }
    Ok(out)
}

/// An escape written out: a class it stands for (its ranges, and whether negated) as `re` reads it,
/// inside a class as its items, else its text.
fn write_escape(out: &mut String, set: Option<(Ranges, bool)>, text: &str, in_class: bool) {
    match (set, in_class) {
        (Some((ranges, negated)), true) => {
            let r = if negated { unicode::complement(&ranges) } else { ranges };
            items(out, &r);
        }
        (Some((ranges, negated)), false) => {
            out.push('[');
            if negated {
                out.push('^');
            }
            items(out, &ranges);
            out.push(']');
        }
        (None, _) => out.push_str(text),
    }
}

/// A group opened with `(?<` at `s[i..]` (after its `(`): a look-behind, kept where its width is fixed
/// (`re` needs it so), or a named group, which is a numbered one in both (its name goes). How many
/// characters after the `(` the written `(` stands for.
fn angle_group(s: &[char], i: usize) -> Result<usize, Unsupported> {
    match s.get(i + 2) {
        Some('=') | Some('!') if fixed_width(s, i + 3) => Ok(0),
        Some('=') | Some('!') => Err(Unsupported::Feature("look-behind of varying width (re needs it fixed)".into())),
        _ => {
            let Some(close) = s.get(i + 2..).and_then(|r| r.iter().take(NAME_WINDOW).position(|c| *c == '>')) else {
                return Err(Unsupported::Invalid("unterminated group name".into()));
            };
            Ok(2 + close + 1)
        }
    }
}

/// A class the escape at `s[i..]` (after its `\`) stands for (ranges, negated), or its text in `re`;
/// and how many characters it used.
#[allow(clippy::type_complexity)]
fn escape(s: &[char], i: usize, in_class: bool, groups: &[String]) -> Result<(Option<(Ranges, bool)>, String, usize), Unsupported> {
    let Some(&c) = s.get(i) else { return Err(Unsupported::Invalid("trailing backslash".into())) };
    let set = |r: &[(u32, u32)], neg: bool| Ok((Some((r.to_vec(), neg)), String::new(), 1));
    match c {
        // the upper-case letter is the class's complement
        'd' | 'D' => set(DIGIT, c == 'D'),
        'w' | 'W' => set(WORD, c == 'W'),
        's' | 'S' => set(SPACE, c == 'S'),
        'p' | 'P' => {
            let rest: String = s.get(i + 1..).unwrap_or_default().iter().take(NAME_WINDOW).collect();
            let name = rest.strip_prefix('{').and_then(|r| r.split_once('}')).map(|(n, _)| n.to_string());
            let Some(name) = name else { return Err(Unsupported::Invalid("\\p without {name}".into())) };
            let Some(ranges) = unicode::property(&name) else {
                return Err(Unsupported::Feature(format!("\\p{{{name}}} (not in toolfit's Unicode tables)")));
            };
            Ok((Some((ranges, c == 'P')), String::new(), name.chars().count() + 3))
        }
        'b' if in_class => Ok((None, "\\x08".into(), 1)),
        'b' => Ok((None, BOUNDARY.into(), 1)),
        'B' => Ok((None, NOT_BOUNDARY.into(), 1)),
        'k' => {
            let rest: String = s.get(i + 1..).unwrap_or_default().iter().take(NAME_WINDOW).collect();
            let Some(name) = rest.strip_prefix('<').and_then(|r| r.split_once('>')).map(|(n, _)| n.to_string()) else {
                return Err(Unsupported::Invalid("\\k without <name>".into()));
            };
            let Some(n) = groups.iter().position(|g| *g == name) else { return Err(Unsupported::Invalid(format!("no group named {name}"))) };
            // numbered, and apart from a digit that follows
            Ok((None, format!("(?:\\{})", n + 1), name.chars().count() + 3))
        }
        'u' if s.get(i + 1) == Some(&'{') => {
            let rest: String = s.get(i + 2..).unwrap_or_default().iter().take(NAME_WINDOW).collect();
            let Some((hex, _)) = rest.split_once('}') else { return Err(Unsupported::Invalid("\\u{ without }".into())) };
            let cp = u32::from_str_radix(hex, 16).map_err(|_| Unsupported::Invalid(format!("\\u{{{hex}}}")))?;
            Ok((None, point(cp), hex.chars().count() + 3))
        }
        'u' => {
            let hex = |at: usize| -> Option<u32> { u32::from_str_radix(&s.get(at..at + 4)?.iter().collect::<String>(), 16).ok() };
            let Some(hi) = hex(i + 1) else { return Err(Unsupported::Invalid("\\u without four hex digits".into())) };
            // a surrogate pair written as two escapes is one code point under the `u` flag
            if (0xD800..0xDC00).contains(&hi) && s.get(i + 5) == Some(&'\\') && s.get(i + 6) == Some(&'u') {
                if let Some(lo) = hex(i + 7).filter(|lo| (0xDC00..0xE000).contains(lo)) {
                    return Ok((None, point(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), 11));
                }
            }
            Ok((None, point(hi), 5))
        }
        'c' => match s.get(i + 1) {
            Some(l) if l.is_ascii_alphabetic() => Ok((None, point(u32::from(*l) % 32), 2)),
            _ => Err(Unsupported::Invalid("\\c without a letter".into())),
        },
        '0' if !s.get(i + 1).is_some_and(char::is_ascii_digit) => Ok((None, "\\x00".into(), 1)),
        // the rest means the same in both: \t \n \v \f \r, \xHH, back-references, escaped syntax
        't' | 'n' | 'v' | 'f' | 'r' | 'x' | '1'..='9' | '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '/' | '-' => {
            Ok((None, format!("\\{c}"), 1))
        }
        other => Err(Unsupported::Invalid(format!("\\{other} is not an escape under the u flag"))),
    }
}

/// One code point as both dialects read it in and out of a class: astral ones as themselves.
fn point(cp: u32) -> String {
    match char::from_u32(cp) {
        Some(c) if c.is_ascii_alphanumeric() || c == '_' => c.to_string(),
        _ if cp < 0x100 => format!("\\x{cp:02x}"),
        _ if cp < 0x10000 => format!("\\u{cp:04x}"),
        Some(c) => c.to_string(),
        None => format!("\\u{cp:04x}"),
    }
}

/// The capturing groups' names in order (`""` for an unnamed one), counted as both dialects number them.
fn named_groups(s: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    let (mut i, mut in_class) = (0, false);
    while let Some(&c) = s.get(i) {
        match c {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => match (s.get(i + 1), s.get(i + 2), s.get(i + 3)) {
                (Some('?'), Some('<'), Some(n)) if *n != '=' && *n != '!' => {
                    let name: String = s.get(i + 3..).unwrap_or_default().iter().take(NAME_WINDOW).take_while(|c| **c != '>').collect();
                    out.push(name);
                }
                (Some('?'), _, _) => {}
                _ => out.push(String::new()),
            },
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether the `(` before `s[i]` opens a look-ahead or look-behind (not a named group).
fn opens_look_around(s: &[char], i: usize) -> bool {
    s.get(i) == Some(&'?')
        && match s.get(i + 1) {
            Some('=' | '!') => true,
            Some('<') => matches!(s.get(i + 2), Some('=' | '!')),
            _ => false,
        }
}

/// Whether the look-behind body starting at `s[i]` has one width: single characters, escapes and classes
/// without a quantifier, alternation or group (what `re` accepts).
fn fixed_width(s: &[char], mut i: usize) -> bool {
    let mut in_class = false;
    while let Some(&c) = s.get(i) {
        match c {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            ')' if !in_class => return true,
            '*' | '+' | '?' | '{' | '|' | '(' if !in_class => return false,
            _ => {}
        }
        i += 1;
    }
    false
}

/// Ranges as a class's items.
fn items(out: &mut String, ranges: &[(u32, u32)]) {
    for &(a, b) in ranges {
        out.push_str(&point(a));
        if b > a {
            let _ = write!(out, "-{}", point(b));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The translation, checked to translate to itself (the output is in the common subset).
    fn t(p: &str) -> String {
        let out = translate(p).unwrap_or_else(|e| panic!("{p}: {e:?}"));
        assert_eq!(translate(&out).as_deref(), Ok(out.as_str()), "not a fixed point: {p}");
        out
    }

    #[test]
    fn what_means_the_same_is_kept() {
        for p in ["abc", "^[a-z]+-[0-9]{2,3}(?:x|y)*?", "(a)\\1", "(?=x)y", "(?!__)z", "\\x41\\t\\.\\/", "(?<=[a-z])b", "(?<!ab)c"] {
            assert_eq!(t(p), p, "{p}");
        }
    }

    #[test]
    fn ecma_classes_and_anchors_are_spelled_out() {
        assert_eq!(t("^\\d+$"), "^[0-9]+(?![\\s\\S])");
        assert_eq!(t("[\\w-]"), "[0-9A-Z_a-z-]");
        assert_eq!(t("a.b"), "a[^\\x0a\\x0d\\u2028-\\u2029]b");
        assert_eq!(t("[^]"), "[\\s\\S]");
        assert_eq!(t("[]a"), "(?!)a");
        assert_eq!(t("(?<year>\\d{4})-\\k<year>0"), "([0-9]{4})-(?:\\1)0");
        assert_eq!(t("\\u{1F600}\\uD83D\\uDE00\\u00e9"), "😀😀\\xe9");
        assert_eq!(t("[$.]"), "[$.]", "literal in a class");
        assert_eq!(t("[\\b]"), "[\\x08]");
        assert!(t("\\bx").starts_with("(?:(?<=[0-9A-Z_a-z])(?![0-9A-Z_a-z])"));
        assert!(t("^\\p{Extended_Pictographic}$").chars().filter(|c| *c as u32 > 0xFFFF).count() > 10, "astral ranges as characters");
    }

    /// The Claude Code 2.1.265 `Artifact` pattern that made OpenAI answer 400 for every request.
    #[test]
    fn the_artifact_pattern_reaches_re_with_its_meaning() {
        let p = "^(?!__.*__$)[^\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\"\\\\./[\\]]{1,200}$";
        let out = t(p);
        assert!(out.starts_with("^(?!__[^\\x0a\\x0d\\u2028-\\u2029]*__(?![\\s\\S]))[^\\x00-\\x1f\\x7f-\\x9f\\xad"), "{out}");
        assert!(out.ends_with("\\u2028\\u2029\"\\\\./\\[\\]]{1,200}(?![\\s\\S])"), "{out}");
        assert!(!out.contains("\\p"));
    }

    /// OpenAI's strict mode refuses look-around: `$` stays, what needs look-around cannot be said.
    #[test]
    fn without_look_around() {
        let r = |p: &str| translate_with(p, LookAround::Refused);
        assert_eq!(r("^a\\d.$").as_deref(), Ok("^a[0-9][^\\x0a\\x0d\\u2028-\\u2029]$"));
        assert_eq!(r("^(?<n>a)\\k<n>$").as_deref(), Ok("^(a)(?:\\1)$"));
        for p in ["\\bx", "(?=a)", "(?!a)", "(?<=a)b", "[]"] {
            assert!(matches!(r(p), Err(Unsupported::Feature(_))), "{p}");
        }
    }

    #[test]
    fn what_re_cannot_say_is_refused() {
        assert!(matches!(translate("(?<=a+)b"), Err(Unsupported::Feature(_))));
        assert!(matches!(translate("(?<=a|bc)b"), Err(Unsupported::Feature(_))));
        assert!(matches!(translate("\\p{Script=Latin}"), Err(Unsupported::Feature(_))));
        assert!(matches!(translate("\\q"), Err(Unsupported::Invalid(_))));
        assert!(matches!(translate("[a"), Err(Unsupported::Invalid(_))));
        assert!(matches!(translate("\\k<nope>(a)"), Err(Unsupported::Invalid(_))));
        assert!(matches!(translate(&"a".repeat(MAX_LEN + 1)), Err(Unsupported::Feature(_))));
        // growth is bounded while the output is written, not after
        assert!(matches!(translate(&"\\p{L}".repeat(10_000)), Err(Unsupported::Feature(_))));
    }
}
