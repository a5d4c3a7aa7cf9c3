// SPDX-License-Identifier: GPL-2.0

//! Bus drivers, shaped like upstream's `kernel::driver` (6.13+): a bus
//! ([`Bus`]: [`super::dax::DaxBus`], [`super::pci::PciBus`]) builds its C
//! driver structure, with the bus's probe and remove trampolines for the
//! driver, and registers it; a [`Registration`] holds that structure,
//! keeps the driver registered while it lives and gives each device it
//! binds the object the driver's `probe` returns, kept in the device's
//! drvdata and dropped when the device is unbound.
//!
//! The driver structure lives inside the (pinned) registration, so the
//! callbacks find the registration from the driver a device is bound to
//! (`container_of`), as upstream's bus adapters do.

use crate::bindings;
use crate::error;
use core::marker::PhantomData;
use kernel::error::from_result;
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::types::{ForeignOwnable, Opaque};

/// A bus whose C side takes a driver structure with a probe and a remove
/// callback.
pub trait Bus: Sized + 'static {
    /// The C device the callbacks get.
    type Raw;
    /// The C driver structure (and whatever it points to, such as its id
    /// table), built and registered by [`Bus::register`].
    type RawDriver;
    /// What a driver matches (PCI ids; nothing on the dax bus).
    type Ids: Copy;
    /// The device as a driver sees it in `probe` and `remove`.
    type Device<'a>;
    /// For the log line when registering fails.
    const WHAT: &'static str;

    /// Builds the driver structure for `T` at `drv`, named after this
    /// module, whose callbacks are the bus's trampolines calling
    /// [`probe_callback`] and [`remove_callback`] for `T`, and registers it.
    ///
    /// # Safety
    ///
    /// `drv` is valid for writes and is the `driver` field of a
    /// [`Registration<Self, T>`] being initialised at its final, pinned
    /// address, whose `data` is initialised; on success it stays there,
    /// until [`Bus::unregister`].
    unsafe fn register<T: Driver<Self>>(drv: *mut Self::RawDriver) -> Result;

    /// # Safety
    ///
    /// `drv` was registered by [`Bus::register`] and is unregistered once.
    unsafe fn unregister(drv: *mut Self::RawDriver);

    /// The driver structure holding the generic driver `drv`.
    ///
    /// # Safety
    ///
    /// `drv` is the generic driver of a structure [`Bus::register`]
    /// registered.
    unsafe fn raw_driver(drv: *mut bindings::device_driver) -> *mut Self::RawDriver;

    /// The generic device (where the drvdata and the bound driver are).
    ///
    /// # Safety
    ///
    /// `raw` is a live device of this bus.
    unsafe fn as_device(raw: *mut Self::Raw) -> *mut bindings::device;

    /// The driver's view of the device, for the callback's duration.
    ///
    /// # Safety
    ///
    /// `raw` is being bound to, or unbound from, a driver `register` made,
    /// for as long as the value is used.
    unsafe fn device<'a>(raw: *mut Self::Raw) -> Self::Device<'a>;
}

