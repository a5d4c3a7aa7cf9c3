// SPDX-License-Identifier: GPL-2.0

//! CXL-NIC: net_device with descriptor rings in coherent memory
//!
//! Binds the CXL-NICs the device model serves (`nic.rs`); the net_device,
//! its queues and modes follow (issue #11).

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

mod nic;
mod port;
mod ring;

module! {
    type: CxlnicDrv,
    name: "cxlnic_drv",
    author: "cxlfabric developers",
    description: "CXL-NIC: net_device with descriptor rings in coherent memory",
    license: "GPL",
}

struct CxlnicDrv {
    _pci: Pin<KBox<support::pci::PciDriverRegistration<nic::Nic>>>,
}

impl kernel::Module for CxlnicDrv {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let pci = KBox::pin_init(
            support::pci::PciDriverRegistration::register(()),
            GFP_KERNEL,
        )?;
        pr_info!("loaded\n");
        Ok(CxlnicDrv { _pci: pci })
    }
}

impl Drop for CxlnicDrv {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
