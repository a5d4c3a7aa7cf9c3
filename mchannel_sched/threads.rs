// SPDX-License-Identifier: GPL-2.0

//! The attached threads: a fixed table the scheduler's probes search
//! without taking a lock, each thread's state behind its slot's raw
//! spinlock, and the park item ([`Park`]) that holds a thread back.
//!
//! The table is open addressing over task addresses. A slot's `key` says
//! which task it is for (or empty, or a tombstone left by a detach); the
//! probes find a slot by key with atomic loads only, then take the slot's
//! lock and check that the state is still for that task (a slot can be
//! reused between the load and the lock). Slots live as long as the module,
//! so a stale key never leads to freed memory. Inserting and removing
//! (attach, detach, fork, exit) take the table's `insert` lock, each in
//! constant time; tombstones are reused by inserts, and [`Threads::sweep`]
//! (the control loop, process context) empties those no probe chain
//! needs, and all of them once the table is empty.
//!
//! Contexts: the fork and exit probes insert and remove with preemption
//! off, the switch probe and the budget timer (`enforce.rs`) lock a slot
//! under the runqueue lock or in hard interrupt context. So every lock here
//! is a raw spinlock (a `spinlock_t` sleeps on PREEMPT_RT), and nothing is
//! allocated or freed under one or in a probe (the allocator takes sleeping
//! locks on PREEMPT_RT): each slot keeps a park item for whichever thread
//! it holds, allocated in process context (with the table, after each park
//! by [`Park::run`], and by the control loop for a thread without one).
//!
//! Threads attached by callers without `CAP_SYS_NICE` count against their
//! user's quota, and together never take the last eighth of the table: an
//! unprivileged user cannot keep root from attaching.

use crate::control::thread::{OnCpu, RunState};
use crate::support::error::edquot;
use crate::support::new_raw_spinlock_irq;
use crate::support::spinlock_irq::RawSpinLockIrq;
use crate::support::task;
use crate::support::task_work::{Notify, Pending, TaskWork, TaskWorkBox};
use crate::support::time::monotonic_ns;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::task::Task;
use kernel::types::ARef;

const EMPTY: usize = 0;
const TOMBSTONE: usize = 1;

/// Slots [`Threads::sweep`] looks at per hold of the insert lock.
const SWEEP_CHUNK: usize = 64;

/// A parked thread may wake this much after its window's end (timer
/// slack: lets the kernel batch wakeups).
const PARK_SLACK_NS: u64 = 2_000;

/// How long a newly attached thread sleeps so that the scheduler switches
/// it in again (see [`Shared::settle`]).
const SETTLE_NS: u64 = 10_000;

fn key_of(task: &Task) -> usize {
    core::ptr::from_ref(task) as usize
}

/// A park item allocated ahead, for a thread to queue.
pub(crate) type Spare = TaskWorkBox<Park>;

/// An attached thread. Made by [`Attached::new`] (or [`Attached::child`])
/// without a park item: the table gives it its slot's. Dropping one frees
/// nothing but a task reference (the table keeps the item with the slot).
pub(crate) struct Attached {
    /// Holds the task (the probes see it by address only).
    task: ARef<Task>,
    /// Index of its channel.
    channel: u32,
    /// Threads and processes it creates join its channel.
    follow_forks: bool,
    /// The user whose quota it counts against, or `None` if a caller with
    /// `CAP_SYS_NICE` attached it (then only such a caller may detach it).
    /// Threads it forks inherit it.
    user: Option<u32>,
    run: RunState,
    /// A park item is queued (the timer queues at most one).
    queued: bool,
    /// The next park item, allocated ahead (the timer cannot allocate).
    spare: Option<Spare>,
    /// Parked now, since when (or since the control loop last counted
    /// it), and the time parked not yet counted (nanoseconds).
    parked: bool,
    parked_since: u64,
    parked_ns: u64,
    /// What its meter counted since the last control period: perf
    /// events, or bytes it reported.
    counted: u64,
    /// A perf counter counts for it (`meter.rs`).
    has_counter: bool,
    /// When its slice on a CPU began, and the scheduler's count of its
    /// on-CPU time then (`switch_out` charges the difference).
    slice: Option<(u64, u64)>,
}

