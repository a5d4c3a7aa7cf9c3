// SPDX-License-Identifier: GPL-2.0

//! Drivers on the dax bus. Upstream has no Rust dax abstraction; this is
//! shaped like the upstream bus drivers (`kernel::platform`,
//! `kernel::pci`): `probe` returns the per-device object, which lives in
//! the device's drvdata until the device is unbound, when it is dropped.
//!
//! The driver has the device type: it matches device-mode dax instances but
//! binds only to unbound ones, so loading it takes nothing from
//! `device_dax`. Operators move an instance with
//! `echo daxX.Y > /sys/bus/dax/drivers/device_dax/unbind` and
//! `echo daxX.Y > /sys/bus/dax/drivers/<module>/bind`: the dax bus names
//! each driver after its module, so a module registers at most one.

use super::fs::InodeRef;
use super::helpers::{self, RawDevDax};
use core::marker::{PhantomData, PhantomPinned};
use kernel::bindings;
use kernel::error::{from_result, to_result};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::types::ForeignOwnable;

/// One physical range of a dax instance, in bytes (`end` inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DaxRange {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Offset of this range within the instance, in pages.
    pub(crate) pgoff: u64,
}

impl DaxRange {
    pub(crate) fn len(&self) -> u64 {
        self.end - self.start + 1
    }
}

/// A dax instance, borrowed during `probe` and `remove`.
///
/// # Invariants
///
/// `raw` is a live `struct dev_dax` bound (or being bound) to our driver
/// for the lifetime `'a`.
pub(crate) struct DevDax<'a> {
    raw: *mut RawDevDax,
    _life: PhantomData<&'a RawDevDax>,
}

impl DevDax<'_> {
    /// # Safety
    ///
    /// `raw` must be a live `struct dev_dax` being bound to, or unbound
    /// from, a driver registered by [`DaxDriverRegistration::register`]
    /// for as long as the value is used (a `probe` or `remove` callback).
    unsafe fn from_raw<'a>(raw: *mut RawDevDax) -> DevDax<'a> {
        // INVARIANT: the caller guarantees that `raw` is live and bound (or
        // being bound) to our driver for `'a`.
        DevDax {
            raw,
            _life: PhantomData,
        }
    }

    /// The `Y` of `daxX.Y`.
    pub(crate) fn id(&self) -> i32 {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_dev_dax_id(self.raw) }
    }

    /// The NUMA node device-dax gives the instance's memory.
    pub(crate) fn target_node(&self) -> i32 {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_dev_dax_target_node(self.raw) }
    }

    /// The dax device's own inode, whose address space device-dax's user
    /// mappings live in; it belongs to the dax pseudo filesystem, which
    /// is never unmounted, and the reference keeps it alive.
    pub(crate) fn inode(&self) -> InodeRef {
        // SAFETY: `raw` is live (invariant), and its dax device, which
        // holds the inode, lives at least as long while it is bound.
        unsafe { InodeRef::hold(helpers::cxlf_dev_dax_inode(self.raw)) }
    }

    /// The `X` of `daxX.Y`: the dax region.
    pub(crate) fn region_id(&self) -> i32 {
        // SAFETY: `raw` is live (invariant); a bound instance has a region.
        unsafe { helpers::cxlf_dev_dax_region_id(self.raw) }
    }

    /// Mapping alignment of the instance (2 MiB by default).
    pub(crate) fn align(&self) -> u32 {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_dev_dax_align(self.raw) }
    }

    pub(crate) fn nr_ranges(&self) -> usize {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_dev_dax_nr_ranges(self.raw) }.max(0) as usize
    }

    pub(crate) fn range(&self, i: usize) -> Result<DaxRange> {
        let (mut start, mut end, mut pgoff) = (0u64, 0u64, 0u64);
        let i = c_int::try_from(i).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is live (invariant); the helper bounds-checks `i`
        // and writes only through the three valid pointers.
        to_result(unsafe {
            helpers::cxlf_dev_dax_range(self.raw, i, &mut start, &mut end, &mut pgoff)
        })?;
        Ok(DaxRange { start, end, pgoff })
    }

    /// Total size of all ranges, in bytes.
    pub(crate) fn size(&self) -> u64 {
        (0..self.nr_ranges())
            .filter_map(|i| self.range(i).ok())
            .map(|r| r.len())
            .sum()
    }

    fn device(&self) -> *mut bindings::device {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_dev_dax_device(self.raw) }
    }

    /// The device's drvdata: while bound, our per-device object.
    fn drvdata(&self) -> *mut c_void {
        // SAFETY: the device is live (invariant); the driver core reads and
        // writes `driver_data` only through the bound driver, which is ours
        // (`dev_get_drvdata()` is this field read).
        unsafe { (*self.device()).driver_data }
    }

    /// Sets the drvdata (`dev_set_drvdata()`).
    fn set_drvdata(&self, data: *mut c_void) {
        // SAFETY: as in `drvdata`: `probe` and `remove`, where this runs,
        // are the bound driver's.
        unsafe { (*self.device()).driver_data = data };
    }
}

