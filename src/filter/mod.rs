//! The Envoy filter's logic, free of any host: configuration, which requests to buffer, what to do
//! with a body, counters and log lines. `crate::wasm` is the thin proxy-wasm shim around it.

pub mod config;
pub mod encoding;
pub mod request;
pub mod response;
pub mod stats;
