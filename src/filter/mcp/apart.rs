//! MCP messages handed to toolfit apart from their HTTP exchange (agentgateway's `extMcp` hook).

use super::*;
use crate::api::raw;
use crate::api::Format;
use crate::filter::config::Route;
use crate::filter::host::Env;
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
    /// This `result` (JSON text) in its place.
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
        let profile = chosen.or(by_client).or(route.and_then(|r| r.profile)).unwrap_or(&schema::profile::MCP);
        let leg = Leg {
            route: label(self.route),
            profile,
            client,
            by_header: chosen.is_some(),
            clients,
            unfit: route.and_then(Route::mcp).and_then(|m| m.unfit).unwrap_or_default(),
            settings: env.config.settings(route),
            server: self.route.to_string(),
            initialize: false,
            tagged: false,
            lists: true,
            ids: Vec::new(),
        };
        env.metrics.prepare(&leg.route, leg.profile.name);
        leg
    }

    /// A `tools/list` result (its JSON text), rewritten for the client as on an MCP route.
    pub fn list(&self, env: &mut Env, result: &str) -> Listed {
        let leg = self.leg(env);
        let message = format!(r#"{{"jsonrpc":"2.0","id":0,"result":{result}}}"#);
        let Some(listed) = List::rewrite(env, &leg, &message) else { return Listed::Keep };
        let Some(out) = settle(env, &leg, listed, "0") else { return Listed::Keep };
        let Some(top) = raw::object(&out) else { return Listed::Keep };
        match (top.get("result"), top.get("error")) {
            (Some(r), _) => Listed::Replace(r.get().to_string()),
            (None, Some(e)) => Listed::Refuse(e.get().to_string()),
            _ => Listed::Keep,
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
