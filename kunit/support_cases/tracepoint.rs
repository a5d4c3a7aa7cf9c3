// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_tracepoint`: scheduler tracepoint probes.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::alloc::flags::GFP_KERNEL;
use kernel::prelude::*;
use kernel::sync::Arc;

use cxlf_support as support;
use support::tracepoint::{SchedProbes, SchedRegistration};
use support::{kassert, kassert_eq, kunit_tests};

/// Counts the switches of one task (by pid) and every fork and exit.
struct Watch {
    pid: i32,
    out: AtomicU64,
    into: AtomicU64,
    forks: AtomicU64,
    exits: AtomicU64,
}

impl SchedProbes for Watch {
    fn switch(&self, _preempt: bool, prev: &kernel::task::Task, next: &kernel::task::Task) {
        if prev.pid() == self.pid {
            self.out.fetch_add(1, Ordering::Relaxed);
        }
        if next.pid() == self.pid {
            self.into.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn fork(&self, _parent: &kernel::task::Task, _child: &kernel::task::Task) {
        self.forks.fetch_add(1, Ordering::Relaxed);
    }
    fn exit(&self, _task: &kernel::task::Task) {
        self.exits.fetch_add(1, Ordering::Relaxed);
    }
}

fn sched_switch_probe_sees_the_sleeping_task_leave_and_return() -> Result {
    let watch = Arc::new(
        Watch {
            pid: kernel::current!().pid(),
            out: AtomicU64::new(0),
            into: AtomicU64::new(0),
            forks: AtomicU64::new(0),
            exits: AtomicU64::new(0),
        },
        GFP_KERNEL,
    )?;
    let registration = SchedRegistration::register(watch.clone())?;
    for _ in 0..3 {
        support::time::sleep_ms_interruptible(5)?;
    }
    drop(registration);
    let (out, into) = (
        watch.out.load(Ordering::Relaxed),
        watch.into.load(Ordering::Relaxed),
    );
    kassert!(out >= 3 && into >= 3, "switches out {} in {}", out, into);
    // Detached: nothing counts any more.
    support::time::sleep_ms_interruptible(5)?;
    kassert_eq!(watch.out.load(Ordering::Relaxed), out);
    Ok(())
}

kunit_tests!(
    cxlfabric_support_tracepoint,
    [sched_switch_probe_sees_the_sleeping_task_leave_and_return]
);
