// SPDX-License-Identifier: GPL-2.0

//! What the probes, the timers and the park items share ([`Shared`]: the
//! thread table, the count of queued items, the counters), and the park
//! item ([`Park`]) that holds a thread back until its budget allows it to
//! run. An item refers to the shared state, which holds the table, which
//! keeps the items: the table is generic over its item type, so that this
//! file alone names both.

use crate::attached::Attached;
use crate::control::thread::OnCpu;
use crate::control::window::amortized_min_run;
use crate::support::task;
use crate::support::task_work::{Notify, Pending, TaskWork, TaskWorkBox};
use crate::support::time::monotonic_ns;
use crate::threads::Threads;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::task::Task;

/// A parked thread may wake this much after its window's end (timer
/// slack: lets the kernel batch wakeups).
const PARK_SLACK_NS: u64 = 2_000;

/// How long a newly attached thread sleeps so that the scheduler switches
/// it in again (see [`Shared::settle`]).
const SETTLE_NS: u64 = 10_000;

/// A park item allocated ahead, for a thread to queue.
pub(crate) type Spare = TaskWorkBox<Park>;

/// Counters for sysfs and the tests.
#[derive(Default)]
pub(crate) struct Counters {
    /// Park items queued, and those that could not be (no spare item, or
    /// the thread was exiting).
    pub(crate) parks: AtomicU64,
    pub(crate) park_misses: AtomicU64,
    /// Threads a fork added, and those it could not (table full, quota).
    pub(crate) forks: AtomicU64,
    pub(crate) fork_misses: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// What one park costs the parked thread's CPU, the enforcement's own
/// work: from its budget timer queuing the park item until it leaves its
/// CPU, and from its switch back in until the item returns. A moving
/// average over parks, racy between CPUs (a sample may be lost). Under
/// full emulation (TCG) a park costs 50-110 us on average, on hardware a
/// few: runs are made long enough to amortize it ([`ParkCost::min_run`]).
#[derive(Default)]
pub(crate) struct ParkCost {
    ns: AtomicU64,
    /// The least run in force ([`ParkCost::min_run`]; 0: none yet).
    min_run_ns: AtomicU64,
}

impl ParkCost {
    /// A longer sample is not the park's own cost (the thread was
    /// preempted in between, or its CPU was, by the host).
    const MAX_SAMPLE_NS: u64 = 1_000_000;

    fn sample(&self, ns: u64) {
        let ns = ns.min(Self::MAX_SAMPLE_NS);
        let old = self.ns.load(Ordering::Relaxed);
        // Weight 1/16: a few control periods' parks.
        let new = if old == 0 {
            ns
        } else {
            old.saturating_sub(old / 16).saturating_add(ns / 16)
        };
        self.ns.store(new, Ordering::Relaxed);
    }

    /// The average so far (0: no park yet).
    pub(crate) fn ns(&self) -> u64 {
        self.ns.load(Ordering::Relaxed)
    }

    /// The least run (and park) every window gives from now (the control
    /// loop asks): the core's `window::amortized_min_run`, at most
    /// a sixteenth of the longest window (625 us), so that the least share
    /// a thread gets (the least run in the longest window) stays below
    /// 7 %. (With half the longest window allowed, a thread of share 0.10
    /// ran 0.215 under TCG on a busy host: a least run of 2 ms, from a cost
    /// of 256 us or more, floors every share at 0.2.)
    pub(crate) fn min_run(&self) -> u64 {
        let current = self.min_run_ns.load(Ordering::Relaxed);
        let next = amortized_min_run(self.ns(), current, crate::fabric::MAX_WINDOW_NS / 16);
        self.min_run_ns.store(next, Ordering::Relaxed);
        next
    }

    /// The least run in force.
    pub(crate) fn min_run_ns(&self) -> u64 {
        self.min_run_ns.load(Ordering::Relaxed)
    }
}

/// What the probes, the timers and the park items share.
pub(crate) struct Shared {
    pub(crate) threads: Threads<Spare>,
    /// Park items queued and not yet finished: unload waits for them.
    pub(crate) pending: Arc<Pending>,
    /// Set first on unload: nothing parks any more.
    pub(crate) shutdown: AtomicBool,
    pub(crate) counters: Counters,
    pub(crate) park_cost: ParkCost,
}

impl Shared {
    /// The table, each of its slots with a park item. The items refer to
    /// the value, so whoever drops it calls [`Threads::drain_spares`].
    pub(crate) fn new(max_threads: usize, user_threads: usize) -> Result<Arc<Shared>> {
        let shared = Arc::new(
            Shared {
                threads: Threads::new(max_threads, user_threads)?,
                pending: Arc::new(Pending::new(), GFP_KERNEL)?,
                shutdown: AtomicBool::new(false),
                counters: Counters::default(),
                park_cost: ParkCost::default(),
            },
            GFP_KERNEL,
        )?;
        if let Err(e) = shared.threads.fill_spares(|| shared.park_item(GFP_KERNEL)) {
            shared.threads.drain_spares();
            return Err(e);
        }
        Ok(shared)
    }

