//! The object table: named, owned allocations of whole sections.
//!
//! Entry `i` (128 bytes at `object_table_off + i * 128`) describes object
//! `i`; the section table marks its sections with `i + 1`. Only the
//! manager writes entries. `check_tables` is the at-rest form of the
//! allocator's central promise: every used section belongs to exactly one
//! live object, and every live object owns exactly its extent.

#![deny(clippy::arithmetic_side_effects)]

use super::checksum::crc32c;
use super::le::{u32_at, u64_at};
use super::sections::{Extent, SectionMap};

/// Size of an object table entry, in bytes.
pub const ENTRY_BYTES: usize = super::layout::OBJECT_ENTRY_BYTES as usize;
/// Size of the name field, in bytes: a name is NUL padded, so at most 47
/// bytes long.
pub const NAME_BYTES: usize = 48;
/// Bytes covered by the checksum (everything before it).
const COVERED: usize = 104;

/// The bit of `host` in a holders mask (0 for an index past the 64 a mask
/// can hold, which no valid host has).
pub fn host_bit(host: u32) -> u64 {
    1u64.checked_shl(host).unwrap_or(0)
}

/// Shared objects can be opened by name from other hosts.
pub const FLAG_SHARED: u32 = 1;
/// Unlinked (FREE): its name is gone (OPEN does not find it, a new object
/// may take it), its sections go with its last holder. Set by the manager
/// only.
pub const FLAG_UNLINKED: u32 = 2;
/// Allocated, not yet published: its owner host is clearing the sections
/// (they may hold an earlier owner's bytes). OPEN does not find it; its
/// name is taken. Set by the manager at ALLOC, cleared by PUBLISH.
pub const FLAG_CLEARING: u32 = 4;
const KNOWN_FLAGS: u32 = FLAG_SHARED | FLAG_UNLINKED | FLAG_CLEARING;

/// Why an object entry or a name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectError {
    /// The entry fails its CRC32C: torn or corrupted.
    BadChecksum,
    /// A field or a name is invalid; says which.
    Invalid(&'static str),
}

/// A validated object name: 1 to 47 bytes of `[A-Za-z0-9._-]`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Name {
    bytes: [u8; NAME_BYTES],
    len: u8,
}

impl core::fmt::Debug for Name {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl Name {
    /// Validates `text` as a name (length and characters).
    pub fn new(text: &[u8]) -> Result<Name, ObjectError> {
        if text.is_empty() || text.len() >= NAME_BYTES {
            return Err(ObjectError::Invalid("name length must be 1..=47"));
        }
        if !text
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        {
            return Err(ObjectError::Invalid(
                "name characters must be [A-Za-z0-9._-]",
            ));
        }
        let mut bytes = [0u8; NAME_BYTES];
        bytes[..text.len()].copy_from_slice(text);
        Ok(Name {
            bytes,
            len: text.len() as u8,
        })
    }

    /// The name's bytes, without padding.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        // Validated ASCII in `new`.
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

/// A live object, as its table entry describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectEntry {
    /// The sections it owns.
    pub extent: Extent,
    /// Host that allocated it (its private objects die with its lease).
    pub owner_host: u32,
    /// [`FLAG_SHARED`], [`FLAG_UNLINKED`] and [`FLAG_CLEARING`] bits.
    pub flags: u32,
    /// Owner and permission bits, as for a file (`0o600` by default).
    pub uid: u32,
    /// Permission bits, at most `0o777` (see [`ObjectEntry::may_map`]).
    pub mode: u32,
    /// Hosts holding the object (bit per host slot): it lives while any
    /// does, or while it has a name and is not unlinked.
    pub holders: u64,
    /// Pool generation at creation.
    pub generation: u64,
    /// Unique per allocation, so a stale handle never names a reused slot.
    pub serial: u64,
    /// Sequence number of the owner's request that created it, so that a
    /// request served again after a manager change finds its object.
    pub request_seq: u32,
    /// Its name, if any (a shared object has one).
    pub name: Option<Name>,
}

/// What an entry slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// No object.
    Free,
    /// A live object.
    Live(ObjectEntry),
}

