// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the mchannel_sched control core, run in the kernel on
//! the same source and the same test bodies as the host tests: every case
//! of `mchannel_sched/core/src/selftests.rs`, one KUnit case each, in the
//! suites its `suites!` lists.

use kernel::prelude::*;
use kernel::task::Task;
use kernel::types::ARef;

use cxlf_support as support;
use support::{kassert, kassert_eq, kunit_tests};

// Turns the shared cases into KUnit cases.
mod shared_cases;

// The core's shared cases (built with `--cfg cxlf_kunit`).
use mchannel_core::selftests;
// `threads.rs` reaches the core as `crate::control`, as in the module.
use mchannel_core as control;

// The module's table of attached threads, compiled in from the same file
// (the tests use the bookkeeping, not the parking or every accessor).
#[allow(dead_code)]
#[path = "../mchannel_sched/threads.rs"]
mod threads;

module! {
    type: MchannelCoreKunit,
    name: "mchannel_core_kunit",
    author: "cxlfabric developers",
    description: "KUnit suites of the mchannel_sched control core",
    license: "GPL",
}

struct MchannelCoreKunit;

impl kernel::Module for MchannelCoreKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(MchannelCoreKunit)
    }
}

mchannel_core::suites!(shared_kunit_suite);

/// An attached-thread state for channel `channel`, attached by a
/// privileged caller.
fn attached(task: &Task, channel: u32) -> threads::Attached {
    by_user(task, channel, None)
}

/// As [`attached`], for `user`'s quota (`None`: privileged).
fn by_user(task: &Task, channel: u32, user: Option<u32>) -> threads::Attached {
    let run = control::thread::RunState::new(0, 100_000, 50_000);
    threads::Attached::new(task, channel, false, user, run)
}

/// Up to `n` distinct live tasks (kernel threads included: the table keys
/// on the task only).
fn some_tasks(n: usize) -> Result<KVec<ARef<Task>>> {
    let mut out = KVec::new();
    for pid in 1..100_000 {
        if out.len() == n {
            break;
        }
        if let Some(t) = support::task::get_by_vpid(pid) {
            out.push(t, GFP_KERNEL)?;
        }
    }
    Ok(out)
}

fn attach_then_detach_leaves_no_trace() -> Result {
    let table = threads::Threads::new(16, 16)?;
    let me = kernel::current!();
    kassert_eq!(table.live(), 0);
    table.insert(me, || attached(me, 7))?;
    kassert_eq!(table.live(), 1);
    kassert_eq!(table.with(me, |a| a.channel()), Some(7));
    kassert!(table.insert(me, || attached(me, 8)) == Err(EEXIST));
    // The first attach stays.
    kassert_eq!(table.with(me, |a| a.channel()), Some(7));
    kassert_eq!(table.tasks(Some(7))?.len(), 1);
    kassert_eq!(table.tasks(Some(8))?.len(), 0);
    let gone = table.remove(me);
    kassert!(gone.is_some_and(|a| a.channel() == 7));
    kassert_eq!(table.live(), 0);
    kassert!(table.with(me, |a| a.channel()).is_none());
    kassert!(table.remove(me).is_none(), "removed once");
    kassert!(table.find(me).is_none());
    Ok(())
}

fn a_full_table_refuses_and_frees_its_slots() -> Result {
    let table = threads::Threads::new(16, 16)?;
    let tasks = some_tasks(17)?;
    kassert!(
        tasks.len() == 17,
        "only {} tasks to fill the table",
        tasks.len()
    );
    for (i, t) in tasks.iter().take(16).enumerate() {
        table.insert(t, || attached(t, i as u32))?;
    }
    let last = &tasks[16];
    kassert!(table.insert(last, || attached(last, 16)) == Err(ENOSPC));
    // Every one is found under its own key, with its own state.
    for (i, t) in tasks.iter().take(16).enumerate() {
        kassert_eq!(table.with(t, |a| a.channel()), Some(i as u32));
    }
    // A freed slot (a tombstone in a probe chain) takes the next one, and
    // the others are still found past it.
    kassert!(table.remove(&tasks[3]).is_some());
    table.insert(last, || attached(last, 16))?;
    for (i, t) in tasks.iter().enumerate() {
        let want = if i == 3 { None } else { Some(i as u32) };
        kassert_eq!(table.with(t, |a| a.channel()), want);
    }
    let mut seen = 0;
    table.for_each(|_| seen += 1);
    kassert_eq!(seen, 16);
    for t in tasks.iter() {
        drop(table.remove(t));
    }
    kassert_eq!(table.live(), 0);
    kassert_eq!(table.tasks(None)?.len(), 0);
    Ok(())
}

