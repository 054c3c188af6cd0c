//! The counters of a native host (toolfit-extproc's `/metrics`, `toolfit mcp --stats`) in Prometheus'
//! text format under the names the Wasm filter's counters get from Envoy's stats tags
//! (`envoy/envoy.yaml`): `toolfit_<counter>{route, profile}`, per tool `toolfit_<counter>{route,profile,tool}`, and `toolfit_rewrite_us` as a
//! histogram with Envoy's buckets. So `deploy/monitoring`'s dashboards and alerts read both.
//!
//! Written by hand rather than with `prometheus-client`: that crate names every counter `<name>_total`
//! (OpenMetrics), and Envoy's Prometheus output does not, so each query would differ by delivery.

use crate::filter::stats::{route_series, Metrics, Series, SeriesBudget, SeriesKind};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// The buckets of `rewrite_us` (microseconds), as `envoy/envoy.yaml` sets them for the Wasm filter.
const BUCKETS: [u64; 13] = [25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000];

/// One series as written: metric name and its labels in order.
type Named = (String, Vec<(&'static str, String)>);

#[derive(Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    sum: u64,
    count: u64,
}

#[derive(Default)]
struct Inner {
    counters: BTreeMap<Named, u64>,
    histograms: BTreeMap<Named, Histogram>,
    /// How many series the process keeps (the Wasm filter's budget).
    budget: SeriesBudget,
}

/// Every counter of the process, shared by all streams.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Inner>,
}

impl Registry {
    /// Prometheus' text format, version 0.0.4.
    pub fn render(&self) -> String {
        let Ok(inner) = self.inner.lock() else { return String::new() };
        let mut out = String::new();
        let mut last = "";
        for ((name, labels), v) in &inner.counters {
            if name != last {
                let _ = writeln!(out, "# TYPE {name} counter");
                last = name;
            }
            let _ = writeln!(out, "{name}{} {v}", label_text(labels, None));
        }
        for ((name, labels), h) in &inner.histograms {
            if name != last {
                let _ = writeln!(out, "# TYPE {name} histogram");
                last = name;
            }
            let mut below = 0;
            for (le, n) in BUCKETS.iter().zip(h.buckets.iter()) {
                below += n;
                let _ = writeln!(out, "{name}_bucket{} {below}", label_text(labels, Some(&le.to_string())));
            }
            let _ = writeln!(out, "{name}_bucket{} {}", label_text(labels, Some("+Inf")), h.count);
            let _ = writeln!(out, "{name}_sum{} {}", label_text(labels, None), h.sum);
            let _ = writeln!(out, "{name}_count{} {}", label_text(labels, None), h.count);
        }
        out
    }

    /// A counter's sum over all its series (`toolfit mcp`'s summary line).
    pub fn total(&self, name: &str) -> u64 {
        let Ok(inner) = self.inner.lock() else { return 0 };
        inner.counters.iter().filter(|((n, _), _)| n == name).fold(0u64, |t, (_, v)| t.saturating_add(*v))
    }

    /// A counter's value (tests and the shutdown line).
    pub fn get(&self, name: &str, labels: &[(&'static str, &str)]) -> u64 {
        let Ok(inner) = self.inner.lock() else { return 0 };
        let key = (name.to_string(), labels.iter().map(|(k, v)| (*k, (*v).to_string())).collect());
        inner.counters.get(&key).copied().unwrap_or(0)
    }
}

/// `{k="v",...}` with an optional `le`, values escaped as the format requires.
fn label_text(labels: &[(&'static str, String)], le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Metrics for &Registry {
    fn prepare(&mut self, route: &str, profile: &'static str) {
        let Ok(mut inner) = self.inner.lock() else { return };
        if !inner.budget.define(route, profile) {
            return;
        }
        // every counter of a route and profile from its first request: dashboards see zeros, not gaps
        for (kind, series) in route_series(route, profile) {
            let s = series.prometheus();
            match kind {
                SeriesKind::Counter => {
                    inner.counters.entry(s).or_insert(0);
                }
                SeriesKind::Histogram => {
                    inner.histograms.entry(s).or_default();
                }
            }
        }
    }

    fn add(&mut self, s: &Series, n: u64) {
        let Ok(mut inner) = self.inner.lock() else { return };
        let Inner { counters, budget, .. } = &mut *inner;
        let s = budget.admit(*s, Series::prometheus, |k| counters.contains_key(k));
        let v = counters.entry(s).or_insert(0);
        *v = v.saturating_add(n);
    }

    fn record(&mut self, s: &Series, value: u64) {
        let s = s.prometheus();
        let Ok(mut inner) = self.inner.lock() else { return };
        let h = inner.histograms.entry(s).or_default();
        if let Some(i) = BUCKETS.iter().position(|b| value <= *b) {
            if let Some(b) = h.buckets.get_mut(i) {
                *b += 1;
            }
        }
        h.sum = h.sum.saturating_add(value);
        h.count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::stats::Scope;

    #[test]
    fn filter_names_become_envoys_prometheus_names() {
        let r = Registry::default();
        let mut m = &r;
        m.prepare("chat", "llama-cpp");
        m.add(&Series::of("chat", "llama-cpp", "requests_rewritten"), 2);
        m.add(&Series { scope: Scope::Tool("get_weather"), ..Series::of("chat", "llama-cpp", "calls_seen") }, 1);
        m.record(&Series::of("chat", "llama-cpp", "rewrite_us"), 60);
        let text = r.render();
        assert!(text.contains("# TYPE toolfit_requests_rewritten counter\ntoolfit_requests_rewritten{route=\"chat\",profile=\"llama-cpp\"} 2\n"), "{text}");
        assert!(text.contains("toolfit_requests_seen{route=\"chat\",profile=\"llama-cpp\"} 0\n"), "defined at first sight: {text}");
        assert!(text.contains("toolfit_calls_seen{route=\"chat\",profile=\"llama-cpp\",tool=\"get_weather\"} 1\n"), "{text}");
        m.add(&Series { scope: Scope::Client("codex-mcp-client"), ..Series::of("mcp", "openai", "mcp_tools_listed") }, 3);
        let text = r.render();
        assert!(text.contains("toolfit_mcp_tools_listed{route=\"mcp\",profile=\"openai\",mcp_client=\"codex-mcp-client\"} 3\n"), "{text}");
        assert!(text.contains("toolfit_rewrite_us_bucket{route=\"chat\",profile=\"llama-cpp\",le=\"50\"} 0\n"), "{text}");
        assert!(text.contains("toolfit_rewrite_us_bucket{route=\"chat\",profile=\"llama-cpp\",le=\"100\"} 1\n"), "{text}");
        assert!(text.contains("toolfit_rewrite_us_count{route=\"chat\",profile=\"llama-cpp\"} 1\n"), "{text}");
        assert!(!text.contains("requests_rewritten_total"), "no OpenMetrics suffix");
    }

    #[test]
    fn tool_series_are_capped() {
        let r = Registry::default();
        let mut m = &r;
        for i in 0..SeriesBudget::TOOL_SERIES + 5 {
            let t = format!("t{i}");
            m.add(&Series { scope: Scope::Tool(&t), ..Series::of("a", "p", "calls_seen") }, 1);
        }
        assert_eq!(r.get("toolfit_calls_seen", &[("route", "a"), ("profile", "p"), ("tool", "other")]), 5);
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_text(&[("route", "a\"b\\c\nd".to_string())], None), "{route=\"a\\\"b\\\\c\\nd\"}");
    }
}
