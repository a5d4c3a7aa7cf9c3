//! The CXL-NIC queues (MICRO '25): descriptor and ring layout, and the
//! ring protocol of both sides, the driver (`cxlnic_drv`) and the device
//! model that plays the NIC (`tools/`).
//!
//! No MMIO doorbell on the data path: a producer stores descriptors and
//! then either a tail word or, inline, each descriptor's ready tag; the
//! consumer polls them in memory it shares coherently with the producer.
//! Completions go back the same way: the device writes its progress
//! (`head`) once per batch, and the driver polls it.
//!
//! Plain `no_std` Rust, no dependencies: the module compiles these files
//! in, the device model links this crate, and the host tests run here.
//! Files refer to each other as `super::<file>` (`device/`'s files to the
//! crate's other files as `crate::<file>`). Everything read from
//! shared memory is validated here, before either side uses it: a buggy or
//! hostile peer can make packets drop, never an index or a buffer
//! reference go out of bounds.

#![no_std]
#![forbid(unsafe_code)]
// The kernel builds it with `-Wmissing_docs -Dwarnings`; so does the host.
#![deny(missing_docs)]
#![deny(clippy::arithmetic_side_effects)]

// `kvs::sim` (host tests and tools only) keeps its memory in vectors.
#[cfg(feature = "sim")]
extern crate alloc;

// The checks of the shared test cases (`check!`, `ok!`, ...).
#[cfg(any(test, cxlf_kunit))]
#[macro_use]
extern crate cxlf_common;
#[cfg(any(test, cxlf_kunit))]
pub use cxlf_common::outcome;

pub mod device;
pub mod health;
pub mod index;
pub mod kvs;
pub mod layout;
pub mod plan;
pub mod queue;
// The shared test cases: host tests and the KUnit module only.
#[cfg(any(test, cxlf_kunit))]
pub mod cases;
