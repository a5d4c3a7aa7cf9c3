//! A KV block store in one shared object, after Beluga-KVCache: fixed-size
//! blocks (e.g. the KV cache of a run of tokens) put and got by a 64-bit
//! key. One writer (the host that created the store) publishes blocks;
//! any number of readers on any host get them.
//!
//! Layout (version 2, little-endian):
//!
//! ```text
//! 0        header, 64 bytes: magic "BKVSTORE" u64, version u64, block
//!          size u64, slots u64, checksum u64 (0 none, 1 CRC-32)
//! 64       slot table: `slots` entries of 64 bytes, one cache line each:
//!            +0 seq u64   0 empty; odd while the writer updates the slot;
//!                         even and non-zero when the block is published
//!            +8 key u64, +16 len u32, +20 checksum u32 of the payload
//!            (CRC-32, IEEE; 0 in a store without checksums)
//! blocks   `slots` blocks of `block_size` bytes, block i for slot i
//! ```
//!
//! Version 1 is version 2 without the checksum word, always CRC-32; `open`
//! reads both.
//!
//! Publish protocol (single writer, payload visible before its flag): the
//! writer marks the slot odd, writes the payload and its key, length and
//! checksum, and only then stores the next even sequence number. A reader
//! reads the sequence number, the record and the payload, then the sequence
//! number again: a block is returned only if both reads show the same even
//! value (and, in a store with checksums, the checksum matches); otherwise
//! it reads again. The sequence numbers alone keep torn blocks out; the
//! checksum also catches a payload damaged after it was published (a stray
//! writer, a protocol bug), at the cost of one pass over the block.
//! Slots are found by open addressing (linear probing from the key's hash);
//! a put of an existing key overwrites its slot.

use crate::shared::Shared;
use std::io;

const MAGIC: u64 = u64::from_le_bytes(*b"BKVSTORE");
const VERSION: u64 = 2;
const HEADER: usize = 64;
const SLOT: usize = 64;
/// How long a reader keeps trying a block the writer keeps changing.
const READ_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub block_size: usize,
    pub slots: usize,
}

impl Geometry {
    /// Bytes a store of this geometry needs.
    pub fn bytes(&self) -> usize {
        HEADER + self.slots * SLOT + self.slots * self.block_size
    }

    /// The largest store of `block_size` blocks that fits in `bytes`.
    pub fn fitting(bytes: usize, block_size: usize) -> Geometry {
        let slots = bytes.saturating_sub(HEADER) / (SLOT + block_size);
        Geometry { block_size, slots }
    }
}

/// What a store checks its blocks with, chosen when it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    /// The sequence numbers only.
    None,
    /// A CRC-32 of every block, written by the writer, checked by readers.
    Crc32,
}

impl Checksum {
    fn code(self) -> u64 {
        match self {
            Checksum::None => 0,
            Checksum::Crc32 => 1,
        }
    }

    fn of_code(code: u64) -> Option<Checksum> {
        match code {
            0 => Some(Checksum::None),
            1 => Some(Checksum::Crc32),
            _ => None,
        }
    }

    fn sum(self, data: &[u8]) -> u32 {
        match self {
            Checksum::None => 0,
            Checksum::Crc32 => crc32(data),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Checksum::None => "none",
            Checksum::Crc32 => "crc32",
        }
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

fn hash(key: u64) -> u64 {
    let mut x = key ^ 0x9e37_79b9_7f4a_7c15;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// CRC-32 (IEEE 802.3, the polynomial of format version 1) of a block,
/// by `crc32fast`: carry-less multiplication (PCLMULQDQ) where the CPU has
/// it, a table otherwise.
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().expect("8 bytes"))
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().expect("4 bytes"))
}

/// A store over shared memory `M`.
pub struct KvStore<M: Shared> {
    mem: M,
    geometry: Geometry,
    checksum: Checksum,
}

impl<M: Shared> KvStore<M> {
    /// Initialises a store in `mem` (the writer, once), with CRC-32
    /// checksums.
    pub fn create(mem: M, block_size: usize) -> io::Result<KvStore<M>> {
        KvStore::create_with(mem, block_size, Checksum::Crc32)
    }

