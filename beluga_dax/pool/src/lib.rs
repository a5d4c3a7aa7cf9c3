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
#![deny(clippy::arithmetic_side_effects)]

// Shared with the other cores' test bodies; first, for its macros.
#[macro_use]
#[path = "../../../kunit/outcome.rs"]
pub mod outcome;

pub mod checksum;
pub mod engine;
pub mod layout;
pub mod le;
pub mod leases;
pub mod mailbox;
pub mod objects;
pub mod sections;
pub mod selftests;
