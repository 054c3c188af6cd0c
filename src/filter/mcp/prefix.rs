//! What the start of a JSON-RPC message says before the rest of it is read: its `id`, `method` and,
//! for a `tools/call`, where the called name sits. Every client we know writes `params.name` before
//! `params.arguments` (the part that makes a call large), so a message too large to read whole still
//! says which tool it calls in its first bytes. Read structurally (a key inside a string is no key);
//! whatever the prefix cuts off is simply not found.

/// What a message's first bytes say (each `None` where the prefix ends before it, or it is absent).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// The `id` as written (raw JSON: a string with its quotes, a number).
    pub id: Option<String>,
    pub method: Option<String>,
    /// `params.name`, decoded, and the byte range of its string (quotes included) in the prefix.
    pub name: Option<(String, std::ops::Range<usize>)>,
}

impl Start {
    /// A `tools/call` naming a name toolfit listed for another: the name sent, where it sits, and the
    /// tool's own name.
    pub fn listed_call(&self) -> Option<(&str, std::ops::Range<usize>, String)> {
        let (sent, at) = self.name.as_ref().filter(|_| self.method.as_deref() == Some("tools/call"))?;
        Some((sent, at.clone(), super::names::decode(sent)?))
    }
}

/// Reads `prefix` as the start of one JSON object.
pub fn read(prefix: &[u8]) -> Start {
    let mut r = Reader { b: prefix, i: 0 };
    let mut start = Start::default();
    let _ = r.members(|r, key| {
        match key.as_str() {
            "id" => start.id = Some(String::from_utf8_lossy(r.value()?).into_owned()),
            "method" => start.method = r.string().map(|(s, _)| s),
            "params" => {
                r.members(|r, key| {
                    if key == "name" {
                        start.name = r.string();
                        return start.name.as_ref().map(|_| ());
                    }
                    r.value().map(|_| ())
                })?;
            }
            _ => {
                r.value()?;
            }
        }
        Some(())
    });
    start
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// An object's members, each handed to `f` with the reader at its value (`f` reads or skips it).
    fn members(&mut self, mut f: impl FnMut(&mut Self, String) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            let (key, _) = self.string()?;
            self.eat(b':')?;
            self.ws();
            f(self, key)?;
            self.ws();
            match self.b.get(self.i)? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string at the reader: its decoded text and its range (quotes included).
    fn string(&mut self) -> Option<(String, std::ops::Range<usize>)> {
        self.ws();
        let from = self.i;
        if self.b.get(from) != Some(&b'"') {
            return None;
        }
        let mut j = from + 1;
        loop {
            match self.b.get(j)? {
                b'\\' => j += 2,
                b'"' => break,
                _ => j += 1,
            }
        }
        let raw = self.b.get(from..=j)?;
        let text = serde_json::from_slice::<String>(raw).ok()?;
        self.i = j + 1;
        Some((text, from..j + 1))
    }

    /// Any value at the reader, skipped whole: its bytes.
    fn value(&mut self) -> Option<&'a [u8]> {
        self.ws();
        let from = self.i;
        match self.b.get(from)? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.b.get(self.i)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                // a number, true, false or null: up to the next delimiter, which must be there
                while !matches!(self.b.get(self.i)?, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                    self.i += 1;
                }
            }
        }
        self.b.get(from..self.i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The id, method and name come out of a call's first bytes, wherever the cut falls after the
    /// name; a key inside a string is no key. The controls: cut before the name, arguments before it,
    /// and a `name` outside `params`, each finds no name.
    #[test]
    fn a_calls_name_is_found_in_its_first_bytes() {
        let call = r#"{ "jsonrpc":"2.0", "id" : 7, "method":"tools/call", "params":{"_meta":{"x":"\"name\":\"no\""},"name":"get_weather__032e","arguments":{"city":"Paris, \"}\""}}}"#;
        let name_at = call.find(r#""get_weather__032e""#).unwrap_or(0);
        for cut in name_at + 19..=call.len() {
            let s = read(&call.as_bytes()[..cut]);
            assert_eq!(s.id.as_deref(), Some("7"), "cut {cut}");
            assert_eq!(s.method.as_deref(), Some("tools/call"));
            assert_eq!(s.name, Some(("get_weather__032e".to_string(), name_at..name_at + 19)), "cut {cut}");
        }
        assert_eq!(read(&call.as_bytes()[..name_at + 10]).name, None, "control: cut inside the name");
        let late = r#"{"id":"a","method":"tools/call","params":{"arguments":{"k":1},"name":"x__032e"}}"#;
        assert_eq!(read(&late.as_bytes()[..late.len() - 20]).name, None, "control: the name after the arguments, cut");
        assert_eq!(read(late.as_bytes()).name.map(|n| n.0).as_deref(), Some("x__032e"), "whole, found anyway");
        let outside = r#"{"id":"a","name":"x__032e","method":"tools/call","params":{}}"#;
        assert_eq!(read(outside.as_bytes()), Start { id: Some(r#""a""#.to_string()), method: Some("tools/call".to_string()), name: None });
        assert_eq!(read(b"[1,2]"), Start::default(), "a batch says nothing here");
    }
}
