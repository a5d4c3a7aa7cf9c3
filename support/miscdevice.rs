// SPDX-License-Identifier: GPL-2.0

//! Miscellaneous character devices (upstream: `kernel::miscdevice`, 6.13+).
//!
//! A driver implements [`MiscDevice`] and keeps a pinned
//! [`MiscDeviceRegistration`] alive for as long as `/dev/<name>` should
//! exist. Differences from upstream, all additive: the registration carries
//! `T::RegistrationData` that `open` can see (e.g. which pool the device
//! is), options carry a `mode`, and `.owner` is the registering module, so
//! the module cannot be unloaded while a file is open.
//!
//! Open files can outlive the registration (the device node goes away at
//! deregistration, open files do not): whatever a file needs after `open`
//! must be owned by its `T::Ptr` (for example an `Arc` cloned in `open`).

use super::fs::File;
use super::helpers;
use super::mm::VmaNew;
pub(crate) use super::sysfs::AttributeBuffer;
use super::sysfs::Parent;
use core::marker::{PhantomData, PhantomPinned};
use kernel::bindings;
use kernel::error::{from_err_ptr, from_result};
use kernel::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::ForeignOwnable;

/// What `/dev/<name>` looks like.
#[derive(Clone, Copy)]
pub(crate) struct MiscDeviceOptions<'a> {
    /// Copied at registration (up to 31 bytes).
    pub(crate) name: &'a CStr,
    /// Permission bits of the device node (e.g. `0o600`).
    pub(crate) mode: u16,
}

/// The file operations of a misc device. `open` is required; the others
/// default to what the VFS does without them.
#[vtable]
pub(crate) trait MiscDevice: Sized {
    /// Per-open-file state, owned by `file->private_data`.
    type Ptr: ForeignOwnable + Send + Sync;
    /// Per-device state, visible to `open`.
    type RegistrationData: Send + Sync;

    /// Names of read-only sysfs attributes of the device
    /// (`/sys/class/misc/<name>/<attribute>`), shown by `show_attribute`.
    const ATTRIBUTES: &'static [&'static CStr] = &[];

    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Self::Ptr>;

    /// Writes the value of attribute `ATTRIBUTES[index]`.
    fn show_attribute(
        _data: &Self::RegistrationData,
        _index: usize,
        _out: &mut AttributeBuffer<'_>,
    ) -> Result {
        Err(EIO)
    }

    fn release(device: Self::Ptr, _file: &File) {
        drop(device);
    }

    fn ioctl(
        _device: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _cmd: u32,
        _arg: usize,
    ) -> Result<isize> {
        Err(ENOTTY)
    }

    fn mmap(
        _device: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _vma: &VmaNew,
    ) -> Result {
        Err(ENODEV)
    }
}

/// A registered misc device; deregistered on drop.
///
/// # Invariants
///
/// `raw` is a live registration from `cxlf_misc_register` whose data
/// pointer is the address of this (pinned) value.
#[pin_data(PinnedDrop)]
pub(crate) struct MiscDeviceRegistration<T: MiscDevice> {
    data: T::RegistrationData,
    raw: *mut helpers::CxlfMisc,
    #[pin]
    _pin: PhantomPinned,
    _t: PhantomData<T>,
}

// SAFETY: the registration is only a handle; `data` is `Send + Sync` and
// the C side is safe to deregister from any thread.
unsafe impl<T: MiscDevice> Send for MiscDeviceRegistration<T> {}
// SAFETY: `&self` only gives shared access to `data` (which is `Sync`) and
// reads the minor number.
unsafe impl<T: MiscDevice> Sync for MiscDeviceRegistration<T> {}

