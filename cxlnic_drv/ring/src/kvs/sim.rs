//! Both sides' memory in plain vectors, for tests and tools on the host
//! (feature `sim`; never in the kernel module): the device's cache, log
//! and command ring, the host table's slots with the driver line's
//! `moves` word, and the two control lines. Stores are whole records, so
//! a reader never sees a torn one unless a test asks for it (`torn`).

use alloc::vec;
use alloc::vec::Vec;

use super::engine::DeviceMemory;
use super::map::{CMD_ENTRIES, LOG_ENTRIES, WAYS};
use super::record::{DeviceLine, DriverLine, Record};
use super::table::HostSlots;

/// The host table's slots and the driver line's `moves` word: the
/// driver's memory, which the device reads.
#[derive(Debug, Clone, Default)]
pub struct SimSlots {
    /// Every slot, bucket by bucket.
    pub slots: Vec<Record>,
    /// The driver line's `moves` word.
    pub moves: u32,
}

impl SimSlots {
    /// `buckets` empty buckets.
    pub fn new(buckets: u32) -> SimSlots {
        SimSlots {
            slots: vec![Record::default(); slots(buckets)],
            moves: 0,
        }
    }
}

impl HostSlots for SimSlots {
    fn read(&self, i: u32) -> Option<Record> {
        self.slots.get(i as usize).copied()
    }

    fn write(&mut self, i: u32, _odd: u32, r: &Record) {
        if let Some(s) = self.slots.get_mut(i as usize) {
            *s = *r;
        }
    }

    fn moves(&self) -> u32 {
        self.moves
    }

    fn set_moves(&mut self, moves: u32) {
        self.moves = moves;
    }
}

/// Device memory, the host table and the control lines, as the device's
/// [`Engine`](super::Engine) reaches them.
#[derive(Debug, Clone)]
pub struct SimMemory {
    /// The cache's entries.
    pub cache: Vec<Record>,
    /// The log ring ([`LOG_ENTRIES`]).
    pub log: Vec<Record>,
    /// The command ring ([`CMD_ENTRIES`]).
    pub cmd: Vec<Record>,
    /// The host table.
    pub host: SimSlots,
    /// The driver's control line but its `moves` word (which is
    /// `host.moves`).
    pub driver: DriverLine,
    /// The device's control line as last stored.
    pub device: DeviceLine,
    /// How many more reads of a host slot's version find it odd (the
    /// driver mid-write).
    pub torn: u32,
}

impl SimMemory {
    /// Empty memory for a cache and a host table of these many buckets.
    pub fn new(cache_buckets: u32, host_buckets: u32) -> SimMemory {
        SimMemory {
            cache: vec![Record::default(); slots(cache_buckets)],
            log: vec![Record::default(); LOG_ENTRIES as usize],
            cmd: vec![Record::default(); CMD_ENTRIES as usize],
            host: SimSlots::new(host_buckets),
            driver: DriverLine::default(),
            device: DeviceLine::default(),
            torn: 0,
        }
    }
}

/// Slots in `buckets` buckets.
fn slots(buckets: u32) -> usize {
    (buckets as usize).saturating_mul(WAYS as usize)
}

impl DeviceMemory for SimMemory {
    fn cache(&mut self, i: u32) -> Record {
        self.cache.get(i as usize).copied().unwrap_or_default()
    }

    fn set_cache(&mut self, i: u32, _odd: u32, r: &Record) {
        if let Some(s) = self.cache.get_mut(i as usize) {
            *s = *r;
        }
    }

    fn log(&mut self, i: u32) -> Record {
        self.log.get(i as usize).copied().unwrap_or_default()
    }

    fn set_log(&mut self, i: u32, r: &Record) {
        if let Some(s) = self.log.get_mut(i as usize) {
            *s = *r;
        }
    }

    fn cmd(&mut self, i: u32) -> Record {
        self.cmd.get(i as usize).copied().unwrap_or_default()
    }

    fn host_word(&mut self, i: u32) -> Option<u32> {
        let w = self.host.slots.get(i as usize)?.word;
        if self.torn > 0 {
            self.torn = self.torn.saturating_sub(1);
            return Some(w | 1);
        }
        Some(w)
    }

    fn host(&mut self, i: u32) -> Option<Record> {
        self.host.read(i)
    }

    fn driver_line(&mut self) -> DriverLine {
        DriverLine {
            moves: self.host.moves,
            ..self.driver
        }
    }

    fn set_device_line(&mut self, line: &DeviceLine) {
        self.device = *line;
    }
}
