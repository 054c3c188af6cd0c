//! A request body read as it streams past: toolfit holds it from the first top-level member a rewrite
//! may change ([`crate::api::changes`]: a tool list, structured output, and where the profile renames
//! tools, the members naming them) to its end, and lets every byte before that go on as it came. An
//! agent's request is mostly its conversation, sent before its tools (the OpenAI and Anthropic SDKs,
//! Codex, Claude Code): what is held is the tools and the few members after them, and the memory a
//! request costs is theirs, not the conversation's.
//!
//! The engine is handed what it needs of the body, not the body: `{`, each member gone by as a stub
//! (its key, and its text when short, such as `model`; `null` for a long one, which no rewrite reads),
//! then the held bytes. Its verdict on that is its verdict on the body: the stubs come out as they went
//! in, and the held bytes' rewrite replaces them (a test holds streamed bodies, cut anywhere, to the
//! bytes and counters of the same bodies read whole). A body that is not an object is held whole.
//!
//! The scan that finds the members ([`crate::api::scan`]) checks the bytes it lets go as the engine
//! would (UTF-8, serde_json's grammar): a body toolfit cannot read goes on as it came, whichever part
//! of it is wrong.

use crate::api::scan::{Fed, Scan};

/// The most members gone by that the engine is told of; past them the body is held from the next
/// member on (a body of thousands of top-level members is no model request; its stubs stay bounded).
pub const STUBS: usize = 64;

/// One request body as it streams.
pub struct Incoming {
    scan: Scan,
    /// Bytes handed over so far.
    seen: usize,
    /// `"key":text,` for each member gone by, in order.
    stubs: String,
    count: usize,
    /// Where holding begins, and where the piece it began in did (what a host that holds whole pieces
    /// holds from).
    from: Option<From>,
    piece_at: usize,
    /// Observe mode (nothing is held, the body goes on as it comes): a copy of the bytes from `from`,
    /// and of a top-level key the last piece ended inside (from `tail_at`), which a host holds.
    copy: Option<Vec<u8>>,
    tail: Vec<u8>,
    tail_at: usize,
    observe: bool,
}

/// Where holding begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum From {
    /// At the quote of a member's key.
    Member(usize),
    /// At the first byte of a body that is not an object: the engine reads it whole.
    Whole(usize),
}

/// What the body may do after a piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Every byte before this offset may go on (the rest waits for the body's end).
    Go(usize),
    /// No JSON object toolfit reads: the body goes on as it came, unread from here.
    Bad,
}

/// What the engine is given at the body's end: the text, and how many of its first bytes are not the
/// body's own (the `{` and the stubs), which its rewrite must leave as they are.
pub struct Part {
    pub text: Vec<u8>,
    pub prefix: usize,
}

impl Incoming {
    /// `observe`: nothing is held (the body goes on as it comes); what would be is copied instead.
    pub fn new(observe: bool) -> Incoming {
        Incoming { scan: Scan::default(), seen: 0, stubs: String::new(), count: 0, from: None, piece_at: 0, copy: None, tail: Vec::new(), tail_at: 0, observe }
    }

    /// Whether the next piece's bytes are needed now: to scan them, or (observe) to copy them. A host
    /// holding the body need not read them before its end.
    pub fn wants(&self) -> bool {
        self.from.is_none() || self.observe
    }

    /// The offset from which the held bytes are read at the body's end (`None`: nothing is held).
    pub fn held_from(&self) -> Option<usize> {
        match self.from {
            _ if self.observe => None,
            Some(From::Member(at) | From::Whole(at)) => Some(at),
            None => None,
        }
    }

    /// Where the piece that holding began in began (a host that lets go whole pieces holds from there).
    pub fn piece_at(&self) -> usize {
        self.piece_at
    }

    /// Bytes of the body read so far.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// Bytes the stream keeps (its stubs, observe's copy).
    pub fn kept(&self) -> usize {
        self.stubs.len() + self.copy.as_ref().map_or(0, Vec::len)
    }

