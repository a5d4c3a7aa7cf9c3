// SPDX-License-Identifier: GPL-2.0

//! cxlfabric kernel support layer.
//!
//! A crate of its own (`cxlf_support`), built into every module that uses
//! it, once per module, with that module's parts (`--cfg
//! cxlf_support="<part>"`, `scripts/cxlfabric.mk`); a module root says
//! `use cxlf_support as support;`. It holds the project's `unsafe` code:
//! safe wrappers over the raw 6.12 bindings, shaped like their upstream
//! (6.13-6.15) counterparts, so that moving to a newer kernel means
//! deleting a wrapper and switching the `use` lines. Layout and rules:
//! `Documentation/cxlfabric/support.rst`.
//!
//! Three parts, by what a file mirrors: `upstream/` (a wrapper shaped like
//! an upstream abstraction, deleted when the kernel has it),
//! `abstractions/` (generic, no upstream counterpart yet: kept) and what
//! belongs to one module's ABI, glue over types kept beside that module
//! ([`region`] over `beluga_dax/region_abi/`; [`uapi`] over `uapi/`).
//! Modules name every wrapper at the crate root (`support::miscdevice`),
//! whichever part holds it.
//!
//! | wrapper          | part           | upstream counterpart                                     |
//! |------------------|----------------|----------------------------------------------------------|
//! | [`kunit`]        | `upstream`     | `kernel::kunit` (`#[kunit_tests]`, 6.15)                 |
//! | [`kvec`]         | `upstream`     | `Vec::pop` (6.14); `swap_remove`: none                   |
//! | [`miscdevice`]   | `upstream`     | `kernel::miscdevice` (6.13)                              |
//! | [`fs`]           | `upstream`     | `kernel::fs::File` (6.13), `ARef<Inode>`                 |
//! | [`mm`]           | `upstream`     | `mm::virt::{VmaRef, VmaNew}` (6.16); faults: none        |
//! | [`driver`]       | `upstream`     | `kernel::driver::Registration` (6.13)                    |
//! | [`pci`]          | `upstream`     | `kernel::pci` (6.14-6.17): driver, BARs, MSI-X vectors   |
//! | [`irq`]          | `upstream`     | `kernel::irq::Registration` (6.17), `Arc` handlers      |
//! | [`dma`]          | `upstream`     | `kernel::dma::CoherentAllocation` (6.14)                 |
//! | [`cred`]         | `upstream`     | `kernel::cred`, `Task::current` (6.13)                   |
//! | [`time`]         | `upstream`     | `kernel::time`, `kernel::delay`                          |
//! | [`hrtimer`]      | `upstream`     | `kernel::time::hrtimer` (6.15), `Arc` pointers only      |
//! | [`spinlock_irq`] | `upstream`     | `SpinLockIrq` (6.17); a raw spinlock here                |
//! | [`task`]         | `upstream`     | `Task::tgid_nr_ns` etc. (6.13-6.15); thread walk: none   |
//! | [`error`]        | `upstream`     | `kernel::error::code` (`ETIMEDOUT`, `EOPNOTSUPP`, ...)   |
//! | [`workqueue`]    | `upstream`     | `kernel::workqueue` delayed work (6.16)                  |
//! | [`params`]       | `upstream`     | `module!` parameters (6.15)                              |
//! | [`dax`]          | `abstractions` | none; a [`driver`] bus like `kernel::platform`           |
//! | [`netdev`]       | `abstractions` | none (2023 RFC `kernel::net::Device`): Ethernet devices |
//! | [`napi`]         | `abstractions` | none (2023 RFC): NAPI contexts, GRO receive              |
//! | [`coherent`]     | `abstractions` | none: `io::mem::IoMem` (6.16) maps uncached, no atomics  |
//! | [`sharedmem`]    | `abstractions` | none: `io::mem::ExclusiveIoMem` (6.16) maps uncached     |
//! | [`pagemap`]      | `abstractions` | none: ZONE_DEVICE pages (device-dax's)                   |
//! | [`tracepoint`]   | `abstractions` | none: probes on the scheduler's tracepoints              |
//! | [`sysfs`]        | `abstractions` | none: kobject directories of read-only attributes        |
//! | [`task_work`]    | `abstractions` | none: `task_work_add` with a count for unload            |
//! | [`perf`]         | `abstractions` | none: counting perf events on a task                     |
//! | [`ratelimit`]    | `abstractions` | none (C's `pr_*_ratelimited` are macros)                 |
//! | [`netlend`]      | `abstractions` | none: lent interfaces: rx_handler, notifier, tx          |
//! | [`page`]         | `abstractions` | none; `SharedPage` is counted like `AlwaysRefCounted`    |
//! | [`rxfrag`]       | `abstractions` | none: skbs of page fragments, polled receive             |
//! | [`region`]       | module ABI     | none: beluga_dax's C region ABI, access sections (RCU)   |
//! | [`uapi`]         | module ABI     | none: the project's ABI                                  |
//!
//! Whatever 6.12's bindings give Rust (exported functions, constants,
//! plain struct fields, the kernel's Rust helpers) is used directly, and
//! what they lack is generated per module from `support/bindings/`
//! (`struct miscdevice`, `struct dev_dax`, `pci_driver`, `napi_struct`,
//! ...). C remains only for static inlines, macros and fields of structs
//! 6.12 declares opaque (`struct pci_dev`, `struct net_device`): one-line
//! helpers in `helpers/<part>.c`, each saying why it is C, and a module
//! links only the parts its Kbuild names (`cxlf_support`).

