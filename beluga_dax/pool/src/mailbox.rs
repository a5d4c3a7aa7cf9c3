//! Request and reply records: the CXL-RPC pattern of the paper, in the
//! host slots.
//!
//! A host slot is four 64-byte lines, each with one writer, so that a line
//! written back by one host never carries stale bytes of another's:
//!
//! ```text
//! +0    lease record (leases.rs)       the host
//! +64   request, 128 bytes             the host
//! +192  reply, 64 bytes                the manager
//! ```
//!
//! A host has at most one request outstanding. It writes the request with
//! the next sequence number; the manager serves it and writes a reply that
//! echoes the sequence number and the requester's boot id. A record read
//! half written fails its CRC32C and is read again later; nothing is ever
//! read-modify-written across hosts.

#![deny(clippy::arithmetic_side_effects)]

use super::checksum::crc32c;
use super::engine::Errno;
use super::le::{u32_at, u64_at};
use super::objects::{Name, ObjectEntry, NAME_BYTES};
use super::sections::Extent;

/// The request follows the lease record's line (`leases.rs`).
pub const REQUEST_OFF: u64 = 64;
/// Size of a request record, in bytes (two lines).
pub const REQUEST_BYTES: usize = 128;
/// Byte offset of the reply in a host slot (its last line, written by
/// the manager).
pub const REPLY_OFF: u64 = REQUEST_OFF + REQUEST_BYTES as u64;
/// Size of a reply record, in bytes.
pub const REPLY_BYTES: usize = 64;
// The reply is the slot's last line.
const _: () = assert!(REPLY_OFF + REPLY_BYTES as u64 == super::layout::HOST_SLOT_BYTES);

const REQUEST_MAGIC: u32 = u32::from_le_bytes(*b"BREQ");
const REPLY_MAGIC: u32 = u32::from_le_bytes(*b"BREP");
/// Bytes of a request and of a reply covered by their CRC32C (which
/// follows them).
pub const REQUEST_COVERED: usize = 112;
/// Bytes of a reply covered by its CRC32C.
pub const REPLY_COVERED: usize = 60;

/// The requester holds CAP_SYS_ADMIN (asserted by its kernel).
pub const REQ_ADMIN: u32 = 1 << 31;

/// What a request asks of the manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// First request of an incarnation: the manager reclaims what the
    /// slot's previous incarnation left before it answers.
    Attach = 1,
    /// Allocate a new object of `sections` sections, held by the host.
    Alloc = 2,
    /// Open a named object: the host holds it.
    Open = 3,
    /// Unlink `object` (its name goes; the sections go with its last
    /// holder). Does not drop the caller's hold.
    Free = 4,
    /// Reclaim the host in `object` now (admin; the host must not be live).
    Reclaim = 5,
    /// Drop the caller's hold on `object`.
    Release = 6,
    /// The owner cleared `object`'s sections: OPEN may find it now.
    Publish = 7,
}

impl Op {
    fn from_u32(v: u32) -> Option<Op> {
        Some(match v {
            1 => Op::Attach,
            2 => Op::Alloc,
            3 => Op::Open,
            4 => Op::Free,
            5 => Op::Reclaim,
            6 => Op::Release,
            7 => Op::Publish,
            _ => return None,
        })
    }
}

/// A host's request, as stored at [`REQUEST_OFF`] of its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// What the manager is to do.
    pub op: Op,
    /// New for each request of the host (0 is never sent); the reply
    /// echoes it.
    pub seq: u64,
    /// Boot id of the requesting incarnation: the manager serves only the
    /// one in the host's lease record.
    pub boot_id: [u8; 16],
    /// Object index (free, release), or host index (reclaim).
    pub object: u32,
    /// Sections (alloc).
    pub sections: u32,
    /// Object serial (free, release).
    pub serial: u64,
    /// Object flags (alloc) and `REQ_ADMIN`.
    pub flags: u32,
    /// The calling process's uid, and the mode of a new object.
    pub uid: u32,
    /// Permission bits of a new object (alloc), at most `0o777`.
    pub mode: u32,
    /// Object name (alloc, open).
    pub name: Option<Name>,
}

/// Why a request or reply record is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    /// Never written, or not this kind of record.
    Empty,
    /// Torn or corrupted: read again.
    BadChecksum,
    /// A field is out of range; says which.
    Invalid(&'static str),
}

impl Request {
    /// A request for `op` with every argument zero (the engine fills in
    /// seq and boot id when it sends it).
    pub fn empty(op: Op) -> Request {
        Request {
            op,
            seq: 0,
            boot_id: [0; 16],
            object: 0,
            sections: 0,
            serial: 0,
            flags: 0,
            uid: 0,
            mode: 0,
            name: None,
        }
    }

