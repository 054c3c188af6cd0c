//! The scan that finds a body's top-level members: every request on an inference route pays it, and
//! most need nothing else, so it runs near memory speed. It accepts exactly the texts serde_json
//! accepts as one object (or array) whose members it reads as raw values (a property test holds it to
//! that), and returns each member's value as a slice of the text. Strings, most of any body (messages,
//! descriptions), are skipped 16 bytes at a time: wasm `simd128` in Envoy's V8 when the module is built
//! with it, SSE2 natively, and eight bytes at a time in plain integer arithmetic elsewhere.

/// A body as text, if it is UTF-8 (checked with SIMD; the one pass over the bytes besides the scan).
pub fn text(body: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(body).ok()
}

/// A top-level object's members in document order (duplicates kept): each key as serde_json decodes
/// it, and each value's text.
pub fn object(text: &str) -> Option<Vec<(String, &str)>> {
    object_with_lists(text, None).map(|(members, _)| members)
}

/// Lists read as [`objects`] reads one, beside the member that holds each: the member's text and its
/// object elements.
pub type Lists<'t> = Vec<(&'t str, Vec<Split<'t>>)>;

/// [`object`], with each member named `list.0` whose value is an array also read as
/// [`objects`]`(value, list.1)` reads it, in the same scan: a request's `tools` are split into tools
/// while the body is read, not read again after.
pub fn object_with_lists<'t>(text: &'t str, list: Option<(&str, Option<&str>)>) -> Option<(Vec<(String, &'t str)>, Lists<'t>)> {
    let b = text.as_bytes();
    let at = ws(b, 0);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut split = Split::default();
    let mut lists = Vec::new();
    let stop = members(text, at, None, list.map(|l| (l, &mut lists)), &mut split, None)?;
    end(b, stop).then_some((split.members, lists))
}

/// Says, for a top-level member (its key, and the text from its value's first byte on), the length of
/// a value there that is known to be JSON already (a member the rewrite cache holds, byte for byte),
/// which the scan then takes whole without reading it again. Only an array, object or string is
/// taken: no such value is the start of a longer one, so its bytes there are the member's value.
pub type Known<'k> = &'k mut dyn FnMut(&str, &str) -> Option<usize>;

/// [`object`], taking each member value `known` vouches for whole.
pub fn object_known<'t>(text: &'t str, known: Known) -> Option<Vec<(String, &'t str)>> {
    let b = text.as_bytes();
    let at = ws(b, 0);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut split = Split::default();
    let stop = members(text, at, None, None, &mut split, Some(known))?;
    end(b, stop).then_some(split.members)
}

/// One object of [`objects`]: its members, and the members of each member named to be split too.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split<'t> {
    /// Every member but those named to be split, in document order.
    pub members: Vec<(String, &'t str)>,
    /// The members of each member named to be split whose value is an object.
    pub expanded: Vec<Vec<(String, &'t str)>>,
    /// Whether a member of that name is there at all (an object or not).
    pub named: bool,
}

/// A top-level array's elements that are objects (others are passed over), each split into its
/// members, and each member named `expand` whose value is an object split too, all in the one scan:
/// how a `tools` list is read (its elements' `function` members hold the schemas).
pub fn objects<'t>(text: &'t str, expand: Option<&str>) -> Option<Vec<Split<'t>>> {
    let b = text.as_bytes();
    let at = ws(b, 0);
    let (out, stop) = objects_at(text, at, expand)?;
    end(b, stop).then_some(out)
}

/// [`objects`] of the array whose `[` is at `at`, and the index past its `]`.
fn objects_at<'t>(text: &'t str, at: usize, expand: Option<&str>) -> Option<(Vec<Split<'t>>, usize)> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'[') {
        return None;
    }
    let mut at = ws(b, at + 1);
    let mut out = Vec::new();
    if b.get(at) == Some(&b']') {
        return Some((out, at + 1));
    }
    loop {
        let stop = if b.get(at) == Some(&b'{') {
            let mut split = Split::default();
            let stop = members(text, at, expand, None, &mut split, None)?;
            out.push(split);
            stop
        } else {
            value(b, at)?
        };
        at = ws(b, stop);
        match b.get(at) {
            Some(b',') => at = ws(b, at + 1),
            Some(b']') => return Some((out, at + 1)),
            _ => return None,
        }
    }
}

