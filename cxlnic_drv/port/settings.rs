// SPDX-License-Identifier: GPL-2.0

//! What an operator chooses for a port (mode, queue pairs, ring sizes,
//! batch, MTU, polling), and the defaults a port starts with.

use crate::queue::Shape;
use crate::ring::device::{MODE_PCIE, MODE_TYPE1, MODE_TYPE2, QUEUES_MAX};
use crate::ring::index::RingSize;
use crate::ring::layout::FRAME_MIN;
use crate::ring::plan::Sizes;
use kernel::prelude::*;

/// The smallest MTU (IPv4's).
pub(crate) const MTU_MIN: u32 = 68;
const _: () = assert!(MTU_MIN > FRAME_MIN);

/// What an operator chooses (applied at the next `open`, or at once by
/// restarting the queues).
#[derive(Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) mode: u32,
    pub(crate) queues: u32,
    pub(crate) tx: RingSize,
    pub(crate) rx: RingSize,
    pub(crate) batch: u32,
    pub(crate) mtu: u32,
    /// 0: the device interrupts; else a timer polls every this many us.
    pub(crate) rx_usecs: u32,
}

impl Settings {
    /// How the queue pairs run with these settings; `EINVAL` (logged) if
    /// the rings cannot be laid out.
    pub(super) fn shape(&self) -> Result<Shape> {
        let sizes = Sizes::new(self.tx, self.rx, self.mtu).map_err(|e| {
            pr_info!(
                "rings of {}/{} entries at MTU {}: {:?}\n",
                self.tx.get(),
                self.rx.get(),
                self.mtu,
                e
            );
            EINVAL
        })?;
        Ok(Shape {
            mode: self.mode,
            sizes,
            batch: self.batch,
            inline: self.mode != MODE_PCIE,
            doorbell: self.mode == MODE_PCIE,
            interrupts: self.rx_usecs == 0,
        })
    }
}

/// The name of a mode, for the log and ethtool.
pub(crate) fn mode_name(mode: u32) -> &'static str {
    match mode {
        MODE_TYPE1 => "type1",
        MODE_TYPE2 => "type2",
        MODE_PCIE => "pcie",
        _ => "off",
    }
}

/// The settings a port starts with: `mode` from the module parameter,
/// two queue pairs (fewer if the device has fewer), 256-entry rings.
pub(crate) fn default_settings(mode: u32, queues_max: u32) -> Settings {
    Settings {
        mode,
        queues: queues_max.clamp(1, 2).min(QUEUES_MAX),
        tx: RING_DEFAULT,
        rx: RING_DEFAULT,
        batch: 8,
        mtu: 1500,
        rx_usecs: 0,
    }
}

const RING_DEFAULT: RingSize = match RingSize::new(256) {
    Some(r) => r,
    None => panic!("256 is a ring size"),
};
