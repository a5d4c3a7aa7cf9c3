// SPDX-License-Identifier: GPL-2.0

//! Bus drivers, shaped like upstream's `kernel::driver` (6.13+): a bus
//! ([`Bus`]: [`super::dax::DaxBus`], [`super::pci::PciBus`]) says how its
//! C side registers a driver and reaches a device; a [`Registration`]
//! keeps one driver registered while it lives and gives each device it
//! binds the object the driver's `probe` returns, kept in the device's
//! drvdata and dropped when the device is unbound.

use super::helpers;
use core::marker::{PhantomData, PhantomPinned};
use kernel::bindings;
use kernel::error::from_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::types::ForeignOwnable;

/// A bus whose C side takes a driver as a probe and a remove callback.
pub(crate) trait Bus: 'static {
    /// The C device the callbacks get.
    type Raw;
    /// The C registration handle.
    type Handle;
    /// What a driver matches (PCI ids; nothing on the dax bus).
    type Ids: Copy;
    /// The device as a driver sees it in `probe` and `remove`.
    type Device<'a>;
    /// For the log line when registering fails.
    const WHAT: &'static str;

    /// Registers the callbacks; the handle or an `ERR_PTR`.
    ///
    /// # Safety
    ///
    /// `data` must stay valid until `unregister`; the callbacks get
    /// devices of this bus bound to the new driver.
    unsafe fn register(
        ids: Self::Ids,
        probe: unsafe extern "C" fn(*mut Self::Raw) -> c_int,
        remove: unsafe extern "C" fn(*mut Self::Raw),
        data: *mut c_void,
    ) -> *mut Self::Handle;

    /// # Safety
    ///
    /// `handle` came from `register` and is unregistered once.
    unsafe fn unregister(handle: *mut Self::Handle);

    /// The `data` given to `register`.
    ///
    /// # Safety
    ///
    /// `raw` is being bound to, or unbound from, a driver `register` made.
    unsafe fn registration_data(raw: *mut Self::Raw) -> *mut c_void;

    /// The generic device (where the drvdata is).
    ///
    /// # Safety
    ///
    /// As for `registration_data`.
    unsafe fn as_device(raw: *mut Self::Raw) -> *mut bindings::device;

    /// The driver's view of the device, for the callback's duration.
    ///
    /// # Safety
    ///
    /// As for `registration_data`, for as long as the value is used.
    unsafe fn device<'a>(raw: *mut Self::Raw) -> Self::Device<'a>;
}

/// A driver on bus `B`.
pub(crate) trait Driver<B: Bus>: Sized + Send + Sync + 'static {
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

/// A registered driver; unregistered (unbinding its devices) on drop.
///
/// # Invariants
///
/// `raw` is a live registration from `B::register` whose data pointer is
/// the address of this (pinned) value.
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<B: Bus, T: Driver<B>> {
    data: T::RegistrationData,
    raw: *mut B::Handle,
    #[pin]
    _pin: PhantomPinned,
    _t: PhantomData<(B, T)>,
}

// SAFETY: a handle; `data` is `Send + Sync`; unregistering works from any
// thread.
unsafe impl<B: Bus, T: Driver<B>> Send for Registration<B, T> {}
// SAFETY: `&self` gives shared access to `data` only, which is `Sync`.
unsafe impl<B: Bus, T: Driver<B>> Sync for Registration<B, T> {}

impl<B: Bus, T: Driver<B>> Registration<B, T> {
    pub(crate) fn register(data: T::RegistrationData) -> impl PinInit<Self, Error> {
        // INVARIANT: `raw` is the registration just made, whose data pointer
        // is `this`, the value's final (pinned) address.
        try_pin_init!(&this in Self {
            data,
            // `data` is initialised above: registering may probe at once.
            raw: helpers::register_err_ptr(
                B::WHAT,
                // SAFETY: `this` is the final, pinned address of the value
                // being initialised, which outlives the registration
                // (unregistered in `drop`); the callbacks expect a
                // registration for `B` and `T`, which it is.
                unsafe {
                    B::register(
                        T::IDS,
                        probe_callback::<B, T>,
                        remove_callback::<B, T>,
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
impl<B: Bus, T: Driver<B>> PinnedDrop for Registration<B, T> {
    fn drop(self: Pin<&mut Self>) {
        // Unregistering unbinds every device first (running `remove`),
        // while `data` is still alive.
        // SAFETY: `raw` is a live registration (invariant), unregistered
        // exactly once, here.
        unsafe { B::unregister(self.raw) };
    }
}

/// The drvdata field of `raw`'s device.
///
/// # Safety
///
/// `raw` is bound to (or being bound to) our driver: the driver core
/// reads and writes `driver_data` only through the bound driver.
unsafe fn drvdata<B: Bus>(raw: *mut B::Raw) -> *mut *mut c_void {
    // SAFETY: the device is live (function contract).
    unsafe { core::ptr::addr_of_mut!((*B::as_device(raw)).driver_data) }
}

/// # Safety
///
/// Called by the bus with a live device being bound to a driver
/// registered by [`Registration::register`] for `B` and `T`.
unsafe extern "C" fn probe_callback<B: Bus, T: Driver<B>>(raw: *mut B::Raw) -> c_int {
    // SAFETY: the device is being bound to our driver (function contract),
    // whose data pointer is the live registration (unregistering waits
    // for probes).
    let reg = unsafe { &*B::registration_data(raw).cast::<Registration<B, T>>() };
    // SAFETY: the device is being bound to our driver for this call.
    let dev = unsafe { B::device(raw) };
    from_result(|| {
        let object = T::probe(&dev, &reg.data)?;
        // `remove_callback` takes it back.
        // SAFETY: bound to our driver (function contract).
        unsafe { *drvdata::<B>(raw) = object.into_foreign().cast_mut() };
        Ok(0)
    })
}

/// # Safety
///
/// Called by the bus once per successful probe, when unbinding, with a
/// live device bound to a driver registered for `B` and `T`.
unsafe extern "C" fn remove_callback<B: Bus, T: Driver<B>>(raw: *mut B::Raw) {
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