impl<T: MiscDevice> MiscDeviceRegistration<T> {
    /// Registers `/dev/<opts.name>`; the node appears before this returns.
    pub(crate) fn register(
        opts: MiscDeviceOptions<'_>,
        data: T::RegistrationData,
    ) -> impl PinInit<Self, Error> {
        // Copied now: the registration runs when the value is initialised.
        let mut name = [0u8; NAME_BYTES];
        let wanted = opts.name.as_bytes_with_nul();
        let name_fits = wanted.len() <= NAME_BYTES;
        if name_fits {
            name[..wanted.len()].copy_from_slice(wanted);
        }
        let mode = opts.mode;
        let mut names = [core::ptr::null::<c_char>(); MAX_ATTRIBUTES];
        for (name, attr) in names.iter_mut().zip(T::ATTRIBUTES) {
            *name = attr.as_char_ptr();
        }
        let nr_attrs = T::ATTRIBUTES.len();
        // INVARIANT: `raw` is the registration just made, whose data
        // pointer is `this`, the value's final (pinned) address.
        try_pin_init!(&this in Self {
            data,
            // `data` is initialised above, before `open` or a sysfs read
            // can first run.
            raw: helpers::register_with("a misc device", || {
                if nr_attrs > MAX_ATTRIBUTES || !name_fits {
                    return Err(EINVAL);
                }
                // SAFETY: `name` is NUL-terminated (it fits, with its NUL)
                // and C copies it; C keeps the attribute name pointers (not
                // the array), which are 'static like the vtable, and
                // `nr_attrs` of them are set; `this` is the final, pinned
                // address of the value being initialised, which outlives
                // the registration (deregistered in `drop`).
                from_err_ptr(unsafe {
                    helpers::cxlf_misc_register(
                        name.as_ptr().cast::<c_char>(),
                        mode,
                        &VtableHelper::<T>::VTABLE,
                        crate::THIS_MODULE.as_ptr(),
                        this.as_ptr().cast::<c_void>(),
                        names.as_ptr(),
                        nr_attrs as c_uint,
                        Some(show_attribute::<T>),
                    )
                })
            })?,
            _pin: PhantomPinned,
            _t: PhantomData,
        })
    }

    pub(crate) fn data(&self) -> &T::RegistrationData {
        &self.data
    }

    /// The device's sysfs directory (`/sys/class/misc/<name>/`), as a
    /// parent for directories that are removed before the registration.
    pub(crate) fn as_parent(&self) -> Parent<'_> {
        // SAFETY: `raw` is a live registration (invariant), whose device
        // stays registered while `self` is borrowed.
        unsafe { Parent::from_raw(helpers::cxlf_misc_kobject(self.raw)) }
    }

    /// The minor number the misc core assigned.
    pub(crate) fn minor(&self) -> i32 {
        // SAFETY: `raw` is a live registration (invariant).
        unsafe { helpers::cxlf_misc_minor(self.raw) }
    }
}

#[pinned_drop]
impl<T: MiscDevice> PinnedDrop for MiscDeviceRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // misc_deregister takes misc_mtx, which misc_open holds across
        // `open`, so no `open` runs on this registration after it returns.
        // SAFETY: `raw` is a live registration (invariant), deregistered
        // exactly once, here.
        unsafe { helpers::cxlf_misc_deregister(self.raw) };
    }
}

const MAX_ATTRIBUTES: usize = 16;
/// Device names, with their NUL, fit the C side's buffer.
const NAME_BYTES: usize = 32;

/// # Safety
///
/// Called by the C side's sysfs `show` with the registration's data
/// pointer (alive: deregistration drains running callbacks), an index
/// below `T::ATTRIBUTES.len()`, and a page-sized buffer.
unsafe extern "C" fn show_attribute<T: MiscDevice>(
    data: *mut c_void,
    index: c_uint,
    buf: *mut c_char,
) -> isize {
    // SAFETY: the C side passes the registration's data pointer, a live
    // `MiscDeviceRegistration<T>` (function contract).
    let misc = unsafe { &*data.cast::<MiscDeviceRegistration<T>>() };
    // SAFETY: sysfs passes a page-sized buffer that only this callback
    // uses while it runs (function contract).
    let page =
        unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::page::PAGE_SIZE) };
    let mut out = AttributeBuffer::new(page);
    from_result(|| {
        T::show_attribute(&misc.data, index as usize, &mut out)?;
        Ok(out.len() as isize)
    })
}

struct VtableHelper<T: MiscDevice>(PhantomData<T>);

