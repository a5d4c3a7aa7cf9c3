//! What the pool looks like (version 3, little-endian). Defined once,
//! here; `Documentation/cxlfabric/drack.rst` has the table.
//!
//! The region beluga lends to DRack is laid out by a [`Geometry`] (host
//! count, `ref_queue` entries, buffers per pair, by-value slots or none):
//!
//! * line 0: the [`Header`], written once by whoever formats the region;
//! * lines `1 + h`: host `h`'s [`Heartbeat`], written only by `h`;
//! * from [`CTL_BASE`]: one control block per ordered pair (src, dst),
//!   grouped by destination (the `ref_queue`s "at dst"): the source's
//!   line ([`SrcLine`]), the destination's line ([`DstLine`]), the
//!   destination's held bitmap (one line), the `ref_queue` entries
//!   ([`RefEntry`], 32 bytes, written by src) and the return ring
//!   ([`ReturnEntry`], 8 bytes, written by dst);
//! * from [`Geometry::data_base`], page-aligned: per pair, the source's
//!   4 KiB buffers, then its by-value slots.
//!
//! Only indices and offsets, never pointers. No line has two writers:
//! the ref entries and the source line are the source's, the destination
//! line, held bitmap and return entries the destination's, and blocks are
//! multiples of [`LINE`].
//!
//! A frame of up to [`FRAME_MAX`] bytes (MTU 9000) takes up to
//! [`FRAGS_MAX`] buffers, one `ref_queue` entry each, consecutive in the
//! queue and published together: entry `i` of `n` carries `frag = i`,
//! `frags = n`, the whole frame's length and its own buffer's length.

use crate::nic::NicTable;
use cxlf_common::checksum::crc32c;
use cxlf_common::le::{le16, le32, le64, put};

/// Bytes of a line: the unit of write-back, invalidate and ownership.
pub const LINE: u64 = 64;
/// Bytes of a buffer (a page: the receiver lends it as an skb fragment).
pub const BUF_BYTES: u64 = 4096;
/// The most hosts a pool may have.
pub const HOSTS_MAX: u32 = 8;
/// The host count by default.
pub const HOSTS_DEFAULT: u32 = 8;
/// The header's signature.
pub const SIGNATURE: [u8; 8] = *b"DRACK\x00\x00\x01";
/// The layout version this crate speaks (2: refusal notices on the return
/// ring, [`RET_REFUSED`]; 3: an entry's port and the heartbeat's table of
/// lent NICs, [`crate::nic`]).
pub const VERSION: u32 = 3;
/// The largest MTU.
pub const MTU_MAX: u32 = 9000;
/// The smallest frame: an Ethernet header.
pub const FRAME_MIN: u32 = 14;
/// The largest frame: [`MTU_MAX`], an Ethernet header and a VLAN tag.
pub const FRAME_MAX: u32 = MTU_MAX + 18;
/// The most buffers (and entries) of one frame: `FRAME_MAX` in 4 KiB.
pub const FRAGS_MAX: u32 = 3;
/// The most buffers per pair: the held bitmap is one line.
pub const BUFS_MAX: u32 = 512;
/// The fewest buffers per pair.
pub const BUFS_MIN: u32 = 4;
/// The fewest `ref_queue` entries.
pub const REF_SLOTS_MIN: u32 = 4;
/// The most `ref_queue` entries.
pub const REF_SLOTS_MAX: u32 = 4096;
/// Bytes of a `ref_queue` entry.
pub const REF_ENTRY_BYTES: u64 = 32;
/// Bytes of a return ring entry.
pub const RET_ENTRY_BYTES: u64 = 8;
/// Where the pair control blocks start.
pub const CTL_BASE: u64 = 4096;
/// Offset of the source line in a pair control block.
pub const SRC_LINE_AT: u64 = 0;
/// Offset of the destination line.
pub const DST_LINE_AT: u64 = LINE;
/// Offset of the destination's held bitmap.
pub const HELD_AT: u64 = 2 * LINE;
/// Offset of the `ref_queue` entries.
pub const REFS_AT: u64 = 3 * LINE;

