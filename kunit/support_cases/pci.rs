// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_pci`: the PCI driver registration.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::alloc::flags::GFP_KERNEL;
use kernel::prelude::*;

use cxlf_support as support;
use support::driver::Driver;
use support::pci::{PciBus, PciDriverRegistration};
use support::{kassert, kassert_eq, kunit_tests};

/// Probes of [`NoDevice`].
static NO_DEVICE_PROBES: AtomicU64 = AtomicU64::new(0);

/// A PCI driver for an id no device has.
struct NoDevice;

impl Driver<PciBus> for NoDevice {
    type RegistrationData = ();
    const IDS: (u16, u16) = (0x1af4, 0xfffe);

    fn probe(_dev: &support::pci::Device<'_>, (): &()) -> Result<Pin<KBox<Self>>> {
        NO_DEVICE_PROBES.fetch_add(1, Ordering::Relaxed);
        Err(ENODEV)
    }
}

fn pci_driver_takes_the_module_name_until_dropped() -> Result {
    let register = || KBox::pin_init(PciDriverRegistration::<NoDevice>::register(()), GFP_KERNEL);
    let first = register()?;
    // `/sys/bus/pci/drivers/<module>` is taken: a second is refused.
    kassert!(register().is_err());
    drop(first);
    // Unregistered on drop: the name is free again.
    drop(register()?);
    kassert_eq!(NO_DEVICE_PROBES.load(Ordering::Relaxed), 0);
    Ok(())
}

kunit_tests!(
    cxlfabric_support_pci,
    [pci_driver_takes_the_module_name_until_dropped]
);
