//! Throughput of 8-byte stores and loads over a window, with the flushes a
//! non-coherent pool needs (the same discipline `write`/`read` use).

use crate::map::Window;
use std::time::{Duration, Instant};

/// Returns (store, load) throughput in bytes per second.
pub fn run(window: &Window, min_time: Duration) -> (f64, f64) {
    let measure = |op: &dyn Fn(u64)| {
        let start = Instant::now();
        let mut rounds = 0u64;
        while rounds == 0 || start.elapsed() < min_time {
            op(rounds);
            rounds += 1;
        }
        (rounds as f64 * window.span() as f64) / start.elapsed().as_secs_f64()
    };
    let write = measure(&|round| window.store_words(round));
    let read = measure(&|_| {
        std::hint::black_box(window.load_words());
    });
    (write, read)
}
