//! On-pool format, version 1 (documented in
//! `Documentation/cxlfabric/beluga.rst`).
//!
//! ```text
//! 0                 superblock (128 bytes used, 4 KiB reserved)
//! host_table_off    max_hosts x 256-byte host slots (one writer each)
//! section_table_off one 16-byte entry per 2 MiB section (manager writes)
//! object_table_off  max_objects x 128-byte object entries (manager writes)
//! data_off          the sections, 2 MiB aligned, to the end of the pool
//! ```
//!
//! Integers are little-endian. Decoding never trusts a stored offset or
//! count: it recomputes the geometry from the pool size and the table sizes
//! and requires the stored values to match.

#![deny(clippy::arithmetic_side_effects)]

use super::checksum::crc32c;
use super::le::bytes_at;

/// "BELUGAPL" read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"BELUGAPL");
/// 2: objects live by holders and name (FLAG_UNLINKED, RELEASE, FREE is
/// unlink). Version 1 hosts free at FREE: the two must not share a pool.
pub const VERSION: u32 = 2;
/// Size of a section, the unit of allocation and mapping, in bytes (2 MiB).
pub const SECTION_SIZE: u64 = 2 << 20;
/// Size of the superblock record, in bytes.
pub const SUPERBLOCK_BYTES: usize = 128;
/// Bytes reserved for the superblock at offset 0; the host table follows.
pub const SUPERBLOCK_RESERVED: u64 = 4096;
/// Size of a host slot, in bytes (four 64-byte lines, one writer each).
pub const HOST_SLOT_BYTES: u64 = 256;
/// Size of a section table entry, in bytes.
pub const SECTION_ENTRY_BYTES: u64 = 16;
/// Size of an object table entry, in bytes.
pub const OBJECT_ENTRY_BYTES: u64 = 128;
/// Most host slots a pool can have: an object's holders are a bit per
/// host in a `u64`.
pub const MAX_HOSTS: u32 = 64;
/// Most entries an object table can have.
pub const MAX_OBJECTS: u32 = 1 << 16;
// An object's holders are a bit per host in a u64; `Geometry::new`'s
// refusals name both limits.
const _: () = assert!(MAX_HOSTS == u64::BITS && MAX_OBJECTS == 65536);
const TABLE_ALIGN: u64 = 4096;

/// Why a superblock or a geometry is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutError {
    /// Not a Beluga pool (or not formatted).
    BadMagic,
    /// Formatted with another format version (the stored one).
    UnsupportedVersion(u32),
    /// The stored CRC32C does not match the bytes (torn or corrupted).
    BadChecksum {
        /// The checksum stored in the superblock.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// The pool claims more bytes than the device has.
    LargerThanDevice {
        /// Pool size the superblock claims, in bytes.
        pool: u64,
        /// Size of the device, in bytes.
        device: u64,
    },
    /// A field is out of range or disagrees with the recomputed geometry.
    Geometry(&'static str),
    /// The buffer is too short to hold the record.
    Truncated,
}

/// Offset of entry `index` of a table of `count` entries of `size` bytes.
fn entry_offset(table: u64, index: u32, count: u32, size: u64) -> Option<u64> {
    if index >= count {
        return None;
    }
    u64::from(index)
        .checked_mul(size)
        .and_then(|off| table.checked_add(off))
}

/// Where everything is, derived from the pool size and table sizes only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes of the device the pool uses.
    pub pool_size: u64,
    /// Host slots in the host table (1..=[`MAX_HOSTS`]).
    pub max_hosts: u32,
    /// Entries in the object table (1..=[`MAX_OBJECTS`]).
    pub max_objects: u32,
    /// Byte offset of the host table (after the superblock's reserved area).
    pub host_table_off: u64,
    /// Byte offset of the section table (4 KiB aligned).
    pub section_table_off: u64,
    /// Byte offset of the object table (4 KiB aligned).
    pub object_table_off: u64,
    /// Byte offset of the data area, where section 0 starts (2 MiB aligned).
    pub data_off: u64,
    /// Sections in the data area (at least one).
    pub section_count: u32,
}

