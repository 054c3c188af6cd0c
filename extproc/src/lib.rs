//! The processor's stream handling (`session`), counters (`metrics`) and agentgateway's MCP hook
//! (`extmcp`) and its TLS listener (`tls`) as a library: the binary
//! (`main.rs`: gRPC, flags, the metrics listener) and the fuzz target (`fuzz/fuzz_targets/extproc.rs`)
//! drive the same code.

pub mod extmcp;
pub mod metrics;
pub mod session;
pub mod tls;
