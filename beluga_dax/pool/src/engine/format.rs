//! Reading the superblock, and formatting a pool.

use super::super::layout::{Geometry, LayoutError, Superblock, SUPERBLOCK_BYTES};
use super::super::objects::{Slot, ENTRY_BYTES};
use super::{Errno, Memory};

/// Reads and validates the superblock.
pub fn read_superblock<M: Memory>(mem: &M, device_size: u64) -> Result<Superblock, LayoutError> {
    let mut bytes = [0u8; SUPERBLOCK_BYTES];
    mem.read(0, &mut bytes)
        .map_err(|_| LayoutError::Truncated)?;
    Superblock::decode(&bytes, device_size)
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
    let zeros = [0u8; 512];
    let mut offset = geometry.host_table_off;
    // Host slots and the section table are free when zero.
    while offset < geometry.object_table_off {
        let len = (geometry.object_table_off - offset).min(zeros.len() as u64);
        mem.write(offset, &zeros[..len as usize])?;
        offset += len;
    }
    let free = Slot::Free.encode();
    let mut chunk = [0u8; 4 * ENTRY_BYTES];
    for entry in chunk.chunks_mut(ENTRY_BYTES) {
        entry.copy_from_slice(&free);
    }
    let mut index = 0;
    while index < max_objects {
        let n = (max_objects - index).min(4);
        let at = geometry.object_table_off + index as u64 * ENTRY_BYTES as u64;
        mem.write(at, &chunk[..n as usize * ENTRY_BYTES])?;
        index += n;
    }
    let superblock = Superblock::new(&geometry, uuid, generation);
    mem.write(0, &superblock.encode())?;
    Ok(superblock)
}
