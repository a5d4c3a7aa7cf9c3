// SPDX-License-Identifier: GPL-2.0

//! Task work (no upstream Rust counterpart in 6.12-6.15 beyond the file
//! closer binder uses internally): a callback a given task runs on its way
//! back to user space, or when it exits. [`add`] queues an owned item (or
//! [`TaskWorkBox::queue`] one allocated ahead); the task runs
//! [`TaskWork::run`] on it, in process context (it may sleep).
//!
//! The callback is module code: a module that queues task work must not
//! finish unloading while any is queued (6.12 does not export
//! `task_work_cancel`, so queued work always runs); [`add`] counts it in
//! the [`Pending`] the caller passes, and `Pending::wait_idle` waits for
//! the count to reach zero. The count drops as the callback's last action;
//! only its return follows, the same narrow window any callback has whose
//! completion the kernel core does not track.

use crate::bindings;
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::alloc::Flags;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::task::Task;

/// How the task is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    /// On its next return to user space.
    Resume,
    /// As for a signal: interruptible sleeps end and the task runs the work
    /// before it returns to user space (the system call restarts).
    Signal,
}

/// Work a task runs on itself.
pub trait TaskWork: Send + Sized + 'static {
    /// Runs in the task the work was queued on.
    fn run(self);
}

/// Queued items of one owner, so that it can wait for them before its
/// code goes away.
pub struct Pending {
    count: AtomicUsize,
}

impl Pending {
    /// No work pending.
    pub fn new() -> Pending {
        Pending {
            count: AtomicUsize::new(0),
        }
    }

    /// Items queued and not yet run.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Waits (sleeping 1 ms at a time) until every queued item has run,
    /// logging every 10 s while it waits.
    pub fn wait_idle(&self, what: &str) {
        let mut waited_ms = 0u32;
        while self.count() != 0 {
            // Not interruptible: what is queued runs module code.
            // SAFETY: process context (the caller's contract as for any
            // sleep); `msleep` has no other preconditions.
            unsafe { bindings::msleep(1) };
            waited_ms = waited_ms.saturating_add(1);
            if waited_ms % 10_000 == 0 {
                pr_info!(
                    "{}: waiting for {} queued task work item(s) to run\n",
                    what,
                    self.count()
                );
            }
        }
    }
}

/// A queued item: the kernel's `callback_head` first, so that the
/// callback finds the item from it.
#[repr(C)]
struct Node<T> {
    head: bindings::callback_head,
    pending: Arc<Pending>,
    item: T,
}

/// An item and the memory its queueing needs, allocated ahead so that it
/// can be queued where allocating is not allowed (interrupts off, the
/// scheduler's tracepoints).
pub struct TaskWorkBox<T: TaskWork> {
    node: KBox<Node<T>>,
}

// SAFETY: until it is queued the node is owned here alone (its
// `callback_head` pointers are unused), and `T` and `Arc<Pending>` are
// `Send`.
unsafe impl<T: TaskWork> Send for TaskWorkBox<T> {}

impl<T: TaskWork> TaskWorkBox<T> {
    /// Allocates the item's node (`flags`: `GFP_ATOMIC` where sleeping is
    /// not allowed); `pending` will count it while it is queued.
    pub fn new(item: T, pending: &Arc<Pending>, flags: Flags) -> Result<Self> {
        let node = KBox::new(
            Node {
                head: bindings::callback_head {
                    next: core::ptr::null_mut(),
                    func: Some(run::<T>),
                },
                pending: pending.clone(),
                item,
            },
            flags,
        )?;
        Ok(TaskWorkBox { node })
    }

    /// Queues the item for `task` to run (see [`Notify`]) without
    /// allocating. Gives the item back with `ESRCH` if the task is exiting
    /// past the point of running task work.
    pub fn queue(self, task: &Task, notify: Notify) -> Result<(), (Error, Self)> {
        self.node.pending.count.fetch_add(1, Ordering::AcqRel);
        let raw = KBox::into_raw(self.node);
        let mode = match notify {
            Notify::Resume => bindings::task_work_notify_mode_TWA_RESUME,
            Notify::Signal => bindings::task_work_notify_mode_TWA_SIGNAL,
        };
        // SAFETY: `raw` is a live, owned `Node<T>` whose `head` is first
        // (`repr(C)`); the kernel owns it until it calls `run::<T>` with
        // it; `task` is a live task (a reference to it). `TWAF_NO_ALLOC`:
        // the kernel allocates nothing either (KASAN's record of the
        // call), so this may run where allocating may not.
        let err = unsafe {
            bindings::task_work_add(
                task as *const Task as *mut bindings::task_struct,
                raw.cast::<bindings::callback_head>(),
                mode | bindings::task_work_notify_mode_TWAF_NO_ALLOC,
            )
        };
        if err != 0 {
            // SAFETY: not queued: `raw` is still ours, from `into_raw`.
            let node = unsafe { KBox::from_raw(raw) };
            node.pending.count.fetch_sub(1, Ordering::AcqRel);
            return Err((Error::from_errno(err), TaskWorkBox { node }));
        }
        Ok(())
    }
}

/// Queues `item` for `task` to run (see [`Notify`]). Fails with `ESRCH` if
/// the task is exiting past the point of running task work (the item is
/// then dropped), or `ENOMEM`. `flags` is the allocation's: `GFP_ATOMIC`
/// from interrupt context.
pub fn add<T: TaskWork>(
    task: &Task,
    item: T,
    notify: Notify,
    pending: &Arc<Pending>,
    flags: Flags,
) -> Result {
    TaskWorkBox::new(item, pending, flags)?
        .queue(task, notify)
        .map_err(|(e, _)| e)
}

/// The callback of `Node<T>`.
///
/// # Safety
///
/// `head` is the `head` of a `Node<T>` that `add` gave up with
/// `KBox::into_raw` and queued; the kernel calls this once.
unsafe extern "C" fn run<T: TaskWork>(head: *mut bindings::callback_head) {
    // SAFETY: `head` is first in a `Node<T>` from `KBox::into_raw`, now
    // handed back (this function's contract).
    let node = unsafe { KBox::from_raw(head.cast::<Node<T>>()) };
    let Node { pending, item, .. } = KBox::into_inner(node);
    item.run();
    // Last: once the count is zero the owner may go away.
    pending.count.fetch_sub(1, Ordering::AcqRel);
}
