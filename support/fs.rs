// SPDX-License-Identifier: GPL-2.0

//! Open files (upstream: `kernel::fs::File`, 6.13+), as much as the
//! file-operation callbacks need.

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
