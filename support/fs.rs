// SPDX-License-Identifier: GPL-2.0

//! Open files (upstream: `kernel::fs::File`, 6.13+), as much as the
//! file-operation callbacks need.

use super::helpers;
use kernel::bindings;
use kernel::types::Opaque;

/// An open file, borrowed for the duration of a file-operation callback.
///
/// # Invariants
///
/// The wrapped `struct file` is valid for the lifetime of the reference.
#[repr(transparent)]
pub(crate) struct File(Opaque<bindings::file>);

impl File {
    /// # Safety
    ///
    /// `ptr` must point to a valid `struct file` that stays valid for `'a`
    /// (the VFS guarantees this inside a file-operation callback).
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::file) -> &'a File {
        // SAFETY: `File` is a transparent wrapper of `struct file`, and the
        // caller guarantees validity for `'a`.
        unsafe { &*ptr.cast() }
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::file {
        self.0.get()
    }

    /// The file's `f_flags` (`O_RDWR`, `O_NONBLOCK`, ...).
    pub(crate) fn flags(&self) -> u32 {
        // SAFETY: the file is valid (invariant); `f_flags` is set at open and
        // read without a lock throughout the kernel.
        unsafe { (*self.as_ptr()).f_flags }
    }
}

impl File {
    /// A counted reference to the file's inode.
    pub(crate) fn inode(&self) -> InodeRef {
        // SAFETY: the file is valid (invariant); the helper takes a
        // reference (`ihold`) that `InodeRef` owns.
        InodeRef(unsafe { helpers::cxlf_file_inode_get(self.as_ptr()) })
    }

    /// Makes `inode`'s address space the one this file's mappings live
    /// in, so that [`InodeRef::unmap_range`] reaches them. Only from
    /// `open`, before the file can be mapped.
    pub(crate) fn share_mappings_of(&self, inode: &InodeRef) {
        // The inode outlives the file's mappings: its owner keeps the
        // `InodeRef` until they are gone (the device, until its last file).
        // SAFETY: the file is valid (invariant) and not yet visible to user
        // space while `open` runs; the inode is live (see above).
        unsafe { helpers::cxlf_file_set_mapping(self.as_ptr(), inode.0) };
    }
}

/// A counted reference to an inode.
///
/// # Invariants
///
/// `self.0` is a valid inode on which this value holds a reference.
pub(crate) struct InodeRef(*mut bindings::inode);

// SAFETY: inode references may be taken and dropped on any thread.
unsafe impl Send for InodeRef {}
// SAFETY: `&self` only unmaps ranges, which is thread safe.
unsafe impl Sync for InodeRef {}

impl InodeRef {
    /// # Safety
    ///
    /// `inode` must be a valid inode on which the caller holds a reference
    /// that it hands to the new value.
    pub(crate) unsafe fn from_raw(inode: *mut bindings::inode) -> InodeRef {
        // INVARIANT: a valid inode whose reference the caller gave us.
        InodeRef(inode)
    }

    /// Removes every user mapping of `[start, start + len)` of the
    /// address space; later accesses fault again.
    pub(crate) fn unmap_range(&self, start: u64, len: u64) {
        // SAFETY: the inode is valid (invariant); `unmap_mapping_range`
        // takes its own locks and may sleep, which callers allow.
        unsafe { helpers::cxlf_inode_unmap_range(self.0, start, len) };
    }
}

impl Clone for InodeRef {
    fn clone(&self) -> InodeRef {
        // SAFETY: the inode is valid (invariant); `ihold` takes the
        // reference the new value owns.
        InodeRef(unsafe { helpers::cxlf_inode_get(self.0) })
    }
}

impl Drop for InodeRef {
    fn drop(&mut self) {
        // SAFETY: the reference is ours (invariant), dropped once.
        unsafe { helpers::cxlf_inode_put(self.0) };
    }
}
