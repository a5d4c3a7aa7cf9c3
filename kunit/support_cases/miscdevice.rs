// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_miscdevice`: the misc device wrapper (with
//! the module's test device), its `mm` flags and the ioctl encoding.

use core::sync::atomic::Ordering;
use kernel::alloc::flags::GFP_KERNEL;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;

use cxlf_support as support;
use support::miscdevice::{MiscDeviceOptions, MiscDeviceRegistration};
use support::mm;
use support::uapi::{ioctl, selftest as abi};
use support::{kassert, kassert_eq, kunit_tests};

use crate::{DeviceState, TestDevice};

/// Registers a test device named `name` whose state starts at `opens`.
pub(super) fn register(
    name: &'static kernel::str::CStr,
    opens: u64,
) -> Result<Pin<KBox<MiscDeviceRegistration<TestDevice>>>> {
    let state = DeviceState::new(opens)?;
    KBox::pin_init(
        MiscDeviceRegistration::<TestDevice>::register(
            MiscDeviceOptions { name, mode: 0o600 },
            state,
        ),
        GFP_KERNEL,
    )
}

/// MISC_DYNAMIC_MINOR: what the minor would still be if registration had
/// not assigned one.
const MISC_DYNAMIC_MINOR: i32 = 255;

fn misc_registration_gets_a_dynamic_minor() -> Result {
    let reg = register(kernel::c_str!("cxlfabric_kunit_misc_a"), 0)?;
    kassert!(
        reg.minor() >= 0 && reg.minor() != MISC_DYNAMIC_MINOR,
        "minor {}",
        reg.minor()
    );
    Ok(())
}

fn two_registrations_get_distinct_minors() -> Result {
    let a = register(kernel::c_str!("cxlfabric_kunit_misc_b"), 0)?;
    let b = register(kernel::c_str!("cxlfabric_kunit_misc_c"), 0)?;
    kassert!(a.minor() != b.minor());
    Ok(())
}

fn registration_data_is_what_was_given() -> Result {
    let reg = register(kernel::c_str!("cxlfabric_kunit_misc_d"), 41)?;
    kassert_eq!(reg.data().opens.load(Ordering::Relaxed), 41);
    Ok(())
}

fn misc_name_can_be_reused_after_drop() -> Result {
    drop(register(kernel::c_str!("cxlfabric_kunit_misc_e"), 0)?);
    let again = register(kernel::c_str!("cxlfabric_kunit_misc_e"), 0);
    kassert!(
        again.is_ok(),
        "re-registering a dropped name failed: {:?}",
        again.err()
    );
    Ok(())
}

fn misc_name_too_long_is_refused() -> Result {
    // 32 bytes: with its NUL, one more than the C side's buffer.
    let name = kernel::c_str!("cxlfabric_kunit_misc_name_32byte");
    kassert_eq!(name.len(), 32);
    let reg = register(name, 0);
    kassert!(
        matches!(reg, Err(e) if e == EINVAL),
        "expected EINVAL, got {:?}",
        reg.err()
    );
    Ok(())
}

fn vm_flags_match_the_kernel_abi() -> Result {
    // include/linux/mm.h; these values are user-visible through /proc/*/smaps.
    kassert_eq!(mm::flags::WRITE, 0x2);
    kassert_eq!(mm::flags::SHARED, 0x8);
    kassert_eq!(mm::flags::MAYSHARE, 0x80);
    // x86-64 with 4 KiB pages: a PMD maps 2 MiB.
    kassert_eq!(PAGE_SIZE << mm::pmd_order(), 2 << 20);
    Ok(())
}

fn ioctl_numbers_encode_direction_and_size() -> Result {
    kassert_eq!(ioctl::size_of_cmd(abi::SET_VALUE), 8);
    kassert_eq!(abi::SET_VALUE >> 30, ioctl::IOC_WRITE);
    kassert_eq!(abi::GET_VALUE >> 30, ioctl::IOC_READ);
    kassert!(abi::SET_VALUE != abi::GET_VALUE && abi::GET_VALUE != abi::GET_OPENS);
    Ok(())
}

kunit_tests!(
    cxlfabric_support_miscdevice,
    [
        misc_registration_gets_a_dynamic_minor,
        two_registrations_get_distinct_minors,
        registration_data_is_what_was_given,
        misc_name_can_be_reused_after_drop,
        misc_name_too_long_is_refused,
        vm_flags_match_the_kernel_abi,
        ioctl_numbers_encode_direction_and_size,
    ]
);
