//! The processor's stream handling (`session`) and counters (`metrics`) as a library: the binary
//! (`main.rs`: gRPC, flags, the metrics listener) and the fuzz target (`fuzz/fuzz_targets/extproc.rs`)
//! drive the same code.

pub mod metrics;
pub mod session;
