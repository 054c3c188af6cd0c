//! The bytes toolfit holds for requests in flight, across all of them: one [`Memory`] per Wasm VM
//! (every request of an Envoy worker shares its VM's linear memory) and one per toolfit-extproc
//! process. Each exchange keeps a [`Held`] that says how much of it is its own; a request that would
//! take the total past `max_held_bytes` is not read (it goes on as it came, counted as
//! `skipped_over_budget`), and a response that would is let go unrepaired. So many large requests at
//! once cost a bounded amount of memory, never an allocation failure (which traps a Wasm VM).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How many times its size a body costs while it is rewritten: the copy the host hands over, the
/// rewritten body, and the engine's work between them (the tool lists read, the schemas rewritten).
/// `cargo run --release --example held` measures it on the bench bodies: 3.7x at most (openai-strict,
/// the 1,409-tool catalog).
pub const REWRITE_FACTOR: usize = 4;

/// The total held by every exchange of a VM or process.
#[derive(Debug, Default)]
pub struct Memory {
    held: AtomicUsize,
}

impl Memory {
    pub fn new() -> Arc<Memory> {
        Arc::new(Memory::default())
    }

    /// Bytes held now, by every exchange together.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

/// What one exchange holds of a [`Memory`]; given back when it is dropped.
#[derive(Debug, Default)]
pub struct Held {
    of: Option<Arc<Memory>>,
    bytes: usize,
}

impl Held {
    /// Holds `bytes` in all (more or fewer than now) if the total stays within `max`; else nothing
    /// changes and `false` says so. Giving back always works.
    pub fn resize(&mut self, memory: &Arc<Memory>, bytes: usize, max: usize) -> bool {
        if let Some(of) = &self.of {
            if !Arc::ptr_eq(of, memory) {
                // another budget's bytes (never, in a host): give those back first
                self.release();
            }
        }
        let mine = self.bytes;
        let changed = memory.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |total| {
            let others = total.saturating_sub(mine);
            let next = others.saturating_add(bytes);
            (bytes <= mine || next <= max).then_some(next)
        });
        if changed.is_err() {
            return false;
        }
        self.bytes = bytes;
        self.of = Some(memory.clone());
        true
    }

    /// Bytes this exchange holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Gives back everything held.
    pub fn release(&mut self) {
        if let Some(of) = self.of.take() {
            let mine = self.bytes;
            let _ = of.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| Some(t.saturating_sub(mine)));
        }
        self.bytes = 0;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchanges_share_one_total_and_give_it_back() {
        let m = Memory::new();
        let (mut a, mut b) = (Held::default(), Held::default());
        assert!(a.resize(&m, 600, 1000));
        assert!(!b.resize(&m, 500, 1000), "past the total");
        assert_eq!((m.held(), b.bytes()), (600, 0));
        assert!(b.resize(&m, 400, 1000));
        // shrinking always works, growing within what others leave
        assert!(a.resize(&m, 100, 1000));
        assert!(b.resize(&m, 900, 1000));
        assert!(!a.resize(&m, 101, 1000));
        assert!(a.resize(&m, 0, 0), "giving back works whatever the limit");
        drop(b);
        assert_eq!(m.held(), 0);
        assert!(a.resize(&m, 1000, 1000));
        a.release();
        assert_eq!((m.held(), a.bytes()), (0, 0));
    }

    #[test]
    fn threads_never_take_more_than_the_total() {
        let m = Memory::new();
        let peak = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (m, peak) = (m.clone(), peak.clone());
                std::thread::spawn(move || {
                    let mut h = Held::default();
                    for i in 0..2000 {
                        if h.resize(&m, 100 + i % 300, 1000) {
                            peak.fetch_max(m.held(), Ordering::Relaxed);
                        }
                        h.resize(&m, 0, 1000);
                    }
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().is_ok());
        }
        assert!(peak.load(Ordering::Relaxed) <= 1000);
        assert_eq!(m.held(), 0);
    }
}
