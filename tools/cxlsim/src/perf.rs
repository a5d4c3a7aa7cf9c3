//! The anchor of `cxlsim perf`: the bare event queue under the classic
//! "hold" workload (pop the earliest event, schedule one a random time
//! later, with a fixed number pending), the same number of events as the
//! simulation it stands beside. The simulator can run no faster than its
//! queue, so the ratio of the two rates is what the models cost on top.

use crate::event::{EventQueue, Kind, MAX_ARG};
use crate::rng::Rng;
use std::time::Instant;

/// What a hold run did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hold {
    pub events: u64,
    pub seconds: f64,
    /// Events pending when it ended (as many as it started with).
    pub pending: usize,
}

impl Hold {
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.seconds.max(1e-9)
    }
}

/// `events` hold operations with `pending` events in the queue, their gaps
/// uniform in 0..`max_gap_ps` (seeded).
pub fn hold(events: u64, pending: usize, max_gap_ps: u64, seed: u64) -> Hold {
    let mut rng = Rng::new(seed, 0);
    let mut q = EventQueue::new();
    let gap = max_gap_ps.max(1);
    for i in 0..pending {
        q.schedule(rng.below(gap), Kind::Ready, (i as u32) & MAX_ARG);
    }
    let t = Instant::now();
    let mut done = 0u64;
    while done < events {
        let Some(e) = q.pop() else { break };
        let next = e.time.saturating_add(rng.below(gap));
        q.schedule(next, e.kind, e.arg);
        done += 1;
    }
    Hold {
        events: done,
        seconds: t.elapsed().as_secs_f64(),
        pending: std::hint::black_box(q.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_keeps_its_population_and_runs_every_event() {
        let h = hold(10_000, 64, 1_000, 1);
        assert_eq!((h.events, h.pending), (10_000, 64));
        assert!(h.events_per_sec() > 0.0);
        // An empty queue ends the run early rather than spinning.
        assert_eq!(hold(10, 0, 1_000, 1).events, 0);
    }
}
