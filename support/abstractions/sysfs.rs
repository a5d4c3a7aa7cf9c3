// SPDX-License-Identifier: GPL-2.0

//! sysfs directories of attributes, created and removed at run time (one
//! per channel, one per component): read-only, or root-writable (mode
//! 0644) for those [`Attributes::WRITABLE`] lists. No upstream
//! counterpart: 6.13's Rust has no kobject or sysfs abstraction.
//!
//! A [`Dir`] owns an `Arc` of what its attributes show, so a read that
//! races with removal never sees freed memory: removal waits for running
//! reads, and only then drops the `Arc`. The kobject itself is the core's
//! (its release is core code), so a delayed release never runs this
//! module's code after unload. `show` runs in process context
//! with no lock of the caller's held; it should read atomics or take a
//! lock that is never held while a [`Dir`] is dropped.

use crate::bindings;
use crate::helpers;
use core::marker::PhantomData;
use kernel::error::{from_result, to_result};
use kernel::ffi::c_char;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::Opaque;

/// What a directory's attributes show.
pub trait Attributes: Send + Sync + Sized + 'static {
    /// The attribute file names.
    const NAMES: &'static [&'static CStr];

    /// Which of `NAMES` root may write, a bit each (bit `i`: `NAMES[i]`).
    const WRITABLE: u64 = 0;

    /// Writes the value of attribute `NAMES[index]`.
    fn show(&self, index: usize, out: &mut AttributeBuffer<'_>) -> Result;

    /// Takes what was written to attribute `NAMES[index]` (one of
    /// `WRITABLE`), the bytes as written (a trailing newline included).
    /// Runs in process context with no lock of the caller's held.
    fn store(&self, _index: usize, _input: &[u8]) -> Result {
        Err(EPERM)
    }
}

/// A directory with no attributes (a parent for others).
pub struct NoAttributes;

impl Attributes for NoAttributes {
    const NAMES: &'static [&'static CStr] = &[];

    fn show(&self, _index: usize, _out: &mut AttributeBuffer<'_>) -> Result {
        Err(EINVAL)
    }
}

/// Where a directory is created: a kobject that outlives the borrow.
#[derive(Clone, Copy)]
pub struct Parent<'a> {
    kobj: *mut bindings::kobject,
    _owner: PhantomData<&'a ()>,
}

