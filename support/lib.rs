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

mod bindings;
#[cfg(cxlf_support = "coherent")]
pub mod coherent;
#[cfg(cxlf_support = "cred")]
pub mod cred;
#[cfg(cxlf_support = "dax")]
pub mod dax;
#[cfg(cxlf_support = "dma")]
pub mod dma;
#[cfg(cxlf_support = "driver")]
pub mod driver;
pub mod error;
#[cfg(cxlf_support = "fs")]
pub mod fs;
mod helpers;
#[cfg(cxlf_support = "hrtimer")]
pub mod hrtimer;
#[cfg(cxlf_support = "irq")]
pub mod irq;
#[cfg(cxlf_support = "kunit")]
pub mod kunit;
pub mod kvec;
#[cfg(cxlf_support = "miscdevice")]
pub mod miscdevice;
#[cfg(cxlf_support = "mm")]
pub mod mm;
#[cfg(cxlf_support = "napi")]
pub mod napi;
#[cfg(cxlf_support = "netdev")]
pub mod netdev;
#[cfg(cxlf_support = "page")]
pub mod page;
#[cfg(cxlf_support = "pagemap")]
pub mod pagemap;
pub mod params;
#[cfg(cxlf_support = "pci")]
pub mod pci;
#[cfg(cxlf_support = "perf")]
pub mod perf;
#[cfg(cxlf_support = "ratelimit")]
pub mod ratelimit;
#[cfg(cxlf_support = "region")]
pub mod region;
#[cfg(cxlf_support = "sharedmem")]
pub mod sharedmem;
#[cfg(cxlf_support = "spinlock_irq")]
pub mod spinlock_irq;
#[cfg(cxlf_support = "sysfs")]
pub mod sysfs;
#[cfg(cxlf_support = "task")]
pub mod task;
#[cfg(cxlf_support = "task_work")]
pub mod task_work;
#[cfg(cxlf_support = "time")]
pub mod time;
#[cfg(cxlf_support = "tracepoint")]
pub mod tracepoint;
pub mod uapi;
#[cfg(cxlf_support = "workqueue")]
pub mod workqueue;
