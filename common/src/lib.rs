//! What the `no_std` cores share (beluga's pool, mchannel's control core,
//! cxlnic's rings, drack's pool): the CRC32C of records in shared memory,
//! their little-endian fields ([`le`]), and the outcome and checks of the test cases every core runs both as host
//! tests and as KUnit cases.
//!
//! A crate of its own: the host crates depend on it through Cargo, the
//! modules build it as the kernel builds its crates (`scripts/cxlfabric.mk`)
//! and link it in.

#![no_std]
#![forbid(unsafe_code)]
// The kernel builds it with `-Wmissing_docs -Dwarnings`; so does the host.
#![deny(missing_docs)]
#![deny(clippy::arithmetic_side_effects)]

pub mod checksum;
pub mod le;
#[macro_use]
pub mod outcome;
