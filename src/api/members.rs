//! The rewrite cache's whole members: a body's schema-bearing top-level members (which the formats'
//! descriptors name) stored as wholes, so a catalog sent again is answered without looking inside it.

use super::edit::{splice, Edit, SiteResult};
use super::locate::Top;
use super::{cache, format, raw, BodyOutcome, Format, NameMap};
use crate::schema::{Context, Profile, Report};

/// The schema-bearing members as wholes, for the cache: a catalog sent again is found without looking
/// inside it. None where a request-level switch depends on every tool together (Cohere's
/// `strict_tools`), or without a cache.
pub(super) fn cached_members<'p, 't: 'p>(text: &'t str, parsed: Option<&'p Top<'t>>, profile: &Profile, cached: bool) -> Vec<(&'p str, &'p str)> {
    match parsed {
        _ if !cached || profile.target.strict_tools.is_some() => Vec::new(),
        Some(Top::Object(o)) => o.0.iter().filter(|(k, _)| format::holds_schemas(k)).map(|(k, v)| (k.as_str(), v.get())).collect(),
        Some(Top::Array(_)) => vec![("", text)],
        None => Vec::new(),
    }
}

/// The length of the schema-bearing member `key`'s value at the start of `rest`, and the cache's hit,
/// when the cache holds it whole, byte for byte (looked up at the lengths it stored last under that
/// name): the body's scan then takes it without reading it again (`skim::object_known`). `None` for
/// any other member.
pub(super) fn known(c: &mut cache::SiteCache, scope: u64, format: Format, key: &str, rest: &str) -> Option<(usize, cache::Hit)> {
    if !format::holds_schemas(key) {
        return None;
    }
    let tag = member_tag(key, format);
    c.lengths(scope, &tag).into_iter().find_map(|len| Some((len, c.get(scope, &tag, Context::Tool, rest.get(..len)?)?)))
}

/// The cache's name for a whole member: no tool name can look like it.
pub(super) fn member_tag(key: &str, format: Format) -> String {
    format!("\0member {key} {}", format.name())
}

/// The body from cached members, if every schema-bearing member was seen before as it is.
/// `vouched`: the hits [`known`] found while the body was read, by the offset of their value.
pub(super) fn from_members(
    c: &mut cache::SiteCache,
    scope: u64,
    format: Format,
    text: &str,
    members: &[(&str, &str)],
    mut vouched: Vec<(usize, cache::Hit)>,
) -> Option<BodyOutcome> {
    let mut hits = Vec::with_capacity(members.len());
    for (key, m) in members {
        let at = raw::offset(text, m)?;
        let found = match vouched.iter().position(|(v, _)| *v == at) {
            Some(i) => vouched.swap_remove(i).1,
            None => c.get(scope, &member_tag(key, format), Context::Tool, m)?,
        };
        hits.push((at, m.len(), found));
    }
    let (mut report, mut tools, mut schemas_changed, mut edits) = (Report::default(), 0, 0, Vec::new());
    for (at, len, hit) in hits {
        c.hits += hit.counts.schemas as u64;
        tools += hit.counts.tools;
        schemas_changed += hit.counts.changed;
        report.extend(hit.report);
        if let Some(o) = hit.output {
            edits.push(Edit::new(at, at + len, o));
        }
    }
    let body = (!edits.is_empty()).then(|| splice(text, edits).into_bytes());
    Some(BodyOutcome { body, report, tools, schemas_changed, unparsed: Vec::new(), names: NameMap::default(), tool_lists: Vec::new() })
}

/// Stores each member as a whole: its rewritten text (its schemas' rewrites spliced in), its report
/// and counts. A member holding a schema that could not be parsed is not stored.
pub(super) fn remember_members(c: &mut cache::SiteCache, scope: u64, format: Format, text: &str, members: &[(&str, &str)], results: &[SiteResult]) {
    for (key, m) in members {
        let Some(base) = raw::offset(text, m) else { continue };
        let inside: Vec<&SiteResult> = results.iter().filter(|r| r.at >= base && r.at + r.len <= base + m.len()).collect();
        if inside.iter().any(|r| r.unparsed.is_some()) {
            continue;
        }
        let mut report = Report::default();
        for r in &inside {
            report.extend(r.report.clone());
        }
        let edits: Vec<Edit> = inside.iter().filter_map(|r| r.output.as_deref().map(|o| Edit::new(r.at - base, r.at - base + r.len, o))).collect();
        let counts = cache::Counts {
            schemas: inside.iter().filter(|r| r.schema).count(),
            tools: inside.iter().filter(|r| r.tool).count(),
            changed: inside.iter().filter(|r| r.schema && r.output.is_some()).count(),
        };
        let output = (!edits.is_empty()).then(|| splice(m, edits));
        c.put_sized(scope, &member_tag(key, format), Context::Tool, m, cache::Hit { output, report, counts });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member stored whole is found at the start of a body's rest by its stored length; the
    /// controls: another member's name, another scope and one byte changed each find nothing.
    #[test]
    fn known_finds_a_stored_member_by_its_length() {
        let mut c = cache::SiteCache::new(1 << 20);
        let tools = r#"[{"type":"function","function":{"name":"a","parameters":{}}}]"#;
        let hit = || cache::Hit { output: None, report: Report::default(), counts: cache::Counts::default() };
        c.put_sized(7, &member_tag("tools", Format::OpenAiChat), Context::Tool, tools, hit());
        let rest = format!(r#"{tools},"stream":true}}"#);
        assert_eq!(known(&mut c, 7, Format::OpenAiChat, "tools", &rest).map(|k| k.0), Some(tools.len()));
        assert!(known(&mut c, 7, Format::OpenAiChat, "messages", &rest).is_none());
        assert!(known(&mut c, 8, Format::OpenAiChat, "tools", &rest).is_none());
        assert!(known(&mut c, 7, Format::OpenAiChat, "tools", &rest.replacen(r#""a""#, r#""b""#, 1)).is_none());
    }
}
