// SPDX-License-Identifier: GPL-2.0

//! The attached threads: the control core's lock-free table
//! (`core/src/table.rs`), keyed by task address, each slot's state (the
//! core's `Seat`: for which task, its [`Attached`] state, and the slot's
//! park item while no thread holds it) behind the slot's raw spinlock.
//!
//! The probes find a slot with atomic loads only, then take the slot's
//! lock and check that the state is still for that task (a slot can be
//! reused between the load and the lock). Slots live as long as the
//! module, so a stale key never leads to freed memory. Inserting and
//! removing (attach, detach, fork, exit) take the table's insert lock,
//! each in constant time; tombstones are reused by inserts, and
//! [`Threads::sweep`] (the control loop, process context) empties those no
//! probe chain needs, and all of them once the table is empty.
//!
//! Contexts: the fork and exit probes insert and remove with preemption
//! off, the switch probe and the budget timer (`enforce.rs`) lock a slot
//! under the runqueue lock or in hard interrupt context. So every lock here
//! is a raw spinlock (a `spinlock_t` sleeps on PREEMPT_RT), and nothing is
//! allocated or freed under one or in a probe (the allocator takes sleeping
//! locks on PREEMPT_RT): each slot keeps a park item (an `I`, from
//! `park.rs`) for whichever thread it holds, allocated in process context
//! (with the table, after each park, and by the control loop for a thread
//! without one).
//!
//! Lock order: the insert lock, then a slot's lock (the core's insert and
//! remove run their closures, which lock the slot, under the insert lock).
//!
//! Threads attached by callers without `CAP_SYS_NICE` count against their
//! user's quota, and together never take the last eighth of the table: an
//! unprivileged user cannot keep root from attaching.

use crate::attached::Attached;
use crate::control::quota::Refused;
use crate::control::seat::Seat;
use crate::control::table::{self, Book, Exclusive, Identity, Slot, Table};
use crate::new_raw_spinlock_irq;
use crate::support::error::edquot;
use crate::support::spinlock_irq::RawSpinLockIrq;
use kernel::prelude::*;
use kernel::task::Task;
use kernel::types::ARef;

/// Tasks, told apart by address.
pub(crate) struct ByAddress;

impl Identity for ByAddress {
    type Key = Task;
    fn word(task: &Task) -> usize {
        core::ptr::from_ref(task) as usize
    }
}

/// A slot's state under its lock.
type State<I> = RawSpinLockIrq<Seat<Attached<I>, I>>;

/// The slots: each a key word and its state, boxed (a lock stays put).
type Slots<I> = KVec<Slot<Pin<KBox<State<I>>>>>;

/// The table's book (its quota and tombstone counts) under the insert lock.
pub(crate) struct InsertLock(Pin<KBox<RawSpinLockIrq<Book>>>);

impl Exclusive<Book> for InsertLock {
    fn with<R>(&self, f: impl FnOnce(&mut Book) -> R) -> R {
        f(&mut self.0.lock())
    }
}

/// The table, for park items `I`.
pub(crate) struct Threads<I> {
    table: Table<ByAddress, Slots<I>, InsertLock>,
}

fn errno(refused: Refused) -> Error {
    match refused {
        Refused::Exists => EEXIST,
        Refused::Full => ENOSPC,
        Refused::Quota => edquot(),
        Refused::Invalid => EINVAL,
    }
}

