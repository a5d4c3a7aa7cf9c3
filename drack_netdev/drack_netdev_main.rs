// SPDX-License-Identifier: GPL-2.0

//! DRack: pass-by-reference virtual NICs over a shared CXL pool
//!
//! Skeleton: this module loads and unloads cleanly and links nothing of the
//! support layer. Its function lands with its own issue; until then it
//! registers nothing.

use kernel::prelude::*;

module! {
    type: DrackNetdev,
    name: "drack_netdev",
    author: "cxlfabric developers",
    description: "DRack: pass-by-reference virtual NICs over a shared CXL pool",
    license: "GPL",
}

struct DrackNetdev;

impl kernel::Module for DrackNetdev {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("loaded (skeleton: no function yet)\n");
        Ok(DrackNetdev)
    }
}

impl Drop for DrackNetdev {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
