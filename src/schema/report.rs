//! What the engine did: one record per change, and counters per kind.

use super::kind::Kind;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// One change to one schema.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The tool (or structured-output name) whose schema changed.
    pub tool: String,
    /// JSON pointer within that tool's schema.
    pub path: String,
    pub kind: Kind,
    /// A short human explanation.
    pub detail: String,
}

impl Record {
    pub fn lossy(&self) -> bool {
        self.kind.lossy()
    }
    pub fn to_json(&self) -> Value {
        json!({"tool": self.tool, "path": self.path, "kind": self.kind.name(), "lossy": self.lossy(), "detail": self.detail})
    }
}

/// Records of a run, plus the counters they add up to. Records beyond `max_records` are counted but
/// not kept, so a hostile schema cannot make the report grow without bound.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub records: Vec<Record>,
    pub counters: BTreeMap<Kind, u64>,
    pub dropped_records: u64,
}

/// Upper bound on kept records per report.
pub const MAX_RECORDS: usize = 2_000;

impl Report {
    pub fn push(&mut self, r: Record) {
        *self.counters.entry(r.kind).or_insert(0) += 1;
        if self.records.len() < MAX_RECORDS {
            self.records.push(r);
        } else {
            self.dropped_records += 1;
        }
    }
    /// The report of a schema sent non-strict after its strict rewrite was declined: the strict
    /// attempt's [`Kind::StrictDeclined`] records (why), then the non-strict rewrite's report. The
    /// attempt's other records go: none of its changes is sent. The one way both the request path and
    /// [`crate::schema::normalize_or_loose`] say a declined strict mode.
    pub fn declined(strict: Report, loose: Report) -> Report {
        let mut report = Report::default();
        for rec in strict.records.into_iter().filter(|r| r.kind == Kind::StrictDeclined) {
            report.push(rec);
        }
        report.extend(loose);
        report
    }

    pub fn extend(&mut self, other: Report) {
        for (k, n) in other.counters {
            *self.counters.entry(k).or_insert(0) += n;
        }
        for r in other.records {
            if self.records.len() < MAX_RECORDS {
                self.records.push(r);
            } else {
                self.dropped_records += 1;
            }
        }
        self.dropped_records += other.dropped_records;
    }
    /// How many changes of kinds that do not [`Kind::settles`] were recorded, kept or not.
    pub fn unsettled(&self) -> u64 {
        self.counters.iter().filter(|(k, _)| !k.settles()).map(|(_, n)| n).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }
    pub fn lossy_count(&self) -> u64 {
        self.counters.iter().filter(|(k, _)| k.lossy()).map(|(_, n)| n).sum()
    }
    pub fn first_lossy(&self) -> Option<&Record> {
        self.records.iter().find(|r| r.lossy())
    }
    pub fn to_json(&self) -> Value {
        let mut c = Map::new();
        for (k, n) in &self.counters {
            c.insert(k.name().to_string(), json!(n));
        }
        json!({
            "counters": c,
            "records": self.records.iter().map(Record::to_json).collect::<Vec<_>>(),
            "records_not_kept": self.dropped_records,
        })
    }
}

/// `v` with the orders that carry no meaning put in one (a `required` list is a set of names): what
/// "every change is reported" compares, in the tests and the engine fuzz target. A run with no record
/// must leave this form of a schema as it was.
pub fn order_free(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| match (k.as_str(), x) {
                    ("required", Value::Array(a)) if a.iter().all(Value::is_string) => {
                        let mut names = a.clone();
                        names.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                        (k.clone(), Value::Array(names))
                    }
                    _ => (k.clone(), order_free(x)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(order_free).collect()),
        _ => v.clone(),
    }
}