/// A driver for dax instances.
pub(crate) trait DaxDriver: Sized + Send + Sync + 'static {
    /// Per-driver state, visible to `probe`.
    type RegistrationData: Send + Sync;

    /// Binds an instance; the returned object lives until it is unbound.
    fn probe(dev: &DevDax<'_>, data: &Self::RegistrationData) -> Result<Pin<KBox<Self>>>;

    /// Called at unbind, just before the per-device object is dropped.
    fn remove(self: Pin<&Self>, _dev: &DevDax<'_>) {}
}

/// A registered dax driver; unregistered (unbinding its devices) on drop.
///
/// # Invariants
///
/// `raw` is a live registration from `cxlf_dax_driver_register` whose data
/// pointer is the address of this (pinned) value.
#[pin_data(PinnedDrop)]
pub(crate) struct DaxDriverRegistration<T: DaxDriver> {
    data: T::RegistrationData,
    raw: *mut helpers::CxlfDaxDriver,
    #[pin]
    _pin: PhantomPinned,
    _t: PhantomData<T>,
}

// SAFETY: a handle; `data` is `Send + Sync`; unregistering works from any
// thread.
unsafe impl<T: DaxDriver> Send for DaxDriverRegistration<T> {}
// SAFETY: `&self` gives shared access to `data` only, which is `Sync`.
unsafe impl<T: DaxDriver> Sync for DaxDriverRegistration<T> {}

impl<T: DaxDriver> DaxDriverRegistration<T> {
    /// Registers the driver `/sys/bus/dax/drivers/<this module's name>`.
    pub(crate) fn register(data: T::RegistrationData) -> impl PinInit<Self, Error> {
        // INVARIANT: `raw` is the registration just made, whose data pointer
        // is `this`, the value's final (pinned) address.
        try_pin_init!(&this in Self {
            data,
            // `data` is initialised above: registering may probe at once.
            raw: helpers::register_err_ptr(
                "the dax driver",
                // SAFETY: `this` is the final, pinned address of the value
                // being initialised, which outlives the registration
                // (unregistered in `drop`); the callbacks expect a
                // registration for `T`, which it is.
                unsafe {
                    helpers::cxlf_dax_driver_register(
                        probe_callback::<T>,
                        remove_callback::<T>,
                        this.as_ptr().cast::<c_void>(),
                    )
                },
            )?,
            _pin: PhantomPinned,
            _t: PhantomData,
        })
    }

    pub(crate) fn data(&self) -> &T::RegistrationData {
        &self.data
    }
}

#[pinned_drop]
impl<T: DaxDriver> PinnedDrop for DaxDriverRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // Unregistering unbinds every device first (running `remove`), while
        // `data` is still alive.
        // SAFETY: `raw` is a live registration (invariant), unregistered
        // exactly once, here.
        unsafe { helpers::cxlf_dax_driver_unregister(self.raw) };
    }
}

/// # Safety
///
/// Called by the dax bus with a live `dev_dax` being bound to a driver
/// registered by [`DaxDriverRegistration::register`] for `T`.
unsafe extern "C" fn probe_callback<T: DaxDriver>(raw: *mut RawDevDax) -> c_int {
    // SAFETY: the device is being bound to our driver (function contract),
    // whose data pointer is the live registration for `T` (unregistering
    // waits for probes).
    let reg =
        unsafe { &*helpers::cxlf_dev_dax_driver_data(raw).cast::<DaxDriverRegistration<T>>() };
    // SAFETY: the device is being bound to our driver for this call
    // (function contract).
    let dev = unsafe { DevDax::from_raw(raw) };
    from_result(|| {
        let object = T::probe(&dev, &reg.data)?;
        // `remove_callback` takes it back.
        dev.set_drvdata(object.into_foreign().cast_mut());
        Ok(0)
    })
}

/// # Safety
///
/// Called by the dax bus once per successful probe, when unbinding, with a
/// live `dev_dax` bound to a driver registered for `T`.
unsafe extern "C" fn remove_callback<T: DaxDriver>(raw: *mut RawDevDax) {
    // SAFETY: the device is being unbound from our driver during this call
    // (function contract).
    let dev = unsafe { DevDax::from_raw(raw) };
    // SAFETY: drvdata holds what `probe_callback` stored with
    // `into_foreign`, and remove runs once per successful probe (function
    // contract).
    let object = unsafe { Pin::<KBox<T>>::from_foreign(dev.drvdata()) };
    object.as_ref().remove(&dev);
    drop(object);
    // Clear the stale pointer.
    dev.set_drvdata(core::ptr::null_mut());
}
