//! DRack (ATC '25), the `no_std` core of `drack_netdev`: hosts sharing a
//! CXL pool pass frames by reference. The sender writes a frame into one
//! of its buffers in the pool once and queues only a reference {dst, src,
//! buffer, length} on the receiver's `ref_queue` for it; the receiver
//! lends the pool page to its TCP/IP stack and, once the stack let go,
//! gives the buffer back on the pair's return ring.
//!
//! The pool is not coherent across hosts. Every access goes through
//! [`mem::PoolMem`], with an explicit write-back after writing and an
//! invalidate before reading; every line of the layout has one writer.
//! `model` (tests and KUnit only) is a non-coherent model of several
//! hosts' caches, in which a missing flush loses data.
//!
//! Everything read from the pool is validated here before use: a hostile
//! or crashed peer makes frames drop and counters rise, never an index go
//! out of bounds, a buffer be returned twice, or one leak.
//!
//! What is here: the layout ([`layout`]), the queues ([`refq`],
//! [`retring`]), the sender's buffers ([`alloc`]), the receiver's lend
//! table ([`lend`]), pooled NICs' ports and records ([`nic`]), entry checks ([`validate`]), counters ([`counters`])
//! and the two ends of a pair with their epochs ([`peer`]). What is not:
//! page refcounts, skbs, NAPI, leases (the module and beluga).
//! `Documentation/cxlfabric/drack.rst` describes both.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::arithmetic_side_effects)]

// The checks of the shared test cases (`check!`, `ok!`, ...).
#[cfg(any(test, cxlf_kunit))]
#[macro_use]
extern crate cxlf_common;
#[cfg(any(test, cxlf_kunit))]
pub use cxlf_common::outcome;

pub mod alloc;
pub mod counters;
pub mod layout;
pub mod lend;
pub mod mem;
pub mod nic;
// The test model: host tests (the `model` feature, which the crate's
// dev-dependency on itself turns on for `tests/`) and KUnit, never the
// module.
#[cfg(any(test, cxlf_kunit, feature = "model"))]
pub mod model;
pub mod peer;
pub mod refq;
pub mod retring;
pub mod validate;
// The shared test cases: host tests and the KUnit module only.
#[cfg(any(test, cxlf_kunit))]
pub mod cases;
