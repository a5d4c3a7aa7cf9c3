//! The MemChannel control core (NSDI '26, §4.3-4.5): rate and demand
//! estimation (Eq. 3), per-component fair share (Eq. 4) and capacity
//! adaptation (Eq. 6, Algorithm 1 with its errata fixed), hierarchical
//! sharing (HCSFQ) and the run window of a thread (Eq. 5/7).
//!
//! Plain `no_std` Rust, no dependencies, no floating point: `mchannel_sched`
//! compiles these files in (`mchannel_sched/core.rs`), the fabric simulator
//! links this crate, and the host tests run here. Files refer to each other
//! only as `super::<file>` so that both ways of building see one tree.
//!
//! Units and precision (see `fixed`): times in nanoseconds, rates in bytes
//! per second, both `u64`; fractions (smoothing and load factors) in Q32.
//! Every operation saturates or is checked: inputs come from user space,
//! from hardware counters and from other hosts' shared memory.

#![no_std]
#![forbid(unsafe_code)]
#![deny(clippy::arithmetic_side_effects)]

// Shared with the other cores' test bodies; first, for its macros.
#[macro_use]
#[path = "../../../kunit/outcome.rs"]
pub mod outcome;

/// The pool's CRC32C, one file for both cores.
#[path = "../../../beluga_dax/pool/src/checksum.rs"]
pub mod checksum;
pub mod component;
pub mod congestion;
pub mod estimator;
pub mod fixed;
pub mod meter;
pub mod selftests;
pub mod shared;
pub mod thread;
pub mod tree;
pub mod window;