const _: () = assert!(FRAGS_MAX as u64 * BUF_BYTES >= FRAME_MAX as u64);
const _: () = assert!(BUFS_MAX as u64 <= LINE * 8);
const _: () = assert!((1 + HOSTS_MAX as u64) * LINE <= CTL_BASE);
const _: () = assert!(LINE % REF_ENTRY_BYTES == 0 && LINE % RET_ENTRY_BYTES == 0);
// No buffer index has the refusal flag, and a `ref_queue` holds fewer
// positions than a notice's 15 bits tell apart.
const _: () = assert!(BUFS_MAX <= RET_REFUSED as u32 && REF_SLOTS_MAX <= RET_REFUSED_POS as u32);

/// Why a geometry is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeometryError {
    /// Hosts not in `2..=HOSTS_MAX`.
    Hosts,
    /// `ref_queue` entries not a power of two in range.
    RefSlots,
    /// Buffers per pair not a power of two in range.
    Bufs,
    /// Larger than the region.
    TooLarge,
}

/// The shape of a pool: everything else is computed from it.
///
/// # Invariants
///
/// `hosts` in `2..=HOSTS_MAX`, `ref_slots` and `bufs` powers of two in
/// range, and the whole layout fits a `u64` (it is far below).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    hosts: u32,
    ref_slots: u32,
    bufs: u32,
    by_value: bool,
}

/// Rounds `v` up to a multiple of `to` (a power of two); saturates.
const fn round_up(v: u64, to: u64) -> u64 {
    v.saturating_add(to.saturating_sub(1)) & !to.saturating_sub(1)
}

impl Geometry {
    /// The defaults: 8 hosts, 128 `ref_queue` entries, 256 buffers per
    /// pair (1 MiB) and 128 by-value slots.
    pub const DEFAULT: Geometry = Geometry {
        hosts: HOSTS_DEFAULT,
        ref_slots: 128,
        bufs: 256,
        by_value: true,
    };

    /// A geometry, if in range. With `by_value`, each pair has one 4 KiB
    /// slot per `ref_queue` entry for by-value frames.
    pub const fn new(
        hosts: u32,
        ref_slots: u32,
        bufs: u32,
        by_value: bool,
    ) -> Result<Geometry, GeometryError> {
        if hosts < 2 || hosts > HOSTS_MAX {
            return Err(GeometryError::Hosts);
        }
        if !ref_slots.is_power_of_two() || ref_slots < REF_SLOTS_MIN || ref_slots > REF_SLOTS_MAX {
            return Err(GeometryError::RefSlots);
        }
        if !bufs.is_power_of_two() || bufs < BUFS_MIN || bufs > BUFS_MAX {
            return Err(GeometryError::Bufs);
        }
        // INVARIANT: checked above; the largest layout (8 hosts, 56
        // pairs of 4608 pages) is below 2^31 pages.
        Ok(Geometry {
            hosts,
            ref_slots,
            bufs,
            by_value,
        })
    }

    /// Hosts sharing the pool.
    pub const fn hosts(&self) -> u32 {
        self.hosts
    }
    /// Entries of each `ref_queue`.
    pub const fn ref_slots(&self) -> u32 {
        self.ref_slots
    }
    /// The source's buffers of each pair (and return ring entries).
    pub const fn bufs(&self) -> u32 {
        self.bufs
    }
    /// Whether each pair has by-value slots.
    pub const fn by_value(&self) -> bool {
        self.by_value
    }
    /// By-value slots of each pair: one per `ref_queue` entry, or none.
    pub const fn value_slots(&self) -> u32 {
        if self.by_value {
            self.ref_slots
        } else {
            0
        }
    }
    /// Ordered pairs (src, dst), src != dst.
    pub const fn pairs(&self) -> u32 {
        self.hosts.saturating_mul(self.hosts.saturating_sub(1))
    }

    /// The index of pair (src, dst): grouped by dst, then src in order.
    pub const fn pair(&self, src: u32, dst: u32) -> Option<u32> {
        if src >= self.hosts || dst >= self.hosts || src == dst {
            return None;
        }
        let k = if src < dst {
            src
        } else {
            src.saturating_sub(1)
        };
        Some(
            dst.saturating_mul(self.hosts.saturating_sub(1))
                .saturating_add(k),
        )
    }

