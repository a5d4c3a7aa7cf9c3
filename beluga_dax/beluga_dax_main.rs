// SPDX-License-Identifier: GPL-2.0

//! Beluga: multi-host CXL pool allocator on the dax bus
//!
//! Skeleton: this module loads, carries the shared support layer and unloads
//! cleanly. Its function lands with its own issue; until then it registers
//! nothing.

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

module! {
    type: BelugaDax,
    name: "beluga_dax",
    author: "cxlfabric developers",
    description: "Beluga: multi-host CXL pool allocator on the dax bus",
    license: "GPL",
}

struct BelugaDax;

impl kernel::Module for BelugaDax {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("loaded (skeleton: no function yet)\n");
        Ok(BelugaDax)
    }
}

impl Drop for BelugaDax {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