    /// Initialises a store in `mem` (the writer, once).
    pub fn create_with(mem: M, block_size: usize, checksum: Checksum) -> io::Result<KvStore<M>> {
        let geometry = Geometry::fitting(mem.len(), block_size);
        if block_size == 0 || geometry.slots == 0 || block_size > u32::MAX as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "region too small for one block",
            ));
        }
        // Empty every slot before the header makes the store valid.
        mem.write_u64(0, 0)?;
        for slot in 0..geometry.slots {
            mem.write(HEADER + slot * SLOT, &[0u8; SLOT])?;
        }
        mem.write_u64(8, VERSION)?;
        mem.write_u64(16, block_size as u64)?;
        mem.write_u64(24, geometry.slots as u64)?;
        mem.write_u64(32, checksum.code())?;
        mem.write_u64(0, MAGIC)?;
        Ok(KvStore {
            mem,
            geometry,
            checksum,
        })
    }

    /// Opens a store another process or host created, validating the
    /// header against the region (nothing read from it is trusted).
    pub fn open(mem: M) -> io::Result<KvStore<M>> {
        if mem.read_u64(0)? != MAGIC {
            return Err(invalid("not a KV store"));
        }
        let checksum = match mem.read_u64(8)? {
            1 => Checksum::Crc32,
            VERSION => Checksum::of_code(mem.read_u64(32)?)
                .ok_or_else(|| invalid("unknown KV store checksum"))?,
            _ => return Err(invalid("unsupported KV store version")),
        };
        let block_size = usize::try_from(mem.read_u64(16)?).map_err(|_| invalid("block size"))?;
        let slots = usize::try_from(mem.read_u64(24)?).map_err(|_| invalid("slots"))?;
        let geometry = Geometry { block_size, slots };
        let fits = slots
            .checked_mul(SLOT + block_size)
            .and_then(|b| b.checked_add(HEADER))
            .is_some_and(|b| b <= mem.len());
        if block_size == 0 || slots == 0 || !fits {
            return Err(invalid("KV store header does not fit its region"));
        }
        Ok(KvStore {
            mem,
            geometry,
            checksum,
        })
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn checksum(&self) -> Checksum {
        self.checksum
    }

    fn slot_off(&self, slot: usize) -> usize {
        HEADER + slot * SLOT
    }

    fn block_off(&self, slot: usize) -> usize {
        HEADER + self.geometry.slots * SLOT + slot * self.geometry.block_size
    }

    /// Publishes `data` (at most one block) under `key`. Writer only.
    pub fn put(&self, key: u64, data: &[u8]) -> io::Result<()> {
        if data.len() > self.geometry.block_size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "larger than a block",
            ));
        }
        let slots = self.geometry.slots;
        let start = (hash(key) % slots as u64) as usize;
        for probe in 0..slots {
            let slot = (start + probe) % slots;
            let at = self.slot_off(slot);
            // Sequence number and key in one copy (one trip to memory);
            // only this writer changes them.
            let mut head = [0u8; 16];
            self.mem.read(at, &mut head)?;
            let seq = le64(&head[..8]);
            if seq != 0 && le64(&head[8..]) != key {
                continue;
            }
            // Invalidate, then payload, then record, then the flag.
            self.mem.write_u64(at, seq | 1)?;
            self.mem.write(self.block_off(slot), data)?;
            let mut record = [0u8; 16];
            record[..8].copy_from_slice(&key.to_le_bytes());
            record[8..12].copy_from_slice(&(data.len() as u32).to_le_bytes());
            record[12..].copy_from_slice(&self.checksum.sum(data).to_le_bytes());
            self.mem.write(at + 8, &record)?;
            self.mem.write_u64(at, (seq | 1) + 1)?;
            return Ok(());
        }
        Err(io::Error::new(io::ErrorKind::StorageFull, "KV store full"))
    }

    /// The block published under `key`, if any. Any host may call this
    /// while the writer publishes.
    pub fn get(&self, key: u64) -> io::Result<Option<Vec<u8>>> {
        let mut out = vec![0u8; self.geometry.block_size];
        let len = self.get_into(key, &mut out)?;
        Ok(len.map(|len| {
            out.truncate(len);
            out
        }))
    }

    /// As [`KvStore::get`], into `out` (at least one block long): the
    /// block's length, if there is one. Nothing is allocated.
    pub fn get_into(&self, key: u64, out: &mut [u8]) -> io::Result<Option<usize>> {
        if out.len() < self.geometry.block_size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "buffer smaller than a block",
            ));
        }
        let slots = self.geometry.slots;
        let start = (hash(key) % slots as u64) as usize;
        for probe in 0..slots {
            let slot = (start + probe) % slots;
            let at = self.slot_off(slot);
            let deadline = std::time::Instant::now() + READ_PATIENCE;
            while std::time::Instant::now() < deadline {
                // Sequence number, key, length and checksum in one copy
                // (one trip to memory; the words are read whole).
                let mut record = [0u8; 24];
                self.mem.read(at, &mut record)?;
                let seq = le64(&record[..8]);
                if seq == 0 {
                    return Ok(None);
                }
                if seq & 1 == 1 {
                    // The writer is mid-update (slow on an emulated window).
                    std::thread::yield_now();
                    continue;
                }
                if le64(&record[8..16]) != key {
                    break;
                }
                let len = le32(&record[16..20]) as usize;
                let crc = le32(&record[20..]);
                if len > self.geometry.block_size {
                    // Torn or hostile record: read again.
                    continue;
                }
                let data = &mut out[..len];
                self.mem.read(self.block_off(slot), data)?;
                if self.mem.read_u64(at)? == seq && self.checksum.sum(data) == crc {
                    return Ok(Some(len));
                }
            }
            if self.mem.read_u64(at + 8)? == key {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "no consistent copy of the block within 1 s (kept changing, or damaged)",
                ));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::HeapRegion;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn block(key: u64, version: u64, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (key.wrapping_mul(31) ^ version ^ i as u64) as u8)
            .collect()
    }

    #[test]
    fn put_get_overwrite_and_full() {
        for checksum in [Checksum::Crc32, Checksum::None] {
            put_get_overwrite_and_full_with(checksum);
        }
    }

    fn put_get_overwrite_and_full_with(checksum: Checksum) {
        let mem = HeapRegion::new(64 + 8 * (64 + 256));
        let store = KvStore::create_with(mem, 256, checksum).unwrap();
        assert_eq!(store.geometry().slots, 8);
        assert_eq!(store.get(1).unwrap(), None);
        for k in 0..8 {
            store.put(k, &block(k, 0, 200)).unwrap();
        }
        assert!(
            store.put(99, b"x").is_err(),
            "a full store accepted a new key"
        );
        store.put(3, &block(3, 1, 256)).unwrap();
        for k in 0..8 {
            let want = if k == 3 {
                block(3, 1, 256)
            } else {
                block(k, 0, 200)
            };
            assert_eq!(store.get(k).unwrap(), Some(want));
        }
        assert!(store.put(1, &[0; 257]).is_err());
        let mut out = [0u8; 256];
        assert_eq!(store.get_into(3, &mut out).unwrap(), Some(256));
        assert_eq!(out[..], block(3, 1, 256)[..]);
        assert!(store.get_into(3, &mut out[..255]).is_err());
    }

    #[test]
    fn open_validates_the_header() {
        let mem = HeapRegion::new(4096);
        assert!(KvStore::open(&mem).is_err());
        KvStore::create_with(&mem, 128, Checksum::None).unwrap();
        let store = KvStore::open(&mem).unwrap();
        assert_eq!(store.geometry().block_size, 128);
        assert_eq!(store.checksum(), Checksum::None);
        mem.write_u64(32, 2).unwrap();
        assert!(KvStore::open(&mem).is_err(), "an unknown checksum");
        // Version 1 has no checksum word, and always CRC-32.
        mem.write_u64(8, 1).unwrap();
        assert_eq!(KvStore::open(&mem).unwrap().checksum(), Checksum::Crc32);
        mem.write_u64(8, 3).unwrap();
        assert!(KvStore::open(&mem).is_err(), "an unknown version");
        mem.write_u64(8, VERSION).unwrap();
        mem.write_u64(32, 0).unwrap();
        mem.write_u64(24, 1 << 40).unwrap();
        assert!(
            KvStore::open(&mem).is_err(),
            "a header larger than its region was accepted"
        );
    }

    /// A store with checksums refuses a block damaged after it was
    /// published (the reader keeps trying, then says so); one without
    /// returns it as it is.
    #[test]
    fn a_damaged_block_is_caught_by_the_checksum() {
        for checksum in [Checksum::Crc32, Checksum::None] {
            let mem = HeapRegion::new(64 + 2 * (64 + 64));
            let store = KvStore::create_with(&mem, 64, checksum).unwrap();
            store.put(5, &block(5, 0, 64)).unwrap();
            let slot = (0..2)
                .find(|s| mem.read_u64(64 + s * 64 + 8).unwrap() == 5)
                .unwrap();
            let at = 64 + 2 * 64 + slot * 64;
            mem.write_u64(at, mem.read_u64(at).unwrap() ^ 1).unwrap();
            let got = store.get(5);
            match checksum {
                Checksum::Crc32 => assert!(got.is_err(), "a damaged block was returned"),
                Checksum::None => assert_ne!(got.unwrap().unwrap(), block(5, 0, 64)),
            }
        }
    }

    /// The checksum is the CRC-32 of format version 1, bit for bit.
    #[test]
    fn checksum_is_the_bitwise_crc32() {
        fn bitwise(data: &[u8]) -> u32 {
            let mut crc = !0u32;
            for &b in data {
                crc ^= b as u32;
                for _ in 0..8 {
                    crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
                }
            }
            !crc
        }
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        for len in [0, 1, 7, 63, 64, 65, 1000, 16384] {
            let data = block(len as u64, 3, len);
            assert_eq!(crc32(&data), bitwise(&data), "{len} bytes");
        }
    }

    /// A reader racing the writer never returns a torn or mixed block,
    /// with checksums or without (the sequence numbers alone).
    #[test]
    fn readers_never_see_a_partial_block() {
        for checksum in [Checksum::Crc32, Checksum::None] {
            race(Arc::new(HeapRegion::new(64 + 4 * (64 + 512))), checksum);
        }
    }

    /// The same through a real mapping, on the streaming and on the
    /// fallback copy path: there the reader's loads really do race the
    /// writer's stores, and only the re-check (and the checksum, if the
    /// store has one) stands between it and a torn block.
    #[test]
    fn readers_of_a_mapping_never_see_a_partial_block() {
        let best = crate::CopyPath::detected();
        for path in [best, crate::CopyPath::FALLBACK] {
            for checksum in [Checksum::Crc32, Checksum::None] {
                let mut map = crate::Mapping::anonymous(64 + 4 * (64 + 512)).unwrap();
                map.set_copy_path(path).unwrap();
                race(Arc::new(map), checksum);
            }
        }
    }

    fn race<M: Shared + 'static>(mem: Arc<M>, checksum: Checksum) {
        let writer = KvStore::create_with(mem.clone(), 512, checksum).unwrap();
        writer.put(7, &block(7, 0, 512)).unwrap();
        let reads = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (mem, reads) = (mem.clone(), reads.clone());
            std::thread::spawn(move || {
                let store = KvStore::open(mem).unwrap();
                while reads.load(Ordering::Relaxed) < 5000 {
                    if let Ok(Some(data)) = store.get(7) {
                        let version = (data[0] ^ (7u64.wrapping_mul(31) as u8)) as u64;
                        assert_eq!(data, block(7, version, 512), "torn block");
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        // Keep publishing new versions for as long as the reader reads.
        let mut version = 0u64;
        while !reader.is_finished() {
            version += 1;
            writer.put(7, &block(7, version % 256, 512)).unwrap();
        }
        reader.join().unwrap();
        assert!(version > 10, "the writer hardly ran");
    }
}
