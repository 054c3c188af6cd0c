//! A small JSON Schema validator for one question on the response path: do a tool call's arguments
//! satisfy the schema the client sent (before toolfit's rewrite)? And, for OpenAI strict's nullable
//! optionals, which `null`s did the rewrite make the model write?
//!
//! Why not a validator crate: the maintained ones (`jsonschema`) bring two regex engines, IDNA and
//! HTTP resolution, several times this module's size budget (docs/response-path.md). This
//! one checks what decides whether an MCP server takes a call: types, `enum`/`const`, objects
//! (`properties`, `required`, `additionalProperties`, counts, `propertyNames`, `dependentRequired`),
//! arrays (`items`, `prefixItems`, counts, `uniqueItems`, `contains`), string lengths, number
//! bounds and `multipleOf`, `allOf`/`anyOf`/`oneOf`/`not`, `if`/`then`/`else` and local `$ref`s.
//! `pattern` and `patternProperties` run on `regex-lite` (small, no Unicode tables, linear time)
//! with ECMA-262's `\s` and `.` spelled out; a pattern it cannot compile (Unicode classes,
//! lookaround, backreferences, past the size limits) is unknown, never a violation. `format` is an
//! annotation, as 2020-12 says by default: never a violation. Every call has a step budget; past it
//! the call counts as valid (unknown), never as invalid.
//!
//! Unknown means valid, and an unknown answer inside `not`, `oneOf`, `if` or a `contains` count is
//! not turned into a violation there: what the validator cannot judge (a pattern it cannot compile,
//! `unevaluated*`, dynamic and recursive refs, refs outside the document, a metaschema it does not
//! know) makes the enclosing answer unknown. `tests/validator.rs` holds it to the
//! JSON-Schema-Test-Suite: no valid instance judged invalid, and the keywords it leaves unknown
//! listed there with their reasons.

use regex_lite::{Regex, RegexBuilder};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The first place an instance fails its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the instance (`/items/0/name`).
    pub instance: String,
    /// JSON pointer into the schema, through the definitions refs lead to (`/$defs/Item/required`).
    pub schema: String,
    pub reason: String,
}

/// Keywords that constrain an instance in ways this validator does not judge: where one stands, the
/// answer is unknown (`tests/validator.rs` lists why, with the suite's groups they leave unjudged).
const UNJUDGED: [&str; 4] = ["unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"];

/// Nodes visited per validation, at most.
const STEPS: usize = 200_000;
/// Refs followed in a row, at most (a recursive schema on a deep instance).
const DEPTH: usize = 128;
/// Patterns longer than this are not compiled (unknown), nor are those whose program passes
/// `REGEX_BYTES`: a schema comes from a request, and each pattern costs memory and time.
const PATTERN_CHARS: usize = 2048;
const REGEX_BYTES: usize = 256 * 1024;
/// Distinct patterns compiled per validation, at most.
const PATTERNS: usize = 64;

struct Run<'a> {
    root: &'a Value,
    /// Draft-04 to draft-07: keywords beside a `$ref` are ignored.
    ref_alone: bool,
    /// Answers left unknown so far (an enclosing `not` or `oneOf` then cannot conclude a violation).
    unknown: usize,
    steps: usize,
    /// Set when the budget ran out: the answer is then "valid" (unknown).
    spent: bool,
    /// Each pattern compiled once per validation (`None`: not compilable here, so unknown).
    regexes: HashMap<&'a str, Option<Regex>>,
}

/// Checks `instance` against `schema` (a whole schema document: refs resolve in it).
pub fn validate(schema: &Value, instance: &Value) -> Result<(), Violation> {
    validate_in(schema, schema, instance)
}

/// Which rules the document's `$schema` asks for: `None` for a metaschema this validator does not know
/// (its vocabularies could make any keyword mean nothing), else whether `$ref` stands alone (drafts
/// 4 to 7). No `$schema`: 2020-12, as MCP says.
fn dialect(root: &Value) -> Option<bool> {
    let Some(uri) = root.get("$schema").and_then(Value::as_str) else { return Some(false) };
    let uri = uri.trim_end_matches('#').trim_start_matches("https://").trim_start_matches("http://");
    match uri {
        "json-schema.org/draft/2020-12/schema" | "json-schema.org/draft/2019-09/schema" | "json-schema.org/schema" => Some(false),
        "json-schema.org/draft-07/schema" | "json-schema.org/draft-06/schema" | "json-schema.org/draft-04/schema" => Some(true),
        _ => None,
    }
}

/// A count keyword's value: a non-negative integer, also spelled with a zero fraction (`2.0`); one past
/// `u64` (`1e300`) is `u64::MAX` (no instance reaches either). Anything else is no count: not judged.
fn count(o: &Map<String, Value>, key: &str) -> Option<u64> {
    let v = o.get(key)?;
    // (`as` saturates: a float past u64::MAX becomes u64::MAX)
    v.as_u64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
}

/// ECMA-262's `\s`: white space and line terminators (Unicode's, not ASCII's, which is regex-lite's).
const ECMA_SPACE: &str = "\\t\\n\\x0B\\x0C\\r \u{a0}\u{1680}\u{2000}-\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}";

/// `pattern` with ECMA-262's meaning in regex-lite's syntax: `\s`, `\S` and `.` spelled out (ECMA's `.`
/// stops at every line terminator, regex-lite's only at `\n`). `None` where the spelling would need a
/// class inside a class (`\S` within `[...]`): unknown.
fn ecma(pattern: &str) -> Option<String> {
    let mut out = String::with_capacity(pattern.len() + 16);
    let (mut chars, mut class) = (pattern.chars(), false);
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('s') if class => out.push_str(ECMA_SPACE),
                Some('s') => {
                    out.push('[');
                    out.push_str(ECMA_SPACE);
                    out.push(']');
                }
                Some('S') if class => return None,
                Some('S') => {
                    out.push_str("[^");
                    out.push_str(ECMA_SPACE);
                    out.push(']');
                }
                Some(e) => out.extend(['\\', e]),
                None => out.push('\\'),
            },
            '[' if !class => {
                class = true;
                out.push('[');
                // a `]` or `^]` first in a class is a literal in regex-lite, the end of an empty class in ECMA
                if chars.as_str().starts_with(']') || chars.as_str().starts_with("^]") {
                    return None;
                }
            }
            ']' if class => {
                class = false;
                out.push(']');
            }
            // literal in an ECMA class; regex-lite reads `[` as a nested class and `&&`, `~~`, `--` as set
            // operations there
            '[' | '&' | '~' if class => out.extend(['\\', c]),
            '-' if class && chars.as_str().starts_with('-') => return None,
            '.' if !class => out.push_str("[^\n\r\u{2028}\u{2029}]"),
            _ => out.push(c),
        }
    }
    Some(out)
}