impl Attached {
    /// `task` on channel `channel` with run window `run`; `follow_forks`:
    /// the threads it creates join too; `user`: the uid whose quota it
    /// counts against (`None`: attached by a caller with `CAP_SYS_NICE`).
    pub(crate) fn new(
        task: &Task,
        channel: u32,
        follow_forks: bool,
        user: Option<u32>,
        run: RunState,
    ) -> Attached {
        Attached {
            task: task.into(),
            channel,
            follow_forks,
            user,
            run,
            queued: false,
            spare: None,
            parked: false,
            parked_since: 0,
            parked_ns: 0,
            counted: 0,
            has_counter: false,
            slice: None,
        }
    }

    /// The state of `child`, which this thread just created at `now`, if
    /// its forks are followed: its channel, its user and its next budget.
    pub(crate) fn child(&self, child: &Task, now: u64) -> Option<Attached> {
        if !self.follow_forks {
            return None;
        }
        let (t_r, t_w) = self.run.next_ns();
        let run = RunState::new(now, t_w, t_r);
        Some(Attached::new(child, self.channel, true, self.user, run))
    }

    pub(crate) fn task(&self) -> &ARef<Task> {
        &self.task
    }

    pub(crate) fn channel(&self) -> u32 {
        self.channel
    }

    /// Attached by a caller with `CAP_SYS_NICE`.
    pub(crate) fn privileged(&self) -> bool {
        self.user.is_none()
    }

    /// Its run window.
    pub(crate) fn run(&mut self) -> &mut RunState {
        &mut self.run
    }

    /// It comes on a CPU at `now`, having run `exec_ns` by the scheduler's
    /// count: what its budget says.
    pub(crate) fn switch_in(&mut self, now: u64, exec_ns: u64) -> OnCpu {
        self.slice = Some((now, exec_ns));
        self.run.switch_in(now);
        self.run.check(now)
    }

    /// It leaves its CPU at `now`, having run `exec_ns` by the scheduler's
    /// count: what the scheduler charged its slice beyond the slice's span
    /// counts too, so budgets hold the thread's own CPU clock.
    pub(crate) fn switch_out(&mut self, now: u64, exec_ns: u64) {
        self.run.switch_out(now);
        if let Some((since, exec_then)) = self.slice.take() {
            let charged = exec_ns.saturating_sub(exec_then);
            self.run.reconcile(now.saturating_sub(since), charged);
        }
    }

    /// A park item is queued for it.
    pub(crate) fn is_queued(&self) -> bool {
        self.queued
    }

    /// Its park item to queue (then it counts as queued), unless one is
    /// queued already or it has none.
    pub(crate) fn take_park(&mut self) -> Option<Spare> {
        if self.queued {
            return None;
        }
        let item = self.spare.take()?;
        self.queued = true;
        Some(item)
    }

    /// The item [`take_park`](Self::take_park) gave could not be queued:
    /// not queued, and the item is its spare again if it has none (else it
    /// stays in `item`, for the caller to drop outside any lock).
    pub(crate) fn park_failed(&mut self, item: &mut Option<Spare>) {
        self.queued = false;
        self.refill(item);
    }

    /// Takes `spare` as its park item if it has none.
    pub(crate) fn refill(&mut self, spare: &mut Option<Spare>) {
        if self.spare.is_none() {
            self.spare = spare.take();
        }
    }

    pub(crate) fn has_spare(&self) -> bool {
        self.spare.is_some()
    }

    /// Parked now.
    pub(crate) fn is_parked(&self) -> bool {
        self.parked
    }

    /// The time it was parked since the last call, counting a park still
    /// in progress up to `now` (a park counts in the periods it spans).
    pub(crate) fn take_parked_ns(&mut self, now: u64) -> u64 {
        if self.parked {
            let so_far = now.saturating_sub(self.parked_since);
            self.parked_ns = self.parked_ns.saturating_add(so_far);
            self.parked_since = self.parked_since.max(now);
        }
        core::mem::take(&mut self.parked_ns)
    }

