// SPDX-License-Identifier: GPL-2.0

//! Wrappers that mirror an upstream Rust-for-Linux abstraction (6.13 and
//! later): each is shaped like its counterpart (the table in the crate
//! root) and is deleted when the project's kernel has it, its users then
//! switching their `use` lines. Modules reach them at the crate root
//! (`support::miscdevice`), which re-exports each under its part's cfg.

#[cfg(cxlf_support = "cred")]
pub mod cred;
#[cfg(cxlf_support = "dma")]
pub mod dma;
#[cfg(cxlf_support = "driver")]
pub mod driver;
pub mod error;
#[cfg(cxlf_support = "fs")]
pub mod fs;
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
pub mod params;
#[cfg(cxlf_support = "pci")]
pub mod pci;
#[cfg(cxlf_support = "spinlock_irq")]
pub mod spinlock_irq;
#[cfg(cxlf_support = "task")]
pub mod task;
#[cfg(cxlf_support = "time")]
pub mod time;
#[cfg(cxlf_support = "workqueue")]
pub mod workqueue;
