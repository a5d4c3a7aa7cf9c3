//! Memory the model shares with a guest: the device's own (BAR2, a
//! memfd it hands to QEMU) and, for type1 and pcie, the guest's RAM (a
//! file QEMU backs it with). Every access is bounds-checked: offsets and
//! lengths come from the guest.
//!
//! Control words (tails, heads, tags) are loaded and stored as atomics
//! with acquire/release ordering, which is what orders the frame and
//! descriptor bytes around them between the processes; bulk bytes are
//! plain copies of ranges the protocol says are not being written (a
//! published descriptor, a posted buffer).

use anyhow::{ensure, Context, Result};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::num::NonZeroUsize;
use std::os::fd::AsFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// A shared mapping of `len` bytes.
///
/// # Invariants
///
/// `ptr` points to `len` bytes mapped shared, readable and writable, for
/// the value's life; `len > 0`.
pub struct Shared {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory; every access goes through the
// methods below, which are as safe from several threads as the guest's
// own concurrent accesses are (atomics for control words).
unsafe impl Send for Shared {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shared {}

impl Shared {
    /// Maps `len` bytes of `fd` from `offset`, shared.
    pub fn map(fd: impl AsFd, offset: u64, len: usize) -> Result<Shared> {
        let n = NonZeroUsize::new(len).context("empty mapping")?;
        let off = i64::try_from(offset).context("offset")?;
        // SAFETY: a fresh mapping chosen by the kernel; it aliases nothing
        // of ours, and `Drop` unmaps it.
        let ptr = unsafe {
            mmap(
                None,
                n,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                off,
            )
        }
        .context("mmap")?;
        // INVARIANT: mapped just above, `len` bytes.
        Ok(Shared {
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The range `at..at + n`, if inside the mapping.
    fn range(&self, at: u64, n: usize) -> Option<usize> {
        let start = usize::try_from(at).ok()?;
        let end = start.checked_add(n)?;
        (end <= self.len).then_some(start)
    }

    /// Copies `out.len()` bytes from `at`.
    pub fn read(&self, at: u64, out: &mut [u8]) -> Result<()> {
        let start = self.range(at, out.len()).context("read out of bounds")?;
        // SAFETY: `start..start + out.len()` is inside the mapping
        // (checked), and `out` is our own memory, not in the mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(start), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    /// Copies `data` to `at`.
    pub fn write(&self, at: u64, data: &[u8]) -> Result<()> {
        let start = self.range(at, data.len()).context("write out of bounds")?;
        // SAFETY: as for `read`, the other way.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr().add(start), data.len())
        };
        Ok(())
    }

    /// Copies `len` bytes from `at` in `self` to `to` in `dst` (a frame
    /// from one port's TX buffer into another's RX buffer).
    pub fn copy_to(&self, at: u64, dst: &Shared, to: u64, len: usize) -> Result<()> {
        let src = self.range(at, len).context("copy source out of bounds")?;
        let dest = dst.range(to, len).context("copy target out of bounds")?;
        // SAFETY: both ranges are inside their mappings (checked); they
        // may be the same mapping, so `copy` (memmove) is used.
        unsafe { std::ptr::copy(self.ptr.as_ptr().add(src), dst.ptr.as_ptr().add(dest), len) };
        Ok(())
    }

    fn word(&self, at: u64) -> Result<&AtomicU32> {
        let start = self.range(at, 4).context("word out of bounds")?;
        ensure!(start % 4 == 0, "misaligned word at {at:#x}");
        // SAFETY: four aligned bytes inside the mapping (checked), valid
        // for as long as `self`; the guest accesses them as a u32 too.
        Ok(unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(start).cast()) })
    }

    /// Loads the u32 at `at` (acquire: what the writer stored before it
    /// is visible after).
    pub fn load(&self, at: u64) -> Result<u32> {
        Ok(u32::from_le(self.word(at)?.load(Ordering::Acquire)))
    }

    /// Stores `v` at `at` (release: what was written before is visible to
    /// a reader that sees it).
    pub fn store(&self, at: u64, v: u32) -> Result<()> {
        self.word(at)?.store(v.to_le(), Ordering::Release);
        Ok(())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: mapped by `map` with this address and length (the type
        // invariant); nothing borrows it past `self`.
        let _ = unsafe { munmap(self.ptr.cast(), self.len) };
    }
}

/// Guest RAM as the device reaches it: guest physical addresses through
/// the q35 machine's layout (RAM below `lowmem` from 0, the rest from
/// 4 GiB), over the file QEMU backs RAM with.
pub struct GuestRam {
    mem: Shared,
    lowmem: u64,
}

/// Where q35 splits RAM: 2 GiB if it has at least 2.75 GiB, else 2.75 GiB.
pub fn q35_lowmem(ram_bytes: u64) -> u64 {
    if ram_bytes >= 0xb000_0000 {
        0x8000_0000
    } else {
        0xb000_0000
    }
}

impl GuestRam {
    pub fn new(mem: Shared) -> GuestRam {
        let lowmem = q35_lowmem(mem.len() as u64);
        GuestRam { mem, lowmem }
    }

    /// Bytes of RAM.
    pub fn bytes(&self) -> u64 {
        self.mem.len() as u64
    }

    /// The file offset of `len` bytes at guest physical `gpa`, if they
    /// are RAM and do not straddle the hole below 4 GiB.
    pub fn offset(&self, gpa: u64, len: u64) -> Option<u64> {
        let end = gpa.checked_add(len)?;
        let low = self.lowmem.min(self.bytes());
        if end <= low {
            return Some(gpa);
        }
        let high = gpa.checked_sub(1 << 32)?;
        let off = self.lowmem.checked_add(high)?;
        (off.checked_add(len)? <= self.bytes()).then_some(off)
    }

    pub fn shared(&self) -> &Shared {
        &self.mem
    }
}
