//! How the core touches the pool: [`PoolMem`], implemented by the module
//! over beluga's region memory (clwb/clflushopt and fences) and by the
//! tests over [`super::model`].
//!
//! The pool is not coherent across hosts. A write stays in this host's
//! cache until [`PoolMem::write_back`] of its range; a read may return a
//! stale cached line unless [`PoolMem::invalidate`] of its range came
//! first. Both work on whole lines (64 bytes) covering the range, and
//! order: a write-back has completed (is visible to a later invalidating
//! reader anywhere) when it returns, and an invalidate comes before any
//! later read. The core writes back every line it writes before it
//! publishes anything that points at it, and invalidates every line
//! before it reads it.

/// An access outside the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfBounds;

/// One host's access to the pool region, at byte offsets in it.
pub trait PoolMem {
    /// Bytes of the region.
    fn len(&self) -> u64;
    /// Reads `buf.len()` bytes at `off` (from this host's cache, where
    /// the line is cached).
    fn read(&self, off: u64, buf: &mut [u8]) -> Result<(), OutOfBounds>;
    /// Writes `data` at `off` (into this host's cache).
    fn write(&self, off: u64, data: &[u8]) -> Result<(), OutOfBounds>;
    /// Writes the lines covering `off..off + len` back to the pool.
    fn write_back(&self, off: u64, len: u64) -> Result<(), OutOfBounds>;
    /// Drops this host's copies of the lines covering `off..off + len`.
    fn invalidate(&self, off: u64, len: u64) -> Result<(), OutOfBounds>;

    /// Whether the region is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The little-endian word at `off`.
    fn read_u64(&self, off: u64) -> Result<u64, OutOfBounds> {
        let mut b = [0u8; 8];
        self.read(off, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    /// Writes the little-endian word `v` at `off`.
    fn write_u64(&self, off: u64, v: u64) -> Result<(), OutOfBounds> {
        self.write(off, &v.to_le_bytes())
    }
}

/// Invalidates then reads the `N` bytes at `off`: a fresh copy.
pub fn fetch<const N: usize, M: PoolMem + ?Sized>(m: &M, off: u64) -> Result<[u8; N], OutOfBounds> {
    let mut b = [0u8; N];
    m.invalidate(off, N as u64)?;
    m.read(off, &mut b)?;
    Ok(b)
}

/// Writes `data` at `off` and writes it back: published.
pub fn publish<M: PoolMem + ?Sized>(m: &M, off: u64, data: &[u8]) -> Result<(), OutOfBounds> {
    m.write(off, data)?;
    m.write_back(off, data.len() as u64)
}
