//! What the benches share.

use std::time::{Duration, Instant};

/// Seconds of the fastest of repeated runs of `f` (at least 5 runs and 0.3 s in all): the figure least
/// disturbed by whatever else the machine does.
pub fn best_of(mut f: impl FnMut()) -> f64 {
    let (mut best, mut n, start) = (Duration::MAX, 0u32, Instant::now());
    while n < 5 || start.elapsed() < Duration::from_millis(300) {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed());
        n += 1;
    }
    best.as_secs_f64()
}