    /// A park item for a thread's spare (process context).
    pub(crate) fn park_item(self: &Arc<Self>, flags: kernel::alloc::Flags) -> Result<Spare> {
        TaskWorkBox::new(
            Park {
                shared: self.clone(),
            },
            &self.pending,
            flags,
        )
    }

    /// Gives every attached thread without a park item one (the control
    /// loop, process context).
    pub(crate) fn refill_spares(self: &Arc<Self>) {
        self.threads.refill(|| self.park_item(GFP_KERNEL));
    }

    /// Makes `task`, just attached, known to the switch probe: until the
    /// scheduler next switches it in, nothing counts its time or arms a
    /// budget timer for it, and a thread alone on its CPU may not be
    /// switched for seconds. Its park item makes it sleep for
    /// [`SETTLE_NS`] on its way back to user space. The item is queued
    /// outside the thread's lock: signalling another task takes its
    /// scheduler locks, which the switch probe holds while it takes ours.
    pub(crate) fn settle(&self, task: &Task) {
        // One that is not running is seen when it next comes on a CPU;
        // signalling it would only cut its sleep short (EINTR from some
        // calls) or wait, queued, while it is stopped.
        if !task::is_on_cpu(task) {
            return;
        }
        let Some(Some(item)) = self.threads.with(task, Attached::take_park) else {
            return;
        };
        match item.queue(task, Notify::Signal) {
            Ok(()) => bump(&self.counters.parks),
            Err((_, item)) => {
                // Exiting: nothing to settle; the item goes back (or, if
                // it was detached meanwhile or has another, is freed here,
                // outside the lock).
                let mut item = Some(item);
                let _ = self.threads.with(task, |a| a.park_failed(&mut item));
                drop(item);
                bump(&self.counters.park_misses);
            }
        }
    }

    /// Samples what the park `me` just came back from cost it, if its
    /// budget timer queued it and it left its CPU parked (not a settle,
    /// nor a park the window's end made needless).
    fn sample_cost(&self, me: &Task) {
        let now = monotonic_ns();
        let spans = self
            .threads
            .with(me, |a| a.take_park_span().zip(a.slice_start()))
            .flatten();
        if let Some(((fired, left), back)) = spans {
            let cost = left
                .saturating_sub(fired)
                .saturating_add(now.saturating_sub(back));
            self.park_cost.sample(cost);
        }
    }

    /// Until when `me` parks now, if it does; otherwise it is no longer
    /// queued. Refills its spare item from `spare`. Its running since
    /// `entered`, when its park item started, was the module's work, not
    /// its own: the budget does not count it.
    fn park_until(&self, me: &Task, spare: &mut Option<Spare>, entered: u64) -> Option<u64> {
        self.threads
            .with(me, |a| {
                a.refill(spare);
                let stop = self.shutdown.load(Ordering::Acquire) || task::is_exiting(me);
                let now = monotonic_ns();
                a.run().exempt(now, entered);
                if !a.run().on_cpu() && !stop {
                    // Running, but not switched in since it was attached:
                    // a short sleep has the switch probe see it.
                    return Some(now.saturating_add(SETTLE_NS));
                }
                match a.run().check(now) {
                    OnCpu::Park { until_ns } if !stop => {
                        a.park_from(now);
                        Some(until_ns)
                    }
                    _ => {
                        a.unqueue();
                        None
                    }
                }
            })
            .flatten()
    }
}

/// Sleeps the thread that runs it until its budget allows it to run again:
/// to its window's end, and through the windows its debt takes after
/// that (a late timer's overrun, see the core's `thread` module).
pub(crate) struct Park {
    shared: Arc<Shared>,
}

impl TaskWork for Park {
    fn run(self) {
        let entered = monotonic_ns();
        let shared = self.shared;
        let me = kernel::current!();
        // The next item, allocated here where sleeping is allowed; the
        // timer only takes spares.
        let mut spare = shared.park_item(GFP_KERNEL).ok();
        // Still queued while it sleeps: the timer that fires when it wakes
        // in debt does not queue a second item.
        let mut killed = false;
        while let Some(until) = shared.park_until(me, &mut spare, entered) {
            killed = task::sleep_until_killable(until, PARK_SLACK_NS);
            let now = monotonic_ns();
            shared.threads.with(me, |a| a.woke(now, killed));
            if killed {
                break;
            }
        }
        if !killed {
            shared.sample_cost(me);
        }
        // An item not needed (the thread left, or has one) is freed here,
        // in process context.
        drop(spare);
    }
}
