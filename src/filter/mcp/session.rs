//! Which client a request on an MCP route comes from: the route's `clients` map, the tag toolfit puts
//! on the session id (`<server's id>.tf.<profile>.<client>`), and a stateless request's `_meta`.

use crate::api::raw::{self};
use crate::filter::config::{Models, Patterns, Route, DEFAULT_DECLARE_2020_12};
use crate::filter::stats::label;
use crate::schema::Profile;

/// The clients a route knows when it lists none: `clientInfo.name` pattern and profile.
/// (`claude-ai`: Claude Desktop and claude.ai.)
pub const DEFAULT_CLIENTS: &[(&str, &str)] =
    &[("claude-code", "anthropic"), ("claude-ai", "anthropic"), ("codex-mcp-client", "openai"), ("gemini-cli-mcp-client", "gemini-json")];

/// The client label of a client no pattern names.
pub(super) const OTHER: &str = "other";

/// The client label and profile `name` maps to on a route (`None`: no pattern names it).
pub(super) fn client_of(clients: &Models, name: &str) -> (String, Option<&'static Profile>) {
    match clients.matched(name) {
        Some((pattern, p)) => (label(pattern), Some(p)),
        None => (OTHER.to_string(), None),
    }
}

/// The route's clients map.
pub(super) fn clients_of(route: &Route) -> Models {
    route.mcp().and_then(|m| m.clients.clone()).unwrap_or_else(default_clients)
}

/// The clients whose lists declare 2020-12 on a route (its own list, else the default).
pub(super) fn declare_of(route: Option<&Route>) -> Patterns {
    // the default made once, not on every request of a route that sets none
    static DEFAULT: std::sync::OnceLock<Patterns> = std::sync::OnceLock::new();
    route.and_then(|r| r.mcp()).and_then(|m| m.declare_2020_12.clone()).unwrap_or_else(|| DEFAULT.get_or_init(|| Patterns::of(DEFAULT_DECLARE_2020_12)).clone())
}

/// [`DEFAULT_CLIENTS`] as a map, made once (not on every request of a route that sets none).
pub(super) fn default_clients() -> Models {
    static DEFAULT: std::sync::OnceLock<Models> = std::sync::OnceLock::new();
    DEFAULT.get_or_init(|| Models::of(DEFAULT_CLIENTS)).clone()
}

/// A session id with toolfit's tag: the server's id (if any) and what the tag says.
pub(super) struct Tagged<'a> {
    pub(super) server: Option<&'a str>,
    pub(super) profile: &'static Profile,
    pub(super) client: &'a str,
}

/// Reads toolfit's tag off a session id (`None`: no tag, or one naming no profile).
pub(super) fn untag(sid: &str) -> Option<Tagged<'_>> {
    let (server, rest) = match sid.rfind(".tf.") {
        Some(i) => (sid.get(..i), sid.get(i + 4..)?),
        None => (None, sid.strip_prefix("tf.")?),
    };
    let (profile, client) = rest.split_once('.')?;
    let ok = !client.is_empty() && client.len() <= 64 && client.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    Some(Tagged { server, profile: Profile::by_name(profile).filter(|_| ok)?, client })
}

/// The session id the client gets: the server's (if it gave one) with the tag.
pub(super) fn tag(server: Option<&str>, profile: &Profile, client: &str) -> String {
    match server {
        Some(s) if !s.is_empty() => format!("{s}.tf.{}.{client}", profile.name),
        _ => format!("tf.{}.{client}", profile.name),
    }
}

/// The client a request names in `params._meta["io.modelcontextprotocol/clientInfo"]` (the stateless
/// protocol's per-request `clientInfo`).
pub(super) fn meta_client(m: &raw::RawObject<'_>) -> Option<String> {
    let params = raw::object(m.get("params")?.get())?;
    let meta = raw::object(params.get("_meta")?.get())?;
    raw::object(meta.get("io.modelcontextprotocol/clientInfo")?.get())?.str("name")
}
