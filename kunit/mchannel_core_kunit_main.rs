// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the mchannel_sched control core, run in the kernel on
//! the same source and the same test bodies as the host tests: every case
//! of `mchannel_sched/core/src/selftests.rs`, one KUnit case each, in the
//! suites its `suites!` lists.

use kernel::prelude::*;
use kernel::task::Task;
use kernel::types::ARef;

#[path = "../support/mod.rs"]
mod support;

// Turns the shared cases into KUnit cases.
mod shared_cases;

// The core's shared cases (built with `--cfg cxlf_kunit`).
use mchannel_core::selftests;
// `threads.rs` reaches the core as `crate::control`, as in the module.
use mchannel_core as control;

/// What `threads.rs` takes from the module's `enforce.rs`: the park item
/// a thread keeps spare (the table only stores it; none is queued here).
mod enforce {
    pub(crate) struct Park;

    impl crate::support::task_work::TaskWork for Park {
        fn run(self) {}
    }
}

// The module's table of attached threads, compiled in from the same file
// (the tests use the bookkeeping, not every field the module reads).
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
    threads::Attached {
        task: task.into(),
        channel,
        follow_forks: false,
        user,
        run: control::thread::RunState::new(0, 100_000, 50_000),
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
    kassert_eq!(table.with(me, |a| a.channel), Some(7));
    kassert!(table.insert(me, || attached(me, 8)) == Err(EEXIST));
    // The first attach stays.
    kassert_eq!(table.with(me, |a| a.channel), Some(7));
    kassert_eq!(table.tasks(Some(7))?.len(), 1);
    kassert_eq!(table.tasks(Some(8))?.len(), 0);
    let gone = table.remove(me);
    kassert!(gone.is_some_and(|a| a.channel == 7));
    kassert_eq!(table.live(), 0);
    kassert!(table.with(me, |a| a.channel).is_none());
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
        kassert_eq!(table.with(t, |a| a.channel), Some(i as u32));
    }
    // A freed slot (a tombstone in a probe chain) takes the next one, and
    // the others are still found past it.
    kassert!(table.remove(&tasks[3]).is_some());
    table.insert(last, || attached(last, 16))?;
    for (i, t) in tasks.iter().enumerate() {
        let want = if i == 3 { None } else { Some(i as u32) };
        kassert_eq!(table.with(t, |a| a.channel), want);
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

kunit_tests!(
    mchannel_threads,
    [
        attach_then_detach_leaves_no_trace,
        a_full_table_refuses_and_frees_its_slots,
        a_user_past_its_quota_gets_edquot,
        unprivileged_users_leave_room_for_root,
    ]
);
