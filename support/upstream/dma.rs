// SPDX-License-Identifier: GPL-2.0

//! DMA-coherent host memory, shaped like upstream's `kernel::dma` (6.14):
//! a [`CoherentAllocation`] holds a reference on the device it was
//! allocated for and frees itself on drop; [`DmaDevice::set_mask`] is
//! `dma_set_mask_and_coherent`. Where upstream has typed field access,
//! this gives the [`Coherent`] byte and atomic-word accessors a ring
//! protocol needs.

use crate::coherent::{Coherent, Window};
use kernel::bindings;
use kernel::error::to_result;
use kernel::prelude::*;

/// A counted reference on a device that does DMA.
///
/// # Invariants
///
/// `raw` is a device this value holds a reference on.
pub struct DmaDevice {
    raw: *mut bindings::device,
}

// SAFETY: a counted reference; the DMA calls made through it work from
// any thread.
unsafe impl Send for DmaDevice {}
// SAFETY: as above.
unsafe impl Sync for DmaDevice {}

impl DmaDevice {
    /// # Safety
    ///
    /// `raw` must be a live device.
    pub unsafe fn get(raw: *mut bindings::device) -> DmaDevice {
        // SAFETY: live (the caller's guarantee); this takes a reference.
        let raw = unsafe { bindings::get_device(raw) };
        // INVARIANT: the reference just taken.
        DmaDevice { raw }
    }

    /// Another reference on the same device.
    pub fn clone_ref(&self) -> DmaDevice {
        // SAFETY: `raw` is live while this value holds its reference.
        unsafe { DmaDevice::get(self.raw) }
    }

    /// Limits streaming and coherent DMA to addresses below `1 << bits`.
    pub fn set_mask(&self, bits: u32) -> Result {
        let mask = match bits {
            64 => u64::MAX,
            1..=63 => (1u64 << bits) - 1,
            _ => return Err(EINVAL),
        };
        // SAFETY: `raw` is live (invariant).
        to_result(unsafe { bindings::dma_set_mask(self.raw, mask) })?;
        // SAFETY: as above.
        to_result(unsafe { bindings::dma_set_coherent_mask(self.raw, mask) })
    }
}

impl Drop for DmaDevice {
    fn drop(&mut self) {
        // SAFETY: drops the reference `get` took (invariant).
        unsafe { bindings::put_device(self.raw) };
    }
}

/// `len` bytes of zeroed host memory both the CPU and the device reach
/// coherently; freed on drop.
///
/// # Invariants
///
/// `cpu` and `handle` are a live `dma_alloc_attrs` allocation of `len`
/// bytes (`len > 0`) for `dev`, owned by this value.
pub struct CoherentAllocation {
    dev: DmaDevice,
    cpu: *mut u8,
    handle: u64,
    len: usize,
}

// SAFETY: the memory is plain and owned; access goes through the
// `Coherent` accessors.
unsafe impl Send for CoherentAllocation {}
// SAFETY: as above.
unsafe impl Sync for CoherentAllocation {}

impl CoherentAllocation {
    /// Allocates `len` zeroed bytes for `dev` (process context).
    pub fn alloc_coherent(dev: &DmaDevice, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(EINVAL);
        }
        let mut handle: bindings::dma_addr_t = 0;
        // SAFETY: `dev` is live (its invariant); `handle` is ours for the
        // call. The allocation is zeroed (as since 5.0, always).
        let cpu = unsafe {
            bindings::dma_alloc_attrs(dev.raw, len, &mut handle, bindings::GFP_KERNEL, 0)
        };
        if cpu.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: just allocated for `dev`, owned from here.
        Ok(CoherentAllocation {
            dev: dev.clone_ref(),
            cpu: cpu.cast(),
            handle,
            len,
        })
    }

    /// The address the device uses.
    pub fn dma_handle(&self) -> u64 {
        self.handle
    }
}

impl Coherent for CoherentAllocation {
    fn window(&self) -> Window<'_> {
        // SAFETY: `len` bytes at `cpu` live as long as `self` (invariant).
        unsafe { Window::new(self.cpu, self.len) }
    }
}

impl Drop for CoherentAllocation {
    fn drop(&mut self) {
        // SAFETY: allocated for `dev` with these values (invariant), freed
        // once, here.
        unsafe {
            bindings::dma_free_attrs(self.dev.raw, self.len, self.cpu.cast(), self.handle, 0)
        };
    }
}
