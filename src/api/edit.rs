//! Edits to a body: every site's outcome placed by its byte range, and the splice that applies them.

use super::raw;
use super::site::Missing;
use super::{BodyOutcome, NameMap, ToolList, Unparsed};
use crate::schema::{Context, Report};

/// One schema's outcome, placed by its byte range in the body.
pub(super) struct SiteResult {
    pub(super) at: usize,
    pub(super) len: usize,
    pub(super) output: Option<String>,
    pub(super) report: Report,
    pub(super) tool: bool,
    /// A schema site (else an edit beside the schemas, such as an added description).
    pub(super) schema: bool,
    pub(super) unparsed: Option<Unparsed>,
    /// The tool (or structured-output name) the schema belongs to.
    pub(super) name: String,
}

impl SiteResult {
    /// A schema site's result before its rewrite: the schema's bytes `at..at + len`, of tool or output
    /// `name`.
    pub(super) fn schema(at: usize, len: usize, name: &str, context: Context) -> SiteResult {
        SiteResult { at, len, output: None, report: Report::default(), tool: context == Context::Tool, schema: true, unparsed: None, name: name.to_string() }
    }

    /// An edit beside the schemas (a switch set, a member removed, a description added): the bytes
    /// `at..at + len` replaced by `output`, with the records that say why.
    pub(super) fn beside(at: usize, len: usize, output: impl Into<String>, report: Report, name: &str) -> SiteResult {
        SiteResult { at, len, output: Some(output.into()), report, tool: false, schema: false, unparsed: None, name: name.to_string() }
    }
}

/// The edit that gives a function tool an empty description: `null` replaced, or the member inserted
/// after `name`.
pub(super) fn describe(text: &str, d: &Missing) -> Option<SiteResult> {
    let src = d.anchor.get();
    let at = raw::offset(text, src)?;
    let (at, len, output) = if d.null { (at, src.len(), "\"\"") } else { (at + src.len(), 0, ",\"description\":\"\"") };
    let mut report = Report::default();
    report.push(crate::schema::Record {
        tool: d.tool.clone(),
        path: String::new(),
        kind: crate::schema::Kind::DescriptionAdded,
        detail: "function.description added (empty): llama-server up to 2025-08 answers 500 without it".into(),
    });
    Some(SiteResult::beside(at, len, output, report, ""))
}

/// A function tool without `parameters`: counted as a tool, and with `add`, given the schema of a
/// function without arguments (`{"type":"object","properties":{}}`, what the OpenAI API reads a missing
/// `parameters` as) after its `name`.
pub(super) fn parameterize(text: &str, d: &Missing, add: bool) -> Option<SiteResult> {
    let at = raw::offset(text, d.anchor.get())? + d.anchor.get().len();
    let mut report = Report::default();
    if add {
        report.push(crate::schema::Record {
            tool: d.tool.clone(),
            path: String::new(),
            kind: crate::schema::Kind::ParametersAdded,
            detail: "function.parameters added (no arguments): llama-server up to 2025-08 answers 500 without it".into(),
        });
    }
    let output = add.then(|| String::from(r#","parameters":{"type":"object","properties":{}}"#));
    Some(SiteResult { at, len: 0, output, report, tool: true, schema: false, unparsed: None, name: d.tool.clone() })
}

/// The body's outcome from every site's result: one edit per change, one report.
pub(super) fn assemble(text: &str, results: Vec<SiteResult>, tool_lists: Vec<ToolList>) -> BodyOutcome {
    let tools = results.iter().filter(|r| r.tool).count();
    let schemas_changed = results.iter().filter(|r| r.schema && r.output.is_some()).count();
    let (mut report, mut unparsed, mut edits) = (Report::default(), Vec::new(), Vec::new());
    for r in results {
        if let Some(o) = r.output {
            edits.push(Edit::new(r.at, r.at + r.len, o));
        }
        unparsed.extend(r.unparsed);
        report.extend(r.report);
    }
    let body = (!edits.is_empty()).then(|| splice(text, edits).into_bytes());
    BodyOutcome { body, report, tools, schemas_changed, unparsed, names: NameMap::default(), tool_lists }
}

/// One change to a body: the bytes `at..end` replaced by `text`. Every rewrite (schemas, names,
/// switches, repaired calls in a response) is a list of these, applied by [`splice`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub at: usize,
    pub end: usize,
    pub text: String,
}

impl Edit {
    pub fn new(at: usize, end: usize, text: impl Into<String>) -> Edit {
        Edit { at, end, text: text.into() }
    }
}

/// `text` with each edit applied; edits in any order, an overlapping one is skipped (a duplicate
/// member: the first rewrite wins).
pub fn splice(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| e.at);
    // the exact size: a rewritten catalog is longer than the original, and letting the string double
    // past it would hold twice the body at the peak
    let grown: usize = edits.iter().map(|e| e.text.len().saturating_sub(e.end.saturating_sub(e.at))).sum();
    let mut out = String::with_capacity(text.len() + grown);
    let mut pos = 0;
    for e in edits {
        if e.at < pos {
            continue;
        }
        out.push_str(text.get(pos..e.at).unwrap_or(""));
        out.push_str(&e.text);
        pos = e.end;
    }
    out.push_str(text.get(pos..).unwrap_or(""));
    out
}
