//! toolfit: makes agents' tool schemas work on the model server behind Envoy.
//!
//! - [`schema`]: the engine, a pipeline of passes per backend profile. Host-agnostic.
//! - [`api`]: finds the schemas inside each API's request body and splices rewritten ones back.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing))]

pub mod api;
pub mod schema;