impl<I> Threads<I> {
    /// A table for up to `max_threads` threads (twice as many slots), of
    /// which one user without `CAP_SYS_NICE` attaches at most `per_user`.
    /// Its slots have no park items yet ([`Threads::fill_spares`]).
    pub(crate) fn new(max_threads: usize, per_user: usize) -> Result<Threads<I>> {
        let n = table::slots_for(max_threads).ok_or(EINVAL)?;
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            let state = new_raw_spinlock_irq!(Seat::new(), "mchannel:thread");
            slots.push(Slot::new(KBox::pin_init(state, GFP_KERNEL)?), GFP_KERNEL)?;
        }
        let book = new_raw_spinlock_irq!(Book::new(max_threads, per_user), "mchannel:threads");
        let insert = InsertLock(KBox::pin_init(book, GFP_KERNEL)?);
        let table = Table::new(slots, insert).ok_or(EINVAL)?;
        Ok(Threads { table })
    }

    /// Threads attached now.
    pub(crate) fn live(&self) -> usize {
        self.table.live()
    }

    /// Runs `f` on `task`'s state under its lock, if it is attached.
    /// Callable where sleeping is not allowed; `f` must not drop a park
    /// item (pass it by `&mut Option`, as [`Attached::refill`] takes it).
    pub(crate) fn with<R>(&self, task: &Task, f: impl FnOnce(&mut Attached<I>) -> R) -> Option<R> {
        let state = self.table.find(task)?;
        let mut seat = state.lock();
        seat.of(ByAddress::word(task)).map(f)
    }

    /// Threads `uid` has attached without `CAP_SYS_NICE`.
    pub(crate) fn user_threads(&self, uid: u32) -> usize {
        self.table.user_entries(uid)
    }

    /// Attaches `task` with state `attached` (made for it, without a park
    /// item), which gets the slot's park item. `EEXIST` if it is attached
    /// already, `ENOSPC` if the table is full (or, for a state with a
    /// user, the part of it unprivileged users may take), `EDQUOT` if the
    /// state's user has its quota. Callable where sleeping is not allowed;
    /// constant time but for the probe chain.
    pub(crate) fn insert(&self, task: &Task, attached: Attached<I>) -> Result {
        let word = ByAddress::word(task);
        let user = attached.user();
        // Never set: `attached` comes without an item. Dropped here,
        // outside the locks, if it were.
        let mut displaced = None;
        let added = self.table.insert(task, user, |state| {
            displaced = state.lock().sit(word, attached);
        });
        drop(displaced);
        added.map_err(errno)
    }

    /// Detaches `task`; returns its state for the caller to finish (wake
    /// it if parked). Its park item stays with the slot, and the slot is
    /// left a tombstone ([`Threads::sweep`] empties it later), so this
    /// frees nothing and takes constant time: the exit probe calls it.
    pub(crate) fn remove(&self, task: &Task) -> Option<Attached<I>> {
        self.table
            .remove(task, |state| state.lock().leave())
            .flatten()
    }

    /// Empties the tombstones no probe chain needs (all of them once the
    /// table is empty), holding the insert lock for `SWEEP_CHUNK` slots
    /// at a time. For the control loop (process context). Returns the
    /// tombstones left.
    pub(crate) fn sweep(&self) -> usize {
        self.table.sweep()
    }

    /// Gives each slot without a thread and without a park item one from
    /// `make` (process context; `make` is called outside any lock).
    pub(crate) fn fill_spares(&self, mut make: impl FnMut() -> Result<I>) -> Result {
        for state in self.table.values() {
            let mut item = Some(make()?);
            state.lock().fill(&mut item);
            // Not needed: freed here, outside the lock.
            drop(item);
        }
        Ok(())
    }

    /// Gives each attached thread without a park item one from `make`
    /// (process context; `make` is called outside any lock). A thread
    /// lacks one when its slot had none (a thread left it while its item
    /// was queued) or a park could not allocate the next one.
    pub(crate) fn refill(&self, mut make: impl FnMut() -> Result<I>) {
        for state in self.table.used() {
            let lacks = state.lock().held().is_some_and(|a| !a.has_spare());
            if !lacks {
                continue;
            }
            let Ok(item) = make() else { return };
            let mut item = Some(item);
            if let Some(a) = state.lock().held() {
                a.refill(&mut item);
            }
            drop(item);
        }
    }

    /// Takes every park item out of the table and frees it (process
    /// context): they hold what owns the table (`park.rs`).
    pub(crate) fn drain_spares(&self) {
        for state in self.table.values() {
            let items = state.lock().drain();
            drop(items);
        }
    }

    /// Calls `f` on every attached thread's state, under its lock.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&mut Attached<I>)) {
        for state in self.table.used() {
            if let Some(a) = state.lock().held() {
                f(a);
            }
        }
    }

    /// Calls `f` on every attached thread's state, under its lock, and
    /// wakes the thread if `f` says so, after the lock is dropped (the
    /// scheduler's locks come after ours: see the lock order).
    pub(crate) fn update_each(&self, mut f: impl FnMut(&mut Attached<I>) -> bool) {
        for state in self.table.used() {
            let wake = state
                .lock()
                .held()
                .and_then(|a| f(a).then(|| a.task().clone()));
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
        let max = self.table.slot_count();
        let mut out = KVec::with_capacity(max, GFP_KERNEL)?;
        self.for_each(|a| {
            if out.len() < max && channel.map_or(true, |c| c == a.channel()) {
                let _ = out.push(a.task().clone(), GFP_NOWAIT);
            }
        });
        Ok(out)
    }
}