impl Slot {
    /// The entry as stored, with its CRC32C (a free entry is all zeros but
    /// the CRC32C).
    pub fn encode(&self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        if let Slot::Live(e) = self {
            b[0..4].copy_from_slice(&1u32.to_le_bytes());
            b[4..8].copy_from_slice(&e.extent.first.to_le_bytes());
            b[8..12].copy_from_slice(&e.extent.count.to_le_bytes());
            b[12..16].copy_from_slice(&e.owner_host.to_le_bytes());
            b[16..20].copy_from_slice(&e.flags.to_le_bytes());
            b[20..24].copy_from_slice(&e.uid.to_le_bytes());
            b[24..28].copy_from_slice(&e.mode.to_le_bytes());
            b[28..32].copy_from_slice(&e.request_seq.to_le_bytes());
            b[32..40].copy_from_slice(&e.holders.to_le_bytes());
            b[40..48].copy_from_slice(&e.generation.to_le_bytes());
            b[48..56].copy_from_slice(&e.serial.to_le_bytes());
            if let Some(name) = &e.name {
                b[56..56 + NAME_BYTES].copy_from_slice(&name.bytes);
            }
        }
        let crc = crc32c(&b[..COVERED]);
        b[COVERED..COVERED + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes an entry of a pool with `section_count` sections and
    /// `max_hosts` host slots, validating every field.
    pub fn decode(bytes: &[u8], section_count: u32, max_hosts: u32) -> Result<Slot, ObjectError> {
        let b = bytes
            .get(..ENTRY_BYTES)
            .ok_or(ObjectError::Invalid("truncated"))?;
        if u32_at(b, COVERED) != crc32c(&b[..COVERED]) {
            return Err(ObjectError::BadChecksum);
        }
        match u32_at(b, 0) {
            0 => return Ok(Slot::Free),
            1 => {}
            _ => return Err(ObjectError::Invalid("state")),
        }
        let extent = Extent {
            first: u32_at(b, 4),
            count: u32_at(b, 8),
        };
        let end = extent.first.checked_add(extent.count);
        if extent.count == 0 || !matches!(end, Some(end) if end <= section_count) {
            return Err(ObjectError::Invalid("extent outside the data area"));
        }
        let owner_host = u32_at(b, 12);
        if owner_host >= max_hosts {
            return Err(ObjectError::Invalid("owner host"));
        }
        let flags = u32_at(b, 16);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(ObjectError::Invalid("flags"));
        }
        let mode = u32_at(b, 24);
        if mode > 0o777 {
            return Err(ObjectError::Invalid("mode"));
        }
        let holders = u64_at(b, 32);
        if max_hosts < u64::BITS && holders >> max_hosts != 0 {
            return Err(ObjectError::Invalid("holders beyond the host table"));
        }
        let raw_name = &b[56..56 + NAME_BYTES];
        let len = raw_name.iter().position(|&c| c == 0).unwrap_or(NAME_BYTES);
        if raw_name[len..].iter().any(|&c| c != 0) {
            return Err(ObjectError::Invalid("name padding"));
        }
        let name = if len == 0 {
            None
        } else {
            Some(Name::new(&raw_name[..len])?)
        };
        if flags & FLAG_SHARED != 0 && name.is_none() {
            return Err(ObjectError::Invalid("shared object without a name"));
        }
        Ok(Slot::Live(ObjectEntry {
            extent,
            owner_host,
            flags,
            uid: u32_at(b, 20),
            mode,
            holders,
            generation: u64_at(b, 40),
            serial: u64_at(b, 48),
            request_seq: u32_at(b, 28),
            name,
        }))
    }
}

impl ObjectEntry {
    /// Whether other hosts may open it by name ([`FLAG_SHARED`]).
    pub fn is_shared(&self) -> bool {
        self.flags & FLAG_SHARED != 0
    }

    /// Whether FREE has unlinked it ([`FLAG_UNLINKED`]).
    pub fn is_unlinked(&self) -> bool {
        self.flags & FLAG_UNLINKED != 0
    }

    /// The name OPEN finds it by: none once unlinked (the entry keeps the
    /// name for display).
    pub fn visible_name(&self) -> Option<&Name> {
        if self.is_unlinked() {
            None
        } else {
            self.name.as_ref()
        }
    }

    /// Allocated but not published yet (see [`FLAG_CLEARING`]).
    pub fn is_clearing(&self) -> bool {
        self.flags & FLAG_CLEARING != 0
    }

    /// Whether host `host` holds it.
    pub fn held_by(&self, host: u32) -> bool {
        self.holders & host_bit(host) != 0
    }

    /// Nothing keeps it: no host holds it, and no name reaches it or it
    /// was never published (its owner let go before clearing it). The
    /// manager frees such an object at once.
    pub fn is_garbage(&self) -> bool {
        self.holders == 0 && (self.visible_name().is_none() || self.is_clearing())
    }

    /// Permission to map (`write` for read-write), for a caller with `uid`
    /// that is not privileged: owner bits for the owner, other bits for
    /// everyone else.
    pub fn may_map(&self, uid: u32, write: bool) -> bool {
        let bits = if uid == self.uid {
            (self.mode >> 6) & 0o7
        } else {
            self.mode & 0o7
        };
        let need = if write { 0o6 } else { 0o4 };
        bits & need == need
    }
}

/// How the section table and the object table disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inconsistency {
    /// Section `section` is marked for an object that is free.
    SectionOfFreeObject {
        /// Index of the section.
        section: u32,
        /// Index of the free object it is marked for.
        object: u32,
    },
    /// A live object's extent has a section marked for someone else.
    ExtentNotOwned {
        /// Index of the object.
        object: u32,
        /// Index of the section in its extent that is marked otherwise.
        section: u32,
    },
    /// Two live objects that are not unlinked share a name.
    DuplicateName {
        /// Index of the first object with the name.
        first: u32,
        /// Index of a later object with the same name.
        second: u32,
    },
}

/// Checks the section table against the object table.
pub fn check_tables(sections: &SectionMap<'_>, objects: &[Slot]) -> Result<(), Inconsistency> {
    for section in 0..sections.len() {
        if let Some(object) = sections.owner(section) {
            if !matches!(objects.get(object as usize), Some(Slot::Live(_))) {
                return Err(Inconsistency::SectionOfFreeObject { section, object });
            }
        }
    }
    for (i, slot) in objects.iter().enumerate() {
        let Slot::Live(entry) = slot else { continue };
        for section in entry.extent.first..entry.extent.end() {
            if sections.owner(section) != Some(i as u32) {
                return Err(Inconsistency::ExtentNotOwned {
                    object: i as u32,
                    section,
                });
            }
        }
        if let Some(name) = entry.visible_name() {
            let next = i.saturating_add(1);
            let later = objects.get(next..).unwrap_or(&[]);
            let duplicate = later.iter().position(|other| match other {
                Slot::Live(o) => o.visible_name() == Some(name),
                Slot::Free => false,
            });
            if let Some(j) = duplicate {
                return Err(Inconsistency::DuplicateName {
                    first: i as u32,
                    second: next.saturating_add(j) as u32,
                });
            }
        }
    }
    Ok(())
}
