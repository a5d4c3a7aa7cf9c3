// SPDX-License-Identifier: GPL-2.0

//! sysfs directories of read-only attributes, created and removed at run
//! time (one per channel, one per component). No upstream counterpart:
//! 6.13's Rust has no kobject or sysfs abstraction.
//!
//! A [`Dir`] owns an `Arc` of what its attributes show, so a read that
//! races with removal never sees freed memory: removal waits for running
//! reads, and only then drops the `Arc`. The kobject itself is the core's
//! (its release is core code), so a delayed release never runs this
//! module's code after unload. `show` runs in process context
//! with no lock of the caller's held; it should read atomics or take a
//! lock that is never held while a [`Dir`] is dropped.

use super::helpers;
use core::marker::PhantomData;
use kernel::error::{from_err_ptr, from_result};
use kernel::ffi::{c_char, c_uint, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ForeignOwnable;

/// What a directory's attributes show.
pub(crate) trait Attributes: Send + Sync + Sized + 'static {
    /// The attribute file names.
    const NAMES: &'static [&'static CStr];

    /// Writes the value of attribute `NAMES[index]`.
    fn show(&self, index: usize, out: &mut AttributeBuffer<'_>) -> Result;
}

/// A directory with no attributes (a parent for others).
pub(crate) struct NoAttributes;

impl Attributes for NoAttributes {
    const NAMES: &'static [&'static CStr] = &[];

    fn show(&self, _index: usize, _out: &mut AttributeBuffer<'_>) -> Result {
        Err(EINVAL)
    }
}

/// Where a directory is created: a kobject that outlives the borrow.
#[derive(Clone, Copy)]
pub(crate) struct Parent<'a> {
    kobj: *mut kernel::bindings::kobject,
    _owner: PhantomData<&'a ()>,
}

impl Parent<'_> {
    /// # Safety
    ///
    /// `kobj` is a live, registered kobject for the lifetime of the
    /// `Parent`.
    pub(crate) unsafe fn from_raw(kobj: *mut kernel::bindings::kobject) -> Self {
        Parent {
            kobj,
            _owner: PhantomData,
        }
    }
}

/// A sysfs directory; removed on drop.
///
/// # Invariants
///
/// `raw` is a live directory from `cxlf_dir_create` whose data pointer is
/// `data`, turned into a raw pointer by `Arc::into_foreign` and given
/// back only after the directory is destroyed.
pub(crate) struct Dir<T: Attributes> {
    raw: *mut helpers::CxlfDir,
    data: *const c_void,
    _t: PhantomData<Arc<T>>,
}

// SAFETY: a `Dir` is a handle on C state that may be destroyed from any
// thread, plus an `Arc<T>` with `T: Send + Sync`.
unsafe impl<T: Attributes> Send for Dir<T> {}
// SAFETY: `&Dir` gives access to nothing but the parent kobject.
unsafe impl<T: Attributes> Sync for Dir<T> {}

/// sysfs file names are kept as pointers by C; names are `'static`.
const MAX_ATTRIBUTES: usize = 16;
/// Directory names, with their NUL (kobject names are copied).
const NAME_BYTES: usize = 64;

impl<T: Attributes> Dir<T> {
    /// Creates `<parent>/<name>/` with `T::NAMES` as its files. `name`
    /// may not hold a NUL; a `/` in it becomes `!` (kobject rule).
    pub(crate) fn new(parent: Parent<'_>, name: &[u8], data: Arc<T>) -> Result<Self> {
        let mut cname = [0u8; NAME_BYTES];
        if name.is_empty() || name.len() >= NAME_BYTES || name.contains(&0) {
            return Err(EINVAL);
        }
        cname
            .get_mut(..name.len())
            .ok_or(EINVAL)?
            .copy_from_slice(name);
        if T::NAMES.len() > MAX_ATTRIBUTES {
            return Err(EINVAL);
        }
        let mut names = [core::ptr::null::<c_char>(); MAX_ATTRIBUTES];
        for (n, attr) in names.iter_mut().zip(T::NAMES) {
            *n = attr.as_char_ptr();
        }
        let data = data.into_foreign();
        // SAFETY: `parent.kobj` is live (`Parent`'s contract); `cname` is
        // NUL-terminated and copied by C; the attribute names are
        // `'static` and `T::NAMES.len()` of them are set; `data` stays
        // valid until the directory is destroyed (invariant below);
        // `show_attribute::<T>` matches it.
        let raw = from_err_ptr(unsafe {
            helpers::cxlf_dir_create(
                parent.kobj,
                cname.as_ptr().cast::<c_char>(),
                data.cast_mut(),
                names.as_ptr(),
                T::NAMES.len() as c_uint,
                Some(show_attribute::<T>),
            )
        });
        match raw {
            // INVARIANT: `raw` was just created with `data`.
            Ok(raw) => Ok(Dir {
                raw,
                data,
                _t: PhantomData,
            }),
            Err(e) => {
                // SAFETY: `data` came from `into_foreign` above and C
                // kept no copy (the directory was not created).
                drop(unsafe { Arc::<T>::from_foreign(data) });
                Err(e)
            }
        }
    }

    /// A parent for directories inside this one (dropped before it).
    pub(crate) fn as_parent(&self) -> Parent<'_> {
        // SAFETY: the directory is live while `self` is borrowed
        // (invariant).
        unsafe { Parent::from_raw(helpers::cxlf_dir_kobject(self.raw)) }
    }
}

impl<T: Attributes> Drop for Dir<T> {
    fn drop(&mut self) {
        // SAFETY: `raw` is live (invariant) and destroyed once, here; when
        // this returns no `show` runs or will run.
        unsafe { helpers::cxlf_dir_destroy(self.raw) };
        // SAFETY: `data` came from `into_foreign` (invariant) and C no
        // longer uses it.
        drop(unsafe { Arc::<T>::from_foreign(self.data) });
    }
}

/// The page a sysfs `show` fills.
pub(crate) struct AttributeBuffer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> AttributeBuffer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        AttributeBuffer { buf, len: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl core::fmt::Write for AttributeBuffer<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(core::fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// # Safety
///
/// Called by C with the directory's data pointer (an `Arc<T>` from
/// `into_foreign`, alive: destruction waits for running callbacks), an
/// index below `T::NAMES.len()`, and a page-sized buffer.
unsafe extern "C" fn show_attribute<T: Attributes>(
    data: *mut c_void,
    index: c_uint,
    buf: *mut c_char,
) -> isize {
    // SAFETY: `data` is a live `Arc<T>` from `into_foreign`, borrowed for
    // this call only (function contract).
    let this = unsafe { <Arc<T> as ForeignOwnable>::borrow(data) };
    // SAFETY: sysfs passes a page-sized buffer that only this callback
    // uses while it runs (function contract).
    let page =
        unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::page::PAGE_SIZE) };
    let mut out = AttributeBuffer::new(page);
    from_result(|| {
        this.show(index as usize, &mut out)?;
        Ok(out.len() as isize)
    })
}
