//! The MCP leg's stdio host's core (`toolfit mcp -- <server command>`): the same leg as on a gateway
//! route, for a server that is a child process speaking newline-delimited JSON-RPC. The client's
//! messages say who it is (`initialize`, or `_meta`) and which requests are `tools/list`s; a server's
//! answer to one of those is rewritten for the client's profile, and a `tools/call` naming a listed
//! name reaches the server under its original. Every other message goes as it came.
//!
//! The binary (`src/bin/toolfit/mcp.rs`) owns the process and the pipes: one thread per direction, each
//! handing whole lines here. What the two directions share (who the client is, which ids are lists)
//! is a [`Stdio`] behind a lock held only to read a message's method or id; a list is rewritten with a
//! copy of the leg ([`Answer`]), so a large list never holds up the client's messages.

use super::*;

/// The route label of the stdio host's counters and log lines.
pub const ROUTE: &str = "stdio";

/// Most `tools/list` requests awaiting their answer: a client that never reads its answers cannot
/// grow the set past it (the oldest are forgotten, and their answers go on as they came).
const PENDING: usize = 1024;

/// What the two directions of one stdio session share.
pub struct Stdio {
    leg: Leg,
}

/// A server's answer to a `tools/list`, to be rewritten for the client the leg knew when it came.
pub struct Answer {
    leg: Leg,
}

impl Stdio {
    /// A session under the configuration's first `format: mcp` route (its `clients`, `unfit`,
    /// `declare_2020_12`, mode and settings; defaults without one). `profile`, when given, is the
    /// client's whatever it says it is (as `x-toolfit-profile` on a gateway). `server` names the
    /// server in the errors a client reads (`unfit: error`).
    pub fn new(config: &Config, profile: Option<&'static Profile>, server: &str) -> Stdio {
        let route = config.routes.iter().find(|r| r.mcp().is_some());
        let routed = route.and_then(|r| r.profile).unwrap_or(&schema::profile::MCP);
        let leg = Leg {
            route: ROUTE.to_string(),
            profile: profile.unwrap_or(routed),
            routed,
            client: OTHER.to_string(),
            by_header: profile.is_some(),
            clients: route.map_or_else(default_clients, clients_of),
            declare: declare_of(route),
            unfit: route.and_then(|r| r.mcp()).and_then(|m| m.unfit).unwrap_or_default(),
            settings: config.settings(route),
            server: server.to_string(),
            initialize: false,
            tagged: false,
            lists: false,
            ids: Default::default(),
        };
        Stdio { leg }
    }

    /// The client's profile and label as known now.
    pub fn client(&self) -> (&'static str, &str) {
        (self.leg.profile.name, &self.leg.client)
    }

    /// One line from the client (its newline left out): the line the server gets instead, when a
    /// `tools/call` names a listed name. What the line says of the client and its lists is kept.
    pub fn from_client(&mut self, env: &mut Env, line: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(line).ok()?;
        let messages = messages(text);
        if messages.is_empty() {
            return None; // not JSON-RPC: the server says what it makes of it
        }
        if self.leg.ids.len() > PENDING {
            self.leg.ids.clear();
        }
        let edits: Vec<Edit> = messages.iter().filter_map(|m| self.leg.read(env, text, m)).collect();
        // counted under the profile the message itself may have named
        env.metrics.prepare(&self.leg.route, self.leg.profile.name);
        self.leg.count(env.metrics, Stat::RequestsSeen, 1);
        if edits.is_empty() {
            return None;
        }
        self.leg.count(env.metrics, Stat::NamesRestored, edits.len() as u64);
        if self.leg.settings.observe() {
            return None;
        }
        Some(splice(text, edits).into_bytes())
    }

    /// The start of a client line too long to read whole (past `max_body_bytes`, going on unread): a
    /// `tools/call` it shows naming a listed name gets the original there (the name comes before the
    /// arguments), so the call cannot reach another tool. The start as it goes on instead, when it
    /// changed.
    pub fn from_client_start(&mut self, env: &mut Env, start: &[u8]) -> Option<Vec<u8>> {
        let read = super::prefix::read(start);
        let (_, range, original) = read.listed_call()?;
        env.metrics.prepare(&self.leg.route, self.leg.profile.name);
        self.leg.count(env.metrics, Stat::NamesRestored, 1);
        if self.leg.settings.observe() {
            return None;
        }
        let name = serde_json::Value::String(original).to_string();
        Some([start.get(..range.start)?, name.as_bytes(), start.get(range.end..)?].concat())
    }

    /// Whether a line from the server answers a `tools/list` the client sent (a batch: any of
    /// them): the answer to rewrite, with the leg as it is now; the ids it answers are no longer
    /// awaited.
    pub fn answers(&mut self, line: &[u8]) -> Option<Answer> {
        // only while a list is awaited is a server line read (and then every one: an error answers
        // its id too, which a later result under a reused id must not find awaited)
        if self.leg.ids.is_empty() || !line.windows(4).any(|w| w == b"\"id\"") {
            return None;
        }
        let text = std::str::from_utf8(line).ok()?;
        let answered: std::collections::HashSet<String> =
            messages(text).iter().filter(|m| m.get("method").is_none()).map(|m| id_text(m.get("id"))).filter(|id| self.leg.ids.contains(id)).collect();
        if answered.is_empty() {
            return None;
        }
        self.leg.ids.retain(|id| !answered.contains(id));
        let listed = line.windows(7).any(|w| w == b"\"tools\"");
        listed.then(|| Answer { leg: Leg { ids: answered, ..self.leg.clone() } })
    }
}

impl Answer {
    /// The line the client gets instead (its newline left out), when the list changed.
    pub fn rewrite(&self, env: &mut Env, line: &[u8]) -> Option<Vec<u8>> {
        self.leg.rewrite_document(env, line)
    }
}
