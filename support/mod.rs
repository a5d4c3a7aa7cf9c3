// SPDX-License-Identifier: GPL-2.0

//! cxlfabric kernel support layer.
//!
//! Every module compiles this directory in with
//! `#[path = "../support/mod.rs"] mod support;`. It holds the project's
//! `unsafe` code: safe wrappers over the raw 6.12 bindings, shaped like their
//! upstream (6.13-6.15) counterparts, so that moving to a newer kernel means
//! deleting a wrapper and switching the `use` lines.
//!
//! | wrapper          | upstream counterpart                                     |
//! |------------------|----------------------------------------------------------|
//! | [`kunit`]        | `kernel::kunit` (`#[kunit_tests]`, 6.15)                 |
//! | [`kvec`]         | `Vec::pop` (6.14); `swap_remove`: none                   |
//! | [`miscdevice`]   | `kernel::miscdevice` (6.13)                              |
//! | [`fs`]           | `kernel::fs::File` (6.13), `ARef<Inode>`                 |
//! | [`mm`]           | `mm::virt::{VmaRef, VmaNew}` (6.16); faults: none        |
//! | [`driver`]       | `kernel::driver::Registration` (6.13)                    |
//! | [`dax`]          | none; a [`driver`] bus like `kernel::platform`           |
//! | [`pci`]          | `kernel::pci` (6.14-6.17): driver, BARs, MSI-X vectors   |
//! | [`irq`]          | `kernel::irq::Registration` (6.17), `Arc` handlers      |
//! | [`netdev`]       | none (2023 RFC `kernel::net::Device`): Ethernet devices |
//! | [`coherent`]     | `io::mem::IoMem` (6.16) maps uncached; WB atomics: none  |
//! | [`dma`]          | `kernel::dma::CoherentAllocation` (6.14)                 |
//! | [`napi`]         | none (2023 RFC): NAPI contexts, GRO receive              |
//! | [`pagemap`]      | none: ZONE_DEVICE pages (device-dax's)                   |
//! | [`sharedmem`]    | `io::mem::ExclusiveIoMem` (6.16); accessors: none        |
//! | [`cred`]         | `kernel::cred`, `Task::current` (6.13)                   |
//! | [`time`]         | `kernel::time`, `kernel::delay`                          |
//! | [`hrtimer`]      | `kernel::time::hrtimer` (6.15), `Arc` pointers only      |
//! | [`tracepoint`]   | none: probes on the scheduler's tracepoints              |
//! | [`sysfs`]        | none: kobject directories of read-only attributes        |
//! | [`task_work`]    | none: `task_work_add` with a count for unload            |
//! | [`perf`]         | none: counting perf events on a task                     |
//! | [`spinlock_irq`] | `SpinLockIrq` (6.17); a raw spinlock here                |
//! | [`task`]         | `Task::tgid_nr_ns` etc. (6.13-6.15); thread walk: none   |
//! | [`error`]        | `kernel::error::code` (`ETIMEDOUT`, `EOPNOTSUPP`, ...)   |
//! | [`ratelimit`]    | none (C's `pr_*_ratelimited` are macros)                 |
//! | [`workqueue`]    | `kernel::workqueue` delayed work (6.16)                  |
//! | [`params`]       | `module!` parameters (6.15)                              |
//! | [`region`]       | none: beluga_dax's C region ABI                          |
//! | [`page`]         | none                                                     |
//! | [`uapi`]         | none: the project's ABI                                  |
//!
//! Whatever 6.12's bindings give Rust (exported functions, constants,
//! plain struct fields, the kernel's Rust helpers) is used directly; the
//! C helpers in `helpers.c` cover only static inlines, macros and
//! structures bindgen does not see or cannot express (`struct
//! miscdevice`, `struct dev_dax`, `vm_flags_set`, `pfn_t`, ...), each
//! saying why it is C. Every module links them through its own
//! `helpers.c` (`#include "../support/helpers.c"`).

// Each module uses a subset of the layer; the rest is not dead code.
#![allow(dead_code)]

pub(crate) mod coherent;
pub(crate) mod cred;
pub(crate) mod dax;
pub(crate) mod dma;
pub(crate) mod driver;
pub(crate) mod error;
pub(crate) mod fs;
mod helpers;
pub(crate) mod hrtimer;
pub(crate) mod irq;
pub(crate) mod kunit;
pub(crate) mod kvec;
pub(crate) mod miscdevice;
pub(crate) mod mm;
pub(crate) mod napi;
pub(crate) mod netdev;
pub(crate) mod page;
pub(crate) mod pagemap;
pub(crate) mod params;
pub(crate) mod pci;
pub(crate) mod perf;
pub(crate) mod ratelimit;
pub(crate) mod region;
pub(crate) mod sharedmem;
pub(crate) mod spinlock_irq;
pub(crate) mod sysfs;
pub(crate) mod task;
pub(crate) mod task_work;
pub(crate) mod time;
pub(crate) mod tracepoint;
pub(crate) mod uapi;
pub(crate) mod workqueue;