    /// Bytes of the ref entries of a pair, whole lines.
    pub const fn refs_bytes(&self) -> u64 {
        round_up(
            (self.ref_slots as u64).saturating_mul(REF_ENTRY_BYTES),
            LINE,
        )
    }
    /// Offset of the return entries in a pair control block.
    pub const fn rets_at(&self) -> u64 {
        REFS_AT.saturating_add(self.refs_bytes())
    }
    /// Bytes of a pair control block, whole lines.
    pub const fn ctl_bytes(&self) -> u64 {
        round_up(
            self.rets_at()
                .saturating_add((self.bufs as u64).saturating_mul(RET_ENTRY_BYTES)),
            LINE,
        )
    }
    /// Offset of the pair data areas (page-aligned).
    pub const fn data_base(&self) -> u64 {
        round_up(
            CTL_BASE.saturating_add((self.pairs() as u64).saturating_mul(self.ctl_bytes())),
            BUF_BYTES,
        )
    }
    /// Bytes of a pair's data area: its buffers and by-value slots.
    pub const fn data_bytes(&self) -> u64 {
        ((self.bufs as u64).saturating_add(self.value_slots() as u64)).saturating_mul(BUF_BYTES)
    }
    /// Bytes of the whole layout.
    pub const fn total_bytes(&self) -> u64 {
        self.data_base()
            .saturating_add((self.pairs() as u64).saturating_mul(self.data_bytes()))
    }

    /// Offset of host `h`'s heartbeat line.
    pub const fn heartbeat(&self, h: u32) -> Option<u64> {
        if h >= self.hosts {
            return None;
        }
        Some(LINE.saturating_mul((h as u64).saturating_add(1)))
    }
    /// Offset of pair `pair`'s control block.
    pub const fn ctl(&self, pair: u32) -> Option<u64> {
        if pair >= self.pairs() {
            return None;
        }
        Some(CTL_BASE.saturating_add((pair as u64).saturating_mul(self.ctl_bytes())))
    }
    /// Offset of ref entry slot `slot` of pair `pair`.
    pub const fn ref_entry(&self, pair: u32, slot: u32) -> Option<u64> {
        match self.ctl(pair) {
            Some(c) if slot < self.ref_slots => Some(
                c.saturating_add(REFS_AT)
                    .saturating_add((slot as u64).saturating_mul(REF_ENTRY_BYTES)),
            ),
            _ => None,
        }
    }
    /// Offset of return entry slot `slot` of pair `pair`.
    pub const fn ret_entry(&self, pair: u32, slot: u32) -> Option<u64> {
        match self.ctl(pair) {
            Some(c) if slot < self.bufs => Some(
                c.saturating_add(self.rets_at())
                    .saturating_add((slot as u64).saturating_mul(RET_ENTRY_BYTES)),
            ),
            _ => None,
        }
    }
    /// Offset of buffer `buf` of pair `pair`.
    pub const fn buffer(&self, pair: u32, buf: u32) -> Option<u64> {
        if pair >= self.pairs() || buf >= self.bufs {
            return None;
        }
        Some(
            self.data_base()
                .saturating_add((pair as u64).saturating_mul(self.data_bytes()))
                .saturating_add((buf as u64).saturating_mul(BUF_BYTES)),
        )
    }
    /// Offset of by-value slot `slot` of pair `pair`.
    pub const fn value_slot(&self, pair: u32, slot: u32) -> Option<u64> {
        if pair >= self.pairs() || slot >= self.value_slots() {
            return None;
        }
        Some(
            self.data_base()
                .saturating_add((pair as u64).saturating_mul(self.data_bytes()))
                .saturating_add(
                    ((self.bufs as u64).saturating_add(slot as u64)).saturating_mul(BUF_BYTES),
                ),
        )
    }

