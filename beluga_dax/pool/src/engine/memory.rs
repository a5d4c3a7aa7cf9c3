//! How the engine reaches the pool.

#![deny(clippy::arithmetic_side_effects)]

/// Access to the pool. Implementations keep the flush discipline: a read
/// invalidates the lines first, a write stores, writes back and fences.
pub trait Memory {
    /// Reads `buf.len()` bytes at byte offset `offset` of the pool.
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), Fault>;
    /// Writes `data` at byte offset `offset` of the pool, written back
    /// before it returns.
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), Fault>;

    /// Writes zeros over `len` bytes at `offset`, written back like
    /// `write`. The engine calls it only on the data area (an object's
    /// sections, before they change owner), so an implementation may reach
    /// the data area another way than the metadata. By default, `write`s
    /// of a small zero buffer.
    fn zero(&self, offset: u64, len: u64) -> Result<(), Fault> {
        let zeros = [0u8; 512];
        let end = offset.checked_add(len).ok_or(Fault)?;
        let mut at = offset;
        while at < end {
            let left = usize::try_from(end.saturating_sub(at)).unwrap_or(zeros.len());
            let chunk = zeros.get(..left.min(zeros.len())).ok_or(Fault)?;
            self.write(at, chunk)?;
            at = at.saturating_add(u64::try_from(chunk.len()).map_err(|_| Fault)?);
        }
        Ok(())
    }
}

/// An access outside the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault;

/// A pool in ordinary memory, shared by the engines of simulated hosts
/// (host tests, KUnit): plain copies, no flushes needed.
pub struct SliceMemory<'a> {
    bytes: core::cell::RefCell<&'a mut [u8]>,
}

impl<'a> SliceMemory<'a> {
    /// A pool in `bytes` (offset 0 is its first byte).
    pub fn new(bytes: &'a mut [u8]) -> SliceMemory<'a> {
        SliceMemory {
            bytes: core::cell::RefCell::new(bytes),
        }
    }
}

impl Memory for SliceMemory<'_> {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), Fault> {
        // `try_`: no panic paths in kernel code.
        let bytes = self.bytes.try_borrow().map_err(|_| Fault)?;
        let start = usize::try_from(offset).map_err(|_| Fault)?;
        let end = start.checked_add(buf.len()).ok_or(Fault)?;
        buf.copy_from_slice(bytes.get(start..end).ok_or(Fault)?);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), Fault> {
        let mut bytes = self.bytes.try_borrow_mut().map_err(|_| Fault)?;
        let start = usize::try_from(offset).map_err(|_| Fault)?;
        let end = start.checked_add(data.len()).ok_or(Fault)?;
        bytes
            .get_mut(start..end)
            .ok_or(Fault)?
            .copy_from_slice(data);
        Ok(())
    }

    fn zero(&self, offset: u64, len: u64) -> Result<(), Fault> {
        let mut bytes = self.bytes.try_borrow_mut().map_err(|_| Fault)?;
        let start = usize::try_from(offset).map_err(|_| Fault)?;
        let len = usize::try_from(len).map_err(|_| Fault)?;
        let end = start.checked_add(len).ok_or(Fault)?;
        bytes.get_mut(start..end).ok_or(Fault)?.fill(0);
        Ok(())
    }
}
