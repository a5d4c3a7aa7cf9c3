//! Cross-host bookkeeping in shared CXL memory (one region per pool,
//! `REGION_NAME`): every host writes one slot per fabric component it
//! uses (its rate through the component, the largest per-weight demand
//! there, a heartbeat, and, from the component's owner, its fair share),
//! and reads the other hosts' slots for the same component. Documented in
//! `Documentation/cxlfabric/mchannel.rst`.
//!
//! Layout, version 1: `MAX_HOSTS` blocks of `SLOTS_PER_HOST` slots of
//! `SLOT_BYTES` (`Slot`, little-endian, at the offsets of its `#[repr(C)]`
//! fields). Host `h` alone writes block `h`. A component's slot is found
//! by its name: from `hash(name) % SLOTS_PER_HOST`, the first of `PROBES`
//! slots that holds that name or is empty. A slot is written whole; a
//! reader checks its magic, version and CRC32C, so a torn or damaged read
//! is told apart from a slot (and an all-zero slot is "empty").
//!
//! Liveness (`PeerView`): a peer counts while the heartbeat of its slot
//! keeps changing; one that is unchanged for a lease is expired. A slot
//! that cannot be read (torn, damaged) is no evidence either way: the
//! peer's last good values stay as they were.

use super::checksum::crc32c;
use core::mem::{offset_of, size_of};

/// The region's name in the pool.
pub const REGION_NAME: &str = "mchannel.fabric.v1";
/// `Slot::magic`: `"MCHS"`, little-endian.
pub const MAGIC: u32 = u32::from_le_bytes(*b"MCHS");
/// `Slot::version` of this layout.
pub const VERSION: u32 = 1;
/// Hosts that can share a fabric (`host_index` below this).
pub const MAX_HOSTS: usize = 16;
/// Components per host (the module's `MAX_COMPONENTS`).
pub const SLOTS_PER_HOST: usize = 64;
/// Size of a slot, in bytes.
pub const SLOT_BYTES: usize = 128;
/// Slots a lookup tries from a name's home slot: all of them (a full
/// block still finds a place; a lookup stops at the first empty slot,
/// and slots are never freed while a host is loaded).
pub const PROBES: usize = SLOTS_PER_HOST;
/// Size of a component name in a slot, in bytes (NUL-padded).
pub const NAME_BYTES: usize = 32;
/// `Slot::flags`: `alpha` is the owner's fair share for everyone.
pub const FLAG_OWNER: u32 = 1;
/// Size of the region, in bytes: every host's block (128 KiB).
pub const REGION_BYTES: usize = MAX_HOSTS * SLOTS_PER_HOST * SLOT_BYTES;

/// One host's view of one component, as stored.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    /// [`MAGIC`].
    pub magic: u32,
    /// [`VERSION`].
    pub version: u32,
    /// Advanced by the writer every control period.
    pub heartbeat: u64,
    /// The writer's aggregate rate through the component as its Eq. 4
    /// counts it (`tree::counted_rate`), bytes/s.
    pub rate: u64,
    /// The writer's largest per-weight demand at the component, bytes/s.
    pub cap: u64,
    /// With `FLAG_OWNER`: the fair share per unit of weight.
    pub alpha: u64,
    /// [`FLAG_OWNER`] or zero.
    pub flags: u32,
    /// The writer's host index, that of the block it is in.
    pub host: u32,
    /// The component's name, NUL-padded: slots match by name.
    pub name: [u8; NAME_BYTES],
    /// Reserved: written as zero, ignored on read.
    pub _reserved: [u64; 5],
    /// Padding before `crc`: written as zero, ignored on read.
    pub _pad: u32,
    /// CRC32C of every byte before it.
    pub crc: u32,
}

const _: () = assert!(size_of::<Slot>() == SLOT_BYTES);
const _: () = assert!(offset_of!(Slot, crc) == SLOT_BYTES - 4);

/// What a read of a slot found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// All zero: nobody wrote it.
    Empty,
    /// Torn, damaged, of another version or of another host: no evidence
    /// of the peer's values. `digest` is the CRC32C of the raw bytes, to
    /// tell whether anyone still writes there.
    Damaged {
        /// CRC32C of all `SLOT_BYTES` bytes as read.
        digest: u32,
    },
    /// The read itself failed: nothing was observed.
    Unreadable,
    /// A whole slot of this version with a good checksum.
    Valid(Slot),
}

fn put_u32(b: &mut [u8; SLOT_BYTES], at: usize, v: u32) {
    if let Some(f) = at.checked_add(4).and_then(|e| b.get_mut(at..e)) {
        f.copy_from_slice(&v.to_le_bytes());
    }
}

fn put_u64(b: &mut [u8; SLOT_BYTES], at: usize, v: u64) {
    if let Some(f) = at.checked_add(8).and_then(|e| b.get_mut(at..e)) {
        f.copy_from_slice(&v.to_le_bytes());
    }
}

fn get_u32(b: &[u8; SLOT_BYTES], at: usize) -> u32 {
    let mut f = [0u8; 4];
    if let Some(s) = at.checked_add(4).and_then(|e| b.get(at..e)) {
        f.copy_from_slice(s);
    }
    u32::from_le_bytes(f)
}

