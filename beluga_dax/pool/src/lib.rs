//! The Beluga pool: its on-pool format and its section allocator.
//!
//! Plain `no_std` Rust with no dependencies. `beluga_dax` compiles these
//! files in (`beluga_dax/pool.rs`), the tools link this crate, and the host
//! tests run here: one source of truth. Files refer to each other only as
//! `super::<file>` so that both ways of building see the same tree.
//!
//! Everything read from the pool is untrusted: decoding validates every
//! field before use and returns an error, never panics.

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

pub mod engine;
pub mod layout;
pub mod le;
pub mod leases;
pub mod mailbox;
pub mod objects;
pub mod sections;
// The shared test cases: host tests and the KUnit module only.
#[cfg(any(test, cxlf_kunit))]
pub mod cases;
