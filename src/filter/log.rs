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
    windows: std::collections::HashMap<String, (u64, u32, u64)>, // route -> (second, lines, suppressed)
}

impl LogLimiter {
    /// Returns the text to log now, if any.
    pub fn admit(&mut self, route: &str, now_s: u64, per_second: u32, text: String) -> Option<String> {
        if self.windows.len() > 1024 {
            self.windows.clear(); // bounded: route names are bounded, but never trust that
        }
        let w = self.windows.entry(route.to_string()).or_insert((now_s, 0, 0));
        if w.0 != now_s {
            w.0 = now_s;
            w.1 = 0;
        }
        if w.1 >= per_second {
            w.2 += 1;
            return None;
        }
        w.1 += 1;
        let held = std::mem::take(&mut w.2);
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