fn get_u64(b: &[u8; SLOT_BYTES], at: usize) -> u64 {
    let mut f = [0u8; 8];
    if let Some(s) = at.checked_add(8).and_then(|e| b.get(at..e)) {
        f.copy_from_slice(s);
    }
    u64::from_le_bytes(f)
}

const CRC_AT: usize = offset_of!(Slot, crc);
const NAME_AT: usize = offset_of!(Slot, name);

impl Slot {
    /// A slot of `host` for component `name` (NUL-padded).
    pub fn new(host: u32, name: [u8; NAME_BYTES]) -> Slot {
        Slot {
            magic: MAGIC,
            version: VERSION,
            host,
            name,
            ..Slot::default()
        }
    }

    /// The slot's bytes as stored, with `crc` computed over them (the
    /// field's own value is not used; the reserved bytes are zero).
    pub fn encode(&self) -> [u8; SLOT_BYTES] {
        let mut b = [0u8; SLOT_BYTES];
        put_u32(&mut b, offset_of!(Slot, magic), self.magic);
        put_u32(&mut b, offset_of!(Slot, version), self.version);
        put_u64(&mut b, offset_of!(Slot, heartbeat), self.heartbeat);
        put_u64(&mut b, offset_of!(Slot, rate), self.rate);
        put_u64(&mut b, offset_of!(Slot, cap), self.cap);
        put_u64(&mut b, offset_of!(Slot, alpha), self.alpha);
        put_u32(&mut b, offset_of!(Slot, flags), self.flags);
        put_u32(&mut b, offset_of!(Slot, host), self.host);
        if let Some(n) = b.get_mut(NAME_AT..NAME_AT.saturating_add(NAME_BYTES)) {
            n.copy_from_slice(&self.name);
        }
        let crc = crc32c(b.get(..CRC_AT).unwrap_or(&[]));
        put_u32(&mut b, CRC_AT, crc);
        b
    }

    /// Decodes a slot read from another host: anything but a whole slot of
    /// this version with a good checksum is `Damaged` (or `Empty`).
    pub fn decode(b: &[u8; SLOT_BYTES]) -> Read {
        if b.iter().all(|&x| x == 0) {
            return Read::Empty;
        }
        let crc = crc32c(b.get(..CRC_AT).unwrap_or(&[]));
        if get_u32(b, CRC_AT) != crc
            || get_u32(b, offset_of!(Slot, magic)) != MAGIC
            || get_u32(b, offset_of!(Slot, version)) != VERSION
        {
            return Read::Damaged { digest: crc32c(b) };
        }
        let mut name = [0u8; NAME_BYTES];
        if let Some(n) = b.get(NAME_AT..NAME_AT.saturating_add(NAME_BYTES)) {
            name.copy_from_slice(n);
        }
        Read::Valid(Slot {
            magic: MAGIC,
            version: VERSION,
            heartbeat: get_u64(b, offset_of!(Slot, heartbeat)),
            rate: get_u64(b, offset_of!(Slot, rate)),
            cap: get_u64(b, offset_of!(Slot, cap)),
            alpha: get_u64(b, offset_of!(Slot, alpha)),
            flags: get_u32(b, offset_of!(Slot, flags)),
            host: get_u32(b, offset_of!(Slot, host)),
            name,
            _reserved: [0; 5],
            _pad: 0,
            crc,
        })
    }
}

