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

use crate::bindings;
use crate::error;
use crate::fs::File;
use crate::mm::VmaNew;
pub use crate::sysfs::AttributeBuffer;
use crate::sysfs::Parent;
use core::marker::{PhantomData, PhantomPinned};
use core::mem::ManuallyDrop;
use kernel::error::{from_result, to_result};
use kernel::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::{ForeignOwnable, Opaque};

/// What `/dev/<name>` looks like.
#[derive(Clone, Copy)]
pub struct MiscDeviceOptions<'a> {
    /// Copied at registration (up to 31 bytes).
    pub name: &'a CStr,
    /// Permission bits of the device node (e.g. `0o600`).
    pub mode: u16,
}

/// The file operations of a misc device. `open` is required; the others
/// default to what the VFS does without them.
#[vtable]
pub trait MiscDevice: Sized {
    /// Per-open-file state, owned by `file->private_data`.
    type Ptr: ForeignOwnable + Send + Sync;
    /// Per-device state, visible to `open`.
    type RegistrationData: Send + Sync;

    /// Names of read-only sysfs attributes of the device
    /// (`/sys/class/misc/<name>/<attribute>`), shown by `show_attribute`.
    const ATTRIBUTES: &'static [&'static CStr] = &[];

    /// A file of the device is opened; returns its state.
    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Self::Ptr>;

    /// Writes the value of attribute `ATTRIBUTES[index]`.
    fn show_attribute(
        _data: &Self::RegistrationData,
        _index: usize,
        _out: &mut AttributeBuffer<'_>,
    ) -> Result {
        Err(EIO)
    }

    /// The file is released (its last reference dropped).
    fn release(device: Self::Ptr, _file: &File) {
        drop(device);
    }

    /// An ioctl on the file; `ENOTTY` unless implemented.
    fn ioctl(
        _device: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _cmd: u32,
        _arg: usize,
    ) -> Result<isize> {
        Err(ENOTTY)
    }

    /// An `mmap` of the file; `ENODEV` unless implemented.
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
/// `raw` is registered (its miscdevice is in the misc core) and its data
/// pointer is the address of this (pinned) value, until `drop`.
#[pin_data(PinnedDrop)]
pub struct MiscDeviceRegistration<T: MiscDevice> {
    data: T::RegistrationData,
    raw: Arc<Raw>,
    #[pin]
    _pin: PhantomPinned,
    _t: PhantomData<T>,
}

// SAFETY: the registration is only a handle; `data` is `Send + Sync` and
// the misc core is safe to deregister from any thread.
unsafe impl<T: MiscDevice> Send for MiscDeviceRegistration<T> {}
// SAFETY: `&self` only gives shared access to `data` (which is `Sync`) and
// reads the minor number.
unsafe impl<T: MiscDevice> Sync for MiscDeviceRegistration<T> {}

impl<T: MiscDevice> MiscDeviceRegistration<T> {
    /// Registers `/dev/<opts.name>`; the node appears before this returns.
    pub fn register(
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
        // INVARIANT: `raw` is registered with `this`, the value's final
        // (pinned) address, as its data pointer.
        try_pin_init!(&this in Self {
            data,
            // `data` is initialised above, before `open` or a sysfs read
            // can first run.
            raw: error::register_with("a misc device", || {
                if T::ATTRIBUTES.len() > MAX_ATTRIBUTES || !name_fits {
                    return Err(EINVAL);
                }
                Raw::register::<T>(name, mode, this.as_ptr().cast::<c_void>())
            })?,
            _pin: PhantomPinned,
            _t: PhantomData,
        })
    }

    /// What the device was registered with.
    pub fn data(&self) -> &T::RegistrationData {
        &self.data
    }

    /// The device's sysfs directory (`/sys/class/misc/<name>/`), as a
    /// parent for directories that are removed before the registration.
    pub fn as_parent(&self) -> Parent<'_> {
        // SAFETY: `raw` is registered (invariant), so the misc core has
        // set `this_device`, which stays registered while `self` is
        // borrowed.
        unsafe { Parent::from_raw(&raw mut (*(*self.raw.misc.get()).this_device).kobj) }
    }

    /// The minor number the misc core assigned.
    pub fn minor(&self) -> i32 {
        // SAFETY: `raw` is registered (invariant); the misc core wrote the
        // minor before registration returned and does not change it.
        unsafe { (*self.raw.misc.get()).minor }
    }
}

