//! A shared mapping of part of a device (a `/dev/daxX.Y` or a PCI
//! `resourceN` file), accessed with the discipline a pool without
//! cross-host coherence needs: a writer stores, writes the lines back and
//! fences; a reader invalidates the lines before it reads.

use anyhow::{bail, Context, Result};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::fs::OpenOptions;
use std::num::NonZeroUsize;
use std::os::fd::AsFd;
use std::ptr::NonNull;

/// device-dax maps in units of its alignment (2 MiB by default).
pub const MAP_ALIGN: u64 = 2 << 20;
const CACHE_LINE: usize = 64;

/// # Invariants
///
/// `base` points to a live `MAP_SHARED` mapping of `len` bytes that this
/// value owns and unmaps on drop; `skip + span <= len`.
pub struct Window {
    base: NonNull<u8>,
    len: usize,
    skip: usize,
    span: usize,
}

impl Window {
    /// Maps the device range `[offset, offset + span)`.
    pub fn map(path: &str, offset: u64, span: usize) -> Result<Window> {
        if span == 0 {
            bail!("empty range");
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("opening {path}"))?;
        let start = offset / MAP_ALIGN * MAP_ALIGN;
        let end = (offset + span as u64).div_ceil(MAP_ALIGN) * MAP_ALIGN;
        let len = usize::try_from(end - start)?;
        // SAFETY: a fresh shared mapping of a device file at an address the
        // kernel chooses; nothing else in this process aliases it.
        let base = unsafe {
            mmap(
                None,
                NonZeroUsize::new(len).unwrap(),
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                file.as_fd(),
                i64::try_from(start)?,
            )
        }
        .with_context(|| {
            format!(
                "mmap of {path} at {start:#x}+{len:#x} (offset and size must be inside the device)"
            )
        })?;
        Ok(Window {
            base: base.cast(),
            len,
            skip: (offset - start) as usize,
            span,
        })
    }

    /// Anonymous private memory of the same shape, as an anchor.
    pub fn anonymous(span: usize) -> Result<Window> {
        let len = (span as u64).div_ceil(MAP_ALIGN) * MAP_ALIGN;
        let len = usize::try_from(len)?;
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses.
        let base = unsafe {
            nix::sys::mman::mmap_anonymous(
                None,
                NonZeroUsize::new(len).context("empty range")?,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_ANONYMOUS,
            )
        }?;
        Ok(Window {
            base: base.cast(),
            len,
            skip: 0,
            span,
        })
    }

    pub fn span(&self) -> usize {
        self.span
    }

    /// Stores `value` to every 8-byte word, then writes the lines back.
    pub fn store_words(&self, value: u64) {
        let words = self.span / 8;
        let base = self.ptr().cast::<u64>();
        for i in 0..words {
            // SAFETY: `i * 8 + 8 <= span`, inside the mapping (invariant);
            // mappings are page aligned, so the word is aligned.
            unsafe { base.add(i).write_volatile(value) };
        }
        self.flush(words * 8);
    }

    /// Invalidates the lines, then loads every 8-byte word; returns their sum.
    pub fn load_words(&self) -> u64 {
        self.flush(self.span);
        let words = self.span / 8;
        let base = self.ptr().cast::<u64>();
        // SAFETY: as in `store_words`.
        (0..words).fold(0u64, |sum, i| {
            sum.wrapping_add(unsafe { base.add(i).read_volatile() })
        })
    }

    fn ptr(&self) -> *mut u8 {
        // SAFETY: `skip < len` by the invariant, so the result stays inside
        // the mapping.
        unsafe { self.base.as_ptr().add(self.skip) }
    }

    /// Writes `data` at the start of the window, then writes the lines back
    /// to memory and fences, so another host can see them.
    pub fn write(&self, data: &[u8]) {
        let n = data.len().min(self.span);
        for (i, &byte) in data[..n].iter().enumerate() {
            // SAFETY: `i < span`, inside the mapping (invariant); volatile
            // because other hosts read this memory.
            unsafe { self.ptr().add(i).write_volatile(byte) };
        }
        self.flush(n);
    }

    /// Reads the window after invalidating its lines, so that data another
    /// host wrote is not hidden by stale cache lines.
    pub fn read(&self) -> Vec<u8> {
        self.flush(self.span);
        // SAFETY: every `i < span` is inside the mapping (invariant).
        (0..self.span)
            .map(|i| unsafe { self.ptr().add(i).read_volatile() })
            .collect()
    }

    fn flush(&self, n: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let mut line = 0;
            while line < n {
                // SAFETY: the address is inside the mapping; clflush has no
                // other requirement.
                unsafe { core::arch::x86_64::_mm_clflush(self.ptr().add(line)) };
                line += CACHE_LINE;
            }
            // SAFETY: a fence has no requirements.
            unsafe { core::arch::x86_64::_mm_mfence() };
        }
        #[cfg(not(target_arch = "x86_64"))]
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` describe the mapping this value owns
        // (invariant); nothing borrows it past this point.
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}
