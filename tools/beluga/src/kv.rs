//! A KV block store in one shared object, after Beluga-KVCache: fixed-size
//! blocks (e.g. the KV cache of a run of tokens) put and got by a 64-bit
//! key. One writer (the host that created the store) publishes blocks;
//! any number of readers on any host get them.
//!
//! Layout (version 1, little-endian):
//!
//! ```text
//! 0        header, 64 bytes: magic "BKVSTORE", version, block size, slots
//! 64       slot table: `slots` entries of 64 bytes, one cache line each:
//!            +0 seq u64   0 empty; odd while the writer updates the slot;
//!                         even and non-zero when the block is published
//!            +8 key u64, +16 len u32, +20 CRC-32 (IEEE) u32 of the
//!            payload
//! blocks   `slots` blocks of `block_size` bytes, block i for slot i
//! ```
//!
//! Publish protocol (single writer, payload visible before its flag): the
//! writer marks the slot odd, writes the payload and its key, length and
//! checksum, and only then stores the next even sequence number. A reader
//! reads the sequence number, the record and the payload, then the sequence
//! number again: a block is returned only if both reads show the same even
//! value and the checksum matches; otherwise it reads again.
//! Slots are found by open addressing (linear probing from the key's hash);
//! a put of an existing key overwrites its slot.

use crate::shared::Shared;
use std::io;

const MAGIC: u64 = u64::from_le_bytes(*b"BKVSTORE");
const VERSION: u64 = 1;
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
}

impl<M: Shared> KvStore<M> {
    /// Initialises a store in `mem` (the writer, once).
    pub fn create(mem: M, block_size: usize) -> io::Result<KvStore<M>> {
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
        mem.write_u64(0, MAGIC)?;
        Ok(KvStore { mem, geometry })
    }

    /// Opens a store another process or host created, validating the
    /// header against the region (nothing read from it is trusted).
    pub fn open(mem: M) -> io::Result<KvStore<M>> {
        if mem.read_u64(0)? != MAGIC {
            return Err(invalid("not a KV store"));
        }
        if mem.read_u64(8)? != VERSION {
            return Err(invalid("unsupported KV store version"));
        }
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
        Ok(KvStore { mem, geometry })
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
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
            record[12..].copy_from_slice(&crc32(data).to_le_bytes());
            self.mem.write(at + 8, &record)?;
            self.mem.write_u64(at, (seq | 1) + 1)?;
            return Ok(());
        }
        Err(io::Error::new(io::ErrorKind::StorageFull, "KV store full"))
    }

    /// The block published under `key`, if any. Any host may call this
    /// while the writer publishes.
    pub fn get(&self, key: u64) -> io::Result<Option<Vec<u8>>> {
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
                let mut data = vec![0u8; len];
                self.mem.read(self.block_off(slot), &mut data)?;
                if self.mem.read_u64(at)? == seq && crc32(&data) == crc {
                    return Ok(Some(data));
                }
            }
            if self.mem.read_u64(at + 8)? == key {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "block kept changing",
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
        let store = KvStore::create(HeapRegion::new(64 + 8 * (64 + 256)), 256).unwrap();
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
    }

    #[test]
    fn open_validates_the_header() {
        let mem = HeapRegion::new(4096);
        assert!(KvStore::open(&mem).is_err());
        KvStore::create(&mem, 128).unwrap();
        assert_eq!(KvStore::open(&mem).unwrap().geometry().block_size, 128);
        mem.write_u64(24, 1 << 40).unwrap();
        assert!(
            KvStore::open(&mem).is_err(),
            "a header larger than its region was accepted"
        );
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

    /// A reader racing the writer never returns a torn or mixed block.
    #[test]
    fn readers_never_see_a_partial_block() {
        race(Arc::new(HeapRegion::new(64 + 4 * (64 + 512))));
    }

    /// The same through a real mapping, on the streaming and on the
    /// fallback copy path: there the reader's 16-byte loads really do race
    /// the writer's stores, and only the re-check and the checksum stand
    /// between it and a torn block.
    #[test]
    fn readers_of_a_mapping_never_see_a_partial_block() {
        let best = crate::CopyPath::detected();
        for path in [best, crate::CopyPath::FALLBACK] {
            let mut map = crate::Mapping::anonymous(64 + 4 * (64 + 512)).unwrap();
            map.set_copy_path(path).unwrap();
            race(Arc::new(map));
        }
    }

    fn race<M: Shared + 'static>(mem: Arc<M>) {
        let writer = KvStore::create(mem.clone(), 512).unwrap();
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