/// A driver on bus `B`.
pub trait Driver<B: Bus>: Sized + Send + Sync + 'static {
    /// Per-driver state, visible to `probe`.
    type RegistrationData: Send + Sync;
    /// What it matches.
    const IDS: B::Ids;

    /// Binds a device; the returned object lives until it is unbound.
    /// `ENODEV` declines the device quietly.
    fn probe(dev: &B::Device<'_>, data: &Self::RegistrationData) -> Result<Pin<KBox<Self>>>;

    /// Called at unbind, just before the per-device object is dropped.
    fn remove(self: Pin<&Self>, _dev: &B::Device<'_>) {}
}

/// This module's name (`/sys/bus/*/drivers/<module>`): the busses name
/// a driver after the module that registers it, and a module registers
/// at most one driver per bus.
pub fn module_name() -> *const c_char {
    // SAFETY: `THIS_MODULE` is this module's `struct module`, which lives
    // as long as the module's code; its name is set before loading and
    // never changes.
    unsafe { (*crate::THIS_MODULE.as_ptr()).name.as_ptr() }
}

/// A registered driver; unregistered (unbinding its devices) on drop.
///
/// # Invariants
///
/// `driver` holds a driver structure registered by `B::register::<T>`
/// until `drop`; `data` is initialised before it is registered.
#[pin_data(PinnedDrop)]
pub struct Registration<B: Bus, T: Driver<B>> {
    data: T::RegistrationData,
    #[pin]
    driver: Opaque<B::RawDriver>,
    _t: PhantomData<(B, T)>,
}

// SAFETY: the driver structure belongs to the bus while registered and is
// only unregistered from here, which works from any thread; `data` is
// `Send + Sync`.
unsafe impl<B: Bus, T: Driver<B>> Send for Registration<B, T> {}
// SAFETY: `&self` gives shared access to `data` only, which is `Sync`.
unsafe impl<B: Bus, T: Driver<B>> Sync for Registration<B, T> {}

impl<B: Bus, T: Driver<B>> Registration<B, T> {
    /// Registers the driver with `data`, which its callbacks can read.
    pub fn register(data: T::RegistrationData) -> impl PinInit<Self, Error> {
        // INVARIANT: `data` is initialised first (fields are initialised
        // in order), then the driver is registered in place.
        try_pin_init!(Self {
            data,
            // Registering may probe at once: `data` is ready above.
            driver <- Self::register_driver(),
            _t: PhantomData,
        })
    }

    fn register_driver() -> impl PinInit<Opaque<B::RawDriver>, Error> {
        let init = |slot: *mut Opaque<B::RawDriver>| {
            error::register_with(B::WHAT, || {
                // SAFETY: `slot` is the `driver` field of a registration
                // being initialised at its final, pinned address, after
                // `data` (`register`), and stays there until `drop`
                // unregisters it: `B::register`'s contract.
                unsafe { B::register::<T>(Opaque::raw_get(slot)) }
            })
        };
        // SAFETY: on success `init` leaves the structure registered; on
        // failure the bus keeps no pointer to it, and any contents are
        // valid for an `Opaque`.
        unsafe { kernel::init::pin_init_from_closure(init) }
    }

    /// What the driver was registered with.
    pub fn data(&self) -> &T::RegistrationData {
        &self.data
    }
}

#[pinned_drop]
impl<B: Bus, T: Driver<B>> PinnedDrop for Registration<B, T> {
    fn drop(self: Pin<&mut Self>) {
        // Unregistering unbinds every device first (running `remove`),
        // while `data` is still alive.
        // SAFETY: `driver` is registered (invariant), unregistered exactly
        // once, here.
        unsafe { B::unregister(self.driver.get()) };
    }
}

/// The registration data of the driver `raw` is bound to.
///
/// # Safety
///
/// `raw` is being bound to, or unbound from, a driver registered by
/// [`Registration::register`] for `B` and `T`, for as long as the
/// reference is used; the driver core does not unregister a driver while
/// its probe or remove runs.
unsafe fn registration_data<'a, B: Bus, T: Driver<B>>(raw: *mut B::Raw) -> &'a T::RegistrationData {
    // SAFETY: the driver core sets the device's driver before probe and
    // clears it after remove; it is the generic driver of the structure
    // held by a registration for `B` and `T` (function contract).
    let drv = unsafe { B::raw_driver((*B::as_device(raw)).driver) };
    // `Opaque` is `repr(transparent)`: the structure is the field.
    let drv = drv.cast::<Opaque<B::RawDriver>>();
    // SAFETY: `drv` is the `driver` field of a live `Registration<B, T>`
    // (function contract), so stepping back to it stays in the object.
    let reg = unsafe { kernel::container_of!(drv, Registration<B, T>, driver) };
    // SAFETY: `data` is initialised before the driver is registered
    // (invariant), and lives until it is unregistered (after this
    // callback); only shared references to it exist.
    unsafe { &*core::ptr::addr_of!((*reg).data) }
}

/// The drvdata field of `raw`'s device.
///
/// # Safety
///
/// `raw` is bound to (or being bound to) our driver: the driver core
/// reads and writes `driver_data` only through the bound driver.
unsafe fn drvdata<B: Bus>(raw: *mut B::Raw) -> *mut *mut kernel::ffi::c_void {
    // SAFETY: the device is live (function contract).
    unsafe { core::ptr::addr_of_mut!((*B::as_device(raw)).driver_data) }
}

/// The bus's probe, for its trampoline to call.
///
/// # Safety
///
/// Called by the bus with a live device being bound to a driver
/// registered by [`Registration::register`] for `B` and `T`.
pub unsafe extern "C" fn probe_callback<B: Bus, T: Driver<B>>(raw: *mut B::Raw) -> c_int {
    // SAFETY: being bound to our driver for this call (function contract).
    let data = unsafe { registration_data::<B, T>(raw) };
    // SAFETY: the device is being bound to our driver for this call.
    let dev = unsafe { B::device(raw) };
    from_result(|| {
        let object = T::probe(&dev, data)?;
        // `remove_callback` takes it back.
        // SAFETY: bound to our driver (function contract).
        unsafe { *drvdata::<B>(raw) = object.into_foreign().cast_mut() };
        Ok(0)
    })
}

/// The bus's remove, for its trampoline to call.
///
/// # Safety
///
/// Called by the bus once per successful probe, when unbinding, with a
/// live device bound to a driver registered for `B` and `T`.
pub unsafe extern "C" fn remove_callback<B: Bus, T: Driver<B>>(raw: *mut B::Raw) {
    // SAFETY: the device is being unbound from our driver during this call.
    let dev = unsafe { B::device(raw) };
    // SAFETY: drvdata holds what `probe_callback` stored with
    // `into_foreign`, and remove runs once per successful probe.
    let object = unsafe { Pin::<KBox<T>>::from_foreign(*drvdata::<B>(raw)) };
    object.as_ref().remove(&dev);
    drop(object);
    // SAFETY: still bound to our driver; clears the stale pointer.
    unsafe { *drvdata::<B>(raw) = core::ptr::null_mut() };
}