#[pinned_drop]
impl<T: MiscDevice> PinnedDrop for MiscDeviceRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // misc_deregister takes misc_mtx, which misc_open holds across
        // `open`, and removes the sysfs attributes (waiting for running
        // `show`s), so nothing uses the data pointer after it returns.
        // Open files keep `raw` (their file operations) alive.
        // SAFETY: `raw` is registered (invariant), deregistered exactly
        // once, here.
        unsafe { bindings::misc_deregister(self.raw.misc.get()) };
    }
}

const MAX_ATTRIBUTES: usize = 16;
/// Device names, with their NUL, fit here.
const NAME_BYTES: usize = 32;

/// A registration's C side: the miscdevice, this registration's copy of
/// the file operations (whose `.owner` is this module, so that every open
/// file holds a module reference) and its sysfs attributes. One reference
/// belongs to the registration, one to each open file, because open files
/// outlive the registration and their `f_op` points into it.
///
/// # Invariants
///
/// Once [`Raw::register`] returns it, every field is initialised and
/// only the misc core writes to `misc`; `misc.fops` points to `fops`,
/// `misc.groups` (if set) to `groups`, whose group lists `attrs`; `data`
/// is the registration's address while it is registered.
struct Raw {
    misc: Opaque<bindings::miscdevice>,
    fops: Opaque<bindings::file_operations>,
    name: [u8; NAME_BYTES],
    attrs: [Opaque<bindings::device_attribute>; MAX_ATTRIBUTES],
    attr_list: Opaque<[*mut bindings::attribute; MAX_ATTRIBUTES + 1]>,
    group: Opaque<bindings::attribute_group>,
    groups: Opaque<[*const bindings::attribute_group; 2]>,
    data: *const c_void,
}

// SAFETY: after registration the fields are only read (the misc core owns
// `misc`), and `data` is only dereferenced by callbacks the misc core
// serialises against deregistration.
unsafe impl Send for Raw {}
// SAFETY: as for `Send`.
unsafe impl Sync for Raw {}

impl Raw {
    /// Builds the C structures for `T` and registers the device.
    fn register<T: MiscDevice>(
        name: [u8; NAME_BYTES],
        mode: u16,
        data: *const c_void,
    ) -> Result<Arc<Raw>> {
        let raw = Arc::new(
            Raw {
                misc: Opaque::uninit(),
                fops: Opaque::new(VtableHelper::<T>::VTABLE),
                name,
                attrs: [const { Opaque::uninit() }; MAX_ATTRIBUTES],
                attr_list: Opaque::new([core::ptr::null_mut(); MAX_ATTRIBUTES + 1]),
                group: Opaque::uninit(),
                groups: Opaque::new([core::ptr::null(); 2]),
                data,
            },
            GFP_KERNEL,
        )?;
        let nr_attrs = T::ATTRIBUTES.len();
        // SAFETY: `raw` is not shared yet, so writing through its `Opaque`
        // fields races with nothing; every pointer stored points into the
        // same allocation, which lives as long as the miscdevice does
        // (the registration's reference), or to 'static data (names, the
        // module).
        unsafe {
            (*raw.fops.get()).owner = crate::THIS_MODULE.as_ptr();
            let list = raw.attr_list.get().cast::<*mut bindings::attribute>();
            for (i, (attr, attr_name)) in raw.attrs.iter().zip(T::ATTRIBUTES).enumerate() {
                let attr = attr.get();
                attr.write(core::mem::zeroed());
                crate::sysfs::read_only(&raw mut (*attr).attr, attr_name, list.add(i));
                (*attr).show = Some(show_attribute::<T>);
            }
            let misc = raw.misc.get();
            misc.write(core::mem::zeroed());
            if nr_attrs > 0 {
                let group = raw.group.get();
                group.write(core::mem::zeroed());
                (*group).attrs = list;
                raw.groups
                    .get()
                    .cast::<*const bindings::attribute_group>()
                    .write(group);
                (*misc).groups = raw.groups.get().cast();
            }
            (*misc).minor = bindings::CXLF_MISC_DYNAMIC_MINOR;
            (*misc).name = raw.name.as_ptr().cast::<c_char>();
            (*misc).mode = mode;
            (*misc).fops = raw.fops.get();
        }
        // SAFETY: the miscdevice is fully initialised above and lives in
        // `raw`, which the registration keeps until it deregisters.
        to_result(unsafe { bindings::misc_register(raw.misc.get()) })?;
        Ok(raw)
    }

