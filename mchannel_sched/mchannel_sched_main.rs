// SPDX-License-Identifier: GPL-2.0

//! MemChannel: per-thread run windows with CSFQ fair-share rate control
//!
//! Skeleton: this module loads, carries the shared support layer and unloads
//! cleanly. Its function lands with its own issue; until then it registers
//! nothing.

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

mod control;

module! {
    type: MchannelSched,
    name: "mchannel_sched",
    author: "cxlfabric developers",
    description: "MemChannel: per-thread run windows with CSFQ fair-share rate control",
    license: "GPL",
}

struct MchannelSched;

impl kernel::Module for MchannelSched {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("loaded (skeleton: no function yet)\n");
        Ok(MchannelSched)
    }
}

impl Drop for MchannelSched {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
