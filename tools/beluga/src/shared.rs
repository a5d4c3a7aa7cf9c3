//! Shared memory as the protocols on top of the pool see it: byte copies
//! and single 8-byte words, each access with the flush discipline of
//! memory without cross-host coherence. Implemented by [`crate::Mapping`]
//! (pool objects, or any shared file mapping such as ivshmem) and by
//! [`HeapRegion`] for tests on one machine.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

pub trait Shared: Send + Sync {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies bytes out, after invalidating them. Each naturally aligned
    /// 8-byte word inside the range is read in one access: a word copied
    /// out is never torn (bytes of different words may be of different
    /// moments).
    fn read(&self, offset: usize, out: &mut [u8]) -> io::Result<()>;
    /// Copies bytes in, then writes them back.
    fn write(&self, offset: usize, data: &[u8]) -> io::Result<()>;
    /// One 8-byte aligned word, read in a single access.
    fn read_u64(&self, offset: usize) -> io::Result<u64>;
    /// One 8-byte aligned word, written in a single access after
    /// everything written before it: a ready flag.
    fn write_u64(&self, offset: usize, value: u64) -> io::Result<()>;
}

impl Shared for crate::Mapping {
    fn len(&self) -> usize {
        crate::Mapping::len(self)
    }
    fn read(&self, offset: usize, out: &mut [u8]) -> io::Result<()> {
        crate::Mapping::read(self, offset, out)
    }
    fn write(&self, offset: usize, data: &[u8]) -> io::Result<()> {
        crate::Mapping::write(self, offset, data)
    }
    fn read_u64(&self, offset: usize) -> io::Result<u64> {
        crate::Mapping::read_u64(self, offset)
    }
    fn write_u64(&self, offset: usize, value: u64) -> io::Result<()> {
        crate::Mapping::write_u64(self, offset, value)
    }
}

/// Process memory standing in for a pool object (tests, simulations):
/// words are atomics, so threads may share it.
pub struct HeapRegion {
    words: Box<[AtomicU64]>,
}

fn out_of_range() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "outside the region")
}

impl HeapRegion {
    pub fn new(len: usize) -> HeapRegion {
        HeapRegion {
            words: (0..len.div_ceil(8)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn check(&self, offset: usize, len: usize) -> io::Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.words.len() * 8 => Ok(()),
            _ => Err(out_of_range()),
        }
    }

    fn set_byte(&self, at: usize, value: u8) {
        let shift = (at % 8) * 8;
        let _ = self.words[at / 8].fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
            Some(w & !(0xff << shift) | (value as u64) << shift)
        });
    }
}

impl Shared for HeapRegion {
    fn len(&self) -> usize {
        self.words.len() * 8
    }
    fn read(&self, offset: usize, out: &mut [u8]) -> io::Result<()> {
        self.check(offset, out.len())?;
        // One load per word, whole words never torn.
        let mut word = (usize::MAX, 0u64);
        for (i, b) in out.iter_mut().enumerate() {
            let at = offset + i;
            if word.0 != at / 8 {
                word = (at / 8, self.words[at / 8].load(Ordering::Acquire));
            }
            *b = (word.1 >> ((at % 8) * 8)) as u8;
        }
        Ok(())
    }
    fn write(&self, offset: usize, data: &[u8]) -> io::Result<()> {
        self.check(offset, data.len())?;
        for (i, b) in data.iter().enumerate() {
            self.set_byte(offset + i, *b);
        }
        Ok(())
    }
    fn read_u64(&self, offset: usize) -> io::Result<u64> {
        self.check(offset, 8)?;
        if !offset.is_multiple_of(8) {
            return Err(out_of_range());
        }
        Ok(self.words[offset / 8].load(Ordering::Acquire))
    }
    fn write_u64(&self, offset: usize, value: u64) -> io::Result<()> {
        self.check(offset, 8)?;
        if !offset.is_multiple_of(8) {
            return Err(out_of_range());
        }
        self.words[offset / 8].store(value, Ordering::Release);
        Ok(())
    }
}

/// Shared memory behind a reference or an `Arc` is shared memory.
macro_rules! forward_shared {
    ($($ty:ty),*) => {$(
        impl<M: Shared> Shared for $ty {
            fn len(&self) -> usize {
                (**self).len()
            }
            fn read(&self, offset: usize, out: &mut [u8]) -> io::Result<()> {
                (**self).read(offset, out)
            }
            fn write(&self, offset: usize, data: &[u8]) -> io::Result<()> {
                (**self).write(offset, data)
            }
            fn read_u64(&self, offset: usize) -> io::Result<u64> {
                (**self).read_u64(offset)
            }
            fn write_u64(&self, offset: usize, value: u64) -> io::Result<()> {
                (**self).write_u64(offset, value)
            }
        }
    )*};
}

forward_shared!(&M, std::sync::Arc<M>);
