// SPDX-License-Identifier: GPL-2.0

//! Counting perf events on a task, from the kernel (no upstream Rust
//! counterpart: upstream has no perf abstraction). A [`Counter`] counts
//! one event of one task in user mode, from its creation until it is
//! dropped; reading and dropping it may sleep.

use crate::bindings;
use kernel::error::from_err_ptr;
use kernel::prelude::*;
use kernel::task::Task;

/// An event: `perf_event_attr::type` and `config` (`<linux/perf_event.h>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// `perf_event_attr.type` (`PERF_TYPE_*`).
    pub type_: u32,
    /// `perf_event_attr.config`: the event of that type.
    pub config: u64,
}

/// A counting event on a task.
///
/// # Invariants
///
/// `event` is a live kernel counter created by `perf_event_create_kernel_counter`
/// that this value alone releases.
pub struct Counter {
    event: *mut bindings::perf_event,
}

// SAFETY: a kernel counter may be read and released from any task in
// process context; perf serialises those itself (`child_mutex`, the
// context lock).
unsafe impl Send for Counter {}
// SAFETY: `read` takes `&self` and perf serialises concurrent reads.
unsafe impl Sync for Counter {}

impl Counter {
    /// Starts counting `event` for `task`, in user mode. Process context.
    /// Fails with `ENOENT` or `EOPNOTSUPP` where no PMU provides the event
    /// (a hardware event under TCG), `ESRCH` if the task is exiting.
    pub fn new(task: &Task, event: Event) -> Result<Counter> {
        let raw = core::ptr::from_ref(task).cast_mut().cast();
        // User mode only: kernel-mode events of another task are what
        // `perf_event_paranoid` keeps from unprivileged users, and a
        // channel's owner may be one.
        let mut attr = bindings::perf_event_attr {
            type_: event.type_,
            size: core::mem::size_of::<bindings::perf_event_attr>() as u32,
            config: event.config,
            ..Default::default()
        };
        attr.set_exclude_kernel(1);
        attr.set_exclude_hv(1);
        // SAFETY: `attr` is a complete attribute, read during the call;
        // `task` is live for the call (the caller holds it); no CPU (-1)
        // and no overflow handler. Returns an event or an ERR_PTR.
        let event = from_err_ptr(unsafe {
            bindings::perf_event_create_kernel_counter(
                &mut attr,
                -1,
                raw,
                None,
                core::ptr::null_mut(),
            )
        })?;
        // INVARIANT: a counter we created and nothing else releases.
        Ok(Counter { event })
    }

    /// Events counted so far (while the task ran). Process context: it may
    /// sleep, and asks the task's CPU if it is running.
    pub fn read(&self) -> u64 {
        let (mut enabled, mut running) = (0, 0);
        // SAFETY: `event` is live (type invariant); process context is
        // this function's contract; the times are written to locals.
        unsafe { bindings::perf_event_read_value(self.event, &mut enabled, &mut running) }
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: `event` is live and released only here (type invariant).
        // Dropping a `Counter` may sleep: its owners drop it in process
        // context.
        unsafe { bindings::perf_event_release_kernel(self.event) };
    }
}