// A wrapper has what modules call and no more: an `is_empty` or a
// `Default` that nothing uses would be dead API (these lints fire on `pub`
// items, which every wrapper's are now that the layer is a crate).
#![allow(clippy::len_without_is_empty, clippy::new_without_default)]

/// The module this copy of the crate is built into (`CXLF_MODNAME`), as
/// `module!` names it: the prefix of the kernel's `pr_*!` messages
/// printed from here.
const __LOG_PREFIX: &[u8] = concat!(env!("CXLF_MODNAME"), "\0").as_bytes();

/// The module this copy of the crate is built into, as `module!` defines
/// it for the module's own crate: what registrations name as their owner.
// SAFETY: `__this_module` is the `struct module` that modpost defines in
// every module's `.mod.c`; it lives as long as the module's code.
#[cfg(any(cxlf_support = "driver", cxlf_support = "miscdevice"))]
static THIS_MODULE: kernel::ThisModule = unsafe {
    // Only its address is taken; `module!` declares it the same way.
    #[allow(improper_ctypes)]
    extern "C" {
        static __this_module: kernel::types::Opaque<kernel::bindings::module>;
    }
    kernel::ThisModule::from_ptr(__this_module.get())
};

mod abstractions;
mod bindings;
mod helpers;
mod upstream;

// Module-facing paths: every wrapper at the crate root, under its part's
// cfg, so moving one between parts (or deleting it for the kernel's) does
// not change what a module writes.
#[cfg(cxlf_support = "cred")]
pub use upstream::cred;
#[cfg(cxlf_support = "dma")]
pub use upstream::dma;
#[cfg(cxlf_support = "driver")]
pub use upstream::driver;
pub use upstream::error;
#[cfg(cxlf_support = "fs")]
pub use upstream::fs;
#[cfg(cxlf_support = "hrtimer")]
pub use upstream::hrtimer;
#[cfg(cxlf_support = "irq")]
pub use upstream::irq;
#[cfg(cxlf_support = "kunit")]
pub use upstream::kunit;
pub use upstream::kvec;
#[cfg(cxlf_support = "miscdevice")]
pub use upstream::miscdevice;
#[cfg(cxlf_support = "mm")]
pub use upstream::mm;
pub use upstream::params;
#[cfg(cxlf_support = "pci")]
pub use upstream::pci;
#[cfg(cxlf_support = "spinlock_irq")]
pub use upstream::spinlock_irq;
#[cfg(cxlf_support = "task")]
pub use upstream::task;
#[cfg(cxlf_support = "time")]
pub use upstream::time;
#[cfg(cxlf_support = "workqueue")]
pub use upstream::workqueue;

#[cfg(cxlf_support = "coherent")]
pub use abstractions::coherent;
#[cfg(cxlf_support = "dax")]
pub use abstractions::dax;
#[cfg(cxlf_support = "napi")]
pub use abstractions::napi;
#[cfg(cxlf_support = "netdev")]
pub use abstractions::netdev;
#[cfg(cxlf_support = "netlend")]
pub use abstractions::netlend;
#[cfg(cxlf_support = "page")]
pub use abstractions::page;
#[cfg(cxlf_support = "pagemap")]
pub use abstractions::pagemap;
#[cfg(cxlf_support = "perf")]
pub use abstractions::perf;
#[cfg(cxlf_support = "ratelimit")]
pub use abstractions::ratelimit;
#[cfg(cxlf_support = "rxfrag")]
pub use abstractions::rxfrag;
#[cfg(cxlf_support = "sharedmem")]
pub use abstractions::sharedmem;
#[cfg(cxlf_support = "sysfs")]
pub use abstractions::sysfs;
#[cfg(cxlf_support = "task_work")]
pub use abstractions::task_work;
#[cfg(cxlf_support = "tracepoint")]
pub use abstractions::tracepoint;

// Module-owned ABI.
#[cfg(cxlf_support = "region")]
pub mod region;
pub mod uapi;