    /// This geometry's header.
    pub const fn header(&self) -> Header {
        Header {
            version: VERSION,
            hosts: self.hosts,
            ref_slots: self.ref_slots,
            bufs: self.bufs,
            value_slots: self.value_slots(),
            total: self.total_bytes(),
        }
    }
}

/// The region header (line 0), written once when the region is formatted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// [`VERSION`].
    pub version: u32,
    /// Hosts.
    pub hosts: u32,
    /// `ref_queue` entries.
    pub ref_slots: u32,
    /// Buffers per pair.
    pub bufs: u32,
    /// By-value slots per pair (0 or `ref_slots`).
    pub value_slots: u32,
    /// Bytes of the layout.
    pub total: u64,
}

impl Header {
    /// The header line: signature at 0, fields from 8, CRC32C of bytes
    /// 0..60 at 60.
    pub fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        put(&mut b, 0, &SIGNATURE);
        put(&mut b, 8, &self.version.to_le_bytes());
        put(&mut b, 12, &self.hosts.to_le_bytes());
        put(&mut b, 16, &self.ref_slots.to_le_bytes());
        put(&mut b, 20, &self.bufs.to_le_bytes());
        put(&mut b, 24, &self.value_slots.to_le_bytes());
        put(&mut b, 32, &self.total.to_le_bytes());
        let crc = crc32c(b.get(..60).unwrap_or(&[]));
        put(&mut b, 60, &crc.to_le_bytes());
        b
    }

    /// The geometry a header line describes, if it is one of ours, of
    /// this version, intact, consistent and within `region` bytes.
    pub fn decode(b: &[u8; 64], region: u64) -> Result<Geometry, GeometryError> {
        let ours = b.get(..8) == Some(&SIGNATURE[..])
            && le32(b, 8) == VERSION
            && le32(b, 60) == crc32c(b.get(..60).unwrap_or(&[]));
        if !ours {
            return Err(GeometryError::TooLarge);
        }
        let value_slots = le32(b, 24);
        let ref_slots = le32(b, 16);
        if value_slots != 0 && value_slots != ref_slots {
            return Err(GeometryError::RefSlots);
        }
        let g = Geometry::new(le32(b, 12), ref_slots, le32(b, 20), value_slots != 0)?;
        if g.total_bytes() != le64(b, 32) || g.total_bytes() > region {
            return Err(GeometryError::TooLarge);
        }
        Ok(g)
    }
}

/// A host's heartbeat line, written only by that host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heartbeat {
    /// The host's epoch: 0 never joined; one more at each join.
    pub epoch: u32,
    /// The host's index (checks the line is the host's).
    pub host: u32,
    /// Increments while the host is alive (leases are beluga's).
    pub beat: u64,
    /// The lease the host beats for, milliseconds: it beats at least
    /// four times a lease. 0: not announced (a line from before this
    /// field, or a fresh join). Observers wait the longer of their own
    /// lease and this before they call the host dead, so hosts loaded
    /// with different leases do not declare each other dead.
    pub lease_ms: u32,
    /// The NICs the host lends; `None` read from a line whose table does
    /// not check (written always).
    pub nics: Option<NicTable>,
}

/// A heartbeat line's magic.
pub const HEARTBEAT_MAGIC: u32 = 0x4452_4842; // "BHRD"
/// A source line's magic.
pub const SRC_MAGIC: u32 = 0x4452_5352; // "RSRD"
/// A destination line's magic.
pub const DST_MAGIC: u32 = 0x4452_4453; // "SDRD"

impl Heartbeat {
    /// The line: magic, epoch, host, lease, beat (the lease in bytes
    /// that were zero before it existed), then the NIC table from byte
    /// 24 with its CRC ([`NicTable::encode_into`]).
    pub fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        put(&mut b, 0, &HEARTBEAT_MAGIC.to_le_bytes());
        put(&mut b, 4, &self.epoch.to_le_bytes());
        put(&mut b, 8, &self.host.to_le_bytes());
        put(&mut b, 12, &self.lease_ms.to_le_bytes());
        put(&mut b, 16, &self.beat.to_le_bytes());
        self.nics.unwrap_or_default().encode_into(&mut b);
        b
    }
    /// The heartbeat, or `None` if the line is not one.
    pub fn decode(b: &[u8; 64]) -> Option<Heartbeat> {
        (le32(b, 0) == HEARTBEAT_MAGIC).then(|| Heartbeat {
            epoch: le32(b, 4),
            host: le32(b, 8),
            beat: le64(b, 16),
            lease_ms: le32(b, 12),
            nics: NicTable::decode(b),
        })
    }
}

