//! How the engine reaches the pool.

#![deny(clippy::arithmetic_side_effects)]

/// Access to the pool. Implementations keep the flush discipline: a read
/// invalidates the lines first, a write stores, writes back and fences.
pub trait Memory {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), Fault>;
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), Fault>;
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
}
