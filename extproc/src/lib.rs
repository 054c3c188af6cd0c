//! The processor's stream handling (`session`), counters (`metrics`), agentgateway's MCP hook
//! (`extmcp`), its TLS listener (`tls`) and where heavy work runs (`work`) as a library: the binary
//! (`main.rs`: gRPC, flags, the metrics listener) and the fuzz target (`fuzz/fuzz_targets/extproc.rs`)
//! drive the same code.

pub mod extmcp;
pub use toolfit::filter::prometheus as metrics;
pub mod session;
pub mod tls;
pub mod work;

/// Processing that reads this many bytes at once (a message this large, or the last piece of a
/// streamed body this large) gives back what it freed once it is done (see [`return_memory`]).
pub const RETURN_MEMORY_FROM: usize = 1 << 20;

/// Gives the memory the allocator holds free back to the system. glibc keeps what a large message's
/// processing freed (a 14 MiB `tools/list` took the resident size from 4 to 580 MB, and it stayed at
/// 540 MB afterwards: issue 57); trimming after each large message returns it. A few milliseconds on a
/// large heap, so only after messages of [`RETURN_MEMORY_FROM`] bytes or more.
pub fn return_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes an integer and only returns free memory to the system
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}
