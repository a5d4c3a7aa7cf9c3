// SPDX-License-Identifier: GPL-2.0

//! The attached threads: a fixed table the scheduler's probes search
//! without taking a lock, and each thread's run window behind its own
//! raw spinlock.
//!
//! The table is open addressing over task addresses. A slot's `key` says
//! which task it is for (or empty, or a tombstone left by a detach); the
//! probes find a slot by key with atomic loads only, then take the slot's
//! lock and check that the state is still for that task (a slot can be
//! reused between the load and the lock). Slots live as long as the module,
//! so a stale key never leads to freed memory. Inserting and removing
//! (attach, detach, fork, exit) take `insert`; tombstones are reused by
//! inserts and cleared when the table empties.
//!
//! Threads attached by callers without `CAP_SYS_NICE` count against their
//! user's quota, and together never take the last eighth of the table: an
//! unprivileged user cannot keep root from attaching.

use crate::control::thread::RunState;
use crate::enforce::Park;
use crate::new_raw_spinlock_irq;
use crate::support::error::edquot;
use crate::support::spinlock_irq::RawSpinLockIrq;
use crate::support::task_work::TaskWorkBox;
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::SpinLock;
use kernel::task::Task;
use kernel::types::ARef;

const EMPTY: usize = 0;
const TOMBSTONE: usize = 1;

fn key_of(task: &Task) -> usize {
    core::ptr::from_ref(task) as usize
}

/// An attached thread.
pub(crate) struct Attached {
    /// Holds the task (the probes see it by address only).
    pub(crate) task: ARef<Task>,
    /// Index of its channel.
    pub(crate) channel: u32,
    /// Threads and processes it creates join its channel.
    pub(crate) follow_forks: bool,
    /// The user whose quota it counts against, or `None` if a caller with
    /// `CAP_SYS_NICE` attached it (then only such a caller may detach it).
    /// Threads it forks inherit it.
    pub(crate) user: Option<u32>,
    pub(crate) run: RunState,
    /// A park item is queued (the timer queues at most one).
    pub(crate) queued: bool,
    /// The next park item, allocated ahead (the timer cannot allocate).
    pub(crate) spare: Option<TaskWorkBox<Park>>,
    /// Parked now, since when (or since the control loop last counted
    /// it), and the time parked not yet counted (nanoseconds).
    pub(crate) parked: bool,
    pub(crate) parked_since: u64,
    pub(crate) parked_ns: u64,
    /// What its meter counted since the last control period: perf
    /// events, or bytes it reported.
    pub(crate) counted: u64,
    /// A perf counter counts for it (`meter.rs`).
    pub(crate) has_counter: bool,
    /// When its slice on a CPU began, and the scheduler's count of its
    /// on-CPU time then (`enforce.rs` charges the difference).
    pub(crate) slice: Option<(u64, u64)>,
}

impl Attached {
    /// Attached by a caller with `CAP_SYS_NICE`.
    pub(crate) fn privileged(&self) -> bool {
        self.user.is_none()
    }
}

/// Users with unprivileged attaches at once.
const QUOTA_USERS: usize = 64;

/// What unprivileged callers hold of the table.
///
/// # Invariants
///
/// An entry with a non-zero count is the only one for its uid; `total` is
/// the sum of the counts.
pub(crate) struct Quota {
    /// (uid, attached threads); a zero count is a free entry.
    users: [(u32, usize); QUOTA_USERS],
    total: usize,
    /// Most threads per user, and all unprivileged users together.
    per_user: usize,
    shared: usize,
}

impl Quota {
    fn new(max_threads: usize, per_user: usize) -> Quota {
        // The last eighth (at least one) stays for privileged callers.
        let reserved = (max_threads / 8).max(1);
        // INVARIANT: no entry holds anything.
        Quota {
            users: [(0, 0); QUOTA_USERS],
            total: 0,
            per_user,
            shared: max_threads.saturating_sub(reserved),
        }
    }