    /// The record as stored, with its CRC32C.
    pub fn encode(&self) -> [u8; REQUEST_BYTES] {
        let mut b = [0u8; REQUEST_BYTES];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&(self.op as u32).to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..32].copy_from_slice(&self.boot_id);
        b[32..36].copy_from_slice(&self.object.to_le_bytes());
        b[36..40].copy_from_slice(&self.sections.to_le_bytes());
        b[40..48].copy_from_slice(&self.serial.to_le_bytes());
        b[48..52].copy_from_slice(&self.flags.to_le_bytes());
        b[52..56].copy_from_slice(&self.uid.to_le_bytes());
        b[56..60].copy_from_slice(&self.mode.to_le_bytes());
        if let Some(name) = &self.name {
            let bytes = name.as_bytes();
            // A name is shorter than `NAME_BYTES`; `get` never fails here.
            if let Some(field) = b.get_mut(64..).and_then(|f| f.get_mut(..bytes.len())) {
                field.copy_from_slice(bytes);
            }
        }
        let crc = crc32c(&b[..REQUEST_COVERED]);
        b[REQUEST_COVERED..REQUEST_COVERED + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a request; only the framing and the name are checked here,
    /// the manager checks the rest against its tables.
    pub fn decode(bytes: &[u8]) -> Result<Request, RecordError> {
        let b = bytes
            .get(..REQUEST_BYTES)
            .ok_or(RecordError::Invalid("truncated"))?;
        if u32_at(b, 0) != REQUEST_MAGIC {
            return Err(RecordError::Empty);
        }
        if u32_at(b, REQUEST_COVERED) != crc32c(&b[..REQUEST_COVERED]) {
            return Err(RecordError::BadChecksum);
        }
        let op = Op::from_u32(u32_at(b, 4)).ok_or(RecordError::Invalid("op"))?;
        let raw_name = &b[64..64 + NAME_BYTES];
        let len = raw_name.iter().position(|&c| c == 0).unwrap_or(NAME_BYTES);
        if raw_name[len..].iter().any(|&c| c != 0) {
            return Err(RecordError::Invalid("name padding"));
        }
        let name = if len == 0 {
            None
        } else {
            Some(Name::new(&raw_name[..len]).map_err(|_| RecordError::Invalid("name"))?)
        };
        let mut boot_id = [0u8; 16];
        boot_id.copy_from_slice(&b[16..32]);
        Ok(Request {
            op,
            seq: u64_at(b, 8),
            boot_id,
            object: u32_at(b, 32),
            sections: u32_at(b, 36),
            serial: u64_at(b, 40),
            flags: u32_at(b, 48),
            uid: u32_at(b, 52),
            mode: u32_at(b, 56),
            name,
        })
    }
}

/// The manager's answer. `status` is 0 or a positive errno value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// Sequence number of the request it answers.
    pub seq: u64,
    /// First 8 bytes of the requester's boot id.
    pub boot_tag: [u8; 8],
    /// 0 on success, else a positive errno value.
    pub status: u32,
    /// Object index; for a reclaim, the number of objects released or
    /// freed.
    pub object: u32,
    /// The object's sections (empty if the reply names no object).
    pub extent: Extent,
    /// The object's flags (`FLAG_*` of `objects.rs`).
    pub flags: u32,
    /// The object's serial.
    pub serial: u64,
    /// The object's owner uid.
    pub uid: u32,
    /// The object's permission bits.
    pub mode: u32,
}

/// The tag a reply carries for `boot_id`: its first 8 bytes.
pub fn boot_tag(boot_id: &[u8; 16]) -> [u8; 8] {
    let mut tag = [0u8; 8];
    tag.copy_from_slice(&boot_id[..8]);
    tag
}

impl Reply {
    /// A reply carrying only a status (`Errno(0)`: success without an
    /// object); the manager fills in seq and boot tag.
    pub fn error(errno: Errno) -> Reply {
        Reply {
            seq: 0,
            boot_tag: [0; 8],
            status: errno.0,
            object: 0,
            extent: Extent { first: 0, count: 0 },
            flags: 0,
            serial: 0,
            uid: 0,
            mode: 0,
        }
    }

    /// A successful reply naming object `index`.
    pub fn of(index: u32, entry: &ObjectEntry) -> Reply {
        Reply {
            seq: 0,
            boot_tag: [0; 8],
            status: 0,
            object: index,
            extent: entry.extent,
            flags: entry.flags,
            serial: entry.serial,
            uid: entry.uid,
            mode: entry.mode,
        }
    }

    /// The record as stored, with its CRC32C.
    pub fn encode(&self) -> [u8; REPLY_BYTES] {
        let mut b = [0u8; REPLY_BYTES];
        b[0..4].copy_from_slice(&REPLY_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&self.status.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.boot_tag);
        b[24..28].copy_from_slice(&self.object.to_le_bytes());
        b[28..32].copy_from_slice(&self.extent.first.to_le_bytes());
        b[32..36].copy_from_slice(&self.extent.count.to_le_bytes());
        b[36..40].copy_from_slice(&self.flags.to_le_bytes());
        b[40..48].copy_from_slice(&self.serial.to_le_bytes());
        b[48..52].copy_from_slice(&self.uid.to_le_bytes());
        b[52..56].copy_from_slice(&self.mode.to_le_bytes());
        let crc = crc32c(&b[..REPLY_COVERED]);
        b[REPLY_COVERED..REPLY_COVERED + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a reply; the requester checks the extent against the pool
    /// geometry before it maps anything (`Engine::poll`).
    pub fn decode(bytes: &[u8]) -> Result<Reply, RecordError> {
        let b = bytes
            .get(..REPLY_BYTES)
            .ok_or(RecordError::Invalid("truncated"))?;
        if u32_at(b, 0) != REPLY_MAGIC {
            return Err(RecordError::Empty);
        }
        if u32_at(b, REPLY_COVERED) != crc32c(&b[..REPLY_COVERED]) {
            return Err(RecordError::BadChecksum);
        }
        let mut boot_tag = [0u8; 8];
        boot_tag.copy_from_slice(&b[16..24]);
        Ok(Reply {
            status: u32_at(b, 4),
            seq: u64_at(b, 8),
            boot_tag,
            object: u32_at(b, 24),
            extent: Extent {
                first: u32_at(b, 28),
                count: u32_at(b, 32),
            },
            flags: u32_at(b, 36),
            serial: u64_at(b, 40),
            uid: u32_at(b, 48),
            mode: u32_at(b, 52),
        })
    }
}