    /// Reads the next piece of the body (`piece` follows what came before it); `holds(key)`: whether
    /// the body is held from a top-level member with that key on (`None`: a key too long to keep).
    pub fn piece(&mut self, piece: &[u8], holds: &mut dyn FnMut(Option<&str>) -> bool) -> Step {
        let start = self.seen;
        self.seen += piece.len();
        if self.from.is_some() {
            if let Some(c) = &mut self.copy {
                c.extend_from_slice(piece);
            }
            return self.go(start + piece.len());
        }
        // keys counted as the scan meets them: past STUBS the body is held from the next one
        let count = &mut self.count;
        let mut hold = |k: Option<&str>| {
            *count += 1;
            *count > STUBS || holds(k)
        };
        let fed = self.scan.feed(piece, &mut hold);
        for m in std::mem::take(&mut self.scan.members) {
            let Some(key) = m.key else { continue };
            self.stubs.push_str(&serde_json::Value::String(key).to_string());
            self.stubs.push(':');
            self.stubs.push_str(m.text.as_deref().unwrap_or("null"));
            self.stubs.push(',');
        }
        self.piece_at = start;
        let at = match fed {
            Fed::Read => {
                let pending = self.scan.pending();
                if self.observe {
                    self.keep_tail(pending, start, piece);
                }
                return self.go(pending.unwrap_or(start + piece.len()));
            }
            Fed::Bad => return Step::Bad,
            Fed::Held(at) => {
                self.from = Some(From::Member(at));
                at
            }
            Fed::NotObject(at) => {
                self.from = Some(From::Whole(at));
                at
            }
        };
        if self.observe {
            self.keep_tail(Some(at), start, piece);
            self.copy = Some(std::mem::take(&mut self.tail));
        }
        self.go(at)
    }

    /// Observe: keeps the bytes from `at` on (of the last piece, which starts at `start`, and of the
    /// tail kept before it), or none.
    fn keep_tail(&mut self, at: Option<usize>, start: usize, piece: &[u8]) {
        let Some(at) = at else {
            self.tail.clear();
            return;
        };
        let mut tail = match at.checked_sub(start) {
            Some(_) => Vec::new(),
            None => self.tail.get(at.saturating_sub(self.tail_at)..).unwrap_or_default().to_vec(),
        };
        tail.extend_from_slice(piece.get(at.saturating_sub(start)..).unwrap_or_default());
        self.tail = tail;
        self.tail_at = at;
    }

    /// Bytes before `at` may go on, or (observe) all of them.
    fn go(&self, at: usize) -> Step {
        Step::Go(if self.observe { usize::MAX } else { at })
    }

    /// What the engine reads once the body has ended, given the held bytes (from [`Self::held_from`]
    /// on; observe's own copy when observing). `None`: no JSON object toolfit reads.
    pub fn part(&mut self, held: Option<&[u8]>) -> Option<Part> {
        let held = if self.observe { self.copy.as_deref() } else { held };
        let from = self.from?;
        let held = held?;
        let text = match from {
            From::Whole(_) => held.to_vec(),
            From::Member(_) => {
                let mut t = Vec::with_capacity(1 + self.stubs.len() + held.len());
                t.push(b'{');
                t.extend_from_slice(self.stubs.as_bytes());
                t.extend_from_slice(held);
                t
            }
        };
        let prefix = if matches!(from, From::Member(_)) { 1 + self.stubs.len() } else { 0 };
        Some(Part { text, prefix })
    }

    /// What the engine reads of a body that ended with nothing held: its members' stubs as an object,
    /// all of it not the body's own. `None`: the body was no whole object.
    pub fn unheld(&mut self) -> Option<Part> {
        if self.from.is_some() || !self.scan.complete() {
            return None;
        }
        let stubs = self.stubs.strip_suffix(',').unwrap_or(&self.stubs);
        let text = format!("{{{stubs}}}").into_bytes();
        Some(Part { prefix: text.len(), text })
    }
}

#[cfg(test)]
mod tests {
    use crate::filter::config::Config;
    use crate::filter::exchange::Exchange;
    use crate::filter::host::testing::Recorder;
    use crate::filter::host::{Env, Headers, Level, RouteMeta};
    use crate::filter::log::LogLimiter;
    use crate::filter::memory::Memory;
    use crate::filter::request::{self, Start, Verdict};
    use crate::filter::stats::testing::Counts;
    use proptest::prelude::*;