    /// Counts one more thread for `uid`: `ENOSPC` when the unprivileged
    /// share of the table is used up, `EDQUOT` when `uid`'s quota is (or
    /// too many users hold threads).
    fn charge(&mut self, uid: u32) -> Result {
        if self.total >= self.shared {
            return Err(ENOSPC);
        }
        let at = match self.users.iter().position(|&(u, n)| n > 0 && u == uid) {
            Some(i) => i,
            None => self
                .users
                .iter()
                .position(|&(_, n)| n == 0)
                .ok_or_else(edquot)?,
        };
        let entry = &mut self.users[at];
        if entry.1 >= self.per_user {
            return Err(edquot());
        }
        // INVARIANT: `uid`'s entry (found, or a free one), and the total,
        // grow together.
        *entry = (uid, entry.1.saturating_add(1));
        self.total = self.total.saturating_add(1);
        Ok(())
    }

    /// Counts one thread of `uid` less.
    fn release(&mut self, uid: u32) {
        if let Some(entry) = self.users.iter_mut().find(|e| e.1 > 0 && e.0 == uid) {
            // INVARIANT: as in `charge`.
            entry.1 = entry.1.saturating_sub(1);
            self.total = self.total.saturating_sub(1);
        }
    }

    /// Threads `uid` has attached without `CAP_SYS_NICE`.
    pub(crate) fn of(&self, uid: u32) -> usize {
        self.users
            .iter()
            .find(|e| e.1 > 0 && e.0 == uid)
            .map_or(0, |e| e.1)
    }
}

/// A slot's state: `None` while free.
pub(crate) struct ThreadState {
    key: usize,
    pub(crate) attached: Option<Attached>,
}

impl ThreadState {
    /// The attached thread, if this slot is for `task`.
    pub(crate) fn of(&mut self, task: &Task) -> Option<&mut Attached> {
        if self.key != key_of(task) {
            return None;
        }
        self.attached.as_mut()
    }
}

#[pin_data]
pub(crate) struct Slot {
    key: AtomicUsize,
    #[pin]
    pub(crate) state: RawSpinLockIrq<ThreadState>,
}

impl Slot {
    fn new() -> impl PinInit<Self> {
        pin_init!(Slot {
            key: AtomicUsize::new(EMPTY),
            state <- new_raw_spinlock_irq!(
                ThreadState {
                    key: EMPTY,
                    attached: None,
                },
                "mchannel:thread"
            ),
        })
    }
}

/// The table.
///
/// # Invariants
///
/// `slots.len()` is a power of two; a slot's `key` is the address of the
/// task its state holds, or `EMPTY`/`TOMBSTONE` when it holds none, and
/// changes only under `insert`; `live` counts slots with a task; the
/// quota counts, per user, the slots whose thread has that user.
pub(crate) struct Threads {
    slots: KVec<Pin<KBox<Slot>>>,
    max_threads: usize,
    live: AtomicUsize,
    insert: Pin<KBox<SpinLock<Quota>>>,
}

