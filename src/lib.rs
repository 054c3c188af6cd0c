//! toolfit: makes agents' tool schemas work on the model server behind Envoy.
//!
//! - [`schema`]: the engine, a pipeline of passes per backend profile. Host-agnostic.
//! - [`api`]: finds the schemas inside each API's request body and splices rewritten ones back.
//! - [`filter`]: the Envoy filter's logic (config, decisions, counters), host-agnostic too.
//! - `wasm` (wasm32 only): the proxy-wasm shim that buffers, calls [`filter`] and reports.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing))]

pub mod api;
pub mod filter;
pub mod schema;

#[cfg(target_arch = "wasm32")]
mod wasm;
