// SPDX-License-Identifier: GPL-2.0

//! Generic abstractions with no upstream counterpart yet (or one that
//! lacks what these are for: write-back mappings, flushing accessors):
//! written in upstream's style, kept when the kernel moves on, and
//! candidates to send upstream. Modules reach them at the crate root
//! (`support::netdev`), which re-exports each under its part's cfg.

#[cfg(cxlf_support = "coherent")]
pub mod coherent;
#[cfg(cxlf_support = "dax")]
pub mod dax;
#[cfg(cxlf_support = "napi")]
pub mod napi;
#[cfg(cxlf_support = "netdev")]
pub mod netdev;
#[cfg(cxlf_support = "netlend")]
pub mod netlend;
#[cfg(cxlf_support = "page")]
pub mod page;
#[cfg(cxlf_support = "pagemap")]
pub mod pagemap;
#[cfg(cxlf_support = "perf")]
pub mod perf;
#[cfg(cxlf_support = "ratelimit")]
pub mod ratelimit;
#[cfg(cxlf_support = "rxfrag")]
pub mod rxfrag;
#[cfg(cxlf_support = "sharedmem")]
pub mod sharedmem;
#[cfg(cxlf_support = "sysfs")]
pub mod sysfs;
#[cfg(cxlf_support = "task_work")]
pub mod task_work;
#[cfg(cxlf_support = "tracepoint")]
pub mod tracepoint;
