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
//!
//! `struct dax_device_driver` is built here, and `struct dev_dax` read
//! directly: both are private to drivers/dax (`bus.h`,
//! `dax-private.h`), generated into [`crate::bindings`] from a full
//! kernel source tree (see Documentation/cxlfabric/support.rst).

use crate::bindings;
use crate::driver::{self, Bus, Driver, Registration};
use crate::fs::InodeRef;
use core::marker::PhantomData;
use core::ptr::addr_of_mut;
use kernel::error::to_result;
use kernel::prelude::*;

/// One physical range of a dax instance, in bytes (`end` inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaxRange {
    /// First byte (physical address).
    pub start: u64,
    /// Last byte (inclusive, as `struct range` has it).
    pub end: u64,
    /// Offset of this range within the instance, in pages.
    pub pgoff: u64,
}

impl DaxRange {
    /// Bytes in the range.
    pub fn len(&self) -> u64 {
        self.end - self.start + 1
    }
}

/// A dax instance, borrowed during `probe` and `remove`.
///
/// # Invariants
///
/// `raw` is a live `struct dev_dax` bound (or being bound) to our driver
/// for the lifetime `'a`.
pub struct DevDax<'a> {
    raw: *mut bindings::dev_dax,
    _life: PhantomData<&'a bindings::dev_dax>,
}

impl DevDax<'_> {
    /// # Safety
    ///
    /// `raw` must be a live `struct dev_dax` being bound to, or unbound
    /// from, a driver registered by [`DaxDriverRegistration::register`]
    /// for as long as the value is used (a `probe` or `remove` callback).
    unsafe fn from_raw<'a>(raw: *mut bindings::dev_dax) -> DevDax<'a> {
        // INVARIANT: the caller guarantees that `raw` is live and bound (or
        // being bound) to our driver for `'a`.
        DevDax {
            raw,
            _life: PhantomData,
        }
    }

    /// The `Y` of `daxX.Y`.
    pub fn id(&self) -> i32 {
        // SAFETY: `raw` is live (invariant).
        unsafe { (*self.raw).id }
    }

    /// The NUMA node device-dax gives the instance's memory.
    pub fn target_node(&self) -> i32 {
        // SAFETY: `raw` is live (invariant).
        unsafe { (*self.raw).target_node }
    }

    /// The dax device's own inode, whose address space device-dax's user
    /// mappings live in (as device-dax's `open` uses), whoever opened the
    /// file and through whichever device node; it belongs to the dax
    /// pseudo filesystem, which is never unmounted, and the reference
    /// keeps it alive.
    pub fn inode(&self) -> InodeRef {
        // SAFETY: `raw` is live (invariant), and its dax device, which
        // holds the inode, lives at least as long while it is bound.
        unsafe { InodeRef::hold(bindings::dax_inode((*self.raw).dax_dev)) }
    }

    /// The `X` of `daxX.Y`: the dax region.
    pub fn region_id(&self) -> i32 {
        // SAFETY: `raw` is live (invariant); a bound instance has a region,
        // which outlives it.
        unsafe { (*(*self.raw).region).id }
    }

    /// Mapping alignment of the instance (2 MiB by default).
    pub fn align(&self) -> u32 {
        // SAFETY: `raw` is live (invariant).
        unsafe { (*self.raw).align }
    }

    /// How many physical ranges the instance has.
    pub fn nr_ranges(&self) -> usize {
        // SAFETY: `raw` is live (invariant).
        let nr = unsafe { (*self.raw).nr_range };
        usize::try_from(nr).unwrap_or(0)
    }

    /// Physical range `i`; `EINVAL` past the last.
    pub fn range(&self, i: usize) -> Result<DaxRange> {
        if i >= self.nr_ranges() {
            return Err(EINVAL);
        }
        // SAFETY: `raw` is live (invariant); `ranges` holds `nr_range`
        // entries, and `i` is below it (the bus does not resize a bound
        // instance).
        let (start, end, pgoff) = unsafe {
            let r = (*self.raw).ranges.add(i);
            ((*r).range.start, (*r).range.end, (*r).pgoff)
        };
        Ok(DaxRange {
            start,
            end,
            // `unsigned long`: 64 bits on the kernels this builds for.
            pgoff: pgoff as u64,
        })
    }

    /// Total size of all ranges, in bytes.
    pub fn size(&self) -> u64 {
        (0..self.nr_ranges())
            .filter_map(|i| self.range(i).ok())
            .map(|r| r.len())
            .sum()
    }
}

/// The dax bus, for [`crate::driver::Registration`]: device-mode dax
/// instances, bound only when unbound (no ids).
pub struct DaxBus;

impl Bus for DaxBus {
    type Raw = bindings::dev_dax;
    type RawDriver = bindings::dax_device_driver;
    type Ids = ();
    type Device<'a> = DevDax<'a>;
    const WHAT: &'static str = "the dax driver";

    unsafe fn register<T: Driver<DaxBus>>(drv: *mut bindings::dax_device_driver) -> Result {
        // SAFETY: `drv` is valid for writes (function contract).
        unsafe {
            drv.write(bindings::dax_device_driver {
                // Device type: matches device-mode dax instances, but binds
                // only to unbound ones; operators move an instance here
                // with unbind/bind.
                type_: bindings::dax_driver_type_DAXDRV_DEVICE_TYPE,
                probe: Some(driver::probe_callback::<DaxBus, T>),
                remove: Some(driver::remove_callback::<DaxBus, T>),
                ..Default::default()
            })
        };
        // SAFETY: the driver is built above, where it stays until
        // `unregister` (function contract); the module and its name
        // outlive it.
        to_result(unsafe {
            bindings::__dax_driver_register(drv, crate::THIS_MODULE.as_ptr(), driver::module_name())
        })
    }

    unsafe fn unregister(drv: *mut bindings::dax_device_driver) {
        // SAFETY: registered by `register`, unregistered once (function
        // contract).
        unsafe { bindings::dax_driver_unregister(drv) }
    }

    unsafe fn raw_driver(drv: *mut bindings::device_driver) -> *mut bindings::dax_device_driver {
        // SAFETY: `drv` is the generic driver of a `dax_device_driver`
        // (function contract): `to_dax_drv`.
        unsafe { kernel::container_of!(drv, bindings::dax_device_driver, drv).cast_mut() }
    }

    unsafe fn as_device(raw: *mut bindings::dev_dax) -> *mut bindings::device {
        // SAFETY: a live instance (function contract).
        unsafe { addr_of_mut!((*raw).dev) }
    }

    unsafe fn device<'a>(raw: *mut bindings::dev_dax) -> DevDax<'a> {
        // SAFETY: being bound or unbound for as long as it is used
        // (function contract).
        unsafe { DevDax::from_raw(raw) }
    }
}

/// A registered dax driver (`/sys/bus/dax/drivers/<module>`).
pub type DaxDriverRegistration<T> = Registration<DaxBus, T>;
