//! What a response's repair did, as counters (the route's and each tool's) and one log line.

use crate::filter::log::{clip, Line};
use crate::filter::stats::{label, Metrics, Scope, Series, Stat, ToolStat};
use crate::schema::validate::Violation;

/// One tool call, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The client's tool name (or the name the model used, for a tool nobody declared).
    pub tool: String,
    pub violation: Option<Violation>,
    /// Whether the violation falls where toolfit made a lossy change.
    pub lossy: bool,
}

/// What a response's repair did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    pub names_restored: u64,
    pub nulls_removed: u64,
    pub properties_restored: u64,
    /// Responses (or parts of streams) that needed repair and went on as they came.
    pub unrepaired: u64,
    /// Responses replaced by an error (`on_invalid_tool_call: reject`).
    pub rejected: u64,
    pub calls: Vec<Call>,
}

impl Tally {
    /// The first invalid call, if any.
    pub fn first_invalid(&self) -> Option<&Call> {
        self.calls.iter().find(|c| c.violation.is_some())
    }

    /// Adds what a response's repair did to the route's counters (and each tool's), and says the
    /// first invalid call and any unrepaired response in one log line.
    pub fn count(&self, route: &str, profile: &str, m: &mut dyn Metrics) -> Option<Line> {
        let mut add = |scope: Scope, c: &str, n: u64| {
            if n > 0 {
                m.add(&Series { route, profile, scope, counter: c }, n);
            }
        };
        add(Scope::Route, Stat::NamesRestored.name(), self.names_restored);
        add(Scope::Route, Stat::PropertiesRestored.name(), self.properties_restored);
        add(Scope::Route, Stat::NullsRemoved.name(), self.nulls_removed);
        add(Scope::Route, Stat::ResponsesUnrepaired.name(), self.unrepaired);
        add(Scope::Route, Stat::ToolCallsRejected.name(), self.rejected);
        let invalid: Vec<&Call> = self.calls.iter().filter(|c| c.violation.is_some()).collect();
        add(Scope::Route, Stat::ToolCallsSeen.name(), self.calls.len() as u64);
        add(Scope::Route, Stat::ToolCallsInvalid.name(), invalid.len() as u64);
        add(Scope::Route, Stat::ToolCallsInvalidLossy.name(), invalid.iter().filter(|c| c.lossy).count() as u64);
        for c in &self.calls {
            let tool = label(&c.tool);
            add(Scope::Tool(&tool), ToolStat::CallsSeen.name(), 1);
            if c.violation.is_some() {
                add(Scope::Tool(&tool), ToolStat::CallsInvalid.name(), 1);
                add(Scope::Tool(&tool), ToolStat::CallsInvalidLossy.name(), u64::from(c.lossy));
            }
        }
        let mut text = String::new();
        if let Some(c) = invalid.first() {
            let v = c.violation.as_ref();
            text = format!(
                "route={} profile={} invalid tool call: tool \"{}\" at {}: {}{}",
                route,
                profile,
                clip(&c.tool),
                v.map_or("/".into(), |v| clip(&v.instance)),
                v.map_or("", |v| v.reason.as_str()),
                if c.lossy { " (where toolfit's rewrite was lossy)" } else { "" }
            );
            if invalid.len() > 1 {
                text.push_str(&format!(" (+{} more invalid calls)", invalid.len() - 1));
            }
        }
        if self.unrepaired > 0 {
            if text.is_empty() {
                text = format!("route={route} profile={profile}");
            }
            text.push_str(" response forwarded unrepaired (an encoding toolfit cannot read, a body that does not decode, or a call held past max_body_bytes)");
        }
        (!text.is_empty()).then_some(Line { warn: true, text })
    }
}
