//! Host slots and leases.
//!
//! Each host writes only its own 256-byte slot in the host table: a
//! heartbeat counter it advances periodically, its lease period, and a
//! boot id that is new at every attach. Other hosts never compare clocks:
//! an observer notes, by its own monotonic clock, when it last saw a
//! host's counter change, and declares the lease expired after the lease
//! period plus a margin without change. The manager is the live host with
//! the lowest slot index.
//!
//! Slots are read without cross-host coherence, so a reader can see a slot
//! half written: the CRC32C over the record turns that into a retry.

#![deny(clippy::arithmetic_side_effects)]

use super::checksum::crc32c;
use super::le::{u32_at, u64_at};

/// Size of a host slot, in bytes.
pub const SLOT_BYTES: usize = super::layout::HOST_SLOT_BYTES as usize;
/// "BHST" read as a little-endian u32: marks a written lease record.
pub const SLOT_MAGIC: u32 = u32::from_le_bytes(*b"BHST");
/// Version of the lease record format.
pub const SLOT_VERSION: u32 = 1;
/// Bytes covered by the checksum (everything before it).
const COVERED: usize = 52;

/// What a lease record says of its host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// No host (no engine writes this; observers take it as no evidence).
    Free = 0,
    /// Attached: the host heartbeats and may hold objects.
    Attached = 1,
    /// Detached cleanly: its private objects may be reclaimed at once.
    Detached = 2,
}

/// Why a lease record is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotError {
    /// Never written (all zero or another magic).
    Empty,
    /// A record of another format version (the stored one).
    UnsupportedVersion(u32),
    /// Torn or corrupted; read it again.
    BadChecksum,
    /// A field is out of range.
    Invalid(&'static str),
}

/// One host's slot, as laid out at `host_table_off + index * 256`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSlot {
    /// Whether the host is attached or has detached.
    pub state: SlotState,
    /// Index of the slot the record is in (a record in another slot is
    /// refused).
    pub host_index: u32,
    /// New at every attach, so a restarted host is a new incarnation.
    pub boot_id: [u8; 16],
    /// Advanced by the host at least every `lease_ms / 4`.
    pub heartbeat: u64,
    /// The host's lease period, in ms (within [`LEASE_MS_RANGE`]).
    pub lease_ms: u32,
    /// Pool generation (superblock) this host attached to.
    pub generation: u64,
}

/// Lease periods a slot may declare, in milliseconds.
pub const LEASE_MS_RANGE: core::ops::RangeInclusive<u32> = 100..=600_000;

impl HostSlot {
    /// The record with its CRC32C, in a slot-sized buffer: the record is
    /// its first 56 bytes, the rest is zero.
    pub fn encode(&self) -> [u8; SLOT_BYTES] {
        let mut buf = [0u8; SLOT_BYTES];
        buf[0..4].copy_from_slice(&SLOT_MAGIC.to_le_bytes());
        buf[4..8].copy_from_slice(&SLOT_VERSION.to_le_bytes());
        buf[8..12].copy_from_slice(&(self.state as u32).to_le_bytes());
        buf[12..16].copy_from_slice(&self.host_index.to_le_bytes());
        buf[16..32].copy_from_slice(&self.boot_id);
        buf[32..40].copy_from_slice(&self.heartbeat.to_le_bytes());
        buf[40..44].copy_from_slice(&self.lease_ms.to_le_bytes());
        buf[44..52].copy_from_slice(&self.generation.to_le_bytes());
        let crc = crc32c(&buf[..COVERED]);
        buf[COVERED..COVERED + 4].copy_from_slice(&crc.to_le_bytes());
        buf
    }

    /// Decodes the slot at `index` of a table with `max_hosts` slots.
    pub fn decode(bytes: &[u8], index: u32, max_hosts: u32) -> Result<HostSlot, SlotError> {
        let b = bytes
            .get(..SLOT_BYTES)
            .ok_or(SlotError::Invalid("truncated"))?;
        let u32_at = |at: usize| u32_at(b, at);
        let u64_at = |at: usize| u64_at(b, at);
        if u32_at(0) != SLOT_MAGIC {
            return Err(SlotError::Empty);
        }
        if u32_at(4) != SLOT_VERSION {
            return Err(SlotError::UnsupportedVersion(u32_at(4)));
        }
        if u32_at(COVERED) != crc32c(&b[..COVERED]) {
            return Err(SlotError::BadChecksum);
        }
        let state = match u32_at(8) {
            0 => SlotState::Free,
            1 => SlotState::Attached,
            2 => SlotState::Detached,
            _ => return Err(SlotError::Invalid("state")),
        };
        let host_index = u32_at(12);
        if index >= max_hosts || host_index != index {
            return Err(SlotError::Invalid("slot index"));
        }
        let lease_ms = u32_at(40);
        if !LEASE_MS_RANGE.contains(&lease_ms) {
            return Err(SlotError::Invalid("lease period"));
        }
        let mut boot_id = [0u8; 16];
        boot_id.copy_from_slice(&b[16..32]);
        Ok(HostSlot {
            state,
            host_index,
            boot_id,
            heartbeat: u64_at(32),
            lease_ms,
            generation: u64_at(44),
        })
    }
}

