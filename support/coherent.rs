// SPDX-License-Identifier: GPL-2.0

//! Memory a device shares coherently with the CPU: a Type-2 device's own
//! memory in a BAR ([`DeviceMem`], mapped write-back), read and written
//! with plain cached accesses, control words as atomics (acquire loads,
//! release stores) that order the bytes around them, as the CXL-NIC's
//! rings need. Every access is bounds-checked.
//!
//! Upstream: `kernel::io::mem::IoMem` (6.16) maps a resource, uncached;
//! nothing maps device memory write-back or gives atomic accessors over
//! it. (Contrast [`super::sharedmem`]: a CXL pool shared with other hosts
//! is not coherent, so its accessors flush and invalidate.)

use super::pci::Region;
use super::sharedmem::WbMap;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

/// A device's memory mapped write-back, accessed coherently.
pub(crate) struct DeviceMem {
    map: WbMap,
}

impl DeviceMem {
    /// Maps a memory BAR this driver has claimed.
    pub(crate) fn map(region: &Region) -> Result<DeviceMem> {
        let res = region.resource();
        if !res.mem {
            return Err(EINVAL);
        }
        let len = usize::try_from(res.len).map_err(|_| EINVAL)?;
        Ok(DeviceMem {
            map: WbMap::map(res.start, len)?,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Copies `out.len()` bytes from `offset` (volatile: the device may
    /// be writing them).
    pub(crate) fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.map.load_bytes(offset, out)
    }

    /// Copies `data` to `offset` (volatile).
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.map.store_bytes(offset, data)
    }

    fn word(&self, offset: usize) -> Result<&AtomicU32> {
        let p = self.map.range(offset, 4)?;
        if p as usize % 4 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: four aligned bytes (checked) inside the mapping (checked
        // by `range`), valid as long as `self`; the device accesses them
        // as a u32 too.
        Ok(unsafe { AtomicU32::from_ptr(p.cast()) })
    }

    /// Loads the little-endian u32 at `offset` (acquire).
    pub(crate) fn load32(&self, offset: usize) -> Result<u32> {
        Ok(u32::from_le(self.word(offset)?.load(Ordering::Acquire)))
    }

    /// Stores `v` little-endian at `offset` (release).
    pub(crate) fn store32(&self, offset: usize, v: u32) -> Result {
        self.word(offset)?.store(v.to_le(), Ordering::Release);
        Ok(())
    }
}