    /// Adds `n` to what its meter counted (perf events, or bytes).
    pub(crate) fn count(&mut self, n: u64) {
        self.counted = self.counted.saturating_add(n);
    }

    /// What its meter counted since the last call.
    pub(crate) fn take_counted(&mut self) -> u64 {
        core::mem::take(&mut self.counted)
    }

    /// A perf counter counts for it.
    pub(crate) fn has_counter(&self) -> bool {
        self.has_counter
    }

    pub(crate) fn set_counter(&mut self, has: bool) {
        self.has_counter = has;
    }

    /// Its channel's meter changed: counts in the old units go, and so
    /// does its counter (one for the new event is made next period).
    pub(crate) fn reset_meter(&mut self) {
        self.counted = 0;
        self.has_counter = false;
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

/// What changes with the keys, under the insert lock.
///
/// # Invariants
///
/// `tombstones` is the number of slots whose key is `TOMBSTONE`.
struct Keys {
    quota: Quota,
    tombstones: usize,
    /// A tombstone was left since the last sweep.
    dirty: bool,
}

/// A slot's state.
///
/// # Invariants
///
/// `spare` is `None` while `attached` is `Some` (the thread holds the
/// slot's park item).
pub(crate) struct ThreadState {
    key: usize,
    attached: Option<Attached>,
    /// The slot's park item while no thread holds it.
    spare: Option<Spare>,
}

impl ThreadState {
    /// The attached thread, if this slot is for `task`.
    fn of(&mut self, task: &Task) -> Option<&mut Attached> {
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
    state: RawSpinLockIrq<ThreadState>,
}

impl Slot {
    fn new() -> impl PinInit<Self> {
        pin_init!(Slot {
            key: AtomicUsize::new(EMPTY),
            state <- new_raw_spinlock_irq!(
                ThreadState {
                    key: EMPTY,
                    attached: None,
                    spare: None,
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
/// changes only under `insert`; every slot from a key's start (`start`) up
/// to the slot holding it is non-`EMPTY`; `live` counts slots with a task;
/// the quota counts, per user, the slots whose thread has that user.
pub(crate) struct Threads {
    slots: KVec<Pin<KBox<Slot>>>,
    max_threads: usize,
    live: AtomicUsize,
    insert: Pin<KBox<RawSpinLockIrq<Keys>>>,
}

impl Threads {
    /// A table for up to `max_threads` threads (twice as many slots), of
    /// which one user without `CAP_SYS_NICE` attaches at most `per_user`.
    /// Its slots have no park items yet ([`Threads::fill_spares`]).
    pub(crate) fn new(max_threads: usize, per_user: usize) -> Result<Threads> {
        let n = max_threads
            .checked_mul(2)
            .and_then(usize::checked_next_power_of_two)
            .ok_or(EINVAL)?;
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(KBox::pin_init(Slot::new(), GFP_KERNEL)?, GFP_KERNEL)?;
        }
        // INVARIANT: no tombstone yet.
        let keys = Keys {
            quota: Quota::new(max_threads, per_user),
            tombstones: 0,
            dirty: false,
        };
        let insert = KBox::pin_init(new_raw_spinlock_irq!(keys, "mchannel:threads"), GFP_KERNEL)?;
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

    /// The slot whose key is `task` (lock it and check the state's key:
    /// it may have changed since).
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
    /// Callable where sleeping is not allowed; `f` must not drop a park
    /// item (pass it by `&mut Option`, as [`Attached::refill`] takes it).
    pub(crate) fn with<R>(&self, task: &Task, f: impl FnOnce(&mut Attached) -> R) -> Option<R> {
        let slot = self.find(task)?;
        let mut state = slot.state.lock();
        state.of(task).map(f)
    }

    /// Threads `uid` has attached without `CAP_SYS_NICE`.
    pub(crate) fn user_threads(&self, uid: u32) -> usize {
        self.insert.lock().quota.of(uid)
    }

    /// Attaches `task` with `make`'s state, which gets the slot's park
    /// item. `EEXIST` if it is attached already, `ENOSPC` if the table is
    /// full (or, for a state with a user, the part of it unprivileged
    /// users may take), `EDQUOT` if the state's user has its quota.
    /// Callable where sleeping is not allowed; constant time but for the
    /// probe chain.
    pub(crate) fn insert(&self, task: &Task, make: impl FnOnce() -> Attached) -> Result {
        let mut keys = self.insert.lock();
        if self.find(task).is_some() {
            return Err(EEXIST);
        }
        if self.live() >= self.max_threads {
            return Err(ENOSPC);
        }
        let mut attached = make();
        if let Some(uid) = attached.user {
            keys.quota.charge(uid)?;
        }
        let key = key_of(task);
        let mask = self.slots.len() - 1;
        let mut i = self.start(key);
        for _ in 0..self.slots.len() {
            let Some(slot) = self.slots.get(i) else { break };
            let old = slot.key.load(Ordering::Relaxed);
            if matches!(old, EMPTY | TOMBSTONE) {
                {
                    let mut state = slot.state.lock();
                    attached.refill(&mut state.spare);
                    // INVARIANT: the thread took the slot's item, if it had
                    // none of its own (never: `Attached::new` gives none).
                    state.key = key;
                    state.attached = Some(attached);
                }
                if old == TOMBSTONE {
                    // INVARIANT: one tombstone fewer.
                    keys.tombstones = keys.tombstones.saturating_sub(1);
                }
                // INVARIANT: the state holds the task before the probes can
                // find the key; the first free slot of its chain, so every
                // one before it is in use or a tombstone.
                slot.key.store(key, Ordering::Release);
                self.live.fetch_add(1, Ordering::AcqRel);
                return Ok(());
            }
            i = (i + 1) & mask;
        }
        // Unreachable (there are twice as many slots as threads): undo.
        if let Some(uid) = attached.user {
            keys.quota.release(uid);
        }
        Err(ENOSPC)
    }

    /// Detaches `task`; returns its state for the caller to finish (wake
    /// it if parked). Its park item stays with the slot, and the slot is
    /// left a tombstone ([`Threads::sweep`] empties it later), so this
    /// frees nothing and takes constant time: the exit probe calls it.
    pub(crate) fn remove(&self, task: &Task) -> Option<Attached> {
        let mut keys = self.insert.lock();
        let slot = self.find(task)?;
        let attached = {
            let mut state = slot.state.lock();
            let mut attached = state.attached.take();
            if let Some(a) = attached.as_mut() {
                // INVARIANT: no thread holds the slot now.
                state.spare = a.spare.take();
            }
            state.key = EMPTY;
            attached
        };
        if let Some(uid) = attached.as_ref().and_then(|a| a.user) {
            keys.quota.release(uid);
        }
        // INVARIANT: the state holds no task any more; one tombstone more.
        slot.key.store(TOMBSTONE, Ordering::Release);
        keys.tombstones = keys.tombstones.saturating_add(1);
        keys.dirty = true;
        self.live.fetch_sub(1, Ordering::AcqRel);
        attached
    }

    /// Turns tombstones back into empty slots: every one when the table
    /// is empty, otherwise those followed by an empty slot (no probe chain
    /// passes an empty slot, so none needs them), backwards so that a run
    /// of them goes at once. For the control loop (process context): it
    /// takes the insert lock for [`SWEEP_CHUNK`] slots at a time, and does
    /// nothing unless a detach left a tombstone since the last sweep or the
    /// table is empty and has some. Returns the tombstones left.
    pub(crate) fn sweep(&self) -> usize {
        {
            let keys = self.insert.lock();
            if !keys.dirty && (keys.tombstones == 0 || self.live() > 0) {
                return keys.tombstones;
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = self.slots.len();
        while i > 0 {
            let mut keys = self.insert.lock();
            keys.dirty = false;
            // No key can appear meanwhile: inserts take the lock too.
            let all = self.live() == 0;
            let stop = i.saturating_sub(SWEEP_CHUNK);
            while i > stop {
                i -= 1;
                let (Some(slot), Some(next)) = (self.slots.get(i), self.slots.get((i + 1) & mask))
                else {
                    continue;
                };
                if slot.key.load(Ordering::Relaxed) != TOMBSTONE {
                    continue;
                }
                if all || next.key.load(Ordering::Relaxed) == EMPTY {
                    // INVARIANT: no key's chain passes this slot (there is
                    // no key, or the next slot is empty, so every chain
                    // that reaches it ends at the next one); one tombstone
                    // fewer.
                    slot.key.store(EMPTY, Ordering::Release);
                    keys.tombstones = keys.tombstones.saturating_sub(1);
                }
            }
        }
        self.insert.lock().tombstones
    }

    /// Gives each slot without a thread and without a park item one from
    /// `make` (process context; `make` is called outside any lock).
    pub(crate) fn fill_spares(&self, mut make: impl FnMut() -> Result<Spare>) -> Result {
        for slot in self.slots.iter() {
            let mut item = Some(make()?);
            {
                let mut state = slot.state.lock();
                if state.attached.is_none() && state.spare.is_none() {
                    state.spare = item.take();
                }
            }
            // Not needed: freed here, outside the lock.
            drop(item);
        }
        Ok(())
    }

    /// Gives each attached thread without a park item one from `make`
    /// (process context; `make` is called outside any lock). A thread
    /// lacks one when its slot had none (a thread left it while its item
    /// was queued) or a park could not allocate the next one.
    pub(crate) fn refill(&self, mut make: impl FnMut() -> Result<Spare>) {
        for slot in self.slots.iter() {
            if slot.key.load(Ordering::Acquire) <= TOMBSTONE {
                continue;
            }
            let lacks = slot
                .state
                .lock()
                .attached
                .as_ref()
                .is_some_and(|a| !a.has_spare());
            if !lacks {
                continue;
            }
            let Ok(item) = make() else { return };
            let mut item = Some(item);
            if let Some(a) = slot.state.lock().attached.as_mut() {
                a.refill(&mut item);
            }
            drop(item);
        }
    }

    /// Takes every park item out of the table and frees it (process
    /// context): they hold what owns the table ([`Park`]'s `Arc<Shared>`).
    pub(crate) fn drain_spares(&self) {
        for slot in self.slots.iter() {
            let items = {
                let mut state = slot.state.lock();
                let held = state.attached.as_mut().and_then(|a| a.spare.take());
                (state.spare.take(), held)
            };
            drop(items);
        }
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

/// What the probes, the timers and the park items share.
pub(crate) struct Shared {
    pub(crate) threads: Threads,
    /// Park items queued and not yet finished: unload waits for them.
    pub(crate) pending: Arc<Pending>,
    /// Set first on unload: nothing parks any more.
    pub(crate) shutdown: AtomicBool,
    pub(crate) counters: Counters,
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
                a.run.exempt(now, entered);
                if !a.run.on_cpu() && !stop {
                    // Running, but not switched in since it was attached:
                    // a short sleep has the switch probe see it.
                    return Some(now.saturating_add(SETTLE_NS));
                }
                match a.run.check(now) {
                    OnCpu::Park { until_ns } if !stop => {
                        a.parked = true;
                        a.parked_since = now;
                        Some(until_ns)
                    }
                    _ => {
                        a.queued = false;
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
        while let Some(until) = shared.park_until(me, &mut spare, entered) {
            let killed = task::sleep_until_killable(until, PARK_SLACK_NS);
            let now = monotonic_ns();
            shared.threads.with(me, |a| {
                // What the control loop has not counted yet (none if it
                // was detached, and attached again, while it slept).
                if a.parked {
                    let slept = now.saturating_sub(a.parked_since);
                    a.parked_ns = a.parked_ns.saturating_add(slept);
                }
                a.parked = false;
                if killed {
                    a.queued = false;
                }
            });
            if killed {
                break;
            }
        }
        // An item not needed (the thread left, or has one) is freed here,
        // in process context.
        drop(spare);
    }
}