/// The members of the object whose `{` is at `at`, into `split` (a member named `expand` split one
/// level further, a member named in `lists` read as a list of objects beside, a value `known` vouches
/// for taken whole), and the index past its `}`.
#[allow(clippy::type_complexity)]
fn members<'t>(
    text: &'t str,
    at: usize,
    expand: Option<&str>,
    mut lists: Option<((&str, Option<&str>), &mut Lists<'t>)>,
    split: &mut Split<'t>,
    mut known: Option<Known>,
) -> Option<usize> {
    let b = text.as_bytes();
    let mut at = ws(b, at + 1);
    if b.get(at) == Some(&b'}') {
        return Some(at + 1);
    }
    loop {
        if b.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string(b, at + 1)?;
        let key = key_text(text.get(at..key_end)?)?;
        at = ws(b, key_end);
        if b.get(at) != Some(&b':') {
            return None;
        }
        let start = ws(b, at + 1);
        let stop = if expand == Some(key.as_str()) {
            split.named = true;
            if b.get(start) == Some(&b'{') {
                let mut inner = Split::default();
                let stop = members(text, start, None, None, &mut inner, None)?;
                split.expanded.push(inner.members);
                stop
            } else {
                value(b, start)?
            }
        } else {
            let vouched = known.as_mut().and_then(|k| k(&key, text.get(start..)?)).filter(|_| matches!(b.get(start), Some(b'[' | b'{' | b'"')));
            let stop = match lists.as_mut() {
                _ if vouched.is_some() => vouched.map_or(start, |len| start + len),
                Some(((name, inner), found)) if *name == key.as_str() && b.get(start) == Some(&b'[') => match objects_at(text, start, *inner) {
                    Some((objs, stop)) => {
                        found.push((text.get(start..stop)?, objs));
                        stop
                    }
                    // not a list of tools after all (a key serde_json cannot decode): read as any
                    // value, and left out of the lists, as `objects` leaves it unread
                    None => value(b, start)?,
                },
                _ => value(b, start)?,
            };
            split.members.push((key, text.get(start..stop)?));
            stop
        };
        at = ws(b, stop);
        match b.get(at) {
            Some(b',') => at = ws(b, at + 1),
            Some(b'}') => return Some(at + 1),
            _ => return None,
        }
    }
}

/// A top-level array's elements, each as its text.
pub fn array(text: &str) -> Option<Vec<&str>> {
    let b = text.as_bytes();
    let mut at = ws(b, 0);
    if b.get(at) != Some(&b'[') {
        return None;
    }
    at = ws(b, at + 1);
    let mut items = Vec::new();
    if b.get(at) == Some(&b']') {
        return end(b, at + 1).then_some(items);
    }
    loop {
        let stop = value(b, at)?;
        items.push(text.get(at..stop)?);
        at = ws(b, stop);
        match b.get(at) {
            Some(b',') => at = ws(b, at + 1),
            Some(b']') => return end(b, at + 1).then_some(items),
            _ => return None,
        }
    }
}

/// The text of a document that is one JSON value (whitespace around it aside).
pub fn whole(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    let start = ws(b, 0);
    let stop = value(b, start)?;
    end(b, stop).then(|| text.get(start..stop)).flatten()
}

/// A key as serde_json decodes it: the text between the quotes, or, with escapes, serde_json's own
/// reading (which refuses what it refuses, such as a lone surrogate).
pub(crate) fn key_text(quoted: &str) -> Option<String> {
    match quoted.get(1..quoted.len().saturating_sub(1)) {
        Some(inner) if !inner.contains('\\') => Some(inner.to_owned()),
        _ => serde_json::from_str(quoted).ok(),
    }
}

/// Whether only whitespace follows `at`.
fn end(b: &[u8], at: usize) -> bool {
    ws(b, at) >= b.len()
}

/// The index of the first non-whitespace byte at or after `at` (JSON's four whitespace bytes).
fn ws(b: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(at) {
        at += 1;
    }
    at
}

