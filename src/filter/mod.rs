//! The Envoy filter's logic, free of any host: configuration, which requests to buffer, what to do
//! with a body, counters and log lines. [`exchange::Exchange`] carries one request and its response
//! through it; `crate::wasm` and `extproc/` are thin hosts around it.

pub mod body;
pub mod config;
pub mod encoding;
pub mod exchange;
pub mod headers;
pub mod host;
pub mod incoming;
pub mod log;
pub mod mcp;
pub mod memory;
pub mod prometheus;
pub mod request;
pub mod response;
pub mod stats;

pub use host::Next;