fn esc(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn num_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| num_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| num_eq(v, w))),
        _ => a == b,
    }
}

fn type_ok(t: &str, i: &Value) -> bool {
    match t {
        "null" => i.is_null(),
        "boolean" => i.is_boolean(),
        "object" => i.is_object(),
        "array" => i.is_array(),
        "string" => i.is_string(),
        "number" => i.is_number(),
        "integer" => i.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true, // an unknown type name: not ours to judge
    }
}

/// The value a local `$ref` points to (`#`, `#/$defs/X`, `#/definitions/X`, any JSON pointer).
pub fn resolve<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
    let pointer = r.strip_prefix('#')?;
    let decoded = percent_encoding::percent_decode_str(pointer).decode_utf8().ok()?;
    root.pointer(&decoded)
}

impl<'a> Run<'a> {
    /// Whether `text` matches `pattern` (unanchored, as JSON Schema says); `None`: unknown.
    fn matches(&mut self, pattern: &'a str, text: &str) -> Option<bool> {
        if !self.regexes.contains_key(pattern) {
            let re = (pattern.len() <= PATTERN_CHARS && self.regexes.len() < PATTERNS)
                .then(|| ecma(pattern))
                .flatten()
                .and_then(|p| RegexBuilder::new(&p).size_limit(REGEX_BYTES).nest_limit(64).build().ok());
            self.regexes.insert(pattern, re);
        }
        // a text is searched once per pattern: its cost counts against the step budget
        self.steps += text.len() / 64;
        let answer = self.regexes.get(pattern).and_then(|re| re.as_ref()).map(|re| re.is_match(text));
        self.unknown += usize::from(answer.is_none());
        answer
    }

    fn fail(&self, ip: &str, sp: &str, key: &str, reason: String) -> Option<Violation> {
        Some(Violation { instance: if ip.is_empty() { "/".into() } else { ip.into() }, schema: format!("{sp}/{key}"), reason })
    }

    /// Whether `s` judged `i` valid with every answer known (for `not`, `oneOf`, `if`, `contains`).
    fn known(&mut self, s: &'a Value, i: &Value, ip: &str, sp: &str, depth: usize) -> (bool, bool) {
        let before = (self.unknown, self.spent);
        let valid = self.check(s, i, ip, sp, depth).is_none();
        (valid, (self.unknown, self.spent) == before)
    }