/// The end of the JSON value starting at `at` (no whitespace before it), or `None` if it is not one.
/// Containers are walked without recursion: nesting costs one bit per level, however deep.
fn value(b: &[u8], mut at: usize) -> Option<usize> {
    // one bit per open container, set for an object
    let mut stack: Vec<u64> = Vec::new();
    let mut depth = 0usize;
    loop {
        // a value
        match *b.get(at)? {
            b'"' => at = string(b, at + 1)?,
            b'{' | b'[' => {
                let object = b.get(at) == Some(&b'{');
                let (word, bit) = (depth / 64, depth % 64);
                if word == stack.len() {
                    stack.push(0);
                }
                let w = stack.get_mut(word)?;
                *w = if object { *w | (1 << bit) } else { *w & !(1 << bit) };
                depth += 1;
                at = ws(b, at + 1);
                let close = if object { b'}' } else { b']' };
                if b.get(at) == Some(&close) {
                    depth -= 1;
                    at += 1;
                } else {
                    if object {
                        at = key(b, at)?;
                    }
                    continue;
                }
            }
            b't' => at = literal(b, at, b"true")?,
            b'f' => at = literal(b, at, b"false")?,
            b'n' => at = literal(b, at, b"null")?,
            b'-' => at = number(b, at + 1)?,
            b'0'..=b'9' => at = number(b, at)?,
            _ => return None,
        }
        // after a value: a comma and the next one, or the end of its container (and maybe of more)
        loop {
            if depth == 0 {
                return Some(at);
            }
            let object = stack.get((depth - 1) / 64)? & (1 << ((depth - 1) % 64)) != 0;
            at = ws(b, at);
            match *b.get(at)? {
                b',' => {
                    at = ws(b, at + 1);
                    if object {
                        at = key(b, at)?;
                    }
                    break;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            depth -= 1;
            at += 1;
        }
    }
}

/// Past an object member's key and its colon, at the start of its value.
fn key(b: &[u8], at: usize) -> Option<usize> {
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let at = ws(b, string(b, at + 1)?);
    (b.get(at) == Some(&b':')).then(|| ws(b, at + 1))
}

fn literal(b: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    let stop = at + word.len();
    (b.get(at..stop)? == word).then_some(stop)
}

/// Past a number's digits (its sign already passed): serde_json's grammar, one leading zero at most,
/// a digit after a point and after an exponent.
fn number(b: &[u8], at: usize) -> Option<usize> {
    let digits = |mut at: usize| {
        while let Some(b'0'..=b'9') = b.get(at) {
            at += 1;
        }
        at
    };
    let mut at = match b.get(at)? {
        b'0' if matches!(b.get(at + 1), Some(b'0'..=b'9')) => return None,
        b'0' => at + 1,
        b'1'..=b'9' => digits(at + 1),
        _ => return None,
    };
    if b.get(at) == Some(&b'.') {
        let after = digits(at + 1);
        if after == at + 1 {
            return None;
        }
        at = after;
    }
    if let Some(b'e' | b'E') = b.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = b.get(at) {
            at += 1;
        }
        let after = digits(at);
        if after == at {
            return None;
        }
        at = after;
    }
    Some(at)
}

/// Past the closing quote of the string whose contents start at `at`: escapes checked as serde_json
/// checks a string it skips (a known letter, or `u` and four hex digits), control bytes refused.
fn string(b: &[u8], mut at: usize) -> Option<usize> {
    loop {
        at = special(b, at);
        match *b.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' => match *b.get(at + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at += 2,
                b'u' => {
                    let hex = b.get(at + 2..at + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    at += 6;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// Whether a byte ends the run a string skip passes over: a quote, a backslash or a control byte.
fn stops(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The index of the first quote, backslash or control byte at or after `at` (`b.len()` if none).
pub(crate) fn special(b: &[u8], at: usize) -> usize {
    let Some(rest) = b.get(at..) else { return b.len() };
    let mut chunks = rest.chunks_exact(16);
    let mut base = at;
    for c in &mut chunks {
        let mask = block(c);
        if mask != 0 {
            return base + mask.trailing_zeros() as usize;
        }
        base += 16;
    }
    base + chunks.remainder().iter().position(|&c| stops(c)).unwrap_or(chunks.remainder().len())
}

/// A bit per byte of a 16-byte block that [`stops`] a string skip.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn block(c: &[u8]) -> u32 {
    use core::arch::wasm32::*;
    if c.len() < 16 {
        return 0;
    }
    // SAFETY: `c` holds at least 16 readable bytes (checked above); v128_load has no alignment need.
    let v = unsafe { v128_load(c.as_ptr().cast::<v128>()) };
    let hit = v128_or(v128_or(u8x16_eq(v, u8x16_splat(b'"')), u8x16_eq(v, u8x16_splat(b'\\'))), u8x16_lt(v, u8x16_splat(0x20)));
    u32::from(u8x16_bitmask(hit))
}

/// A bit per byte of a 16-byte block that [`stops`] a string skip.
#[cfg(target_arch = "x86_64")]
fn block(c: &[u8]) -> u32 {
    use std::arch::x86_64::*;
    if c.len() < 16 {
        return 0;
    }
    // SAFETY: `c` holds at least 16 readable bytes (checked above); loadu has no alignment need. SSE2 is
    // part of every x86_64 target.
    unsafe {
        let v = _mm_loadu_si128(c.as_ptr().cast::<__m128i>());
        // a byte below 0x20 is one whose unsigned max with 0x1f is 0x1f
        let ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
        let hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)), _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8))), ctl);
        _mm_movemask_epi8(hit) as u32
    }
}

