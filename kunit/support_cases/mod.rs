// SPDX-License-Identifier: GPL-2.0

//! The KUnit suites of the support layer, one file per wrapper tested.
//! `support_kunit_main.rs` holds the module and its test device, which
//! the miscdevice suite registers too.

mod hrtimer;
mod kunit;
mod miscdevice;
mod netdev;
mod netlend;
mod pci;
mod perf;
mod spinlock_irq;
mod sysfs;
mod task_work;
mod tracepoint;