/// The source's line of a pair, written only by the source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SrcLine {
    /// The source's epoch of this session (0: none).
    pub src_epoch: u32,
    /// The destination epoch the source has reset its side for.
    pub ack_dst_epoch: u32,
    /// `ref_queue` entries published (free-running).
    pub tail: u32,
    /// Return entries consumed (free-running).
    pub ret_head: u32,
}

impl SrcLine {
    /// The line: magic, then the fields in order.
    pub fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        put(&mut b, 0, &SRC_MAGIC.to_le_bytes());
        put(&mut b, 4, &self.src_epoch.to_le_bytes());
        put(&mut b, 8, &self.ack_dst_epoch.to_le_bytes());
        put(&mut b, 12, &self.tail.to_le_bytes());
        put(&mut b, 16, &self.ret_head.to_le_bytes());
        b
    }
    /// The line, or `None` without the magic.
    pub fn decode(b: &[u8; 64]) -> Option<SrcLine> {
        (le32(b, 0) == SRC_MAGIC).then(|| SrcLine {
            src_epoch: le32(b, 4),
            ack_dst_epoch: le32(b, 8),
            tail: le32(b, 12),
            ret_head: le32(b, 16),
        })
    }
}

/// The destination's line of a pair, written only by the destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DstLine {
    /// The destination's epoch (0: none).
    pub dst_epoch: u32,
    /// The source epoch the destination has reset its side for.
    pub ack_src_epoch: u32,
    /// `ref_queue` entries consumed (free-running).
    pub head: u32,
    /// Return entries published (free-running).
    pub ret_tail: u32,
}

impl DstLine {
    /// The line: magic, then the fields in order.
    pub fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        put(&mut b, 0, &DST_MAGIC.to_le_bytes());
        put(&mut b, 4, &self.dst_epoch.to_le_bytes());
        put(&mut b, 8, &self.ack_src_epoch.to_le_bytes());
        put(&mut b, 12, &self.head.to_le_bytes());
        put(&mut b, 16, &self.ret_tail.to_le_bytes());
        b
    }
    /// The line, or `None` without the magic.
    pub fn decode(b: &[u8; 64]) -> Option<DstLine> {
        (le32(b, 0) == DST_MAGIC).then(|| DstLine {
            dst_epoch: le32(b, 4),
            ack_src_epoch: le32(b, 8),
            head: le32(b, 12),
            ret_tail: le32(b, 16),
        })
    }
}

/// [`RefEntry::flags`]: the entry names a by-value slot, not a buffer.
pub const REF_BY_VALUE: u16 = 1 << 0;
/// [`RefEntry::flags`]: the checksum hints are valid (CHECKSUM_PARTIAL).
pub const REF_CSUM_PARTIAL: u16 = 1 << 1;
/// The flags this version knows.
pub const REF_FLAGS: u16 = REF_BY_VALUE | REF_CSUM_PARTIAL;

/// A `ref_queue` entry: one buffer (or by-value slot) of a frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefEntry {
    /// Its queue position (free-running): a stale entry does not match.
    pub seq: u32,
    /// The source's epoch of the session.
    pub epoch: u32,
    /// Destination host.
    pub dst: u8,
    /// Source host.
    pub src: u8,
    /// This entry's place in its frame, `0..frags`.
    pub frag: u8,
    /// Entries of the frame, `1..=FRAGS_MAX`.
    pub frags: u8,
    /// [`REF_BY_VALUE`], [`REF_CSUM_PARTIAL`].
    pub flags: u16,
    /// The buffer (or by-value slot) index within the pair.
    pub buffer: u16,
    /// Bytes of the frame in this buffer.
    pub len: u16,
    /// Bytes of the whole frame.
    pub frame_len: u16,
    /// Checksum hint: where checksumming starts.
    pub csum_start: u16,
    /// Checksum hint: where the checksum goes, from `csum_start`.
    pub csum_offset: u16,
    /// The frame's port ([`crate::nic::Port::encode`]; 0: drack0's).
    pub port: u8,
}

