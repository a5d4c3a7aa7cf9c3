// SPDX-License-Identifier: GPL-2.0

//! DRack: pass-by-reference virtual NICs over a shared CXL pool
//!
//! Skeleton: this module loads and unloads cleanly, links its core
//! (`core/`, crate `drack_core`: the pool layout and the protocol) and
//! nothing of the support layer yet. Its function lands with issue #27;
//! until then it registers nothing.

use drack_core::layout::{Geometry, VERSION};
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
        let g = Geometry::DEFAULT;
        pr_info!(
            "loaded (skeleton: no function yet); pool layout v{}: {} bytes for {} hosts\n",
            VERSION,
            g.total_bytes(),
            g.hosts()
        );
        Ok(DrackNetdev)
    }
}

impl Drop for DrackNetdev {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