/// FNV-1a of a name: where its slot search starts.
pub fn home(name: &[u8; NAME_BYTES]) -> usize {
    let mut h: u32 = 0x811c_9dc5;
    for &b in name.iter().take_while(|&&b| b != 0) {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    (h as usize) % SLOTS_PER_HOST
}

/// Byte offset of slot `index` (`0..SLOTS_PER_HOST`) of `host`; `None`
/// outside the region.
pub fn slot_offset(host: usize, index: usize) -> Option<usize> {
    if host >= MAX_HOSTS || index >= SLOTS_PER_HOST {
        return None;
    }
    host.checked_mul(SLOTS_PER_HOST)?
        .checked_add(index)?
        .checked_mul(SLOT_BYTES)
}

/// The `PROBES` slot indexes a lookup of `name` tries, in order.
pub fn probes(name: &[u8; NAME_BYTES]) -> impl Iterator<Item = usize> {
    let start = home(name);
    (0..PROBES).map(move |i| start.wrapping_add(i) % SLOTS_PER_HOST)
}

/// Decodes a slot read from `host`'s block: a good slot that names
/// another writer (two hosts loaded with one `host_index`) is damaged.
fn decode_from(host: usize, b: &[u8; SLOT_BYTES]) -> Read {
    match Slot::decode(b) {
        Read::Valid(s) if s.host as usize != host => Read::Damaged { digest: crc32c(b) },
        r => r,
    }
}

/// Reads `name`'s slot in peer `host`'s block through `read(index)`
/// (`None`: the read itself failed). `known` is the index it was found
/// at last time; returns what was read and where to look next time. A
/// known slot that now holds another name is searched for again (the
/// peer reloaded and placed it elsewhere); none found means the peer no
/// longer has it.
pub fn lookup(
    host: usize,
    name: &[u8; NAME_BYTES],
    known: Option<usize>,
    mut read: impl FnMut(usize) -> Option<[u8; SLOT_BYTES]>,
) -> (Read, Option<usize>) {
    if let Some(i) = known {
        match read(i).map(|b| decode_from(host, &b)) {
            Some(Read::Valid(s)) if s.name == *name => return (Read::Valid(s), Some(i)),
            Some(d @ Read::Damaged { .. }) => return (d, Some(i)),
            None | Some(Read::Unreadable) => return (Read::Unreadable, Some(i)),
            // Moved or gone: search.
            Some(Read::Valid(_)) | Some(Read::Empty) => {}
        }
    }
    for i in probes(name) {
        match read(i).map(|b| decode_from(host, &b)) {
            Some(Read::Valid(s)) if s.name == *name => return (Read::Valid(s), Some(i)),
            Some(Read::Empty) => return (Read::Empty, None),
            // Another component's, or unreadable: probe on.
            _ => {}
        }
    }
    (Read::Empty, None)
}

/// Where this host puts `name`'s slot in its own block: the first of its
/// probes not in `used` (a bit per slot index); `None` if all are.
pub fn place(name: &[u8; NAME_BYTES], used: u64) -> Option<usize> {
    probes(name).find(|&i| used & (1u64 << (i % 64)) == 0)
}

const _: () = assert!(SLOTS_PER_HOST <= 64);

/// What this host knows of one peer's slot for one component.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerView {
    /// The last good slot, if any.
    pub last: Option<Slot>,
    /// When its heartbeat was last seen to change.
    pub changed_ns: u64,
    /// Its heartbeat (or, while the slot is damaged, its raw bytes)
    /// stayed the same for a lease.
    pub expired: bool,
    /// While the slot reads damaged: the digest of its bytes, and when
    /// they last changed.
    pub damaged: Option<(u32, u64)>,
}

impl PeerView {
    /// Folds in a read made at `now_ns`. Damage is no evidence of a
    /// peer's death: a damaged slot keeps its last good values. What
    /// expires a peer is an observed lease with no writes: a good slot
    /// whose heartbeat, or a damaged slot whose bytes, did not change for
    /// `lease_ns` (a host that died mid-write leaves a torn slot that
    /// nobody rewrites). `Empty` means the peer has no such component (or
    /// left and cleared its block); `Unreadable` observes nothing.
    pub fn observe(&mut self, read: Read, now_ns: u64, lease_ns: u64) {
        match read {
            Read::Empty => *self = PeerView::default(),
            Read::Unreadable => {}
            Read::Damaged { digest } => match self.damaged {
                Some((d, since)) if d == digest => {
                    if now_ns.saturating_sub(since) >= lease_ns {
                        self.expired = true;
                    }
                }
                _ => self.damaged = Some((digest, now_ns)),
            },
            Read::Valid(s) => {
                self.damaged = None;
                let beat = self.last.map(|l| l.heartbeat);
                if beat != Some(s.heartbeat) {
                    self.changed_ns = now_ns;
                    self.expired = false;
                } else if now_ns.saturating_sub(self.changed_ns) >= lease_ns {
                    self.expired = true;
                }
                self.last = Some(s);
            }
        }
    }

    /// The peer's slot while it counts.
    pub fn live(&self) -> Option<&Slot> {
        self.last.as_ref().filter(|_| !self.expired)
    }
}

/// What the live peers add to one component this period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Remote {
    /// The live peers' aggregate rate through the component, bytes/s.
    pub rate: u64,
    /// The live peers' largest per-weight demand at the component,
    /// bytes/s.
    pub cap: u64,
    /// This host owns the component: no live peer has a lower index.
    pub owner: bool,
    /// The owner's host index (this host's when `owner`).
    pub owner_host: usize,
    /// How many live peers there are (this host not counted).
    pub peers: usize,
    /// The owner's fair share, when a live peer owns the component and
    /// has published it.
    pub owner_alpha: Option<u64>,
}

/// Sums the live peers of `host` (`views[h]` for host `h`) and finds the
/// owner: the lowest live host index, `host` included.
pub fn remote(views: &[PeerView], host: usize) -> Remote {
    let mut r = Remote::default();
    let mut owner_found = false;
    for (h, v) in views.iter().enumerate() {
        if h == host {
            if !owner_found {
                owner_found = true;
                r.owner = true;
                r.owner_host = h;
            }
            continue;
        }
        let Some(s) = v.live() else { continue };
        r.peers = r.peers.saturating_add(1);
        r.rate = r.rate.saturating_add(s.rate);
        r.cap = r.cap.max(s.cap);
        if !owner_found {
            owner_found = true;
            r.owner_host = h;
            if s.flags & FLAG_OWNER != 0 {
                r.owner_alpha = Some(s.alpha.max(1));
            }
        }
    }
    if !owner_found {
        r.owner = true;
        r.owner_host = host;
    }
    r
}