/// What an observer concludes about one host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Attached, and its heartbeat changed within the lease plus margin.
    Live,
    /// No heartbeat change for longer than lease + margin.
    Expired,
    /// Its slot says it detached cleanly.
    Detached,
    /// No valid attached slot.
    Absent,
}

/// An observer's view of one host's lease, kept with the observer's own
/// monotonic clock (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTracker {
    boot_id: [u8; 16],
    heartbeat: u64,
    changed_at_ns: u64,
    lease_ms: u32,
    state: SlotState,
    seen: bool,
}

impl Default for LeaseTracker {
    fn default() -> Self {
        LeaseTracker {
            boot_id: [0; 16],
            heartbeat: 0,
            changed_at_ns: 0,
            lease_ms: 0,
            state: SlotState::Free,
            seen: false,
        }
    }
}

impl LeaseTracker {
    /// Margin added to a lease before it is called expired, in per mille of
    /// the lease (covers scheduling delay of the heartbeat writer).
    pub const MARGIN_PERMILLE: u64 = 500;

    /// Records a valid read of the slot at `now_ns`.
    pub fn observe(&mut self, slot: &HostSlot, now_ns: u64) {
        let new_incarnation = !self.seen || slot.boot_id != self.boot_id;
        if new_incarnation || slot.heartbeat != self.heartbeat {
            self.changed_at_ns = now_ns;
        }
        self.boot_id = slot.boot_id;
        self.heartbeat = slot.heartbeat;
        self.lease_ms = slot.lease_ms;
        self.state = slot.state;
        self.seen = true;
    }

    /// Restarts the count of silence at `now_ns`: the observer did not look
    /// for a while, and a change it could not see is no evidence of death.
    pub fn restart(&mut self, now_ns: u64) {
        if self.seen {
            self.changed_at_ns = self.changed_at_ns.max(now_ns);
        }
    }

    /// The boot id last seen (zero if never).
    pub fn boot_id(&self) -> [u8; 16] {
        self.boot_id
    }

    /// The time after the last change at which the lease is expired.
    pub fn expiry_ns(&self) -> u64 {
        expiry_ns(self.lease_ms)
    }

    /// The host's liveness at `now_ns` (the observer's clock, in ns).
    pub fn liveness(&self, now_ns: u64) -> Liveness {
        match (self.seen, self.state) {
            (false, _) | (true, SlotState::Free) => Liveness::Absent,
            (true, SlotState::Detached) => Liveness::Detached,
            (true, SlotState::Attached) => {
                if now_ns.saturating_sub(self.changed_at_ns) > self.expiry_ns() {
                    Liveness::Expired
                } else {
                    Liveness::Live
                }
            }
        }
    }
}

/// A lease period in nanoseconds. Any `u32` fits (`u32::MAX * 10^6 <
/// 2^53`); it saturates all the same rather than trust that.
pub fn lease_ns(lease_ms: u32) -> u64 {
    u64::from(lease_ms).saturating_mul(1_000_000)
}

/// How long after the last change of a heartbeat its lease is expired:
/// the lease plus `LeaseTracker::MARGIN_PERMILLE`. Saturates.
pub fn expiry_ns(lease_ms: u32) -> u64 {
    let lease = lease_ns(lease_ms);
    let margin = lease.saturating_mul(LeaseTracker::MARGIN_PERMILLE) / 1000;
    lease.saturating_add(margin)
}

/// The longest gap between two scans over which an observer still counts
/// a peer's silence (an eighth of the lease). After a longer gap it starts
/// counting again ([`LeaseTracker::restart`]); and a host counts its own
/// lease only from a heartbeat it has read back intact at least this long
/// after writing it. Together: a heartbeat a host counts from was in its
/// slot while every observer that may expire it was looking.
pub fn scan_bound_ns(lease_ms: u32) -> u64 {
    lease_ns(lease_ms) / 8
}

/// The manager: the lowest-indexed live host.
pub fn manager(liveness: &[Liveness]) -> Option<usize> {
    liveness.iter().position(|l| *l == Liveness::Live)
}

/// Whether a manager may still write, given when it wrote the heartbeat it
/// counts its lease from (see [`scan_bound_ns`]): only within the part of
/// its lease that no observer can have expired yet (half the lease,
/// leaving the margin for the write).
pub fn manager_may_write(last_own_heartbeat_ns: u64, now_ns: u64, lease_ms: u32) -> bool {
    now_ns.saturating_sub(last_own_heartbeat_ns) < lease_ns(lease_ms) / 2
}