fn align_up(value: u64, align: u64) -> Option<u64> {
    value
        .checked_add(align.checked_sub(1)?)?
        .checked_div(align)?
        .checked_mul(align)
}

/// The end of a table of `count` entries of `size` bytes at `off`,
/// aligned up to `align`; `None` if it overflows.
fn table_end(off: u64, count: u64, size: u64, align: u64) -> Option<u64> {
    align_up(off.checked_add(count.checked_mul(size)?)?, align)
}

impl Geometry {
    /// Lays out a pool of `pool_size` bytes with `max_hosts` host slots and
    /// `max_objects` object entries. Refuses limits out of range and a pool
    /// too small for its metadata and one section.
    pub fn new(pool_size: u64, max_hosts: u32, max_objects: u32) -> Result<Geometry, LayoutError> {
        if max_hosts == 0 || max_hosts > MAX_HOSTS {
            return Err(LayoutError::Geometry("max_hosts must be 1..=64"));
        }
        if max_objects == 0 || max_objects > MAX_OBJECTS {
            return Err(LayoutError::Geometry("max_objects must be 1..=65536"));
        }
        let overflow = LayoutError::Geometry("pool size overflows the layout");
        let host_table_off = SUPERBLOCK_RESERVED;
        let section_table_off = table_end(
            host_table_off,
            max_hosts.into(),
            HOST_SLOT_BYTES,
            TABLE_ALIGN,
        )
        .ok_or(overflow)?;
        // The section table is sized for every section the pool could hold;
        // the metadata then takes a few of them.
        let section_capacity = pool_size / SECTION_SIZE;
        let object_table_off = table_end(
            section_table_off,
            section_capacity,
            SECTION_ENTRY_BYTES,
            TABLE_ALIGN,
        )
        .ok_or(overflow)?;
        let data_off = table_end(
            object_table_off,
            max_objects.into(),
            OBJECT_ENTRY_BYTES,
            SECTION_SIZE,
        )
        .ok_or(overflow)?;
        let too_small = LayoutError::Geometry("pool too small for its metadata and one section");
        let sections = pool_size
            .checked_sub(data_off)
            .filter(|&data| data > 0)
            .ok_or(too_small)?
            / SECTION_SIZE;
        let section_count =
            u32::try_from(sections).map_err(|_| LayoutError::Geometry("too many sections"))?;
        if section_count == 0 {
            return Err(too_small);
        }
        Ok(Geometry {
            pool_size,
            max_hosts,
            max_objects,
            host_table_off,
            section_table_off,
            object_table_off,
            data_off,
            section_count,
        })
    }

    /// Byte offset of section `index` in the pool.
    pub fn section_offset(&self, index: u32) -> Option<u64> {
        if index >= self.section_count {
            return None;
        }
        u64::from(index)
            .checked_mul(SECTION_SIZE)
            .and_then(|off| self.data_off.checked_add(off))
    }

    /// The bytes of sections `[first, first + count)`: offset and length,
    /// if they lie in the data area.
    pub fn sections_span(&self, first: u32, count: u32) -> Option<(u64, u64)> {
        if first.checked_add(count)? > self.section_count {
            return None;
        }
        let offset = u64::from(first)
            .checked_mul(SECTION_SIZE)
            .and_then(|off| self.data_off.checked_add(off))?;
        Some((offset, u64::from(count).checked_mul(SECTION_SIZE)?))
    }

    /// Byte offset of host slot `host`, if the host table has it.
    pub fn host_slot_offset(&self, host: u32) -> Option<u64> {
        entry_offset(self.host_table_off, host, self.max_hosts, HOST_SLOT_BYTES)
    }

    /// Byte offset of the section table entry of `section`, if any.
    pub fn section_entry_offset(&self, section: u32) -> Option<u64> {
        entry_offset(
            self.section_table_off,
            section,
            self.section_count,
            SECTION_ENTRY_BYTES,
        )
    }

