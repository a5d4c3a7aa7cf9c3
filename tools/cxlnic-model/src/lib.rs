//! The CXL-NIC device model (issue #11): it plays the NIC that
//! `cxlnic_drv` drives. Each port is an `ivshmem-doorbell` device in a
//! QEMU guest, served by this process: BAR2 is the NIC's device memory,
//! BAR0's doorbell and MSI-X carry CXL.io-style interrupts, and in type1
//! and pcie modes the model reaches guest RAM through the file QEMU backs
//! it with. The queue layout and the ring protocol are the `cxlnic-ring`
//! crate's, the same source the driver compiles in.
//!
//! See `Documentation/cxlfabric/cxlnic.rst`.

pub mod ivshmem;
pub mod kvs;
pub mod mem;
pub mod model;
pub mod port;
pub mod tap;