impl<T: MiscDevice> VtableHelper<T> {
    // The C side copies this template and sets `.owner`.
    const VTABLE: bindings::file_operations = bindings::file_operations {
        open: Some(fops_open::<T>),
        release: Some(fops_release::<T>),
        unlocked_ioctl: if T::HAS_IOCTL {
            Some(fops_ioctl::<T>)
        } else {
            None
        },
        #[cfg(CONFIG_COMPAT)]
        compat_ioctl: if T::HAS_IOCTL {
            Some(bindings::compat_ptr_ioctl)
        } else {
            None
        },
        mmap: if T::HAS_MMAP {
            Some(fops_mmap::<T>)
        } else {
            None
        },
        // Places mappings so that PMD-aligned offsets get PMD-aligned
        // addresses, which huge mappings need.
        get_unmapped_area: if T::HAS_MMAP {
            Some(bindings::thp_get_unmapped_area)
        } else {
            None
        },
        // SAFETY: every other field of `file_operations` is an optional
        // callback or plain data for which zero means "not provided".
        ..unsafe { core::mem::zeroed() }
    };
}

/// # Safety
///
/// Called by `misc_open` with a valid file whose `private_data` points to
/// a miscdevice registered by [`MiscDeviceRegistration::register`].
unsafe extern "C" fn fops_open<T: MiscDevice>(
    _inode: *mut bindings::inode,
    raw_file: *mut bindings::file,
) -> c_int {
    // SAFETY: `private_data` is our miscdevice (misc_open set it); its data
    // pointer is a registration of type `T`, which `misc_mtx`, held by
    // `misc_open` across this call, keeps registered and so alive.
    let misc = unsafe {
        &*helpers::cxlf_misc_data_of_open_file(raw_file).cast::<MiscDeviceRegistration<T>>()
    };
    // SAFETY: the VFS keeps the file valid during the callback.
    let file = unsafe { File::from_raw_file(raw_file) };
    from_result(|| {
        let ptr = T::open(file, misc)?;
        // SAFETY: the file is valid and not yet shared; `private_data`
        // belongs to the driver from here on, and `release` takes it back.
        unsafe { (*raw_file).private_data = ptr.into_foreign().cast_mut() };
        Ok(0)
    })
}

/// # Safety
///
/// Called by the VFS once per file whose `open` succeeded.
unsafe extern "C" fn fops_release<T: MiscDevice>(
    _inode: *mut bindings::inode,
    raw_file: *mut bindings::file,
) -> c_int {
    // SAFETY: `private_data` came from `into_foreign` in `fops_open` (the
    // VFS calls release only after a successful open), and release runs
    // once, after every other callback on this file.
    let device = unsafe { T::Ptr::from_foreign((*raw_file).private_data) };
    // SAFETY: the VFS keeps the file valid during the callback.
    T::release(device, unsafe { File::from_raw_file(raw_file) });
    0
}

/// # Safety
///
/// Called by the VFS on a file whose `open` succeeded and that has not been
/// released.
unsafe extern "C" fn fops_ioctl<T: MiscDevice>(
    raw_file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: `private_data` came from `into_foreign` in `fops_open`, and
    // the VFS does not release the file while this callback runs.
    let device = unsafe { T::Ptr::borrow((*raw_file).private_data) };
    // SAFETY: the VFS keeps the file valid during the callback.
    let file = unsafe { File::from_raw_file(raw_file) };
    from_result(|| Ok(T::ioctl(device, file, cmd, arg)? as c_long))
}

/// # Safety
///
/// Called by `mmap_region` with the mmap lock held for writing, on a file
/// whose `open` succeeded.
unsafe extern "C" fn fops_mmap<T: MiscDevice>(
    raw_file: *mut bindings::file,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    // SAFETY: as in `fops_ioctl`.
    let device = unsafe { T::Ptr::borrow((*raw_file).private_data) };
    // SAFETY: the VFS keeps the file valid during the callback.
    let file = unsafe { File::from_raw_file(raw_file) };
    // SAFETY: `mmap_region` passes the VMA it is setting up, under the mmap
    // write lock, for the duration of the callback.
    let vma = unsafe { VmaNew::from_raw(vma) };
    from_result(|| {
        T::mmap(device, file, vma)?;
        Ok(0)
    })
}