/// A bit per byte of a 16-byte block that [`stops`] a string skip, without SIMD.
#[cfg(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))))]
fn block(c: &[u8]) -> u32 {
    block_words(c)
}

/// [`block`] in integer arithmetic, two words of eight bytes each tested with the classic "has a zero
/// byte" trick (exact per byte: no borrow crosses a byte). Only the lowest bit is set: callers want the
/// first stop, and finding it needs no per-byte gather.
#[cfg(any(test, not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))))]
fn block_words(c: &[u8]) -> u32 {
    const LO: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // each byte's high bit set when that byte is zero
    let zero = |x: u64| !(((x & LO) + LO) | x | LO);
    for half in 0..2u32 {
        let Some(w) = c.get(half as usize * 8..half as usize * 8 + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes) else { return 0 };
        // high bit set for a byte below 0x20: adding 0x60 to its low seven bits does not reach 0x80
        let ctl = !(((w & LO) + (LO - 0x1f1f_1f1f_1f1f_1f1f)) | w | LO);
        let m = zero(w ^ 0x2222_2222_2222_2222) | zero(w ^ 0x5c5c_5c5c_5c5c_5c5c) | ctl;
        if m != 0 {
            return 1 << (half * 8 + m.trailing_zeros() / 8);
        }
    }
    0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// serde_json's reading of a whole text as an object with raw member values: what the skim keeps.
    fn serde_object(text: &str) -> Option<Vec<(String, &str)>> {
        crate::api::raw::serde_reading::serde_object(text).map(|o| o.0.into_iter().map(|(k, v)| (k, v.get())).collect())
    }

    fn serde_array(text: &str) -> Option<Vec<&str>> {
        crate::api::raw::serde_reading::serde_array(text).map(|a| a.0.into_iter().map(|v| v.get()).collect())
    }

    /// serde_json's reading of a `tools` list (`raw::tools` before the scan read it) as [`Split`]s.
    fn serde_objects(text: &str) -> Option<Vec<Split<'_>>> {
        fn members(o: crate::api::raw::RawObject<'_>) -> Vec<(String, &str)> {
            o.0.into_iter().map(|(k, v)| (k, v.get())).collect()
        }
        let tools = crate::api::raw::serde_reading::serde_tools(text)?;
        Some(
            tools
                .into_iter()
                .map(|t| Split { members: members(t.members), expanded: t.functions.into_iter().map(members).collect(), named: t.has_function })
                .collect(),
        )
    }

    fn same(text: &str) {
        assert_eq!(object(text), serde_object(text), "object {text:?}");
        assert_eq!(array(text), serde_array(text), "array {text:?}");
        assert_eq!(objects(text, Some("function")), serde_objects(text), "tools {text:?}");
        // a body's lists read in its own scan are the lists read on their own
        let (members, lists) = object_with_lists(text, Some(("tools", Some("function")))).unzip();
        assert_eq!(members, object(text), "object with lists {text:?}");
        let want: Option<Vec<_>> = members
            .map(|m| m.iter().filter(|(k, v)| k == "tools" && v.starts_with('[')).filter_map(|(_, v)| Some((*v, objects(v, Some("function"))?))).collect());
        assert_eq!(lists, want, "lists {text:?}");
    }

    /// Texts at the edges of the grammar, valid and not (the incremental scan is held to them too).
    pub(crate) const EDGES: &[&str] = &[
        "{}",
        " { } ",
        "[]",
        "[ ]",
        "{",
        "}",
        "",
        " ",
        "null",
        "{} x",
        "{}\n",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:2}",
        r#"{"a":[1,2,{"b":[[]],"c":{}}],"d":"x\"y","e":-0.5e+10,"f":true,"g":null,"h":false}"#,
        r#"{"a":01}"#,
        r#"{"a":-}"#,
        r#"{"a":1.}"#,
        r#"{"a":1e}"#,
        r#"{"a":1E+}"#,
        r#"{"a":.5}"#,
        r#"{"a":+1}"#,
        r#"{"a":0.0e0}"#,
        r#"{"a":tru}"#,
        r#"{"a":truex}"#,
        r#"{"a":nul}"#,
        r#"{"a":"\q"}"#,
        r#"{"a":"\u12G4"}"#,
        r#"{"a":"\u12"}"#,
        r#"{"a":"\ud800"}"#,
        r#"{"\ud800":1}"#,
        r#"{"\u0041":1}"#,
        r#"{"a\"b":1}"#,
        "{\"a\":\"\t\"}",
        "{\"a\":\"x\u{7f}y\"}",
        r#"{"a":[1 2]}"#,
        r#"{"a":{"b" 1}}"#,
        r#"{"a":{"b":1 "c":2}}"#,
        r#"{"a":{,}}"#,
        r#"{"a":[,]}"#,
        r#"{"a":[1]]}"#,
        r#"{"a":{}}}"#,
        r#"{"a":"é—😀"}"#,
        r#"["x",{"a":[]},3]"#,
        r#"{"a":1}{"b":2}"#,
        r#"{"a":1} "#,
        "{\"a\":1}\u{0}",
        r#"{"a":"0123456789abcdef0123456789abcdef\"0123456789abcdef"}"#,
        r#"[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},1,"x",[{}],{"function":2},{}]"#,
        r#"[{"function":{"a":1},"function":{"b":[2]},"x":{"function":{}}},{"\u0066unction":{"c":3}}]"#,
        r#"[{"function":{"a":1,}}]"#,
        r#"[{"function":{"a" 1}}]"#,
        r#"[{"function":{}}]]"#,
        r#"[{"function":{}} x"#,
        r#"[{"function":{"a":1}}"#,
        r#"[{"function":{"\ud800":1}}]"#,
        r#"{"tools":[{"function":{"\ud800":1}}],"model":"m","tools":[{"function":{"a":1}},2]}"#,
        r#"{"tools":[{"type":"function"}],"x":[1,2}"#,
        r#"{"tools":{"a":[]},"tools":[],"tools":"[x"}"#,
    ];

    #[test]
    fn agrees_with_serde_json_on_edge_cases() {
        for t in EDGES {
            same(t);
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(5000), "]".repeat(5000));
        same(&deep);
        assert!(object(&deep).is_some(), "nesting deeper than serde_json's recursion limit is skipped as serde_json skips it");
        let long = format!("{{\"m\":\"{}\",\"t\":[{}]}}", "x\\n\\\"".repeat(40) + &"y".repeat(1000), "{\"k\":\"v\"},".repeat(50) + "0");
        same(&long);
    }

    /// Every position of a control byte, quote or backslash inside a long string, around the 16-byte
    /// blocks the skip reads.
    #[test]
    fn every_position_in_a_block() {
        for len in 0..40 {
            for c in ['"', '\\', '\u{1}', '\u{1f}', ' ', '\u{7f}', 'é'] {
                let mut s: String = "a".repeat(len);
                s.push(c);
                s.push_str("bcdefghijklmnopqrstuvwxyz");
                same(&format!("{{\"k\":\"{s}\"}}"));
                same(&format!("[\"{s}\"]"));
            }
        }
    }

    #[test]
    fn blocks_agree_byte_by_byte() {
        for len in 16..18 {
            for at in 0..16 {
                for c in 0..=255u8 {
                    let mut v = vec![b'a'; len];
                    v[at] = c;
                    let want: u32 = (0..16).filter(|&i| stops(v[i])).map(|i| 1 << i).sum();
                    assert_eq!(block(&v), want, "byte {c:#x} at {at}");
                    assert_eq!(block_words(&v), want & want.wrapping_neg(), "byte {c:#x} at {at} (words: the first stop)");
                }
            }
        }
        let all: Vec<u8> = (0..=255u8).collect();
        for c in all.chunks_exact(16) {
            assert_eq!(block(c).trailing_zeros(), block_words(c).trailing_zeros());
        }
    }

    pub(crate) fn json() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| serde_json::to_string(&f).unwrap_or_default()),
            "[ -~\u{80}-\u{10ffff}]{0,40}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        ];
        leaf.prop_recursive(5, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(" , "))),
                prop::collection::vec(("[a-z\"\\\\]{0,6}", inner), 0..6).prop_map(|v| format!(
                    "{{{}}}",
                    v.iter().map(|(k, x)| format!("{}:{x}", serde_json::to_string(k).unwrap_or_default())).collect::<Vec<_>>().join(",\n")
                )),
            ]
        })
    }

    /// A value vouched for is taken whole, and what follows it is read as ever: the same members as
    /// the scan that reads every value, or the same refusal.
    #[test]
    fn vouched_values_are_taken_whole() {
        let tools = r#"[{"type":"function","function":{"name":"a"}}]"#;
        let mut vouch = |key: &str, rest: &str| (key == "tools" && rest.starts_with(tools)).then_some(tools.len());
        for text in [
            format!(r#"{{"model":"m","tools":{tools},"stream":true}}"#),
            format!(r#"{{"tools" : {tools} }}"#),
            format!(r#"{{"tools":{tools}]}}"#),
            format!(r#"{{"tools":{tools},}}"#),
            format!(r#"{{"tools":{tools}"#),
            format!(r#"{{"a":{tools},"tools":[{{"x":1}}]}}"#),
        ] {
            assert_eq!(object_known(&text, &mut vouch), object(&text), "{text}");
        }
        // the control: a vouched value is not read again (here one that is not JSON, which only a
        // caller's mistake would vouch for)
        let mut lie = |_: &str, rest: &str| rest.starts_with("[1 2]").then_some(5);
        assert!(object(r#"{"tools":[1 2]}"#).is_none() && object_known(r#"{"tools":[1 2]}"#, &mut lie).is_some());
        // a scalar is never taken whole: a number may be the start of a longer one
        let mut one = |_: &str, _: &str| Some(1);
        assert_eq!(object_known(r#"{"tools":12}"#, &mut one), object(r#"{"tools":12}"#));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Valid documents, then each with one byte removed, doubled or changed: the skim accepts what
        /// serde_json accepts and splits it the same way.
        #[test]
        fn agrees_with_serde_json(doc in json(), at in any::<prop::sample::Index>(), byte in prop::sample::select(b"{}[],:\"\\ 0123456789-+.eEtfnul\x01xu".to_vec())) {
            let top = format!("{{\"a\": {doc}, \"b\" : [{doc}]}}");
            same(&top);
            same(&format!("[{doc}]"));
            let tools = format!("[{{\"function\": {doc}, \"x\": {doc}}}, {doc}, {{\"function\" : {{\"p\": {doc}}}}}]");
            same(&tools);
            for text in [&top, &tools] {
                let bytes = text.as_bytes();
                let i = at.index(bytes.len());
                for variant in [
                    [&bytes[..i], &bytes[i + 1..]].concat(),
                    [&bytes[..i], &[byte], &bytes[i..]].concat(),
                    [&bytes[..i], &[byte], &bytes[i + 1..]].concat(),
                ] {
                    if let Ok(t) = std::str::from_utf8(&variant) {
                        same(t);
                    }
                }
            }
        }
    }
}
