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

use super::driver::{Bus, Registration};
use super::fs::InodeRef;
use super::helpers::{self, RawDevDax};
use core::marker::PhantomData;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

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
}

/// The dax bus, for [`super::driver::Registration`]: device-mode dax
/// instances, bound only when unbound (no ids).
pub(crate) struct DaxBus;

impl Bus for DaxBus {
    type Raw = RawDevDax;
    type Handle = helpers::CxlfDaxDriver;
    type Ids = ();
    type Device<'a> = DevDax<'a>;
    const WHAT: &'static str = "the dax driver";

    unsafe fn register(
        (): (),
        probe: unsafe extern "C" fn(*mut RawDevDax) -> c_int,
        remove: unsafe extern "C" fn(*mut RawDevDax),
        data: *mut c_void,
    ) -> *mut helpers::CxlfDaxDriver {
        // SAFETY: the caller keeps `data` valid until `unregister`.
        unsafe { helpers::cxlf_dax_driver_register(probe, remove, data) }
    }

    unsafe fn unregister(handle: *mut helpers::CxlfDaxDriver) {
        // SAFETY: from `register`, once (function contract).
        unsafe { helpers::cxlf_dax_driver_unregister(handle) }
    }

    unsafe fn registration_data(raw: *mut RawDevDax) -> *mut c_void {
        // SAFETY: bound (or being bound) to a driver `register` made.
        unsafe { helpers::cxlf_dev_dax_driver_data(raw) }
    }

    unsafe fn as_device(raw: *mut RawDevDax) -> *mut bindings::device {
        // SAFETY: a live instance (function contract).
        unsafe { helpers::cxlf_dev_dax_device(raw) }
    }

    unsafe fn device<'a>(raw: *mut RawDevDax) -> DevDax<'a> {
        // SAFETY: being bound or unbound for as long as it is used
        // (function contract).
        unsafe { DevDax::from_raw(raw) }
    }
}

/// A registered dax driver (`/sys/bus/dax/drivers/<module>`).
pub(crate) type DaxDriverRegistration<T> = Registration<DaxBus, T>;
