// SPDX-License-Identifier: GPL-2.0

//! CXL-NIC: net_device with descriptor rings in coherent memory
//!
//! Skeleton: this module loads, carries the shared support layer and unloads
//! cleanly. Its function lands with its own issue; until then it registers
//! nothing.

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

mod ring;

module! {
    type: CxlnicDrv,
    name: "cxlnic_drv",
    author: "cxlfabric developers",
    description: "CXL-NIC: net_device with descriptor rings in coherent memory",
    license: "GPL",
}

struct CxlnicDrv;

impl kernel::Module for CxlnicDrv {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("loaded (skeleton: no function yet)\n");
        Ok(CxlnicDrv)
    }
}

impl Drop for CxlnicDrv {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