    /// Byte offset of object entry `index`, if the object table has it.
    pub fn object_entry_offset(&self, index: u32) -> Option<u64> {
        entry_offset(
            self.object_table_off,
            index,
            self.max_objects,
            OBJECT_ENTRY_BYTES,
        )
    }
}

/// The superblock, as it is laid out at offset 0 (little-endian).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// [`MAGIC`]: marks a formatted Beluga pool.
    pub magic: u64,
    /// Format version: [`VERSION`].
    pub version: u32,
    /// Size of this record, in bytes: [`SUPERBLOCK_BYTES`].
    pub superblock_bytes: u32,
    /// Identity of this format of the pool.
    pub uuid: [u8; 16],
    /// Bytes of the device the pool uses (at most the device size).
    pub pool_size: u64,
    /// Size of a section, in bytes: [`SECTION_SIZE`].
    pub section_size: u64,
    /// Sections in the data area.
    pub section_count: u32,
    /// Host slots in the host table (1..=[`MAX_HOSTS`]).
    pub max_hosts: u32,
    /// Entries in the object table (1..=[`MAX_OBJECTS`]).
    pub max_objects: u32,
    /// None are defined: always 0.
    pub flags: u32,
    /// Byte offset of the host table.
    pub host_table_off: u64,
    /// Byte offset of the section table.
    pub section_table_off: u64,
    /// Byte offset of the object table.
    pub object_table_off: u64,
    /// Byte offset of the data area (section 0).
    pub data_off: u64,
    /// Bumped by every format, so that references taken under an earlier
    /// format can be told apart.
    pub generation: u64,
    /// Unused; written as zeros (covered by the checksum).
    pub reserved: [u8; 20],
    /// CRC32C of the 124 bytes before it.
    pub checksum: u32,
}

const _: () = assert!(core::mem::size_of::<Superblock>() == SUPERBLOCK_BYTES);

/// Little-endian field writer/reader over a fixed buffer.
struct Cursor<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Cursor<'_> {
    /// Appends `bytes` (the encoders fill a buffer of the record's size
    /// exactly, which the round-trip tests check).
    fn put(&mut self, bytes: &[u8]) {
        let end = self.at.saturating_add(bytes.len());
        if let Some(field) = self.buf.get_mut(self.at..end) {
            field.copy_from_slice(bytes);
        }
        self.at = end;
    }
}

fn take<const N: usize>(buf: &[u8], at: &mut usize) -> [u8; N] {
    let out = bytes_at(buf, *at);
    *at = at.saturating_add(N);
    out
}

impl Superblock {
    /// A fresh superblock for `geometry`.
    pub fn new(geometry: &Geometry, uuid: [u8; 16], generation: u64) -> Superblock {
        let mut sb = Superblock {
            magic: MAGIC,
            version: VERSION,
            superblock_bytes: SUPERBLOCK_BYTES as u32,
            uuid,
            pool_size: geometry.pool_size,
            section_size: SECTION_SIZE,
            section_count: geometry.section_count,
            max_hosts: geometry.max_hosts,
            max_objects: geometry.max_objects,
            flags: 0,
            host_table_off: geometry.host_table_off,
            section_table_off: geometry.section_table_off,
            object_table_off: geometry.object_table_off,
            data_off: geometry.data_off,
            generation,
            reserved: [0; 20],
            checksum: 0,
        };
        sb.checksum = crc32c(&sb.encode()[..SUPERBLOCK_BYTES - 4]);
        sb
    }

