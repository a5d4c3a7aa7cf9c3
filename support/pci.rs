// SPDX-License-Identifier: GPL-2.0

//! PCI drivers, shaped like upstream's `kernel::pci` (6.14-6.17): a
//! driver on [`PciBus`] matches one vendor/device id, `probe` returns the
//! per-device object, which lives in the device's drvdata until the
//! device is unbound, when it is dropped (`super::driver`). The resources a driver takes
//! are values that give them back when dropped ([`Enabled`], [`Region`],
//! [`IoMem`], [`IrqVectors`], and [`DeviceMem`] over a
//! claimed region): the per-device object's field order is its teardown
//! order.
//!
//! 6.12's bindings see `struct pci_dev` as opaque and lack `pci.h`: the
//! struct fields and the driver structure are reached through C helpers;
//! exported functions are declared here.

use super::driver::{Bus, Registration};
use super::helpers;
use super::sharedmem::WbMap;
use core::marker::PhantomData;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_char, c_int, c_uint, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

// Exported by the PCI core; `pci.h` is not in 6.12's bindings.
extern "C" {
    fn pci_enable_device_mem(dev: *mut bindings::pci_dev) -> c_int;
    fn pci_disable_device(dev: *mut bindings::pci_dev);
    fn pci_set_master(dev: *mut bindings::pci_dev);
    fn pci_request_region(dev: *mut bindings::pci_dev, bar: c_int, name: *const c_char) -> c_int;
    fn pci_release_region(dev: *mut bindings::pci_dev, bar: c_int);
    fn pci_irq_vector(dev: *mut bindings::pci_dev, nr: c_uint) -> c_int;
    fn pci_free_irq_vectors(dev: *mut bindings::pci_dev);
    fn pci_dev_get(dev: *mut bindings::pci_dev) -> *mut bindings::pci_dev;
    fn pci_dev_put(dev: *mut bindings::pci_dev);
}

/// A PCI device, borrowed during `probe` and `remove`.
///
/// # Invariants
///
/// `raw` is a live `struct pci_dev` bound (or being bound) to our driver
/// for the lifetime `'a`.
pub(crate) struct Device<'a> {
    raw: *mut bindings::pci_dev,
    _life: PhantomData<&'a bindings::pci_dev>,
}

/// One BAR's place: CPU physical address and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resource {
    pub(crate) start: u64,
    pub(crate) len: u64,
    pub(crate) mem: bool,
}

impl Device<'_> {
    /// # Safety
    ///
    /// `raw` must be a live `struct pci_dev` being bound to, or unbound
    /// from, a driver registered by [`Registration::register`], for as
    /// long as the value is used (a `probe` or `remove` callback).
    unsafe fn from_raw<'a>(raw: *mut bindings::pci_dev) -> Device<'a> {
        // INVARIANT: the caller guarantees `raw` is live and bound for 'a.
        Device {
            raw,
            _life: PhantomData,
        }
    }

    pub(crate) fn vendor_id(&self) -> u16 {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_pci_vendor(self.raw) }
    }

    pub(crate) fn device_id(&self) -> u16 {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_pci_device_id(self.raw) }
    }

    /// BAR `bar`'s place, `EINVAL` if it has none.
    pub(crate) fn resource(&self, bar: u32) -> Result<Resource> {
        let (mut start, mut len, mut mem) = (0u64, 0u64, false);
        let bar = c_int::try_from(bar).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is live (invariant); the helper checks `bar` and
        // writes only through the three valid pointers.
        to_result(unsafe {
            helpers::cxlf_pci_resource(self.raw, bar, &mut start, &mut len, &mut mem)
        })?;
        Ok(Resource { start, len, mem })
    }

    /// The generic device (for `dev_*` logging and DMA).
    pub(crate) fn as_raw_device(&self) -> *mut bindings::device {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_pci_device(self.raw) }
    }

    /// A reference for DMA allocations ([`super::dma::CoherentAllocation`]).
    pub(crate) fn dma_device(&self) -> super::dma::DmaDevice {
        // SAFETY: `raw` is live (invariant), so is its generic device.
        unsafe { super::dma::DmaDevice::get(self.as_raw_device()) }
    }

    /// The device's name (its bus address, `0000:00:05.0`).
    pub(crate) fn name(&self) -> &CStr {
        let dev = self.as_raw_device();
        // SAFETY: a live, registered device (invariant) has a
        // NUL-terminated kobject name (what the static inline `dev_name`
        // returns) that lives as long as the device.
        unsafe { CStr::from_char_ptr((*dev).kobj.name) }
    }

    /// Enables the device's memory decoding (`pci_enable_device_mem`);
    /// disabled again when the value is dropped.
    pub(crate) fn enable_device_mem(&self) -> Result<Enabled> {
        // SAFETY: `raw` is live (invariant).
        to_result(unsafe { pci_enable_device_mem(self.raw) })?;
        Ok(Enabled(Held::get(self.raw)))
    }

    /// Lets the device master the bus (DMA, MSI-X writes).
    pub(crate) fn set_master(&self) {
        // SAFETY: `raw` is live (invariant).
        unsafe { pci_set_master(self.raw) };
    }

    /// Claims BAR `bar` for this driver (`/proc/iomem` shows `name`).
    pub(crate) fn request_region(&self, bar: u32, name: &'static CStr) -> Result<Region> {
        let res = self.resource(bar)?;
        let bar = c_int::try_from(bar).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is live (invariant); `name` is 'static, as the
        // resource keeps the pointer.
        to_result(unsafe { pci_request_region(self.raw, bar, name.as_char_ptr()) })?;
        // INVARIANT: requested just above.
        Ok(Region {
            dev: Held::get(self.raw),
            bar,
            res,
        })
    }

    /// Exactly `n` MSI-X vectors; freed when the value is dropped (after
    /// every handler registered on them, by field order).
    pub(crate) fn alloc_msix(&self, n: u32) -> Result<IrqVectors> {
        // SAFETY: `raw` is live (invariant).
        to_result(unsafe { helpers::cxlf_pci_alloc_msix(self.raw, n) })?;
        Ok(IrqVectors {
            dev: Held::get(self.raw),
            n,
        })
    }
}