    fn check(&mut self, s: &'a Value, i: &Value, ip: &str, sp: &str, depth: usize) -> Option<Violation> {
        self.steps += 1;
        if self.steps > STEPS || depth > DEPTH {
            self.spent = true;
            return None;
        }
        let o = match s {
            Value::Bool(false) => return self.fail(ip, sp, "false", "no value is allowed here".into()),
            Value::Object(o) => o,
            // `true`, and anything that is not a schema, allows every value
            _ => return None,
        };
        // what this validator does not judge leaves the answer unknown wherever it stands
        self.unknown += UNJUDGED.iter().filter(|k| o.contains_key(**k)).count();
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            match resolve(self.root, r) {
                Some(target) => {
                    let at = r.trim_start_matches('#').to_string();
                    if let Some(v) = self.check(target, i, ip, &at, depth + 1) {
                        return Some(v);
                    }
                }
                None => self.unknown += 1,
            }
            if self.ref_alone {
                return None;
            }
        }
        if let Some(t) = o.get("type") {
            let ok = match t {
                Value::String(t) => type_ok(t, i),
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| type_ok(t, i)),
                _ => true,
            };
            if !ok {
                return self.fail(ip, sp, "type", format!("expected {t}, got {}", kind_of(i)));
            }
        }
        if let Some(e) = o.get("enum").and_then(Value::as_array) {
            if !e.iter().any(|v| num_eq(v, i)) {
                return self.fail(ip, sp, "enum", format!("{} is not one of the {} allowed values", what(i), e.len()));
            }
        }
        if let Some(c) = o.get("const") {
            if !num_eq(c, i) {
                return self.fail(ip, sp, "const", format!("{} is not {}", what(i), short(c)));
            }
        }
        let v = match i {
            Value::Object(m) => self.object(o, i, m, ip, sp, depth),
            Value::Array(a) => self.array(o, a, ip, sp, depth),
            Value::String(t) => self.string(o, t, ip, sp),
            Value::Number(_) => self.number(o, i, ip, sp),
            _ => None,
        };
        if v.is_some() {
            return v;
        }
        self.combinators(o, i, ip, sp, depth)
    }

    fn combinators(&mut self, o: &'a Map<String, Value>, i: &Value, ip: &str, sp: &str, depth: usize) -> Option<Violation> {
        if let Some(all) = o.get("allOf").and_then(Value::as_array) {
            for (n, b) in all.iter().enumerate() {
                if let Some(v) = self.check(b, i, ip, &format!("{sp}/allOf/{n}"), depth + 1) {
                    return Some(v);
                }
            }
        }
        if let Some(any) = o.get("anyOf").and_then(Value::as_array) {
            let mut first = None;
            let mut matched = false;
            for (n, b) in any.iter().enumerate() {
                match self.check(b, i, ip, &format!("{sp}/anyOf/{n}"), depth + 1) {
                    None => {
                        matched = true;
                        break;
                    }
                    Some(v) => first = first.or(Some(v)),
                }
            }
            if !matched {
                let why = first.map(|v| format!(" (first: {} at {})", v.reason, v.instance)).unwrap_or_default();
                return self.fail(ip, sp, "anyOf", format!("matches none of the {} alternatives{why}", any.len()));
            }
        }
        if let Some(one) = o.get("oneOf").and_then(Value::as_array) {
            let (mut n, mut sure) = (0, true);
            for (k, b) in one.iter().enumerate() {
                let (valid, known) = self.known(b, i, ip, &format!("{sp}/oneOf/{k}"), depth + 1);
                n += usize::from(valid);
                sure &= known;
            }
            // an unknown branch may have been counted as a match, or a match missed
            if n != 1 && sure {
                return self.fail(ip, sp, "oneOf", format!("matches {n} of the alternatives, not exactly one"));
            }
        }
        if let Some(not) = o.get("not") {
            // `valid` under not is a violation only when it is known: unknown there means valid
            if self.known(not, i, ip, &format!("{sp}/not"), depth + 1) == (true, true) {
                return self.fail(ip, sp, "not", "matches the schema under not".into());
            }
        }
        if let Some(cond) = o.get("if") {
            let (valid, known) = self.known(cond, i, ip, &format!("{sp}/if"), depth + 1);
            let (branch, key) = if valid { (o.get("then"), "then") } else { (o.get("else"), "else") };
            // a condition not known picks no branch: unknown
            if let (Some(b), true) = (branch, known) {
                return self.check(b, i, ip, &format!("{sp}/{key}"), depth + 1);
            }
        }
        None
    }

    fn object(&mut self, o: &'a Map<String, Value>, i: &Value, m: &Map<String, Value>, ip: &str, sp: &str, depth: usize) -> Option<Violation> {
        if let Some(req) = o.get("required").and_then(Value::as_array) {
            if let Some(missing) = req.iter().filter_map(Value::as_str).find(|k| !m.contains_key(*k)) {
                return self.fail(ip, sp, "required", format!("required property {missing:?} is missing"));
            }
        }
        let props = o.get("properties").and_then(Value::as_object);
        let patterns = o.get("patternProperties").and_then(Value::as_object);
        for (k, v) in m {
            let at = format!("{ip}/{}", esc(k));
            let declared = props.and_then(|p| p.get(k));
            if let Some(ps) = declared {
                if let Some(x) = self.check(ps, v, &at, &format!("{sp}/properties/{}", esc(k)), depth + 1) {
                    return Some(x);
                }
            }
            // every pattern the name matches applies; a pattern that cannot be compiled here might
            // match, so the name is then not judged additional
            let (mut matched, mut unknown) = (false, false);
            for (pat, ps) in patterns.into_iter().flatten() {
                match self.matches(pat, k) {
                    Some(true) => {
                        matched = true;
                        if let Some(x) = self.check(ps, v, &at, &format!("{sp}/patternProperties/{}", esc(pat)), depth + 1) {
                            return Some(x);
                        }
                    }
                    Some(false) => {}
                    None => unknown = true,
                }
            }
            if declared.is_none() && !matched && !unknown {
                if let Some(ap) = o.get("additionalProperties") {
                    if ap == &Value::Bool(false) {
                        return self.fail(&at, sp, "additionalProperties", format!("property {k:?} is not allowed"));
                    }
                    if let Some(x) = self.check(ap, v, &at, &format!("{sp}/additionalProperties"), depth + 1) {
                        return Some(x);
                    }
                }
            }
            if let Some(pn) = o.get("propertyNames") {
                if let Some(x) = self.check(pn, &Value::String(k.clone()), &at, &format!("{sp}/propertyNames"), depth + 1) {
                    return Some(x);
                }
            }
        }
        let n = m.len() as u64;
        if count(o, "minProperties").is_some_and(|min| n < min) {
            return self.fail(ip, sp, "minProperties", format!("{n} properties, fewer than allowed"));
        }
        if count(o, "maxProperties").is_some_and(|max| n > max) {
            return self.fail(ip, sp, "maxProperties", format!("{n} properties, more than allowed"));
        }
        for key in ["dependentRequired", "dependencies"] {
            for (k, deps) in o.get(key).and_then(Value::as_object).into_iter().flatten() {
                if !m.contains_key(k) {
                    continue;
                }
                if let Some(d) = deps.as_array().and_then(|d| d.iter().filter_map(Value::as_str).find(|d| !m.contains_key(*d))) {
                    return self.fail(ip, sp, key, format!("{k:?} is present, so {d:?} is required"));
                }
            }
        }
        // a schema that applies to the whole object when a property is present (draft-07 spelled it
        // as a `dependencies` member that is a schema)
        for key in ["dependentSchemas", "dependencies"] {
            for (k, dep) in o.get(key).and_then(Value::as_object).into_iter().flatten() {
                if m.contains_key(k) && !dep.is_array() {
                    if let Some(x) = self.check(dep, i, ip, &format!("{sp}/{key}/{}", esc(k)), depth + 1) {
                        return Some(x);
                    }
                }
            }
        }
        None
    }

    fn array(&mut self, o: &'a Map<String, Value>, a: &[Value], ip: &str, sp: &str, depth: usize) -> Option<Violation> {
        let n = a.len() as u64;
        if count(o, "minItems").is_some_and(|min| n < min) {
            return self.fail(ip, sp, "minItems", format!("{n} items, fewer than allowed"));
        }
        if count(o, "maxItems").is_some_and(|max| n > max) {
            return self.fail(ip, sp, "maxItems", format!("{n} items, more than allowed"));
        }
        // 2020-12 prefixItems + items, or draft-07 items as a list + additionalItems
        let (prefix, prefix_key, rest, rest_key) = match (o.get("prefixItems").and_then(Value::as_array), o.get("items")) {
            (Some(p), items) => (p.as_slice(), "prefixItems", items, "items"),
            (None, Some(Value::Array(p))) => (p.as_slice(), "items", o.get("additionalItems"), "additionalItems"),
            (None, items) => (&[][..], "", items, "items"),
        };
        for (n, v) in a.iter().enumerate() {
            let at = format!("{ip}/{n}");
            let (s, key) = match prefix.get(n) {
                Some(s) => (Some(s), format!("{sp}/{prefix_key}/{n}")),
                None => (rest, format!("{sp}/{rest_key}")),
            };
            if let Some(s) = s {
                if let Some(x) = self.check(s, v, &at, &key, depth + 1) {
                    return Some(x);
                }
            }
        }
        if o.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (x, v) in a.iter().enumerate() {
                if a.iter().skip(x + 1).any(|w| num_eq(v, w)) {
                    return self.fail(
                        ip,
                        sp,
                        "uniqueItems",
                        format!("items {x} and {} are equal", x + 1 + a.iter().skip(x + 1).position(|w| num_eq(v, w)).unwrap_or(0)),
                    );
                }
                // pairs are n²: past the budget the rest are not compared (unknown)
                self.steps += a.len();
                if self.steps > STEPS {
                    self.spent = true;
                    return None;
                }
            }
        }
        if let Some(c) = o.get("contains") {
            let (mut hits, mut sure) = (0u64, true);
            for v in a {
                let (valid, known) = self.known(c, v, ip, &format!("{sp}/contains"), depth + 1);
                hits += u64::from(valid);
                sure &= known;
            }
            let min = count(o, "minContains").unwrap_or(1);
            let max = count(o, "maxContains").unwrap_or(u64::MAX);
            // too few is certain (unknown counts as a hit); too many only where every answer is known
            if hits < min || (hits > max && sure) {
                return self.fail(ip, sp, "contains", format!("{hits} items match contains"));
            }
        }
        None
    }

    fn string(&mut self, o: &'a Map<String, Value>, t: &str, ip: &str, sp: &str) -> Option<Violation> {
        let n = t.chars().count() as u64;
        if count(o, "minLength").is_some_and(|min| n < min) {
            return self.fail(ip, sp, "minLength", format!("{n} characters, fewer than allowed"));
        }
        if count(o, "maxLength").is_some_and(|max| n > max) {
            return self.fail(ip, sp, "maxLength", format!("{n} characters, more than allowed"));
        }
        if let Some(p) = o.get("pattern").and_then(Value::as_str) {
            if self.matches(p, t) == Some(false) {
                return self.fail(
                    ip,
                    sp,
                    "pattern",
                    format!("a string of {} characters does not match {}", t.chars().count(), short(&Value::String(p.into()))),
                );
            }
        }
        None
    }

    fn number(&self, o: &Map<String, Value>, i: &Value, ip: &str, sp: &str) -> Option<Violation> {
        let x = i.as_f64()?;
        let get = |k: &str| o.get(k).and_then(Value::as_f64);
        // draft-04 spells exclusive bounds as booleans beside minimum/maximum
        let ex_min = o.get("exclusiveMinimum") == Some(&Value::Bool(true));
        let ex_max = o.get("exclusiveMaximum") == Some(&Value::Bool(true));
        let checks = [
            ("minimum", get("minimum").is_some_and(|m| if ex_min { x <= m } else { x < m })),
            ("maximum", get("maximum").is_some_and(|m| if ex_max { x >= m } else { x > m })),
            ("exclusiveMinimum", get("exclusiveMinimum").is_some_and(|m| x <= m)),
            ("exclusiveMaximum", get("exclusiveMaximum").is_some_and(|m| x >= m)),
            // a quotient past f64 (1e308 / 0.5) is judged by the exact remainder instead
            (
                "multipleOf",
                get("multipleOf").is_some_and(|m| m > 0.0 && if (x / m).is_finite() { ((x / m) - (x / m).round()).abs() > 1e-9 } else { x % m != 0.0 }),
            ),
        ];
        let (key, _) = checks.iter().find(|(_, bad)| *bad)?;
        self.fail(ip, sp, key, format!("{} is outside {key}", crate::schema::number_text(x)))
    }
}

