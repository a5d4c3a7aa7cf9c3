//! cxlctl: the CXL topology from sysfs, and RAM region management.
//!
//! Every function takes a [`sysfs::Sysfs`] root, so the same code runs on
//! the live `/sys` and on recorded trees in tests.

pub mod region;
pub mod snapshot;
pub mod sysfs;
pub mod topology;
