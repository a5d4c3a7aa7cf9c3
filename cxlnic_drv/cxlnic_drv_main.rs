// SPDX-License-Identifier: GPL-2.0

//! CXL-NIC: net_device with descriptor rings in coherent memory
//!
//! Binds the CXL-NICs the device model serves (`nic.rs`), one network
//! interface per NIC (`port/`) whose queue pairs (`queue/`) live in
//! host or device memory as the mode says, with a key-value offload
//! (`kvs/`) that `/dev/cxlnic` (`chardev.rs`) and ethtool reach.
//!
//! Teardown is by drop order of [`CxlnicDrv`]'s fields: `/dev/cxlnic`
//! first (open files keep the module loaded, so it goes only when none
//! is open), then the PCI driver, which unbinds every NIC.

use kernel::prelude::*;

use cxlf_support as support;
use support::miscdevice::{MiscDeviceOptions, MiscDeviceRegistration};

mod chardev;
mod config;
mod io;
mod kvs;
mod nic;
mod nics;
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
support::params::module_param_uint!(
    /// Buckets of each NIC's KVS host table (a power of two up to
    /// `HOST_BUCKETS_MAX`), allocated on first use.
    kvs_buckets
);
support::params::module_param_uint!(
    /// The KVS offload's UDP port unless `KVS_CONFIG` names one.
    kvs_port
);

/// The `kvs_port` parameter, if it is a port (logged and the default
/// if not).
pub(crate) fn default_kvs_port() -> u16 {
    match u16::try_from(kvs_port()) {
        Ok(p) if p != 0 => p,
        _ => {
            support::pr_info_ratelimited!(
                "kvs_port={} is not a UDP port: using {}\n",
                kvs_port(),
                ring::kvs::DEFAULT_PORT
            );
            ring::kvs::DEFAULT_PORT
        }
    }
}

struct CxlnicDrv {
    _misc: Pin<KBox<MiscDeviceRegistration<chardev::CxlnicFile>>>,
    _pci: Pin<KBox<support::pci::PciDriverRegistration<nic::Nic>>>,
}

impl kernel::Module for CxlnicDrv {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let nics = nics::Nics::new()?;
        let pci = KBox::pin_init(
            support::pci::PciDriverRegistration::register(nics.clone()),
            GFP_KERNEL,
        )?;
        let options = MiscDeviceOptions {
            name: kernel::c_str!("cxlnic"),
            mode: 0o600,
        };
        let misc = KBox::pin_init(MiscDeviceRegistration::register(options, nics), GFP_KERNEL)?;
        pr_info!("loaded\n");
        Ok(CxlnicDrv {
            _misc: misc,
            _pci: pci,
        })
    }
}

impl Drop for CxlnicDrv {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