impl Parent<'_> {
    /// # Safety
    ///
    /// `kobj` is a live, registered kobject for the lifetime of the
    /// `Parent`.
    pub unsafe fn from_raw(kobj: *mut bindings::kobject) -> Self {
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
/// `raw.kobj` is a live directory (from `kobject_create_and_add`, this
/// value's reference) whose files are `raw`'s attributes, which show
/// `raw.data`; `raw` stays at its address until the directory is removed.
pub struct Dir<T: Attributes> {
    raw: KBox<Raw<T>>,
}

// SAFETY: a `Dir` is a handle on a kobject that may be removed from any
// thread, plus an `Arc<T>` with `T: Send + Sync`.
unsafe impl<T: Attributes> Send for Dir<T> {}
// SAFETY: `&Dir` gives access to nothing but the kobject (as a parent).
unsafe impl<T: Attributes> Sync for Dir<T> {}

/// sysfs file names are kept as pointers by C; names are `'static`.
const MAX_ATTRIBUTES: usize = 16;
/// Directory names, with their NUL (kobject names are copied).
const NAME_BYTES: usize = 64;

/// A directory's C side: its kobject and its attributes, all shown by
/// [`show_attribute`] with `data`. The kobject is the core's
/// (`kobject_create_and_add`: its release is core code, so a delayed
/// release, `CONFIG_DEBUG_KOBJECT_RELEASE`, never calls into an unloaded
/// module); the attributes are this module's, freed once `kobject_del`
/// has removed the files.
///
/// # Invariants
///
/// Once [`Dir::new`] returns it: `attrs[i]` for `i < T::NAMES.len()` is
/// an initialised read-only attribute named `T::NAMES[i]` whose `index`
/// is `i`; `attr_list` lists them, NULL-terminated, and `group` points to
/// it; `kobj` is the directory (see [`Dir`]).
struct Raw<T: Attributes> {
    kobj: *mut bindings::kobject,
    attrs: [DirAttr; MAX_ATTRIBUTES],
    attr_list: Opaque<[*mut bindings::attribute; MAX_ATTRIBUTES + 1]>,
    group: Opaque<bindings::attribute_group>,
    data: Arc<T>,
}

/// An attribute of a directory and which of `T::NAMES` it is.
struct DirAttr {
    attr: Opaque<bindings::kobj_attribute>,
    index: usize,
}

impl<T: Attributes> Dir<T> {
    /// Creates `<parent>/<name>/` with `T::NAMES` as its files. `name`
    /// may not hold a NUL; a `/` in it becomes `!` (kobject rule).
    pub fn new(parent: Parent<'_>, name: &[u8], data: Arc<T>) -> Result<Self> {
        let mut cname = [0u8; NAME_BYTES];
        if name.is_empty() || name.len() >= NAME_BYTES || name.contains(&0) {
            return Err(EINVAL);
        }
        cname
            .get_mut(..name.len())
            .ok_or(EINVAL)?
            .copy_from_slice(name);
        let nr_attrs = T::NAMES.len();
        if nr_attrs > MAX_ATTRIBUTES {
            return Err(EINVAL);
        }
        let mut raw = KBox::new(
            Raw {
                kobj: core::ptr::null_mut(),
                attrs: [const {
                    DirAttr {
                        attr: Opaque::uninit(),
                        index: 0,
                    }
                }; MAX_ATTRIBUTES],
                attr_list: Opaque::new([core::ptr::null_mut(); MAX_ATTRIBUTES + 1]),
                group: Opaque::uninit(),
                data,
            },
            GFP_KERNEL,
        )?;
        let list = raw.attr_list.get().cast::<*mut bindings::attribute>();
        for (i, (attr, attr_name)) in raw.attrs.iter_mut().zip(T::NAMES).enumerate() {
            attr.index = i;
            let attr = attr.attr.get();
            // SAFETY: `raw` is not shared yet; the attribute and the list
            // entry (`i < MAX_ATTRIBUTES`) are inside it, and what they
            // point to lives as long as the directory (`raw`, then
            // `'static` names and code).
            unsafe {
                attr.write(core::mem::zeroed());
                read_only(&raw mut (*attr).attr, attr_name, list.add(i));
                (*attr).show = Some(show_attribute::<T>);
                if T::WRITABLE & 1u64.checked_shl(i as u32).unwrap_or(0) != 0 {
                    (*attr).attr.mode = 0o644;
                    (*attr).store = Some(store_attribute::<T>);
                }
            }
        }
        let group = raw.group.get();
        // SAFETY: as above; the group lists `attr_list`, inside `raw`.
        unsafe {
            group.write(core::mem::zeroed());
            (*group).attrs = list;
        }
        // SAFETY: `cname` is NUL-terminated and copied by the core;
        // `parent.kobj` is live (`Parent`'s contract). NULL is `ENOMEM`
        // or a duplicate name (which the callers prevent).
        let kobj = unsafe {
            bindings::kobject_create_and_add(cname.as_ptr().cast::<c_char>(), parent.kobj)
        };
        if kobj.is_null() {
            return Err(ENOMEM);
        }
        raw.kobj = kobj;
        if nr_attrs > 0 {
            // SAFETY: `kobj` is live; the group and its attributes are
            // initialised above and live in `raw`, which the `Dir` keeps
            // until the files are removed.
            if let Err(e) = to_result(unsafe { bindings::sysfs_create_group(kobj, group) }) {
                // SAFETY: `kobj` is this function's reference, dropped
                // once, here; the core removes the directory with it.
                unsafe { bindings::kobject_put(kobj) };
                return Err(e);
            }
        }
        // INVARIANT: the directory was just created with `raw`'s
        // attributes, set up above; `raw` is a box that is not moved out.
        Ok(Dir { raw })
    }

    /// A parent for directories inside this one (dropped before it).
    pub fn as_parent(&self) -> Parent<'_> {
        // SAFETY: the directory is live while `self` is borrowed
        // (invariant).
        unsafe { Parent::from_raw(self.raw.kobj) }
    }
}

