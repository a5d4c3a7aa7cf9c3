// SPDX-License-Identifier: GPL-2.0

//! What the driver reaches of a bound NIC: its device memory (BAR2, the
//! header, config and counters, and room for type2's rings), the
//! doorbell (BAR0), its interrupt vectors and DMA. Shared by the port's
//! queues; the NIC's teardown drops it after the port.

use crate::ring::device::{header, HEADER_OFFSET, VECTORS};
use crate::ring::index::within;
use crate::support::coherent::Coherent;
use crate::support::dma::DmaDevice;
use crate::support::pci::DeviceMem;
use crate::support::pci::IoMem;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

/// ivshmem's registers in BAR0: this guest's peer id, and the doorbell
/// (`peer << 16 | vector` rings that peer's vector).
pub(crate) const REG_IVPOSITION: usize = 8;
pub(crate) const REG_DOORBELL: usize = 12;

pub(crate) struct NicIo {
    pub(crate) mem: DeviceMem,
    regs: IoMem,
    pub(crate) dma: DmaDevice,
    /// The device's peer id (from its header, < 2^16).
    doorbell_peer: u32,
    /// Host memory the device reaches, from address 0.
    pub(crate) host_bytes: u64,
    /// Linux IRQ numbers of the vectors (valid while the NIC is bound,
    /// which outlasts every user of this value).
    irqs: [u32; VECTORS as usize],
    /// The config generation written last.
    gen: AtomicU32,
    /// Where the key-value offload's area starts in BAR2 (0: the device
    /// has none); checked at binding to lie inside the BAR, above the
    /// driver's first placement.
    pub(crate) kvs_offset: usize,
}

impl NicIo {
    pub(crate) fn new(
        mem: DeviceMem,
        regs: IoMem,
        dma: DmaDevice,
        doorbell_peer: u32,
        host_bytes: u64,
        irqs: [u32; VECTORS as usize],
        kvs_offset: usize,
    ) -> Result<NicIo> {
        if doorbell_peer > u32::from(u16::MAX) {
            return Err(EINVAL);
        }
        let io = NicIo {
            mem,
            regs,
            dma,
            doorbell_peer,
            host_bytes,
            irqs,
            gen: AtomicU32::new(0),
            kvs_offset,
        };
        io.gen
            .store(io.header32(header::CFG_ACK), Ordering::Relaxed);
        Ok(io)
    }

    /// A config generation never written before by this driver (so not
    /// one a slow device may still be answering), nor 0, nor the one
    /// the device answered last.
    pub(crate) fn next_gen(&self) -> u32 {
        let ack = self.header32(header::CFG_ACK);
        loop {
            let g = self.gen.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if g != 0 && g != ack {
                return g;
            }
        }
    }

    /// Whether the device has answered a config written after
    /// generation `named`: it read that config, which replaced `named`'s,
    /// so it no longer uses what `named` lent it. (A device back from
    /// reset answers the config it finds, the latest written.)
    pub(crate) fn answered_after(&self, named: u32) -> bool {
        let ack = self.header32(header::CFG_ACK);
        let last = self.gen.load(Ordering::Relaxed);
        ack != named && within(named, ack, last)
    }

    /// Rings the device's doorbell `vector` (an MMIO write).
    pub(crate) fn ring(&self, vector: u32) {
        // The offset is a constant inside BAR0: cannot fail.
        let _ = self
            .regs
            .write32(REG_DOORBELL, (self.doorbell_peer << 16) | (vector & 0xffff));
    }

    /// The IRQ of vector `v`.
    pub(crate) fn irq(&self, v: u32) -> Result<u32> {
        self.irqs.get(v as usize).copied().ok_or(EINVAL)
    }

    /// A header word the device updates (`device::header::*`).
    pub(crate) fn header32(&self, field: usize) -> u32 {
        // Inside the header, which `probe` found in the BAR: cannot fail.
        self.mem.load32(HEADER_OFFSET as usize + field).unwrap_or(0)
    }

    /// Where the driver's placements in device memory must end: the
    /// KVS area's start, or the BAR's end.
    pub(crate) fn placement_end(&self) -> u64 {
        match self.kvs_offset {
            0 => self.mem.len() as u64,
            at => at as u64,
        }
    }

    pub(crate) fn heartbeat(&self) -> u32 {
        self.header32(header::HEARTBEAT)
    }
}