fn kind_of(i: &Value) -> &'static str {
    match i {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The argument a reason is about, without its value: arguments are the user's data, and reasons go
/// into log lines (a string says its length, a container its size).
fn what(v: &Value) -> String {
    match v {
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object of {} members", o.len()),
        Value::Number(_) => "the number".into(),
        Value::Bool(_) => "the boolean".into(),
        Value::Null => "null".into(),
    }
}

/// A value of the schema for a log line: at most 40 characters.
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(40) {
        Some((at, _)) => format!("{}...", s.get(..at).unwrap_or("")),
        None => s,
    }
}

/// Removes from `instance` every `null` a strict rewrite made the model write: a member whose
/// property the original `schema` does not require and whose own schema does not accept `null`
/// (the rewrite listed it in `required` and added `null` to it). A `null` the original accepts stays.
/// Returns how many members were removed.
pub fn strip_injected_nulls(schema: &Value, instance: &mut Value) -> usize {
    let mut budget = STEPS;
    strip(schema, schema, instance, &mut budget, 0)
}

/// Whether a schema's `required` holds for the value: its own, an `allOf` member's or a ref's does; a
/// union branch's may not (which branch applies is the validator's business).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Required {
    Holds,
    MayNotHold,
}

/// The properties and required names an object schema states: its own, its `allOf` members' and its
/// ref's, and the union branches' properties (which branch applies is the validator's business; a
/// property any branch declares optional and null-refusing is taken as one the rewrite made nullable).
fn view<'a>(root: &'a Value, s: &'a Value, props: &mut Vec<(&'a str, &'a Value)>, required: &mut Vec<&'a str>, req: Required, depth: usize) {
    let Some(o) = s.as_object() else { return };
    if depth > 16 {
        return;
    }
    if let Some(p) = o.get("properties").and_then(Value::as_object) {
        props.extend(p.iter().map(|(k, v)| (k.as_str(), v)));
    }
    if req == Required::Holds {
        required.extend(o.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str));
    }
    if let Some(t) = o.get("$ref").and_then(Value::as_str).and_then(|r| resolve(root, r)) {
        view(root, t, props, required, req, depth + 1);
    }
    for b in o.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        view(root, b, props, required, req, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        for b in o.get(key).and_then(Value::as_array).into_iter().flatten() {
            view(root, b, props, required, Required::MayNotHold, depth + 1);
        }
    }
}

