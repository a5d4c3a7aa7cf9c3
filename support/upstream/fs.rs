// SPDX-License-Identifier: GPL-2.0

//! Open files (upstream: `kernel::fs::File`, 6.13+), as much as the
//! file-operation callbacks need, and counted inode references (upstream:
//! `ARef<Inode>`; [`InodeRef::unmap_range`] has no upstream counterpart).

use kernel::bindings;
use kernel::types::Opaque;

/// An open file, borrowed for the duration of a file-operation callback.
///
/// # Invariants
///
/// The wrapped `struct file` is valid for the lifetime of the reference.
#[repr(transparent)]
pub struct File(Opaque<bindings::file>);

impl File {
    /// # Safety
    ///
    /// `ptr` must point to a valid `struct file` that stays valid for `'a`
    /// (the VFS guarantees this inside a file-operation callback).
    pub unsafe fn from_raw_file<'a>(ptr: *const bindings::file) -> &'a File {
        // INVARIANT: the caller guarantees that the file is valid for `'a`.
        // SAFETY: `File` is a transparent wrapper of `struct file`, and the
        // caller guarantees validity for `'a`.
        unsafe { &*ptr.cast() }
    }

    /// The raw `struct file`.
    pub fn as_ptr(&self) -> *mut bindings::file {
        self.0.get()
    }

    /// The file's `f_flags` (`O_RDWR`, `O_NONBLOCK`, ...).
    pub fn flags(&self) -> u32 {
        // SAFETY: the file is valid (invariant); `f_flags` is set at open and
        // read without a lock throughout the kernel.
        unsafe { (*self.as_ptr()).f_flags }
    }
}

impl File {
    /// A counted reference to the file's inode.
    pub fn inode(&self) -> InodeRef {
        // SAFETY: the file is valid (invariant) and holds a reference to
        // its inode, `f_inode` (what `file_inode()` reads), fixed at open.
        unsafe { InodeRef::hold((*self.as_ptr()).f_inode) }
    }

    /// Makes `inode`'s address space the one this file's mappings live
    /// in, so that [`InodeRef::unmap_range`] reaches them (all files of a
    /// device share one address space, as device-dax does). Only from
    /// `open`, before the file can be mapped.
    pub fn share_mappings_of(&self, inode: &InodeRef) {
        // The inode outlives the file's mappings: its owner keeps the
        // `InodeRef` until they are gone (the device, until its last file).
        // SAFETY: the file is valid (invariant) and not yet visible to user
        // space while `open` runs, so nothing else reads `f_mapping`; the
        // inode is valid (`InodeRef` invariant) and its `i_mapping` fixed.
        unsafe { (*self.as_ptr()).f_mapping = (*inode.0).i_mapping };
    }
}

/// A counted reference to an inode.
///
/// # Invariants
///
/// `self.0` is a valid inode on which this value holds a reference.
pub struct InodeRef(*mut bindings::inode);

// SAFETY: inode references may be taken and dropped on any thread.
unsafe impl Send for InodeRef {}
// SAFETY: `&self` only unmaps ranges, which is thread safe.
unsafe impl Sync for InodeRef {}

impl InodeRef {
    /// Takes a new reference to `inode` (`ihold`).
    ///
    /// # Safety
    ///
    /// `inode` must be a valid inode on which the caller holds a reference
    /// (or that something it holds keeps alive) for the duration of the
    /// call.
    pub unsafe fn hold(inode: *mut bindings::inode) -> InodeRef {
        // SAFETY: the caller guarantees that the inode is alive, with a
        // reference held elsewhere, as `ihold` requires.
        unsafe { bindings::ihold(inode) };
        // INVARIANT: a valid inode, with the reference `ihold` just took.
        InodeRef(inode)
    }

    /// Removes every user mapping of `[start, start + len)` of the
    /// address space; later accesses fault again.
    pub fn unmap_range(&self, start: u64, len: u64) {
        // `loff_t` is `long long`: the same conversion C makes.
        let (start, len) = (start as bindings::loff_t, len as bindings::loff_t);
        // SAFETY: the inode is valid (invariant), and so is its address
        // space; `unmap_mapping_range` takes its own locks and may sleep,
        // which callers allow.
        unsafe { bindings::unmap_mapping_range((*self.0).i_mapping, start, len, 1) };
    }
}

impl Clone for InodeRef {
    fn clone(&self) -> InodeRef {
        // SAFETY: the inode is valid and this value holds a reference
        // (invariant).
        unsafe { InodeRef::hold(self.0) }
    }
}

impl Drop for InodeRef {
    fn drop(&mut self) {
        // SAFETY: the reference is this value's (invariant), dropped once.
        unsafe { bindings::iput(self.0) };
    }
}
