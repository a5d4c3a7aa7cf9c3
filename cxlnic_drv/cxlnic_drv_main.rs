// SPDX-License-Identifier: GPL-2.0

//! CXL-NIC: net_device with descriptor rings in coherent memory
//!
//! Binds the CXL-NICs the device model serves (`nic.rs`), one network
//! interface per NIC (`port/`) whose queue pairs (`queue/`) live in
//! host or device memory as the mode says.

use kernel::prelude::*;

use cxlf_support as support;

mod config;
mod io;
mod nic;
mod port;
mod queue;
mod recovery;
// The ring core, a crate of its own (`ring/`), under its short name.
use cxlnic_ring as ring;
mod stats;
mod ticker;

module! {
    type: CxlnicDrv,
    name: "cxlnic_drv",
    author: "cxlfabric developers",
    description: "CXL-NIC: net_device with descriptor rings in coherent memory",
    license: "GPL",
}

support::params::module_param_string!(
    /// The queue mode of NICs bound from now on.
    mode
);

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