impl RefEntry {
    /// The 32 bytes: fields in order from 0, the port at 24, zero at
    /// 25..28, CRC32C of bytes 0..28 at 28 (a torn or scribbled entry
    /// does not check).
    pub fn encode(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        put(&mut b, 0, &self.seq.to_le_bytes());
        put(&mut b, 4, &self.epoch.to_le_bytes());
        put(&mut b, 8, &[self.dst, self.src, self.frag, self.frags]);
        put(&mut b, 12, &self.flags.to_le_bytes());
        put(&mut b, 14, &self.buffer.to_le_bytes());
        put(&mut b, 16, &self.len.to_le_bytes());
        put(&mut b, 18, &self.frame_len.to_le_bytes());
        put(&mut b, 20, &self.csum_start.to_le_bytes());
        put(&mut b, 22, &self.csum_offset.to_le_bytes());
        b[24] = self.port;
        let crc = crc32c(b.get(..28).unwrap_or(&[]));
        put(&mut b, 28, &crc.to_le_bytes());
        b
    }
    /// The entry, and whether its CRC and reserved bytes check.
    pub fn decode(b: &[u8; 32]) -> (RefEntry, bool) {
        let intact =
            le32(b, 28) == crc32c(b.get(..28).unwrap_or(&[])) && b.get(25..28) == Some(&[0; 3]);
        let e = RefEntry {
            seq: le32(b, 0),
            epoch: le32(b, 4),
            dst: b[8],
            src: b[9],
            frag: b[10],
            frags: b[11],
            flags: le16(b, 12),
            buffer: le16(b, 14),
            len: le16(b, 16),
            frame_len: le16(b, 18),
            csum_start: le16(b, 20),
            csum_offset: le16(b, 22),
            port: b[24],
        };
        (e, intact)
    }
}

/// [`ReturnEntry::buffer`]: not a buffer but a refusal notice, naming in
/// its low 15 bits ([`RET_REFUSED_POS`]) the `ref_queue` position of an
/// entry the destination skipped without giving its buffer back (its CRC
/// failed, so the buffer it names cannot be trusted).
pub const RET_REFUSED: u16 = 0x8000;
/// The position bits of a refusal notice.
pub const RET_REFUSED_POS: u16 = 0x7fff;

/// A return ring entry: a buffer the destination gives back, or a
/// refusal notice ([`RET_REFUSED`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReturnEntry {
    /// The source epoch of the session the buffer came in, or 0 for an
    /// earlier session.
    pub epoch: u32,
    /// The buffer, or [`RET_REFUSED`] and the low 15 bits of a refused
    /// entry's position.
    pub buffer: u16,
    /// The low 16 bits of its ring position: a stale entry does not match.
    pub seq: u16,
}

/// The `buffer` field of a refusal notice for `ref_queue` position `pos`.
pub fn refusal(pos: u32) -> u16 {
    RET_REFUSED | (pos & u32::from(RET_REFUSED_POS)) as u16
}

impl ReturnEntry {
    /// The low 15 bits of the position a refusal notice names, or `None`
    /// for a return.
    pub fn refused(&self) -> Option<u16> {
        (self.buffer & RET_REFUSED != 0).then_some(self.buffer & RET_REFUSED_POS)
    }

    /// The 8 bytes: epoch, buffer, seq.
    pub fn encode(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        put(&mut b, 0, &self.epoch.to_le_bytes());
        put(&mut b, 4, &self.buffer.to_le_bytes());
        put(&mut b, 6, &self.seq.to_le_bytes());
        b
    }
    /// The entry.
    pub fn decode(b: &[u8; 8]) -> ReturnEntry {
        ReturnEntry {
            epoch: le32(b, 0),
            buffer: le16(b, 4),
            seq: le16(b, 6),
        }
    }
}
