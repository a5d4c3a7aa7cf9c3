// SPDX-License-Identifier: GPL-2.0

//! The KVS area in device memory (BAR2 from the header's `kvs_offset`):
//! the config the driver writes (generation last), the two control
//! lines, the command ring the driver fills, the log the device fills,
//! and the device's counters. Offsets and encodings are the ring core's
//! (`ring::kvs`); every access is bounds-checked by the mapping.

use crate::io::NicIo;
use crate::ring::index::ready_tag;
use crate::ring::kvs::{
    DeviceLine, DriverLine, KvsConfig, KvsStats, Record, CMD_ENTRIES, CMD_OFFSET, CONFIG_OFFSET,
    DEVICE_LINE_OFFSET, DRIVER_LINE_OFFSET, LINE_BYTES, LOG_ENTRIES, LOG_OFFSET, RECORD_BYTES,
    STATS_BYTES, STATS_OFFSET,
};
use crate::support::coherent::Coherent;
use core::sync::atomic::{fence, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A NIC's KVS area.
///
/// # Invariants
///
/// `base` is the header's `kvs_offset`, non-zero (`probe` checked that
/// the area lies inside the BAR).
pub(crate) struct Area {
    pub(crate) io: Arc<NicIo>,
    base: usize,
}

impl Area {
    /// The area of a NIC whose device has the offload (`None`: it has
    /// none).
    pub(crate) fn of(io: Arc<NicIo>) -> Option<Area> {
        let base = io.kvs_offset;
        // INVARIANT: non-zero, checked at binding.
        (base != 0).then_some(Area { io, base })
    }

    fn at(&self, offset: u32) -> usize {
        // Both far below the BAR's size (checked at binding).
        self.base.saturating_add(offset as usize)
    }

    /// Writes `cfg` with generation `gen`: everything else first, the
    /// generation last (release), as the device reads it.
    pub(crate) fn write_config(&self, cfg: &KvsConfig, gen: u32) -> Result {
        let raw = cfg.encode();
        let at = self.at(CONFIG_OFFSET);
        self.io.mem.write(at.saturating_add(4), &raw[4..])?;
        self.io.mem.store32(at, gen)
    }

    /// The device's control line (an acquire after the copy: what the
    /// device wrote before it is visible to the reads that follow).
    pub(crate) fn device_line(&self) -> Result<DeviceLine> {
        let mut raw = [0u8; LINE_BYTES];
        self.io.mem.read(self.at(DEVICE_LINE_OFFSET), &mut raw)?;
        fence(Ordering::Acquire);
        Ok(DeviceLine::decode(&raw))
    }

    /// Stores the driver's control line (after everything written
    /// before it: release).
    pub(crate) fn set_driver_line(&self, line: &DriverLine) -> Result {
        fence(Ordering::Release);
        self.io
            .mem
            .write(self.at(DRIVER_LINE_OFFSET), &line.encode())
    }

    /// Stores the driver line's `moves` word (release: the slot writes
    /// before it are visible first).
    pub(crate) fn set_moves(&self, moves: u32) -> Result {
        fence(Ordering::Release);
        self.io
            .mem
            .store32(self.at(DRIVER_LINE_OFFSET).saturating_add(8), moves)
    }

    /// Zeroes the command ring (no entry carries a tag any index expects).
    pub(crate) fn clear_commands(&self) -> Result {
        let len = (CMD_ENTRIES as usize).saturating_mul(RECORD_BYTES);
        self.io.mem.clear(self.at(CMD_OFFSET), len)
    }

    /// Posts command `index` (`rec` without its tag): the record, then
    /// its ready tag (release), as the NIC rings do.
    pub(crate) fn post_command(&self, index: u32, rec: &Record) -> Result {
        let slot = index & CMD_ENTRIES.wrapping_sub(1);
        let at = self.at(CMD_OFFSET.saturating_add(slot.saturating_mul(RECORD_BYTES as u32)));
        let raw = rec.encode();
        self.io.mem.write(at.saturating_add(4), &raw[4..])?;
        self.io.mem.store32(at, ready_tag(index))
    }

    /// Log entry `index`, if the device has written it: its tag (an
    /// acquire load) is `index`'s, and then its other bytes are whole.
    pub(crate) fn log_entry(&self, index: u32) -> Result<Option<Record>> {
        let slot = index & LOG_ENTRIES.wrapping_sub(1);
        let at = self.at(LOG_OFFSET.saturating_add(slot.saturating_mul(RECORD_BYTES as u32)));
        let tag = self.io.mem.load32(at)?;
        if tag != ready_tag(index) {
            return Ok(None);
        }
        let mut raw = [0u8; RECORD_BYTES];
        self.io.mem.read(at, &mut raw)?;
        let mut r = Record::decode(&raw);
        r.word = tag;
        Ok(Some(r))
    }

    /// The device's counters.
    pub(crate) fn stats(&self) -> Result<KvsStats> {
        let mut raw = [0u8; STATS_BYTES];
        self.io.mem.read(self.at(STATS_OFFSET), &mut raw)?;
        Ok(KvsStats::decode(&raw))
    }

    /// The device's heartbeat (it beats while it runs).
    pub(crate) fn heartbeat(&self) -> u32 {
        self.io.heartbeat()
    }
}