fn a_user_past_its_quota_gets_edquot() -> Result {
    let table = threads::Threads::new(16, 3)?;
    let tasks = some_tasks(6)?;
    kassert!(tasks.len() == 6, "only {} tasks", tasks.len());
    for t in tasks.iter().take(3) {
        table.insert(t, || by_user(t, 0, Some(1000)))?;
    }
    let edquot = support::error::edquot();
    kassert!(table.insert(&tasks[3], || by_user(&tasks[3], 0, Some(1000))) == Err(edquot));
    kassert_eq!(table.user_threads(1000), 3);
    // Other users and privileged callers are not held by it.
    table.insert(&tasks[3], || by_user(&tasks[3], 0, Some(1001)))?;
    table.insert(&tasks[4], || attached(&tasks[4], 0))?;
    kassert_eq!(table.user_threads(1001), 1);
    // A detach gives the quota back.
    kassert!(table.remove(&tasks[0]).is_some());
    kassert_eq!(table.user_threads(1000), 2);
    table.insert(&tasks[5], || by_user(&tasks[5], 0, Some(1000)))?;
    kassert_eq!(table.user_threads(1000), 3);
    for t in tasks.iter() {
        drop(table.remove(t));
    }
    kassert_eq!(table.user_threads(1000), 0);
    kassert_eq!(table.user_threads(1001), 0);
    kassert_eq!(table.live(), 0);
    Ok(())
}

fn unprivileged_users_leave_room_for_root() -> Result {
    // 16 threads, an eighth (2) kept for privileged callers.
    let table = threads::Threads::new(16, 16)?;
    let tasks = some_tasks(17)?;
    kassert!(tasks.len() == 17, "only {} tasks", tasks.len());
    for (i, t) in tasks.iter().take(14).enumerate() {
        // Several users: the share, not one quota, is what runs out.
        let uid = 1000 + (i % 3) as u32;
        table.insert(t, || by_user(t, 0, Some(uid)))?;
    }
    let t = &tasks[14];
    kassert!(table.insert(t, || by_user(t, 0, Some(2000))) == Err(ENOSPC));
    table.insert(t, || attached(t, 0))?;
    let t = &tasks[15];
    table.insert(t, || attached(t, 0))?;
    let t = &tasks[16];
    kassert!(table.insert(t, || attached(t, 0)) == Err(ENOSPC), "full");
    for t in tasks.iter() {
        drop(table.remove(t));
    }
    kassert_eq!(table.live(), 0);
    Ok(())
}

fn the_sweep_keeps_every_chain() -> Result {
    let table = threads::Threads::new(16, 16)?;
    let tasks = some_tasks(16)?;
    kassert!(tasks.len() == 16, "only {} tasks", tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        table.insert(t, || attached(t, i as u32))?;
    }
    // Every other one detached: its tombstone goes only where no probe
    // chain passes, and every thread left is still found.
    for t in tasks.iter().step_by(2) {
        kassert!(table.remove(t).is_some());
    }
    table.sweep();
    for (i, t) in tasks.iter().enumerate() {
        let want = (i % 2 == 1).then_some(i as u32);
        kassert_eq!(table.with(t, |a| a.channel()), want);
    }
    // Detached ones attach again past what is left.
    for (i, t) in tasks.iter().enumerate().step_by(2) {
        table.insert(t, || attached(t, i as u32))?;
    }
    for (i, t) in tasks.iter().enumerate() {
        kassert_eq!(table.with(t, |a| a.channel()), Some(i as u32));
    }
    // Once the table is empty, the sweep leaves no tombstone.
    for t in tasks.iter() {
        kassert!(table.remove(t).is_some());
    }
    kassert_eq!(table.sweep(), 0);
    kassert_eq!(table.live(), 0);
    Ok(())
}

fn a_slot_keeps_its_park_item() -> Result {
    // The module's shared state: every slot gets a park item up front, so
    // that neither the fork probe allocates nor the exit probe frees.
    let shared = threads::Shared::new(16, 16)?;
    let table = &shared.threads;
    let me = kernel::current!();
    let first = table.insert(me, || attached(me, 1));
    let had = table.with(me, |a| a.has_spare());
    let gone = table.remove(me);
    let left_with = gone.as_ref().map(|a| a.has_spare());
    drop(gone);
    let again = table.insert(me, || attached(me, 2));
    let has_again = table.with(me, |a| a.has_spare());
    drop(table.remove(me));
    // The items refer to the shared state: freed before it goes.
    table.drain_spares();
    kassert!(first.is_ok() && again.is_ok());
    kassert_eq!(had, Some(true));
    // The item stays with the slot.
    kassert_eq!(left_with, Some(false));
    kassert_eq!(has_again, Some(true));
    Ok(())
}

fn a_forked_thread_inherits_its_channel() -> Result {
    let tasks = some_tasks(2)?;
    kassert!(tasks.len() == 2, "only {} tasks", tasks.len());
    let run = control::thread::RunState::new(0, 100_000, 50_000);
    let parent = threads::Attached::new(&tasks[0], 3, true, Some(1000), run);
    let child = parent.child(&tasks[1], 0);
    kassert!(child
        .as_ref()
        .is_some_and(|c| c.channel() == 3 && !c.privileged()));
    kassert!(child.is_some_and(|c| core::ptr::eq::<Task>(&**c.task(), &*tasks[1])));
    // A thread attached alone does not take its children along.
    kassert!(attached(&tasks[0], 3).child(&tasks[1], 0).is_none());
    Ok(())
}

kunit_tests!(
    mchannel_threads,
    [
        attach_then_detach_leaves_no_trace,
        a_full_table_refuses_and_frees_its_slots,
        a_user_past_its_quota_gets_edquot,
        unprivileged_users_leave_room_for_root,
        the_sweep_keeps_every_chain,
        a_slot_keeps_its_park_item,
        a_forked_thread_inherits_its_channel,
    ]
);