impl<T: Attributes> Drop for Dir<T> {
    fn drop(&mut self) {
        // `kobject_del` removes the directory and its files and waits
        // for running `show` calls (kernfs drains its active references),
        // so `raw` and its data may go once it returns.
        // SAFETY: `kobj` is live and this value's reference (invariant),
        // removed and put once, here.
        unsafe {
            bindings::kobject_del(self.raw.kobj);
            bindings::kobject_put(self.raw.kobj);
        }
    }
}

/// The page a sysfs `show` fills.
pub struct AttributeBuffer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> AttributeBuffer<'a> {
    /// A buffer over `buf`, empty.
    pub fn new(buf: &'a mut [u8]) -> Self {
        AttributeBuffer { buf, len: 0 }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
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

/// The directory an attribute belongs to, and which of `T::NAMES` it is.
///
/// # Safety
///
/// `attr` is the `attr` field of an attribute of a live [`Dir<T>`], which
/// stays live for `'a`.
unsafe fn attribute_of<'a, T: Attributes>(
    attr: *mut bindings::kobj_attribute,
) -> (&'a Raw<T>, usize) {
    // SAFETY: `attr` is the `attr` field of `attrs[index]` of a live
    // `Raw<T>` (function contract, invariant of `Raw`), so stepping back
    // to that element, to the array's start (element 0) and to the `Raw`
    // stays inside it.
    unsafe {
        let attr = kernel::container_of!(attr, DirAttr, attr);
        let index = (*attr).index;
        (
            &*kernel::container_of!(attr.sub(index), Raw<T>, attrs),
            index,
        )
    }
}

/// # Safety
///
/// Called by sysfs on an attribute of a live [`Dir<T>`] (removal waits for
/// running calls) with a page-sized buffer.
unsafe extern "C" fn show_attribute<T: Attributes>(
    _kobj: *mut bindings::kobject,
    attr: *mut bindings::kobj_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: an attribute of a live directory (function contract).
    let (raw, index) = unsafe { attribute_of::<T>(attr) };
    // SAFETY: sysfs passes a page-sized buffer that only this callback
    // uses while it runs (function contract).
    let page =
        unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::page::PAGE_SIZE) };
    let mut out = AttributeBuffer::new(page);
    from_result(|| {
        raw.data.show(index, &mut out)?;
        Ok(out.len() as isize)
    })
}

/// # Safety
///
/// Called by sysfs on a writable attribute of a live [`Dir<T>`] (removal
/// waits for running calls) with `count` readable bytes at `buf`.
unsafe extern "C" fn store_attribute<T: Attributes>(
    _kobj: *mut bindings::kobject,
    attr: *mut bindings::kobj_attribute,
    buf: *const c_char,
    count: usize,
) -> isize {
    // SAFETY: an attribute of a live directory (function contract).
    let (raw, index) = unsafe { attribute_of::<T>(attr) };
    // SAFETY: sysfs passes `count` bytes at `buf`, unchanged while this
    // runs (function contract).
    let input = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), count) };
    from_result(|| {
        raw.data.store(index, input)?;
        isize::try_from(count).map_err(|_| EINVAL)
    })
}

/// Sets up `attr` (zeroed, inside its wrapper whose `show` the caller
/// sets) as a read-only attribute named `name`, and lists it at `slot`.
///
/// # Safety
///
/// `attr` and `slot` are valid for writes and not shared yet, and `attr`
/// lives as long as the attribute group `slot` belongs to.
pub(crate) unsafe fn read_only(
    attr: *mut bindings::attribute,
    name: &'static CStr,
    slot: *mut *mut bindings::attribute,
) {
    // SAFETY: `attr` and `slot` are writable and unshared (function
    // contract); the name is 'static.
    unsafe {
        helpers::cxlf_sysfs_attr_init(attr);
        (*attr).name = name.as_char_ptr();
        (*attr).mode = 0o444;
        slot.write(attr);
    }
}