impl Threads {
    /// A table for up to `max_threads` threads (twice as many slots), of
    /// which one user without `CAP_SYS_NICE` attaches at most `per_user`.
    pub(crate) fn new(max_threads: usize, per_user: usize) -> Result<Threads> {
        let n = max_threads
            .checked_mul(2)
            .and_then(usize::checked_next_power_of_two)
            .ok_or(EINVAL)?;
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(KBox::pin_init(Slot::new(), GFP_KERNEL)?, GFP_KERNEL)?;
        }
        let quota = Quota::new(max_threads, per_user);
        let insert = KBox::pin_init(new_spinlock!(quota, "mchannel:threads"), GFP_KERNEL)?;
        // INVARIANT: a power of two; every slot empty.
        Ok(Threads {
            slots,
            max_threads,
            live: AtomicUsize::new(0),
            insert,
        })
    }

    /// Threads attached now.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    fn start(&self, key: usize) -> usize {
        // Fibonacci hashing of the address above its alignment.
        let h = (key >> 6).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h.rotate_left(32) & (self.slots.len() - 1)
    }

    /// The slot whose key is `task` (lock it and use
    /// [`ThreadState::of`]: it may have changed since).
    pub(crate) fn find(&self, task: &Task) -> Option<&Slot> {
        let key = key_of(task);
        let mask = self.slots.len() - 1;
        let mut i = self.start(key);
        for _ in 0..self.slots.len() {
            let slot = self.slots.get(i)?;
            match slot.key.load(Ordering::Acquire) {
                k if k == key => return Some(slot),
                EMPTY => return None,
                _ => i = (i + 1) & mask,
            }
        }
        None
    }

    /// Runs `f` on `task`'s state under its lock, if it is attached.
    pub(crate) fn with<R>(&self, task: &Task, f: impl FnOnce(&mut Attached) -> R) -> Option<R> {
        let slot = self.find(task)?;
        let mut state = slot.state.lock();
        state.of(task).map(f)
    }

    /// Threads `uid` has attached without `CAP_SYS_NICE`.
    pub(crate) fn user_threads(&self, uid: u32) -> usize {
        self.insert.lock().of(uid)
    }

    /// Attaches `task` with `make`'s state. `EEXIST` if it is attached
    /// already, `ENOSPC` if the table is full (or, for a state with a
    /// user, the part of it unprivileged users may take), `EDQUOT` if the
    /// state's user has its quota. Callable where sleeping is not allowed.
    pub(crate) fn insert(&self, task: &Task, make: impl FnOnce() -> Attached) -> Result {
        let mut quota = self.insert.lock();
        if self.find(task).is_some() {
            return Err(EEXIST);
        }
        if self.live() >= self.max_threads {
            return Err(ENOSPC);
        }
        let attached = make();
        if let Some(uid) = attached.user {
            quota.charge(uid)?;
        }
        let key = key_of(task);
        let mask = self.slots.len() - 1;
        let mut i = self.start(key);
        for _ in 0..self.slots.len() {
            let Some(slot) = self.slots.get(i) else { break };
            if matches!(slot.key.load(Ordering::Relaxed), EMPTY | TOMBSTONE) {
                *slot.state.lock() = ThreadState {
                    key,
                    attached: Some(attached),
                };
                // INVARIANT: the state holds the task before the probes can
                // find the key.
                slot.key.store(key, Ordering::Release);
                self.live.fetch_add(1, Ordering::AcqRel);
                return Ok(());
            }
            i = (i + 1) & mask;
        }
        // Unreachable (there are twice as many slots as threads): undo.
        if let Some(uid) = attached.user {
            quota.release(uid);
        }
        Err(ENOSPC)
    }

    /// Detaches `task`; returns its state for the caller to finish (wake
    /// it if parked, drop its references outside any lock).
    pub(crate) fn remove(&self, task: &Task) -> Option<Attached> {
        let mut quota = self.insert.lock();
        let slot = self.find(task)?;
        let attached = {
            let mut state = slot.state.lock();
            state.key = EMPTY;
            state.attached.take()
        };
        if let Some(uid) = attached.as_ref().and_then(|a| a.user) {
            quota.release(uid);
        }
        // INVARIANT: the state holds no task any more.
        slot.key.store(TOMBSTONE, Ordering::Release);
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Empty: the probe chains need no tombstones.
            for s in self.slots.iter() {
                s.key.store(EMPTY, Ordering::Release);
            }
        }
        attached
    }

    /// Calls `f` on every attached thread's state, under its lock.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&mut Attached)) {
        for slot in self.slots.iter() {
            if slot.key.load(Ordering::Acquire) <= TOMBSTONE {
                continue;
            }
            if let Some(a) = slot.state.lock().attached.as_mut() {
                f(a);
            }
        }
    }

    /// Calls `f` on every attached thread's state, under its lock, and
    /// wakes the thread if `f` says so, after the lock is dropped (the
    /// scheduler's locks come after ours: see the lock order).
    pub(crate) fn update_each(&self, mut f: impl FnMut(&mut Attached) -> bool) {
        for slot in self.slots.iter() {
            if slot.key.load(Ordering::Acquire) <= TOMBSTONE {
                continue;
            }
            let wake = {
                let mut state = slot.state.lock();
                state
                    .attached
                    .as_mut()
                    .and_then(|a| f(a).then(|| a.task.clone()))
            };
            if let Some(task) = wake {
                task.wake_up();
            }
        }
    }

    /// Tasks attached to `channel` (or to any, with `None`), with counted
    /// references.
    pub(crate) fn tasks(&self, channel: Option<u32>) -> Result<KVec<ARef<Task>>> {
        // Room for every slot, allocated before any lock: the pushes below
        // never allocate.
        let max = self.slots.len();
        let mut out = KVec::with_capacity(max, GFP_KERNEL)?;
        self.for_each(|a| {
            if out.len() < max && channel.map_or(true, |c| c == a.channel) {
                let _ = out.push(a.task.clone(), GFP_NOWAIT);
            }
        });
        Ok(out)
    }
}