    /// The record as stored at offset 0, with the `checksum` field as it is
    /// (`new` computes it).
    pub fn encode(&self) -> [u8; SUPERBLOCK_BYTES] {
        let mut buf = [0u8; SUPERBLOCK_BYTES];
        let mut c = Cursor {
            buf: &mut buf,
            at: 0,
        };
        c.put(&self.magic.to_le_bytes());
        c.put(&self.version.to_le_bytes());
        c.put(&self.superblock_bytes.to_le_bytes());
        c.put(&self.uuid);
        c.put(&self.pool_size.to_le_bytes());
        c.put(&self.section_size.to_le_bytes());
        c.put(&self.section_count.to_le_bytes());
        c.put(&self.max_hosts.to_le_bytes());
        c.put(&self.max_objects.to_le_bytes());
        c.put(&self.flags.to_le_bytes());
        c.put(&self.host_table_off.to_le_bytes());
        c.put(&self.section_table_off.to_le_bytes());
        c.put(&self.object_table_off.to_le_bytes());
        c.put(&self.data_off.to_le_bytes());
        c.put(&self.generation.to_le_bytes());
        c.put(&self.reserved);
        c.put(&self.checksum.to_le_bytes());
        buf
    }

    /// Decodes and validates a superblock read from a device of
    /// `device_size` bytes. Every field is checked before it is returned.
    pub fn decode(bytes: &[u8], device_size: u64) -> Result<Superblock, LayoutError> {
        let bytes = bytes
            .get(..SUPERBLOCK_BYTES)
            .ok_or(LayoutError::Truncated)?;
        let at = &mut 0usize;
        let sb = Superblock {
            magic: u64::from_le_bytes(take(bytes, at)),
            version: u32::from_le_bytes(take(bytes, at)),
            superblock_bytes: u32::from_le_bytes(take(bytes, at)),
            uuid: take(bytes, at),
            pool_size: u64::from_le_bytes(take(bytes, at)),
            section_size: u64::from_le_bytes(take(bytes, at)),
            section_count: u32::from_le_bytes(take(bytes, at)),
            max_hosts: u32::from_le_bytes(take(bytes, at)),
            max_objects: u32::from_le_bytes(take(bytes, at)),
            flags: u32::from_le_bytes(take(bytes, at)),
            host_table_off: u64::from_le_bytes(take(bytes, at)),
            section_table_off: u64::from_le_bytes(take(bytes, at)),
            object_table_off: u64::from_le_bytes(take(bytes, at)),
            data_off: u64::from_le_bytes(take(bytes, at)),
            generation: u64::from_le_bytes(take(bytes, at)),
            reserved: take(bytes, at),
            checksum: u32::from_le_bytes(take(bytes, at)),
        };
        if sb.magic != MAGIC {
            return Err(LayoutError::BadMagic);
        }
        if sb.version != VERSION {
            return Err(LayoutError::UnsupportedVersion(sb.version));
        }
        let computed = crc32c(&bytes[..SUPERBLOCK_BYTES - 4]);
        if sb.checksum != computed {
            return Err(LayoutError::BadChecksum {
                stored: sb.checksum,
                computed,
            });
        }
        if sb.superblock_bytes as usize != SUPERBLOCK_BYTES
            || sb.section_size != SECTION_SIZE
            || sb.flags != 0
        {
            return Err(LayoutError::Geometry(
                "superblock size, section size or flags",
            ));
        }
        if sb.pool_size > device_size {
            return Err(LayoutError::LargerThanDevice {
                pool: sb.pool_size,
                device: device_size,
            });
        }
        let expected = Geometry::new(sb.pool_size, sb.max_hosts, sb.max_objects)?;
        if sb.geometry() != expected {
            return Err(LayoutError::Geometry(
                "stored offsets disagree with the pool size",
            ));
        }
        Ok(sb)
    }

    /// The layout this superblock records (for one from `decode`, checked
    /// equal to the one [`Geometry::new`] computes from its sizes).
    pub fn geometry(&self) -> Geometry {
        Geometry {
            pool_size: self.pool_size,
            max_hosts: self.max_hosts,
            max_objects: self.max_objects,
            host_table_off: self.host_table_off,
            section_table_off: self.section_table_off,
            object_table_off: self.object_table_off,
            data_off: self.data_off,
            section_count: self.section_count,
        }
    }
}
