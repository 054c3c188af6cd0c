//! Log lines of the filter: what a request or response says, and the per-route rate limit on them.

/// A log line the glue should write (it applies the per-route rate limit).
#[derive(Debug, PartialEq)]
pub struct Line {
    pub warn: bool,
    pub text: String,
}

/// At most `per_second` lines per route per second; what is held back is counted and said in the
/// next line that gets through.
#[derive(Default)]
pub struct LogLimiter {
    windows: std::collections::HashMap<String, Window>,
}

/// One route's current second.
struct Window {
    second: u64,
    lines: u32,
    /// Lines held back since the last one written.
    suppressed: u64,
}

impl LogLimiter {
    /// Returns the text to log now, if any.
    pub fn admit(&mut self, route: &str, now_s: u64, per_second: u32, text: String) -> Option<String> {
        if self.windows.len() > 1024 {
            self.windows.clear(); // bounded: route names are bounded, but never trust that
        }
        let w = self.windows.entry(route.to_string()).or_insert(Window { second: now_s, lines: 0, suppressed: 0 });
        if w.second != now_s {
            w.second = now_s;
            w.lines = 0;
        }
        if w.lines >= per_second {
            w.suppressed += 1;
            return None;
        }
        w.lines += 1;
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
}