fn strip(root: &Value, s: &Value, i: &mut Value, budget: &mut usize, depth: usize) -> usize {
    if *budget == 0 || depth > DEPTH {
        return 0;
    }
    *budget -= 1;
    let mut props = Vec::new();
    let mut required = Vec::new();
    view(root, s, &mut props, &mut required, Required::Holds, 0);
    let item = s.as_object().and_then(|o| o.get("items")).filter(|v| v.is_object());
    let mut removed = 0;
    match i {
        Value::Object(m) => {
            let nulls: Vec<String> = m
                .iter()
                .filter(|(k, v)| {
                    v.is_null() && !required.contains(&k.as_str()) && props.iter().any(|(p, ps)| p == k && validate_in(root, ps, &Value::Null).is_err())
                })
                .map(|(k, _)| k.clone())
                .collect();
            for k in nulls {
                m.shift_remove(&k);
                removed += 1;
            }
            for (k, v) in m.iter_mut() {
                if let Some((_, ps)) = props.iter().find(|(p, _)| p == k) {
                    removed += strip(root, ps, v, budget, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            if let Some(is) = item {
                for v in a.iter_mut() {
                    removed += strip(root, is, v, budget, depth + 1);
                }
            }
        }
        _ => {}
    }
    removed
}

/// [`validate`] of a subschema of `root` (its refs resolve in `root`).
fn validate_in(root: &Value, s: &Value, i: &Value) -> Result<(), Violation> {
    let Some(ref_alone) = dialect(root) else { return Ok(()) };
    let mut run = Run { root, ref_alone, unknown: 0, steps: 0, spent: false, regexes: HashMap::new() };
    match run.check(s, i, "", "", 0) {
        Some(v) if !run.spent => Err(v),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(s: Value, i: Value) -> Violation {
        match validate(&s, &i) {
            Err(v) => v,
            Ok(()) => panic!("{i} should fail {s}"),
        }
    }

    #[test]
    fn core_keywords() {
        let s = json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "s": {"type": "string", "maxLength": 3, "enum": ["a", "bb", "ccc", "dddd"]},
            "a": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "maxItems": 2, "uniqueItems": true},
            "u": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "o": {"oneOf": [{"type": "integer"}, {"type": "number", "multipleOf": 0.5}]}
        }, "required": ["n"], "additionalProperties": false,
        "$defs": {"Item": {"type": "object", "properties": {"id": {"const": 1}}, "required": ["id"]}}});
        assert!(validate(&s, &json!({"n": 3, "s": "bb", "a": [{"id": 1}], "u": null, "o": 1.5})).is_ok());
        assert!(validate(&s, &json!({"n": 3.0})).is_ok(), "3.0 is an integer");
        assert_eq!(err(s.clone(), json!({})).schema, "/required");
        assert_eq!(err(s.clone(), json!({"n": 0})).instance, "/n");
        assert_eq!(err(s.clone(), json!({"n": 1, "x": 1})).schema, "/additionalProperties");
        assert_eq!(err(s.clone(), json!({"n": 1, "s": "dddd"})).schema, "/properties/s/maxLength");
        let v = err(s.clone(), json!({"n": 1, "a": [{"id": 2}]}));
        assert_eq!((v.instance.as_str(), v.schema.as_str()), ("/a/0/id", "/$defs/Item/properties/id/const"));
        assert_eq!(err(s.clone(), json!({"n": 1, "a": [{"id": 1}, {"id": 1}]})).schema, "/properties/a/uniqueItems");
        assert_eq!(err(s.clone(), json!({"n": 1, "u": 3})).schema, "/properties/u/anyOf");
        assert_eq!(err(s.clone(), json!({"n": 1, "o": 2})).schema, "/properties/o/oneOf", "2 is both: not exactly one");
        assert_eq!(err(json!(false), json!(1)).schema, "/false");
    }

    #[test]
    fn patterns_pattern_properties_and_formats() {
        let s = json!({"type": "object", "properties": {
            "id": {"type": "string", "pattern": "^\\d{3}-(?:[A-Z]+)$"},
            "when": {"type": "string", "format": "date-time"},
            "who": {"type": "string", "format": "email"},
            "odd": {"type": "string", "pattern": "\\p{Greek}+(?<=x)"},
            "free": {"type": "string", "format": "color"}
        }, "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": false});
        assert!(validate(&s, &json!({"id": "123-AB", "when": "2026-01-02T03:04:05Z", "who": "a@b.io", "x-n": 1, "odd": "?", "free": "?"})).is_ok());
        assert_eq!(err(s.clone(), json!({"id": "12-AB"})).schema, "/properties/id/pattern");
        assert_eq!(err(s.clone(), json!({"id": "a 123-AB"})).schema, "/properties/id/pattern", "unanchored search, but this pattern is anchored");
        // format is an annotation (2020-12's default): a malformed date is no violation
        assert!(validate(&s, &json!({"when": "2026-13-02T03:04:05Z", "who": "nobody"})).is_ok());
        assert_eq!(err(s.clone(), json!({"x-n": "one"})).schema, "/patternProperties/^x-/type");
        assert_eq!(err(s.clone(), json!({"y": 1})).schema, "/additionalProperties", "a name no pattern matches is additional");
        // a pattern regex-lite cannot compile is unknown: neither the value nor the name is judged
        let u = json!({"patternProperties": {"\\p{L}+": {"type": "integer"}}, "additionalProperties": false});
        assert!(validate(&u, &json!({"anything": "x"})).is_ok());
        assert!(validate(&json!({"pattern": "(a"}), &json!("b")).is_ok(), "a broken pattern is not a violation");
        assert!(validate(&json!({"pattern": "b"}), &json!("abc")).is_ok(), "patterns search, they are not anchored");
    }

    #[test]
    fn ecma_meaning_of_patterns() {
        // `\s` is Unicode's white space in ECMA-262 (regex-lite's alone is ASCII's); `.` stops at every line terminator
        let ws = json!({"pattern": "^\\s$"});
        for c in ["\u{a0}", "\u{2029}", "\u{2003}", "\u{feff}", "\t"] {
            assert!(validate(&ws, &json!(c)).is_ok(), "{c:?} is white space");
        }
        assert_eq!(err(ws, json!("x")).schema, "/pattern");
        assert_eq!(err(json!({"pattern": "^\\S+$"}), json!("a\u{2028}b")).schema, "/pattern");
        assert_eq!(err(json!({"pattern": "^a.b$"}), json!("a\u{2028}b")).schema, "/pattern");
        assert!(validate(&json!({"pattern": "^[[&~]+$"}), &json!("[&~")).is_ok(), "literal in an ECMA class");
        assert_eq!(ecma("[\\S]"), None, "a class inside a class: unknown");
    }

    #[test]
    fn unknown_stays_unknown_under_not_one_of_and_if() {
        // what the validator does not judge (here unevaluatedProperties) is valid, and `not` of it unknown
        let s = json!({"not": {"unevaluatedProperties": false}});
        assert!(validate(&s, &json!({"a": 1})).is_ok());
        assert_eq!(err(json!({"not": {"type": "integer"}}), json!(1)).schema, "/not", "a known answer still counts");
        let one = json!({"oneOf": [{"pattern": "\\p{L}"}, {"type": "string"}]});
        assert!(validate(&one, &json!("a")).is_ok(), "an unknown branch may not match");
        let cond = json!({"if": {"pattern": "(?<=a)b"}, "then": {"maxLength": 1}, "else": {"maxLength": 1}});
        assert!(validate(&cond, &json!("ab")).is_ok(), "no branch picked on an unknown condition");
        assert!(validate(&json!({"$ref": "https://example.com/x.json"}), &json!(1)).is_ok(), "a ref outside the document is unknown");
    }

    #[test]
    fn drafts_and_counts() {
        // drafts 4 to 7: keywords beside a `$ref` are ignored; 2019-09 and later apply them
        let s = |d: &str| json!({"$schema": d, "$defs": {"a": {"type": "array"}}, "$ref": "#/$defs/a", "maxItems": 1});
        assert!(validate(&s("http://json-schema.org/draft-07/schema#"), &json!([1, 2])).is_ok());
        assert_eq!(err(s("https://json-schema.org/draft/2020-12/schema"), json!([1, 2])).schema, "/maxItems");
        // a metaschema it does not know could give any keyword no meaning: unknown
        assert!(validate(&json!({"$schema": "https://example.com/meta", "type": "string"}), &json!(1)).is_ok());
        // counts spelled with a zero fraction count
        assert_eq!(err(json!({"maxLength": 2.0}), json!("foo")).schema, "/maxLength");
        assert_eq!(err(json!({"type": "array", "contains": {"const": 1}, "maxContains": 1.0}), json!([1, 1])).schema, "/contains");
        // a quotient past f64: the remainder decides
        assert_eq!(err(json!({"multipleOf": 0.123456789}), json!(1e308)).schema, "/multipleOf");
        assert!(validate(&json!({"multipleOf": 0.5}), &json!(1e308)).is_ok());
        // a dependent schema applies to the whole object
        let d = json!({"dependentSchemas": {"a": {"required": ["b"]}}});
        assert_eq!(err(d.clone(), json!({"a": 1})).schema, "/dependentSchemas/a/required");
        assert!(validate(&d, &json!({"c": 1})).is_ok());
    }

    #[test]
    fn recursion_is_bounded_and_never_called_invalid_past_the_budget() {
        let s = json!({"$ref": "#"});
        assert!(validate(&s, &json!(1)).is_ok());
        let tree = json!({"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}});
        let mut deep = json!({});
        for _ in 0..300 {
            deep = json!({"kids": [deep]});
        }
        assert!(validate(&tree, &deep).is_ok());
    }

    #[test]
    fn only_injected_nulls_are_stripped() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": ["string", "null"]}, "c": {"type": "string"},
            "d": {"type": "object", "properties": {"e": {"enum": ["x"]}}},
            "l": {"type": "array", "items": {"$ref": "#/$defs/I"}}
        }, "required": ["c"], "$defs": {"I": {"type": "object", "properties": {"k": {"type": "integer"}}}}});
        let mut i = json!({"a": null, "b": null, "c": null, "d": {"e": null}, "l": [{"k": null}, {"k": 1}]});
        assert_eq!(strip_injected_nulls(&s, &mut i), 3);
        assert_eq!(i, json!({"b": null, "c": null, "d": {}, "l": [{}, {"k": 1}]}));
    }

    /// `levels` wraps of `wrap` around `inner`, each wrap one level deeper.
    fn nest(levels: usize, inner: Value, wrap: &dyn Fn(Value) -> Value) -> Value {
        (0..levels).fold(inner, |s, _| wrap(s))
    }

    #[test]
    fn depth_is_bounded_at_every_keyword_that_descends() {
        // a violation DEPTH levels down is found; one level further the budget is spent (unknown, valid).
        // Each keyword that descends counts one level: dropping its count lets the 129th level be judged.
        type Wrap = fn(Value) -> Value;
        let same: Wrap = |i| i;
        let sites: [(&str, Wrap, Wrap, Value, Value); 12] = [
            ("allOf", |s| json!({"allOf": [s]}), same, json!({"type": "integer"}), json!("x")),
            ("anyOf", |s| json!({"anyOf": [s]}), same, json!({"type": "integer"}), json!("x")),
            ("oneOf", |s| json!({"oneOf": [s]}), same, json!({"type": "integer"}), json!("x")),
            ("not", |s| json!({"not": s}), same, json!({"type": "integer"}), json!("x")),
            ("if", |s| json!({"if": s, "then": true, "else": false}), same, json!({"type": "integer"}), json!("x")),
            ("then", |s| json!({"if": true, "then": s}), same, json!({"type": "integer"}), json!("x")),
            ("properties", |s| json!({"properties": {"a": s}}), |i| json!({"a": i}), json!({"type": "integer"}), json!("x")),
            ("patternProperties", |s| json!({"patternProperties": {"^a$": s}}), |i| json!({"a": i}), json!({"type": "integer"}), json!("x")),
            ("additionalProperties", |s| json!({"additionalProperties": s}), |i| json!({"a": i}), json!({"type": "integer"}), json!("x")),
            ("dependentSchemas", |s| json!({"dependentSchemas": {"a": s}}), same, json!({"maxProperties": 0}), json!({"a": 1})),
            ("items", |s| json!({"items": s}), |i| json!([i]), json!({"type": "integer"}), json!("x")),
            ("contains", |s| json!({"contains": s}), |i| json!([i]), json!({"type": "integer"}), json!("x")),
        ];
        for (name, wrap, place, inner, bad) in sites {
            // (DEPTH is even: `not` DEPTH times over keeps the innermost answer, a violation)
            let levels = |n: usize| (nest(n, inner.clone(), &wrap), nest(n, bad.clone(), &place));
            let (s, i) = levels(DEPTH);
            assert!(validate(&s, &i).is_err(), "{name}: a violation {DEPTH} levels down is found");
            let (s, i) = levels(DEPTH + 1);
            assert!(validate(&s, &i).is_ok(), "{name}: {} levels down is past the budget", DEPTH + 1);
        }
        // `not` an odd number of times over a string is a violation when judged: past the budget it is not
        let nots = nest(DEPTH + 1, json!({"type": "string"}), &|s| json!({"not": s}));
        assert!(validate(&nots, &json!("x")).is_ok());
        assert!(validate(&nest(DEPTH - 1, json!({"type": "string"}), &|s| json!({"not": s})), &json!("x")).is_err());
        // propertyNames descends into the name: one level, then allOf's
        let names = |n: usize| json!({"propertyNames": nest(n, json!({"maxLength": 0}), &|s| json!({"allOf": [s]}))});
        assert!(validate(&names(DEPTH - 1), &json!({"a": 1})).is_err());
        assert!(validate(&names(DEPTH), &json!({"a": 1})).is_ok());
    }

    #[test]
    fn steps_are_bounded_and_a_spent_budget_is_no_verdict() {
        // one step a node: the root and 199,999 items are 200,000 steps, and the last item is judged
        let s = json!({"type": "array", "items": {"type": "integer"}});
        let items = |n: usize| Value::Array((0..n).map(|k| if k + 1 == n { json!("x") } else { json!(k) }).collect());
        assert_eq!(err(s.clone(), items(STEPS - 1)).instance, format!("/{}", STEPS - 2));
        assert!(validate(&s, &items(STEPS)).is_ok(), "past the budget: unknown");
        // a searched text costs a step per 64 bytes: 100 KB is judged, 13 MB spends the budget
        assert_eq!(err(json!({"pattern": "^a+$"}), json!(format!("{}b", "a".repeat(100_000)))).schema, "/pattern");
        let texts = json!(["a".repeat(100_000), "a".repeat(100_000), "b"]);
        assert_eq!(err(json!({"items": {"pattern": "^a+$"}}), texts).instance, "/2", "3,000 steps of searching: judged");
        let long = json!(["a".repeat(64 * (STEPS + 1)), "b"]);
        assert!(validate(&json!({"items": {"pattern": "a"}}), &long).is_ok(), "the first item spent the budget");
        // uniqueItems compares pairs within the budget: 1,000 items are a million pairs
        let mut many: Vec<Value> = (0..1000).map(|k| json!(k)).collect();
        many.push(json!(999));
        assert!(validate(&json!({"uniqueItems": true}), &Value::Array(many.clone())).is_ok());
        many.truncate(100);
        many.push(json!(99));
        assert_eq!(err(json!({"uniqueItems": true}), Value::Array(many)).schema, "/uniqueItems");
        // a violation found after the budget ran out elsewhere is no verdict either
        let deep = nest(DEPTH + 1, json!({"type": "integer"}), &|s| json!({"allOf": [s]}));
        assert!(validate(&json!({"properties": {"a": deep}, "minProperties": 2}), &json!({"a": "x"})).is_ok());
    }

    #[test]
    fn patterns_are_bounded_in_length_and_number() {
        // at most PATTERN_CHARS characters: a longer pattern is not compiled (unknown)
        let long = |n: usize| json!({"pattern": format!("^{}$", "a".repeat(n - 2))});
        assert_eq!(err(long(PATTERN_CHARS), json!("b")).schema, "/pattern");
        assert!(validate(&long(PATTERN_CHARS + 1), &json!("b")).is_ok());
        // a pattern whose program is a few KB compiles (the limit is REGEX_BYTES, not its name's digits)
        assert_eq!(err(json!({"pattern": "^[a-z]{200}$"}), json!("a".repeat(199))).schema, "/pattern");
        // at most PATTERNS distinct patterns a validation: the 65th is unknown
        let many = |n: usize| {
            let mut all: Vec<Value> = (0..n - 1).map(|k| json!({"pattern": format!("a|z{k}")})).collect();
            all.push(json!({"pattern": "^b$"}));
            json!({"allOf": all})
        };
        assert_eq!(err(many(PATTERNS), json!("a")).schema, format!("/allOf/{}/pattern", PATTERNS - 1));
        assert!(validate(&many(PATTERNS + 1), &json!("a")).is_ok());
    }

    #[test]
    fn ecma_spelling() {
        let space = |neg: &str| format!("[{neg}{ECMA_SPACE}]");
        assert_eq!(ecma("\\s"), Some(space("")));
        assert_eq!(ecma("\\S"), Some(space("^")));
        assert_eq!(ecma("[\\s]"), Some(space("")), "inside a class, the members alone");
        assert_eq!(ecma("[a[]"), Some("[a\\[]".into()), "`[` in a class is a literal");
        assert_eq!(ecma("[.]"), Some("[.]".into()), "`.` in a class is a dot");
        assert_eq!(ecma("[a]\\s"), Some(format!("[a]{}", space(""))), "a class ends at `]`");
        assert_eq!(ecma("a&b~"), Some("a&b~".into()), "`&` and `~` are escaped in classes only");
        assert_eq!(ecma("[a&&b]"), Some("[a\\&\\&b]".into()));
        assert_eq!(ecma("[a--b]"), None, "`--` in a class is a set operation in regex-lite");
        assert_eq!(ecma("[a-b]"), Some("[a-b]".into()));
        assert_eq!(ecma("[]a]"), None, "`]` first: an empty class in ECMA");
        assert_eq!(ecma("[^]a]"), None);
        assert_eq!(ecma("a\\"), Some("a\\".into()));
    }

    #[test]
    fn what_is_not_judged() {
        // counts that are no counts (a fraction, a negative) are not judged; one past u64 is u64::MAX
        assert!(validate(&json!({"maxLength": 2.5}), &json!("abc")).is_ok());
        assert!(validate(&json!({"maxLength": -1.0}), &json!("a")).is_ok());
        assert_eq!(err(json!({"minLength": 1e300}), json!("a")).schema, "/minLength");
        assert!(validate(&json!({"multipleOf": 0}), &json!(3)).is_ok(), "multipleOf 0 is no rule");
        // an unresolvable ref is unknown, also under `not`
        assert!(validate(&json!({"not": {"$ref": "#/nope"}}), &json!(1)).is_ok());
        // unknown answers under contains count as hits, so too many is not concluded from them
        assert!(validate(&json!({"contains": {"pattern": "\\p{L}"}, "maxContains": 0}), &json!(["a"])).is_ok());
        assert_eq!(err(json!({"contains": {"type": "string"}, "maxContains": 0}), json!(["a"])).schema, "/contains");
        // equal numbers are equal in objects too (1 and 1.0)
        assert!(validate(&json!({"const": {"a": 1}}), &json!({"a": 1.0})).is_ok());
        assert!(validate(&json!({"const": {"a": 1}}), &json!({"a": 2})).is_err());
    }

    #[test]
    fn draft_4_exclusive_bounds_and_reasons() {
        let min = json!({"minimum": 1, "exclusiveMinimum": true});
        assert_eq!(err(min.clone(), json!(1)).schema, "/minimum");
        assert!(validate(&min, &json!(2)).is_ok());
        let max = json!({"maximum": 1, "exclusiveMaximum": true});
        assert_eq!(err(max.clone(), json!(1)).schema, "/maximum");
        assert!(validate(&max, &json!(0)).is_ok());
        // the reasons a log line carries
        assert_eq!(err(json!({"type": "integer"}), json!("x")).reason, "expected \"integer\", got string");
        assert_eq!(err(json!({"type": "string"}), json!([])).reason, "expected \"string\", got array");
        let v = err(json!({"pattern": "^b"}), json!("a".repeat(50)));
        assert_eq!(v.reason, "a string of 50 characters does not match \"^b\"", "the argument's value is left out");
        assert_eq!(err(json!({"enum": [1, 2]}), json!("secret")).reason, "a string of 6 characters is not one of the 2 allowed values");
        assert_eq!(err(json!({"const": "x"}), json!({"a": "secret"})).reason, "an object of 1 members is not \"x\"");
        assert_eq!(err(json!({"uniqueItems": true}), json!(["s", "t", "s"])).reason, "items 0 and 2 are equal");
    }

    /// Object schemas `levels` deep (through `$ref`s, `allOf` or `anyOf`) before the one declaring `k`.
    fn declared_through(levels: usize, how: &str) -> Value {
        let holder = json!({"type": "object", "properties": {"k": {"type": "string"}}});
        match how {
            "$ref" => {
                let mut defs = Map::new();
                defs.insert(format!("d{levels}"), holder);
                for n in (0..levels).rev() {
                    defs.insert(format!("d{n}"), json!({"$ref": format!("#/$defs/d{}", n + 1)}));
                }
                json!({"$ref": "#/$defs/d1", "$defs": defs})
            }
            key => nest(levels, holder, &|s| json!({key: [s]})),
        }
    }

    #[test]
    fn nulls_are_stripped_within_bounds() {
        // the properties a schema states are looked for 16 levels deep, through refs and combinators
        for how in ["$ref", "allOf", "anyOf"] {
            let mut i = json!({"k": null});
            assert_eq!(strip_injected_nulls(&declared_through(16, how), &mut i), 1, "{how}: 16 levels");
            let mut i = json!({"k": null});
            assert_eq!(strip_injected_nulls(&declared_through(17, how), &mut i), 0, "{how}: 17 levels");
        }
        // an instance DEPTH levels deep is stripped, one level deeper not (objects and arrays alike)
        let tree = json!({"type": "object", "properties": {"k": {"type": "string"}, "c": {"$ref": "#"}}});
        for (levels, removed) in [(DEPTH, 1), (DEPTH + 1, 0)] {
            let mut i = nest(levels, json!({"k": null}), &|i| json!({"c": i}));
            assert_eq!(strip_injected_nulls(&tree, &mut i), removed, "objects {levels} deep");
            let list = nest(levels, json!({"properties": {"k": {"type": "string"}}}), &|s| json!({"items": s}));
            let mut i = nest(levels, json!({"k": null}), &|i| json!([i]));
            assert_eq!(strip_injected_nulls(&list, &mut i), removed, "arrays {levels} deep");
        }
        // at most STEPS nodes: the array and STEPS - 1 of its items
        let s = json!({"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}});
        let mut i = Value::Array((0..STEPS + 10).map(|_| json!({"k": null})).collect());
        assert_eq!(strip_injected_nulls(&s, &mut i), STEPS - 1);
    }
}
