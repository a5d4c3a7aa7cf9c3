//! ABI of `/dev/cxlfabric_misc_test`, the device the support layer's test
//! module (`kunit/cxlfabric_support_kunit.ko`) registers to exercise the
//! miscdevice wrapper from user space.
//!
//! Each open file has its own value (`SET_VALUE`/`GET_VALUE`); `GET_OPENS`
//! counts opens of the device since the module loaded. `mmap` accepts one
//! page at offset 0, `MAP_SHARED` only, filled with [`pattern_byte`].

use super::ioctl::{ior, iow};

pub const DEVICE_NAME: &str = "cxlfabric_misc_test";
/// ioctl type byte of the test device.
pub const IOC_TYPE: u8 = 0xCF;

pub const SET_VALUE: u32 = iow::<u64>(IOC_TYPE, 1);
pub const GET_VALUE: u32 = ior::<u64>(IOC_TYPE, 2);
pub const GET_OPENS: u32 = ior::<u64>(IOC_TYPE, 3);

/// Byte `i` of the mappable page.
pub const fn pattern_byte(i: usize) -> u8 {
    (i.wrapping_mul(7) ^ 0x5A) as u8
}
