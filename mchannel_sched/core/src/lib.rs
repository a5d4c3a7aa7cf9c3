//! The MemChannel control core (NSDI '26, §4.3-4.5): rate and demand
//! estimation (Eq. 3), per-component fair share (Eq. 4) and capacity
//! adaptation (Eq. 6, Algorithm 1 with its errata fixed), hierarchical
//! sharing (HCSFQ) and the run window of a thread (Eq. 5/7); and the
//! bookkeeping of the module's attached threads: the lock-free table
//! (`table`), its per-user quota (`quota`), what a slot holds (`seat`) and
//! what a thread's children inherit (`member`).
//!
//! Plain `no_std` Rust, no dependencies, no floating point: `mchannel_sched`
//! and its KUnit module link this crate (built for the kernel by
//! `scripts/cxlfabric.mk`), so does the fabric simulator, and the host tests
//! run here. Files refer to each other as `super::<file>`.
//!
//! Units and precision (see `fixed`): times in nanoseconds, rates in bytes
//! per second, both `u64`; fractions (smoothing and load factors) in Q32.
//! Every operation saturates or is checked: inputs come from user space,
//! from hardware counters and from other hosts' shared memory.

#![no_std]
#![forbid(unsafe_code)]
// The kernel builds it with `-Wmissing_docs -Dwarnings`; so does the host.
#![deny(missing_docs)]
#![deny(clippy::arithmetic_side_effects)]

// The checks of the shared test cases (`check!`, `ok!`, ...).
#[cfg(any(test, cxlf_kunit))]
#[macro_use]
extern crate cxlf_common;
/// The CRC32C of records in shared memory.
pub use cxlf_common::checksum;
#[cfg(any(test, cxlf_kunit))]
pub use cxlf_common::outcome;

pub mod component;
pub mod congestion;
pub mod estimator;
pub mod fixed;
pub mod member;
pub mod meter;
pub mod quota;
pub mod seat;
// The shared test cases: host tests and the KUnit module only.
#[cfg(any(test, cxlf_kunit))]
pub mod cases;
pub mod shared;
pub mod table;
pub mod thread;
pub mod tree;
pub mod window;