    /// What a host can let go of a body it holds: whole pieces (the Wasm filter: Continue or Pause)
    /// or any prefix (ext_proc's full-duplex stream).
    #[derive(Clone, Copy, Debug)]
    enum Unit {
        Piece,
        Byte,
    }

    fn headers() -> Headers<'static> {
        Headers { method: "POST", path: "/v1/chat/completions", content_type: Some("application/json"), ..Headers::default() }
    }

    /// What goes upstream of `body` cut at `cuts`, streamed through an exchange: the bytes (`None`:
    /// rejected), what the response would check calls against, the counters, and the most bytes any
    /// piece left held.
    fn streamed(cfg: &Config, body: &[u8], cuts: &[usize], unit: Unit) -> (Option<Vec<u8>>, String, Counts, usize) {
        let (mut m, mut logs) = (Counts::default(), LogLimiter::default());
        let mut log = |_: Level, _: &str| {};
        let memory = Memory::new();
        let mut env = Env { config: cfg, metrics: &mut m, logs: &mut logs, cache: None, memory: &memory, now_us: || 0, log: &mut log };
        let mut x = Exchange::default();
        let mut sim = Recorder::default();
        let _ = x.request_headers(&mut env, &headers(), Some("chat"), &RouteMeta::default(), &mut sim);
        let (mut held, mut up, mut released, mut most) = (Vec::new(), Vec::new(), 0usize, 0usize);
        let mut last = 0;
        for &cut in cuts.iter().chain([body.len()].iter()) {
            let cut = cut.clamp(last, body.len());
            let piece = &body[last..cut];
            last = cut;
            held.extend_from_slice(piece);
            let total = released + held.len();
            let go = x.request_piece(&mut env, total, piece.len(), || Some(piece), &mut sim);
            let n = match unit {
                _ if !x.reading() => held.len(),
                Unit::Piece if go >= total => held.len(),
                Unit::Piece => 0,
                Unit::Byte => go.min(total) - released,
            };
            up.extend(held.drain(..n));
            released += n;
            most = most.max(held.len());
        }
        if x.reading() {
            let _ = x.request_end(&mut env, |at| held.get(at.checked_sub(released)?..), body.len(), &mut sim);
        }
        match sim.body.take().map(|b| (sim.body_at, b)) {
            Some((at, bytes)) => {
                up.extend_from_slice(&held[..at - released]);
                up.extend_from_slice(&bytes);
            }
            None => up.extend_from_slice(&held),
        }
        let reply = format!("{:?}", x_reply(&x));
        let rejected = sim.calls.iter().any(|c| c.starts_with("reject"));
        ((!rejected).then_some(up), reply, m, most)
    }

    fn x_reply(x: &Exchange) -> Option<Vec<(String, String, String, bool)>> {
        x.reply().map(|r| r.tools().iter().map(|t| (t.sent.clone(), t.name.clone(), t.schema.clone(), t.nulls)).collect())
    }

    /// What goes upstream of `body` read whole, as toolfit read every body before it streamed them.
    fn whole(cfg: &Config, body: &[u8]) -> (Option<Vec<u8>>, String, Counts) {
        let mut m = Counts::default();
        let Start::Buffer(plan) = request::start(cfg, &headers(), Some("chat"), &RouteMeta::default(), &mut m, &mut |_| {}) else { panic!("not read") };
        m.prepare(&plan.route, plan.profile.name);
        let (verdict, _, reply) = request::finish(cfg, &plan, body, &mut m, &mut || 0, None);
        let reply =
            reply.filter(|r| r.wanted()).map(|r| r.tools().iter().map(|t| (t.sent.clone(), t.name.clone(), t.schema.clone(), t.nulls)).collect::<Vec<_>>());
        let up = match verdict {
            Verdict::Forward => Some(body.to_vec()),
            Verdict::Replace(new) => Some(new),
            Verdict::Reject(..) => None,
        };
        (up, format!("{reply:?}"), m)
    }

    use crate::filter::stats::Metrics;

    /// Streamed as whole, for both units; the most bytes a piece left held, and the bytes counted
    /// `bytes_held`.
    fn same(cfg: &Config, body: &[u8], cuts: &[usize]) -> usize {
        same_held(cfg, body, cuts).0
    }

    fn same_held(cfg: &Config, body: &[u8], cuts: &[usize]) -> (usize, u64) {
        let (want, want_reply, want_m) = whole(cfg, body);
        let (mut most, mut counted) = (0, 0);
        for unit in [Unit::Piece, Unit::Byte] {
            let (got, reply, m, held) = streamed(cfg, body, cuts, unit);
            let show = |b: &Option<Vec<u8>>| b.as_deref().map(String::from_utf8_lossy).map(|s| s.into_owned());
            assert_eq!(show(&got), show(&want), "{unit:?}: {:?} cut at {cuts:?}", String::from_utf8_lossy(body));
            assert_eq!(reply, want_reply, "{unit:?}: the response's tools");
            // bytes_held says what streaming held: the one counter a whole body moves otherwise
            let held_in = |m: &Counts| m.0.iter().filter(|(k, _)| k.ends_with(".bytes_held")).map(|(_, n)| *n).sum::<u64>();
            assert!(held_in(&m) <= held_in(&want_m) && held_in(&want_m) <= body.len() as u64, "{unit:?}: bytes_held {} of {}", held_in(&m), held_in(&want_m));
            let mut a: Vec<_> = m.0.iter().filter(|(k, _)| !k.ends_with(".bytes_held")).collect();
            let mut b: Vec<_> = want_m.0.iter().filter(|(k, _)| !k.ends_with(".bytes_held")).collect();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{unit:?}: counters of {:?}", String::from_utf8_lossy(body));
            most = most.max(held);
            counted = counted.max(held_in(&m));
        }
        (most, counted)
    }

    const TOOL_FIX: &str = r#"{"type":"function","function":{"name":"gh.search","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string","pattern":"^\\d+$"},"n":{"type":"integer"}},"required":["q"]}}}"#;
    const TOOL_OK: &str = r#"{"type":"function","function":{"name":"read_file","description":"r","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}}}"#;
    const TOOL_EMAIL: &str =
        r#"{"type":"function","function":{"name":"mail","parameters":{"type":"object","properties":{"to":{"type":"string","format":"email"}}}}}"#;

    /// The members a request may have, each a (key, value) in the shape agents send.
    fn members(text: &str) -> Vec<(&'static str, String)> {
        vec![
            ("model", r#""qwen2.5-7b""#.into()),
            (
                "messages",
                format!(
                    r#"[{{"role":"user","content":{}}},{{"role":"assistant","tool_calls":[{{"id":"1","type":"function","function":{{"name":"gh.search","arguments":"{{}}"}}}}]}},{{"role":"tool","tool_call_id":"1","content":"ok"}}]"#,
                    serde_json::Value::String(text.into())
                ),
            ),
            ("tools", format!("[{TOOL_FIX},{TOOL_OK},{TOOL_EMAIL}]")),
            (
                "response_format",
                r#"{"type":"json_schema","json_schema":{"name":"o","schema":{"type":"object","properties":{"d":{"type":"string","format":"date"}}}}}"#.into(),
            ),
            ("tool_choice", r#"{"type":"function","function":{"name":"gh.search"}}"#.into()),
            ("stream", "true".into()),
            ("strict_tools", "true".into()),
            ("metadata", format!(r#"{{"note":{}}}"#, serde_json::Value::String("n".repeat(1500)))),
        ]
    }

    fn body(order: &[usize], text: &str, spaced: bool) -> String {
        let all = members(text);
        let sep = if spaced { " ,\n  " } else { "," };
        let inner: Vec<String> = order.iter().filter_map(|&i| all.get(i)).map(|(k, v)| format!("\"{k}\"{}:{v}", if spaced { " " } else { "" })).collect();
        format!("{}{{{}}}{}", if spaced { " \n" } else { "" }, inner.join(sep), if spaced { "\n" } else { "" })
    }

    const PROFILES: &[&str] = &[
        r#"{"profile": "llama-cpp"}"#,
        r#"{"profile": "openai-strict"}"#,
        r#"{"profile": "cohere"}"#,
        r#"{"profile": "gemini"}"#,
        r#"{"profile": "llama-cpp", "models": {"qwen*": "openai"}}"#,
        r#"{"profile": "vllm", "mode": "observe"}"#,
        r#"{"profile": "openai-strict", "strict": true}"#,
        r#"{"profile": "llama-cpp", "framing": "exact"}"#,
    ];

    /// Every agent's order of members, cut at every offset: what reaches the upstream, the counters
    /// and the response's tools are those of the body read whole.
    #[test]
    fn streamed_bodies_are_rewritten_as_whole_ones_cut_anywhere() {
        let orders: &[&[usize]] = &[&[0, 1, 2, 5], &[1, 0, 2, 3, 4, 5], &[2, 0, 1], &[0, 7, 1, 5, 6, 2], &[1, 5], &[3, 1, 0], &[0, 1, 7]];
        for p in PROFILES {
            let cfg = Config::parse(p.as_bytes()).unwrap();
            for order in orders {
                for spaced in [false, true] {
                    let b = body(order, "hi \"there\" \u{e9}\u{1f600}", spaced);
                    let bytes = b.as_bytes();
                    same(&cfg, bytes, &[]);
                    for at in (0..bytes.len()).step_by(7) {
                        same(&cfg, bytes, &[at]);
                        same(&cfg, bytes, &[at, at + 1, at + 40]);
                    }
                }
            }
        }
    }

    /// The point of streaming: a conversation sent before the tools goes on as it comes; what is held
    /// is the tools and what follows them (llama-cpp renames nothing). Where the profile renames tools
    /// (openai-strict), the conversation names them, so it is held too. Controls: the same bodies held
    /// whole in exact framing.
    #[test]
    fn what_is_held_is_the_tools_not_the_conversation() {
        let text = "x".repeat(200_000);
        let b = body(&[0, 1, 2, 5], &text, false);
        let tools_on = b.find("\"tools\"").unwrap();
        let cuts: Vec<usize> = (1..b.len() / 16_384 + 1).map(|i| i * 16_384).collect();
        for (p, held_most) in [(r#"{"profile": "llama-cpp"}"#, b.len() - tools_on + 16_384), (r#"{"profile": "openai-strict"}"#, b.len())] {
            let cfg = Config::parse(p.as_bytes()).unwrap();
            let (most, counted) = same_held(&cfg, b.as_bytes(), &cuts);
            assert!(most <= held_most, "{p}: held {most} of {} bytes (tools from {tools_on})", b.len());
            if p.contains("llama") {
                assert!(most < 20_000, "{p}: held {most}");
                assert_eq!(counted, (b.len() - tools_on) as u64, "{p}: bytes_held counts from the tools on");
            } else {
                assert!(counted as usize > b.len() - 1000, "{p}: the conversation names the tools, so it is held: {counted}");
            }
        }
        let exact = Config::parse(br#"{"profile": "llama-cpp", "framing": "exact"}"#).unwrap();
        assert_eq!(same(&exact, b.as_bytes(), &cuts), b.len(), "exact framing holds the whole body");
    }

    fn order() -> impl Strategy<Value = Vec<usize>> {
        prop::collection::vec(0usize..8, 0..8)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Any members in any order, any text, one byte changed or not, cut anywhere.
        #[test]
        fn streamed_equals_whole(order in order(), text in "[ -~\u{80}-\u{10ffff}]{0,60}", p in 0..PROFILES.len(), at in any::<prop::sample::Index>(), byte in prop::sample::select(b"{}[],:\"\\ 0-1.etx\xc3".to_vec()), change in any::<bool>(), cuts in prop::collection::vec(0usize..3000, 0..6)) {
            let cfg = Config::parse(PROFILES[p].as_bytes()).unwrap();
            let mut b = body(&order, &text, false).into_bytes();
            if change && !b.is_empty() {
                let i = at.index(b.len());
                b[i] = byte;
            }
            let mut cuts = cuts;
            cuts.sort_unstable();
            same(&cfg, &b, &cuts);
        }
    }
}