    /// The `Raw` whose file operations `file` uses.
    ///
    /// # Safety
    ///
    /// `file` is an open file of a misc device registered by
    /// [`Raw::register`], before its `release` moved its `f_op` away.
    unsafe fn of_file(file: *mut bindings::file) -> *const Raw {
        // SAFETY: `f_op` is the `fops` field of a `Raw` (function
        // contract), so stepping back by its offset stays in the object.
        unsafe {
            (*file)
                .f_op
                .cast::<u8>()
                .sub(core::mem::offset_of!(Raw, fops))
                .cast::<Raw>()
        }
    }
}

/// What a file's `f_op` points to after its `release`: nothing but the
/// module that owns the file's reference (`__fput` drops it through
/// `f_op` after `release` returns, when the registration's copy may be
/// gone).
struct RetiredFops(bindings::file_operations);

// SAFETY: never written; its only pointer is to the module.
unsafe impl Sync for RetiredFops {}

static RETIRED_FOPS: RetiredFops = RetiredFops(bindings::file_operations {
    owner: crate::THIS_MODULE.as_ptr(),
    // SAFETY: every other field is an optional callback or plain data for
    // which zero means "not provided".
    ..unsafe { core::mem::zeroed() }
});

/// # Safety
///
/// Called by sysfs on an attribute of a miscdevice registered by
/// [`Raw::register`] for `T`, with a page-sized buffer; deregistration
/// waits for running calls.
unsafe extern "C" fn show_attribute<T: MiscDevice>(
    dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: misc_register made the miscdevice the device's driver data;
    // it is the `misc` field of a live `Raw` (function contract).
    let raw = unsafe {
        &*(*dev)
            .driver_data
            .cast::<u8>()
            .sub(core::mem::offset_of!(Raw, misc))
            .cast::<Raw>()
    };
    // `attr` is one of `raw.attrs`, each `Opaque` the size of the struct.
    let index = (attr as usize - raw.attrs.as_ptr() as usize)
        / core::mem::size_of::<Opaque<bindings::device_attribute>>();
    // SAFETY: while registered, `data` is the live registration for `T`
    // (invariant of `Raw`).
    let misc = unsafe { &*raw.data.cast::<MiscDeviceRegistration<T>>() };
    // SAFETY: sysfs passes a page-sized buffer that only this callback
    // uses while it runs (function contract).
    let page =
        unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::page::PAGE_SIZE) };
    let mut out = AttributeBuffer::new(page);
    from_result(|| {
        T::show_attribute(&misc.data, index, &mut out)?;
        Ok(out.len() as isize)
    })
}

struct VtableHelper<T: MiscDevice>(PhantomData<T>);

impl<T: MiscDevice> VtableHelper<T> {
    // `Raw::register` copies this template and sets `.owner`.
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
    // SAFETY: misc_open pointed `f_op` at this registration's copy.
    let raw = unsafe { Raw::of_file(raw_file) };
    // SAFETY: `raw` is live: the registration holds a reference while it is
    // registered, and `misc_mtx`, held by `misc_open` across this call,
    // keeps it registered; its data pointer is then the registration.
    let misc = unsafe { &*(*raw).data.cast::<MiscDeviceRegistration<T>>() };
    // SAFETY: the VFS keeps the file valid during the callback.
    let file = unsafe { File::from_raw_file(raw_file) };
    from_result(|| {
        let ptr = T::open(file, misc)?;
        // SAFETY: the file is valid and not yet shared; `private_data`
        // belongs to the driver from here on, and `release` takes it back.
        unsafe { (*raw_file).private_data = ptr.into_foreign().cast_mut() };
        // The file's reference on `raw`, given back in `fops_release`.
        // SAFETY: `raw` is the contents of the registration's `Arc` and
        // live (above); `ManuallyDrop` leaves that reference alone.
        let registration = ManuallyDrop::new(unsafe { Arc::from_raw(raw) });
        let _ = Arc::into_raw(Arc::clone(&registration));
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
    // SAFETY: `f_op` still points into the registration's copy, which the
    // file's reference keeps alive.
    let raw = unsafe { Raw::of_file(raw_file) };
    // SAFETY: the file is valid; `__fput` only reads `f_op->owner` after
    // this returns, which the static table has too.
    unsafe { (*raw_file).f_op = &RETIRED_FOPS.0 };
    // SAFETY: the file's reference, taken in `fops_open`, given back once.
    drop(unsafe { Arc::from_raw(raw) });
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
