// SPDX-License-Identifier: GPL-2.0

//! Memory a device shares coherently with the CPU: a Type-2 device's own
//! memory in a BAR ([`super::pci::DeviceMem`], mapped write-back) and host memory
//! allocated for DMA ([`crate::dma::CoherentAllocation`]). Both are read
//! and written with plain cached accesses through the [`Coherent`]
//! accessors, control words as atomics (acquire loads, release stores)
//! that order the bytes around them, as the CXL-NIC's rings need. Every
//! access is bounds-checked.
//!
//! Upstream: `kernel::io::mem::IoMem` (6.16) maps a resource, uncached;
//! `kernel::dma::CoherentAllocation` (6.14) has typed field accessors;
//! nothing maps device memory write-back or gives atomic accessors over
//! it. (Contrast [`crate::sharedmem`]: a CXL pool shared with other hosts
//! is not coherent, so its accessors flush and invalidate.)

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::ffi::c_uint;
use kernel::prelude::*;

/// `len` bytes of memory someone else may change at any time, borrowed
/// from their owner.
///
/// # Invariants
///
/// `ptr` is valid for reads and writes of `len` bytes for `'a`.
pub struct Window<'a> {
    ptr: *mut u8,
    len: usize,
    _life: PhantomData<&'a [u8]>,
}

impl Window<'_> {
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes for as
    /// long as the returned value lives.
    pub unsafe fn new<'a>(ptr: *mut u8, len: usize) -> Window<'a> {
        // INVARIANT: the caller guarantees it.
        Window {
            ptr,
            len,
            _life: PhantomData,
        }
    }

    /// The window's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The address of `count` bytes at `offset`, if inside the window
    /// (and `count` fits a C `unsigned int`, for the C copies).
    pub fn range(&self, offset: usize, count: usize) -> Result<*mut u8> {
        match offset.checked_add(count) {
            Some(end) if end <= self.len && count <= c_uint::MAX as usize => {
                // SAFETY: `offset + count <= len` (checked): inside the
                // window (invariant).
                Ok(unsafe { self.ptr.add(offset) })
            }
            _ => Err(EINVAL),
        }
    }

    /// Copies `out.len()` bytes from `offset` with volatile loads (the
    /// memory changes under us): 8 bytes at a time where aligned, since
    /// on an emulated window every access is a trap.
    pub fn load_bytes(&self, offset: usize, out: &mut [u8]) -> Result {
        let src = self.range(offset, out.len())?;
        let mut i = 0;
        while i < out.len() {
            // SAFETY: `i < out.len()`, inside the range `range` checked.
            let at = unsafe { src.add(i) };
            if at as usize % 8 == 0 && out.len() - i >= 8 {
                // SAFETY: aligned, and 8 bytes remain in the checked range.
                let word = unsafe { at.cast::<u64>().read_volatile() };
                out[i..i + 8].copy_from_slice(&word.to_ne_bytes());
                i += 8;
            } else {
                // SAFETY: inside the checked range.
                out[i] = unsafe { at.read_volatile() };
                i += 1;
            }
        }
        Ok(())
    }

    /// Copies `data` to `offset` with volatile stores, as `load_bytes`.
    pub fn store_bytes(&self, offset: usize, data: &[u8]) -> Result {
        let dst = self.range(offset, data.len())?;
        let mut i = 0;
        while i < data.len() {
            // SAFETY: `i < data.len()`, inside the range `range` checked.
            let at = unsafe { dst.add(i) };
            if at as usize % 8 == 0 && data.len() - i >= 8 {
                let mut word = [0u8; 8];
                word.copy_from_slice(&data[i..i + 8]);
                // SAFETY: aligned, and 8 bytes remain in the checked range.
                unsafe { at.cast::<u64>().write_volatile(u64::from_ne_bytes(word)) };
                i += 8;
            } else {
                // SAFETY: inside the checked range.
                unsafe { at.write_volatile(data[i]) };
                i += 1;
            }
        }
        Ok(())
    }

    /// The u32 at `offset`, as an atomic.
    fn word(&self, offset: usize) -> Result<&AtomicU32> {
        let p = self.range(offset, 4)?;
        if p as usize % 4 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: four aligned bytes (checked) inside the window (checked
        // by `range`), valid for the window's life, which bounds the
        // borrow; the device accesses them as a u32 too.
        Ok(unsafe { AtomicU32::from_ptr(p.cast()) })
    }
}

/// Memory shared coherently with a device: what its owner gives out.
pub trait Coherent {
    /// The whole memory.
    fn window(&self) -> Window<'_>;

    /// The memory's length in bytes.
    fn len(&self) -> usize {
        self.window().len()
    }

    /// Copies `out.len()` bytes from `offset` (volatile: the device may
    /// be writing them).
    fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.window().load_bytes(offset, out)
    }

    /// Copies `data` to `offset` (volatile).
    fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.window().store_bytes(offset, data)
    }

    /// Zeroes `len` bytes at `offset`.
    fn clear(&self, offset: usize, len: usize) -> Result {
        let w = self.window();
        w.range(offset, len)?;
        let zeros = [0u8; 64];
        let mut at = offset;
        let end = offset + len;
        while at < end {
            let n = zeros.len().min(end - at);
            w.store_bytes(at, &zeros[..n])?;
            at += n;
        }
        Ok(())
    }

    /// Loads the little-endian u32 at `offset` (acquire).
    fn load32(&self, offset: usize) -> Result<u32> {
        Ok(u32::from_le(
            self.window().word(offset)?.load(Ordering::Acquire),
        ))
    }

    /// Stores `v` little-endian at `offset` (release).
    fn store32(&self, offset: usize, v: u32) -> Result {
        self.window()
            .word(offset)?
            .store(v.to_le(), Ordering::Release);
        Ok(())
    }
}
