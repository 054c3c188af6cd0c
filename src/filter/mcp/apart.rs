//! MCP messages handed to toolfit apart from their HTTP exchange (agentgateway's `extMcp` hook).

use super::*;
use crate::api::raw;
use crate::api::Format;
use crate::filter::config::Route;
use crate::filter::host::Env;
use crate::filter::memory::{Held, REWRITE_FACTOR};
use crate::filter::stats::{label, Stat};
use crate::schema::{self, Profile};

/// An MCP message handed to toolfit apart from its HTTP exchange (agentgateway's `extMcp` hook gives a
/// `tools/list` result and a `tools/call`'s params, with values its configuration computed): the route
/// label for the counters, and the profile or the client's name, where the hook was given them.
pub struct Apart<'a> {
    pub route: &'a str,
    pub profile: Option<&'a str>,
    pub client: Option<&'a str>,
}

/// What becomes of a `tools/list` result handed apart.
#[derive(Debug, PartialEq)]
pub enum Listed {
    /// As it came.
    Keep,
    /// This payload (JSON text, in the shape it came: the result alone or the whole message) in its
    /// place.
    Replace(String),
    /// A JSON-RPC `error` object (JSON text) in its place (`unfit: error`).
    Refuse(String),
}

impl Apart<'_> {
    /// The leg of the configuration's first MCP route (its `clients`, `unfit`, profile) for this hook.
    fn leg(&self, env: &mut Env) -> Leg {
        let route = env.config.routes.iter().find(|r| r.format == Format::Mcp);
        let clients = route.map_or_else(default_clients, clients_of);
        let (client, by_client) = self.client.map_or((OTHER.to_string(), None), |c| client_of(&clients, c));
        let chosen = self.profile.and_then(|p| Profile::by_name(p.trim()));
        let routed = route.and_then(|r| r.profile).unwrap_or(&schema::profile::MCP);
        let profile = chosen.or(by_client).unwrap_or(routed);
        let leg = Leg {
            route: label(self.route),
            profile,
            routed,
            client,
            by_header: chosen.is_some(),
            clients,
            declare: declare_of(route),
            unfit: route.and_then(Route::mcp).and_then(|m| m.unfit).unwrap_or_default(),
            settings: env.config.settings(route),
            server: self.route.to_string(),
            initialize: false,
            tagged: false,
            lists: true,
            ids: Default::default(),
        };
        env.metrics.prepare(&leg.route, leg.profile.name);
        leg
    }

    /// A `tools/list` answer as the hook hands it over (its JSON text: the result alone, or the whole
    /// JSON-RPC message), rewritten for the client as on an MCP route: `Replace` holds the same shape.
    pub fn list(&self, env: &mut Env, payload: &str) -> Listed {
        let leg = self.leg(env);
        // the rewrite needs room in the memory of the requests in flight, as a body's does
        let mut held = Held::default();
        if !held.resize(env.memory, payload.len().saturating_mul(REWRITE_FACTOR), env.config.max_held_bytes) {
            leg.count(env.metrics, Stat::SkippedOverBudget, 1);
            let text = format!(
                "route={} a tools/list result of {} bytes went on unread: requests in flight hold {} of max_held_bytes {} (skipped_over_budget)",
                leg.route,
                payload.len(),
                env.memory.held(),
                env.config.max_held_bytes
            );
            env.say(&leg.route, Line { warn: true, text });
            return Listed::Keep;
        }
        let Some(mut listed) = List::rewrite(env, &leg, payload) else { return Listed::Keep };
        let refused = listed.refused.is_some();
        let new = listed.text.take();
        let Some(out) = settle(env, &leg, &listed, new, "null") else { return Listed::Keep };
        if !refused {
            return Listed::Replace(out);
        }
        // the refusal is a JSON-RPC answer: the hook takes its error object
        match raw::object(&out).and_then(|top| top.get("error")) {
            Some(e) => Listed::Refuse(e.get().to_string()),
            None => Listed::Keep,
        }
    }

    /// The server's name for a tool a `tools/call` names (`None`: the name is the server's already, or
    /// one toolfit never listed, which is counted).
    pub fn call(&self, env: &mut Env, name: &str) -> Option<String> {
        let leg = self.leg(env);
        match names::decode(name) {
            Some(original) => {
                leg.count(env.metrics, Stat::NamesRestored, 1);
                Some(original)
            }
            None => {
                if names::unlisted(name, leg.profile) {
                    leg.count_client(env.metrics, Stat::McpCallsUnmapped, 1);
                }
                None
            }
        }
    }
}