/// A counted reference to a PCI device, for the values that undo what
/// was done to it.
///
/// # Invariants
///
/// `raw` is a `struct pci_dev` this value holds a reference to.
struct Held {
    raw: *mut bindings::pci_dev,
}

// SAFETY: a counted reference; the PCI calls made through it work from
// any thread.
unsafe impl Send for Held {}
// SAFETY: `&Held` gives no access beyond the pointer.
unsafe impl Sync for Held {}

impl Held {
    fn get(raw: *mut bindings::pci_dev) -> Held {
        // SAFETY: `raw` is live (the callers' invariant); this takes a
        // reference.
        let raw = unsafe { pci_dev_get(raw) };
        // INVARIANT: the reference just taken.
        Held { raw }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: drops the reference `get` took (invariant).
        unsafe { pci_dev_put(self.raw) };
    }
}

/// An enabled device; disabled on drop.
pub(crate) struct Enabled(Held);

impl Drop for Enabled {
    fn drop(&mut self) {
        // SAFETY: enabled by `enable_device_mem`, disabled once, here.
        unsafe { pci_disable_device(self.0.raw) };
    }
}

/// A claimed BAR; released on drop.
///
/// # Invariants
///
/// `bar` of `dev`, at `res`, was requested by this value.
pub(crate) struct Region {
    dev: Held,
    bar: c_int,
    res: Resource,
}

impl Region {
    /// Where the claimed BAR is.
    pub(crate) fn resource(&self) -> Resource {
        self.res
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: requested by `request_region` (invariant), released once.
        unsafe { pci_release_region(self.dev.raw, self.bar) };
    }
}

/// A BAR of registers, mapped uncached (`pci_iomap`); 32-bit accesses,
/// bounds-checked. Upstream: `pci::Bar` (6.14) with `kernel::io::Io`.
///
/// # Invariants
///
/// `addr` maps `len` bytes of a BAR of `dev` until drop.
pub(crate) struct IoMem {
    dev: Held,
    addr: *mut c_void,
    len: usize,
}

// SAFETY: MMIO accessors work from any thread.
unsafe impl Send for IoMem {}
// SAFETY: every access is a single `ioread32`/`iowrite32`.
unsafe impl Sync for IoMem {}

impl IoMem {
    /// Maps BAR `bar` of `dev` (claim it with `request_region` first).
    pub(crate) fn map(dev: &Device<'_>, bar: u32) -> Result<IoMem> {
        let res = dev.resource(bar)?;
        let len = usize::try_from(res.len).map_err(|_| EINVAL)?;
        let bar = c_int::try_from(bar).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is live; a NULL return is handled.
        let addr = unsafe { bindings::pci_iomap(dev.raw, bar, 0) };
        if addr.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: mapped just above, the BAR's length.
        Ok(IoMem {
            dev: Held::get(dev.raw),
            addr,
            len,
        })
    }

