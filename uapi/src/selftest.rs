//! ABI of `/dev/cxlfabric_misc_test`, the device the support layer's test
//! module (`kunit/cxlfabric_support_kunit.ko`) registers to exercise the
//! miscdevice wrapper from user space.
//!
//! Each open file has its own value (`SET_VALUE`/`GET_VALUE`); `GET_OPENS`
//! counts opens of the device since the module loaded. `mmap` accepts one
//! page at offset 0, `MAP_SHARED` only, filled with [`pattern_byte`].
//!
//! The same module registers a dax bus driver, [`DAX_DRIVER_NAME`] (the dax
//! bus names drivers after their module);
//! `GET_DAX_BINDING` reports the instance bound to it, as its probe saw it.
//! `QUEUE_TASK_WORK` and `GET_TASK_WORK` exercise the task-work wrapper.

use super::ioctl::{ior, iow};

/// Device node: `/dev/cxlfabric_misc_test`.
pub const DEVICE_NAME: &str = "cxlfabric_misc_test";
/// ioctl type byte of the test device.
pub const IOC_TYPE: u8 = 0xCF;

/// Sets the open file's value (a `u64`).
pub const SET_VALUE: u32 = iow::<u64>(IOC_TYPE, 1);
/// Gets the open file's value (a `u64`).
pub const GET_VALUE: u32 = ior::<u64>(IOC_TYPE, 2);
/// Opens of the device since the module loaded (a `u64`).
pub const GET_OPENS: u32 = ior::<u64>(IOC_TYPE, 3);
/// The instance bound to the test dax driver ([`DaxBinding`]).
pub const GET_DAX_BINDING: u32 = ior::<DaxBinding>(IOC_TYPE, 4);
/// Queues task work on the caller that adds the given value to the
/// device's task-work sum on the caller's way back to user space
/// (`support::task_work`).
pub const QUEUE_TASK_WORK: u32 = iow::<u64>(IOC_TYPE, 5);
/// The device's task-work sum, and how many queued items have not run.
pub const GET_TASK_WORK: u32 = ior::<TaskWorkState>(IOC_TYPE, 6);

/// `GET_TASK_WORK`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskWorkState {
    /// Sum of the values the task work that ran added.
    pub sum: u64,
    /// Queued task-work items that have not run yet.
    pub pending: u64,
}

/// The test dax driver's name (the module's: the dax bus names drivers
/// after their module).
pub const DAX_DRIVER_NAME: &str = "cxlfabric_support_kunit";

/// What the test dax driver saw at probe (all zero when nothing is bound).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DaxBinding {
    /// 1 while an instance is bound.
    pub bound: u64,
    /// The `Y` of `daxX.Y`.
    pub id: u64,
    /// Physical start of the first range.
    pub start: u64,
    /// Total size of all ranges, in bytes.
    pub size: u64,
}

/// Byte `i` of the mappable page.
pub const fn pattern_byte(i: usize) -> u8 {
    (i.wrapping_mul(7) ^ 0x5A) as u8
}
