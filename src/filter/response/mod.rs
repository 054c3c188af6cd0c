//! The response path, without any host: puts back what the request's rewrite changed in the model's
//! tool calls, and checks every call against the schema the client sent.
//!
//! Two rewrites change what the model answers: a tool sent under another name (the API refuses the
//! MCP name) and OpenAI strict's optional properties made required-and-nullable (the model writes
//! `"x": null` where the caller meant "absent", which MCP servers often refuse). The [`Reply`] built
//! from the request carries the name map, each tool's original schema and whether its rewrite made
//! nulls; nothing is kept across requests.
//!
//! Plain JSON responses are repaired whole ([`Reply::repair_json`]). Streams ([`Stream`]) are cut into
//! events (SSE) or lines (NDJSON) as they come; an event that carries part of a tool call is held
//! only while that call is being assembled and only when something in it may need repair (a name
//! split over deltas cannot be mapped before it is whole, a null cannot be removed from half an
//! argument string), then sent on with the call's first fragment carrying the repaired whole and
//! the later fragments empty. Everything else goes on as it came, byte for byte. A response to a
//! request that needs no repair is never held: its calls are only read, for the validity counters.
//!
//! The parts: [`reply`] (what the response needs from its request, and the repair of one call or one
//! whole document, where calls sit as the format's descriptor in `crate::api::format` says), [`stream`] (events and lines, held
//! and released), [`tally`] (what a response's repair did, as counters and a log line) and [`flow`]
//! (what happens to a response from its headers to its end, for any host).

pub mod flow;
pub mod frames;
mod reply;
pub mod stream;
mod tally;

pub use flow::{begin, Begin, Flow, Sink};
pub use reply::{decode_limit, Reply, Tool};
pub use stream::{Events, Stream};
pub use tally::{Call, Tally};

#[cfg(test)]
mod tests;