    fn at(&self, offset: usize) -> Result<*mut c_void> {
        let end = offset.checked_add(4).ok_or(EINVAL)?;
        if end > self.len || offset % 4 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: inside the mapping (checked), which is `len` bytes.
        Ok(unsafe { self.addr.cast::<u8>().add(offset).cast() })
    }

    pub(crate) fn read32(&self, offset: usize) -> Result<u32> {
        let at = self.at(offset)?;
        // SAFETY: an aligned register inside the mapping (checked).
        Ok(unsafe { bindings::ioread32(at) })
    }

    pub(crate) fn write32(&self, offset: usize, value: u32) -> Result {
        let at = self.at(offset)?;
        // SAFETY: an aligned register inside the mapping (checked).
        unsafe { bindings::iowrite32(value, at) };
        Ok(())
    }
}

impl Drop for IoMem {
    fn drop(&mut self) {
        // SAFETY: mapped by `map` for this device (invariant), unmapped
        // once.
        unsafe { bindings::pci_iounmap(self.dev.raw, self.addr) };
    }
}

/// MSI-X vectors of a device; freed on drop.
pub(crate) struct IrqVectors {
    dev: Held,
    n: u32,
}

impl IrqVectors {
    pub(crate) fn len(&self) -> u32 {
        self.n
    }

    /// The Linux IRQ number of vector `i`.
    pub(crate) fn irq(&self, i: u32) -> Result<u32> {
        if i >= self.n {
            return Err(EINVAL);
        }
        // SAFETY: the device holds `n` vectors (allocated by
        // `alloc_msix`), and `i` is below it.
        let irq = unsafe { pci_irq_vector(self.dev.raw, i) };
        u32::try_from(irq).map_err(|_| Error::from_errno(irq))
    }
}

impl Drop for IrqVectors {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc_msix`; every handler on them was
        // freed before (the owner's field order), freed once, here.
        unsafe { pci_free_irq_vectors(self.dev.raw) };
    }
}

/// The PCI bus, for [`super::driver::Registration`]; a driver matches
/// one vendor and device id (`Driver::IDS`).
pub(crate) struct PciBus;

impl Bus for PciBus {
    type Raw = bindings::pci_dev;
    type Handle = helpers::CxlfPciDriver;
    type Ids = (u16, u16);
    type Device<'a> = Device<'a>;
    const WHAT: &'static str = "the PCI driver";

    unsafe fn register(
        (vendor, device): (u16, u16),
        probe: unsafe extern "C" fn(*mut bindings::pci_dev) -> c_int,
        remove: unsafe extern "C" fn(*mut bindings::pci_dev),
        data: *mut c_void,
    ) -> *mut helpers::CxlfPciDriver {
        // SAFETY: the caller keeps `data` valid until `unregister`.
        unsafe { helpers::cxlf_pci_driver_register(vendor, device, probe, remove, data) }
    }

    unsafe fn unregister(handle: *mut helpers::CxlfPciDriver) {
        // SAFETY: from `register`, once (function contract).
        unsafe { helpers::cxlf_pci_driver_unregister(handle) }
    }

    unsafe fn registration_data(raw: *mut bindings::pci_dev) -> *mut c_void {
        // SAFETY: bound (or being bound) to a driver `register` made.
        unsafe { helpers::cxlf_pci_driver_data(raw) }
    }

    unsafe fn as_device(raw: *mut bindings::pci_dev) -> *mut bindings::device {
        // SAFETY: a live device (function contract).
        unsafe { helpers::cxlf_pci_device(raw) }
    }

    unsafe fn device<'a>(raw: *mut bindings::pci_dev) -> Device<'a> {
        // SAFETY: being bound or unbound for as long as it is used
        // (function contract).
        unsafe { Device::from_raw(raw) }
    }
}

/// A registered PCI driver (`/sys/bus/pci/drivers/<module>`).
pub(crate) type PciDriverRegistration<T> = Registration<PciBus, T>;

/// A device's memory mapped write-back, accessed coherently.
pub(crate) struct DeviceMem {
    map: WbMap,
}

impl DeviceMem {
    /// Maps a memory BAR this driver has claimed.
    pub(crate) fn map(region: &Region) -> Result<DeviceMem> {
        let res = region.resource();
        if !res.mem {
            return Err(EINVAL);
        }
        let len = usize::try_from(res.len).map_err(|_| EINVAL)?;
        Ok(DeviceMem {
            map: WbMap::map(res.start, len)?,
        })
    }
}

impl super::coherent::Coherent for DeviceMem {
    fn window(&self) -> super::coherent::Window<'_> {
        self.map.window()
    }
}
