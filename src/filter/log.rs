//! Log lines of the filter: what a request or response says, and the per-route rate limit on them.

/// A log line the glue should write (it applies the per-route rate limit).
#[derive(Debug, PartialEq)]
pub struct Line {
    pub warn: bool,
    pub text: String,
}

/// The most characters of a string a client chose (a tool name, a path, a header's value) that a line
/// quotes: longer ones are cut, saying how much was left out.
pub const CLIENT_CHARS: usize = 128;

/// The most bytes of one line; a longer one is cut, saying so.
pub const LINE_BYTES: usize = 4096;

/// The bytes one route's lines may take per second, per line the rate allows: with the default 10
/// lines, 20 KiB a second.
pub const BYTES_PER_LINE: usize = 2048;

/// A string a client chose, as a line quotes it: at most [`CLIENT_CHARS`] characters, control
/// characters escaped (a line is one line).
pub fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(CLIENT_CHARS).flat_map(char::escape_debug).collect();
    let rest = s.chars().count().saturating_sub(CLIENT_CHARS);
    if rest > 0 {
        out.push_str(&format!("...(+{rest} characters)"));
    }
    out
}

/// `text` cut to [`LINE_BYTES`] at a character boundary.
fn cut(mut text: String) -> String {
    if text.len() > LINE_BYTES {
        let mut at = LINE_BYTES;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let rest = text.len() - at;
        text.truncate(at);
        text.push_str(&format!("...(line cut: +{rest} bytes)"));
    }
    text
}

/// At most `per_second` lines per route per second, of at most [`LINE_BYTES`] each and
/// `per_second` x [`BYTES_PER_LINE`] together; what is held back is counted and said in the next line
/// that gets through.
#[derive(Default)]
pub struct LogLimiter {
    windows: std::collections::HashMap<String, Window>,
}

/// One route's current second.
struct Window {
    second: u64,
    lines: u32,
    bytes: usize,
    /// Lines held back since the last one written.
    suppressed: u64,
}

impl LogLimiter {
    /// Returns the text to log now, if any.
    pub fn admit(&mut self, route: &str, now_s: u64, per_second: u32, text: String) -> Option<String> {
        if self.windows.len() > 1024 {
            self.windows.clear(); // bounded: route names are bounded, but never trust that
        }
        let w = self.windows.entry(route.to_string()).or_insert(Window { second: now_s, lines: 0, bytes: 0, suppressed: 0 });
        if w.second != now_s {
            w.second = now_s;
            w.lines = 0;
            w.bytes = 0;
        }
        let text = cut(text);
        let bytes_allowed = (per_second as usize).saturating_mul(BYTES_PER_LINE);
        if w.lines >= per_second || w.bytes.saturating_add(text.len()) > bytes_allowed {
            w.suppressed += 1;
            return None;
        }
        w.lines += 1;
        w.bytes += text.len();
        let held = std::mem::take(&mut w.suppressed);
        Some(if held > 0 { format!("{text} ({held} lines suppressed before this one)") } else { text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_limiter_holds_back_and_reports() {
        let mut l = LogLimiter::default();
        assert!(l.admit("r", 1, 2, "a".into()).is_some());
        assert!(l.admit("r", 1, 2, "b".into()).is_some());
        assert!(l.admit("r", 1, 2, "c".into()).is_none());
        assert!(l.admit("other", 1, 2, "d".into()).is_some());
        assert_eq!(l.admit("r", 2, 2, "e".into()).unwrap(), "e (1 lines suppressed before this one)");
    }

    #[test]
    fn lines_are_cut_and_bytes_limited() {
        let mut l = LogLimiter::default();
        let long = "x".repeat(200_000);
        let first = l.admit("r", 1, 10, long.clone()).unwrap_or_default();
        assert!(first.len() < LINE_BYTES + 40 && first.ends_with("(line cut: +195904 bytes)"), "{}", &first[first.len() - 40..]);
        // ten lines a second, but only 20 KiB of them: four cut lines fit, not five
        let admitted = (0..9).filter(|_| l.admit("r", 1, 10, long.clone()).is_some()).count();
        assert_eq!(admitted, 3, "4 KiB lines within 20 KiB a second");
        assert!(l.admit("r", 2, 10, "short".into()).is_some_and(|t| t.contains("6 lines suppressed")));
        // a client's string: at most 128 characters, one line
        assert_eq!(clip("a\nb"), "a\\nb");
        let c = clip(&"é".repeat(300));
        assert!(c.starts_with(&"é".repeat(128)) && c.ends_with("...(+172 characters)"), "{c}");
    }
}
