// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_task_work`: task work boxes.

use kernel::alloc::flags::{GFP_ATOMIC, GFP_KERNEL};
use kernel::prelude::*;
use kernel::sync::Arc;

use cxlf_support as support;
use support::task_work::{Pending, TaskWork, TaskWorkBox};
use support::{kassert_eq, kunit_tests};

struct Noop;

impl TaskWork for Noop {
    fn run(self) {}
}

fn task_work_box_counts_only_while_queued() -> Result {
    let pending = Arc::new(Pending::new(), GFP_KERNEL)?;
    // Allocated ahead, even atomically; not queued: nothing to wait for,
    // and dropping it frees it (kmemleak checks on the debug kernel).
    let b = TaskWorkBox::new(Noop, &pending, GFP_ATOMIC)?;
    let c = TaskWorkBox::new(Noop, &pending, GFP_KERNEL)?;
    kassert_eq!(pending.count(), 0);
    drop(b);
    drop(c);
    kassert_eq!(pending.count(), 0);
    // What the owner waits for at unload returns at once.
    pending.wait_idle("kunit");
    Ok(())
}

kunit_tests!(
    cxlfabric_support_task_work,
    [task_work_box_counts_only_while_queued]
);
