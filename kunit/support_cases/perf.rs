// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_perf`: the perf counter wrapper.

use kernel::prelude::*;

use cxlf_support as support;
use support::perf::{Counter, Event};
use support::{kassert, kunit_tests};

/// `PERF_TYPE_SOFTWARE`/`PERF_COUNT_SW_TASK_CLOCK`: on-CPU nanoseconds,
/// which every kernel provides (a hardware event needs a PMU).
const TASK_CLOCK: Event = Event {
    type_: 1,
    config: 1,
};

/// Spins until `counter` has counted `ns` more than `from`, for at most
/// 2 s of wall time (the test thread shares the CPUs with the boot);
/// returns what it counted.
fn spin_until_counted(counter: &Counter, from: u64, ns: u64) -> u64 {
    let start = support::time::monotonic_ns();
    loop {
        let counted = counter.read().saturating_sub(from);
        if counted >= ns || support::time::monotonic_ns() - start > 2_000_000_000 {
            return counted;
        }
        core::hint::spin_loop();
    }
}

fn perf_task_clock_counts_while_the_task_runs() -> Result {
    let c = Counter::new(kernel::current!(), TASK_CLOCK)?;
    // The reads themselves run too: the wall time spans them.
    let start = support::time::monotonic_ns();
    let before = c.read();
    let ran = spin_until_counted(&c, before, 1_000_000);
    let wall = support::time::monotonic_ns() - start;
    // It counts while the task runs, and never more than the time passed.
    kassert!(ran >= 1_000_000, "counted {} ns in {} ns", ran, wall);
    kassert!(ran <= wall + 100_000, "counted {} ns of {}", ran, wall);
    // A second counter starts from zero: it counts no more than the time
    // since it was made (however slow making one is: a debug kernel's
    // takes milliseconds); dropping the first leaves it counting.
    let made = support::time::monotonic_ns();
    let d = Counter::new(kernel::current!(), TASK_CLOCK)?;
    let first = d.read();
    let since = support::time::monotonic_ns() - made;
    kassert!(
        first <= since + 100_000,
        "counted {} ns of {}",
        first,
        since
    );
    drop(c);
    let more = spin_until_counted(&d, first, 500_000);
    kassert!(more >= 500_000, "stopped counting: {} ns in 2 s", more);
    Ok(())
}

fn perf_unknown_event_types_are_refused() -> Result {
    let bad = Event {
        type_: 0x7fff_fff0,
        config: 0,
    };
    let err = Counter::new(kernel::current!(), bad).err();
    kassert!(err == Some(ENOENT), "{:?}", err.map(|e| e.to_errno()));
    Ok(())
}

kunit_tests!(
    cxlfabric_support_perf,
    [
        perf_task_clock_counts_while_the_task_runs,
        perf_unknown_event_types_are_refused,
    ]
);
