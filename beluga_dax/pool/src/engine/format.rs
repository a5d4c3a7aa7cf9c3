//! Reading the superblock, and formatting a pool.

#![deny(clippy::arithmetic_side_effects)]

use super::super::layout::{Geometry, LayoutError, Superblock, SUPERBLOCK_BYTES};
use super::super::objects::{Slot, ENTRY_BYTES};
use super::{Errno, Fault, Memory};

/// Object entries written per pool write.
const ENTRIES: usize = 4;

/// Writes zeros over `[from, to)`.
fn zero<M: Memory>(mem: &M, from: u64, to: u64) -> Result<(), Errno> {
    let zeros = [0u8; 512];
    let mut offset = from;
    while offset < to {
        let left = usize::try_from(to.saturating_sub(offset)).unwrap_or(zeros.len());
        let len = left.min(zeros.len());
        mem.write(offset, zeros.get(..len).ok_or(Fault)?)?;
        offset = offset.saturating_add(u64::try_from(len).map_err(|_| Fault)?);
    }
    Ok(())
}

/// Reads and validates the superblock.
pub fn read_superblock<M: Memory>(mem: &M, device_size: u64) -> Result<Superblock, LayoutError> {
    let mut bytes = [0u8; SUPERBLOCK_BYTES];
    mem.read(0, &mut bytes)
        .map_err(|_| LayoutError::Truncated)?;
    Superblock::decode(&bytes, device_size)
}

/// The generation of the next format of a pool now at `old` (the
/// superblock's `generation`, or the highest one seen). `EOVERFLOW` after
/// the last one: a pool formatted `u64::MAX` times is not formatted again
/// rather than reuse a generation.
pub fn next_generation(old: u64) -> Result<u64, Errno> {
    old.checked_add(1).ok_or(Errno::EOVERFLOW)
}

/// Formats the pool: tables emptied, then the superblock. The old
/// superblock is destroyed first, so a host attaching meanwhile sees an
/// unformatted pool rather than half-written tables. Only for a pool no
/// other host uses (the driver checks what it can see).
pub fn format<M: Memory>(
    mem: &M,
    device_size: u64,
    max_hosts: u32,
    max_objects: u32,
    uuid: [u8; 16],
    generation: u64,
) -> Result<Superblock, Errno> {
    let geometry = Geometry::new(device_size, max_hosts, max_objects).map_err(|_| Errno::EINVAL)?;
    mem.write(0, &[0u8; SUPERBLOCK_BYTES])?;
    // Host slots and the section table are free when zero.
    zero(mem, geometry.host_table_off, geometry.object_table_off)?;
    let free = Slot::Free.encode();
    let mut chunk = [0u8; ENTRIES * ENTRY_BYTES];
    for entry in chunk.chunks_exact_mut(ENTRY_BYTES) {
        entry.copy_from_slice(&free);
    }
    let mut index = 0u32;
    while let Some(at) = geometry.object_entry_offset(index) {
        let left = usize::try_from(max_objects.saturating_sub(index)).unwrap_or(ENTRIES);
        let n = left.min(ENTRIES);
        mem.write(at, chunk.get(..n.saturating_mul(ENTRY_BYTES)).ok_or(Fault)?)?;
        index = index.saturating_add(u32::try_from(n).map_err(|_| Fault)?);
    }
    let superblock = Superblock::new(&geometry, uuid, generation);
    mem.write(0, &superblock.encode())?;
    Ok(superblock)
}
