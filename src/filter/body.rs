//! The body mechanics both legs share: how a request's headers are framed for a body that may change
//! (`framing`), where buffering stops (`max_body_bytes`), and how a new body replaces the one the host
//! holds. Each returns whether it worked; the leg counts a failure as its own internal error.

use super::config::{Config, Framing};
use super::host::{Next, RequestHost};

/// The framing's header work for a request whose body may change: `Chunked` drops `Content-Length`
/// now (`None` if that failed: the body must then not change), `Exact` holds the headers for the new
/// length (`Pause`).
pub fn frame(cfg: &Config, host: &mut dyn RequestHost) -> Option<Next> {
    match cfg.framing {
        Framing::Chunked => host.remove_header("content-length").then_some(Next::Continue),
        Framing::Exact => Some(Next::Pause),
    }
}

/// Whether `total` bytes are within `max_body_bytes` (past it, buffering stops and the body goes on
/// as it came).
pub fn within_limit(cfg: &Config, total: usize) -> bool {
    total <= cfg.max_body_bytes
}

/// Puts `new` in place of the body's bytes from offset `at` to its end `size` (the host holds them),
/// with the new length under `Exact` framing. `false`: it failed, and what goes on is consistent (the
/// original length with the original body).
pub fn replace(cfg: &Config, host: &mut dyn RequestHost, at: usize, size: usize, new: &[u8]) -> bool {
    if cfg.framing == Framing::Exact && !host.set_header("content-length", &(at + new.len()).to_string()) {
        return false; // length unchanged, body unchanged: consistent
    }
    if !host.set_body(at, size, new) {
        if cfg.framing == Framing::Exact {
            // put the original length back: the original body is still there
            let _ = host.set_header("content-length", &size.to_string());
        }
        return false;
    }
    true
}
