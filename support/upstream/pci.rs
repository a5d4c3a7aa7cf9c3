// SPDX-License-Identifier: GPL-2.0

//! PCI drivers, shaped like upstream's `kernel::pci` (6.14-6.17): a
//! driver on [`PciBus`] matches one vendor/device id, `probe` returns the
//! per-device object, which lives in the device's drvdata until the
//! device is unbound, when it is dropped (`crate::driver`). The resources a driver takes
//! are values that give them back when dropped ([`Enabled`], [`Region`],
//! [`IoMem`], [`IrqVectors`], and [`DeviceMem`] over a
//! claimed region): the per-device object's field order is its teardown
//! order.
//!
//! The driver structure (`struct pci_driver` and its id table) is built
//! here, with its probe and remove trampolines; it and the PCI core's
//! functions come from `pci.h` through [`crate::bindings`]. 6.12's
//! kernel bindings declare `struct pci_dev` without its fields, so its
//! fields are read through one-line C helpers.

use crate::bindings;
use crate::driver::{self, Bus, Driver, Registration};
use crate::helpers;
use crate::sharedmem::WbMap;
use core::marker::PhantomData;
use core::ptr::{addr_of, addr_of_mut};
use kernel::error::to_result;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

/// A PCI device, borrowed during `probe` and `remove`.
///
/// # Invariants
///
/// `raw` is a live `struct pci_dev` bound (or being bound) to our driver
/// for the lifetime `'a`.
pub struct Device<'a> {
    raw: *mut bindings::pci_dev,
    _life: PhantomData<&'a bindings::pci_dev>,
}

/// One BAR's place: CPU physical address and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resource {
    /// CPU physical address of the first byte.
    pub start: u64,
    /// Bytes.
    pub len: u64,
    /// Memory space (not I/O ports).
    pub mem: bool,
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

    /// The vendor id (`PCI_VENDOR_ID_*`).
    pub fn vendor_id(&self) -> u16 {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_pci_vendor(self.raw) }
    }

    /// The device id.
    pub fn device_id(&self) -> u16 {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_pci_device_id(self.raw) }
    }

    /// BAR `bar`'s place, `EINVAL` if it has none (no such BAR, empty,
    /// or unassigned).
    pub fn resource(&self, bar: u32) -> Result<Resource> {
        if bar >= bindings::PCI_STD_NUM_BARS {
            return Err(EINVAL);
        }
        let bar = c_int::try_from(bar).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is live (invariant) and `bar` one of its standard
        // BARs, whose resource lives as long as the device.
        let res = unsafe { helpers::cxlf_pci_resource(self.raw, bar) };
        // SAFETY: as above; plain reads, as `pci_resource_start`, `_len`
        // and `_flags` do.
        let (start, end, flags) = unsafe { ((*res).start, (*res).end, (*res).flags) };
        // `pci_resource_len`: nothing when the end is 0.
        let len = if end == 0 { 0 } else { end - start + 1 };
        if len == 0 || flags & bindings::IORESOURCE_UNSET as c_ulong != 0 {
            return Err(EINVAL);
        }
        Ok(Resource {
            start,
            len,
            mem: flags & bindings::IORESOURCE_MEM as c_ulong != 0,
        })
    }

    /// The generic device (for `dev_*` logging and DMA).
    pub fn as_raw_device(&self) -> *mut bindings::device {
        // SAFETY: `raw` is live (invariant).
        unsafe { helpers::cxlf_pci_device(self.raw) }
    }

    /// A reference for DMA allocations ([`crate::dma::CoherentAllocation`]).
    pub fn dma_device(&self) -> crate::dma::DmaDevice {
        // SAFETY: `raw` is live (invariant), so is its generic device.
        unsafe { crate::dma::DmaDevice::get(self.as_raw_device()) }
    }

    /// The device's name (its bus address, `0000:00:05.0`).
    pub fn name(&self) -> &CStr {
        let dev = self.as_raw_device();
        // SAFETY: a live, registered device (invariant) has a
        // NUL-terminated kobject name (what the static inline `dev_name`
        // returns) that lives as long as the device.
        unsafe { CStr::from_char_ptr((*dev).kobj.name) }
    }

    /// Enables the device's memory decoding (`pci_enable_device_mem`);
    /// disabled again when the value is dropped.
    pub fn enable_device_mem(&self) -> Result<Enabled> {
        // SAFETY: `raw` is live (invariant).
        to_result(unsafe { bindings::pci_enable_device_mem(self.raw) })?;
        Ok(Enabled(Held::get(self.raw)))
    }

    /// Lets the device master the bus (DMA, MSI-X writes).
    pub fn set_master(&self) {
        // SAFETY: `raw` is live (invariant).
        unsafe { bindings::pci_set_master(self.raw) };
    }

    /// Claims BAR `bar` for this driver (`/proc/iomem` shows `name`).
    pub fn request_region(&self, bar: u32, name: &'static CStr) -> Result<Region> {
        let res = self.resource(bar)?;
        let bar = c_int::try_from(bar).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is live (invariant); `name` is 'static, as the
        // resource keeps the pointer.
        to_result(unsafe { bindings::pci_request_region(self.raw, bar, name.as_char_ptr()) })?;
        // INVARIANT: requested just above.
        Ok(Region {
            dev: Held::get(self.raw),
            bar,
            res,
        })
    }

    /// Exactly `n` MSI-X vectors; freed when the value is dropped (after
    /// every handler registered on them, by field order).
    pub fn alloc_msix(&self, n: u32) -> Result<IrqVectors> {
        // SAFETY: `raw` is live (invariant).
        let got =
            unsafe { bindings::pci_alloc_irq_vectors(self.raw, n, n, bindings::PCI_IRQ_MSIX) };
        to_result(got.min(0))?;
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
        let raw = unsafe { bindings::pci_dev_get(raw) };
        // INVARIANT: the reference just taken.
        Held { raw }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: drops the reference `get` took (invariant).
        unsafe { bindings::pci_dev_put(self.raw) };
    }
}

/// An enabled device; disabled on drop.
pub struct Enabled(Held);

impl Drop for Enabled {
    fn drop(&mut self) {
        // SAFETY: enabled by `enable_device_mem`, disabled once, here.
        unsafe { bindings::pci_disable_device(self.0.raw) };
    }
}

/// A claimed BAR; released on drop.
///
/// # Invariants
///
/// `bar` of `dev`, at `res`, was requested by this value.
pub struct Region {
    dev: Held,
    bar: c_int,
    res: Resource,
}

impl Region {
    /// Where the claimed BAR is.
    pub fn resource(&self) -> Resource {
        self.res
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: requested by `request_region` (invariant), released once.
        unsafe { bindings::pci_release_region(self.dev.raw, self.bar) };
    }
}

/// A BAR of registers, mapped uncached (`pci_iomap`); 32-bit accesses,
/// bounds-checked. Upstream: `pci::Bar` (6.14) with `kernel::io::Io`.
///
/// # Invariants
///
/// `addr` maps `len` bytes of a BAR of `dev` until drop.
pub struct IoMem {
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
    pub fn map(dev: &Device<'_>, bar: u32) -> Result<IoMem> {
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

    /// Reads the 32-bit register at byte `offset`; `EINVAL` outside the BAR or unaligned.
    pub fn read32(&self, offset: usize) -> Result<u32> {
        let at = self.at(offset)?;
        // SAFETY: an aligned register inside the mapping (checked).
        Ok(unsafe { bindings::ioread32(at) })
    }

    /// Writes the 32-bit register at byte `offset`; `EINVAL` outside the BAR or unaligned.
    pub fn write32(&self, offset: usize, value: u32) -> Result {
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
pub struct IrqVectors {
    dev: Held,
    n: u32,
}

impl IrqVectors {
    /// How many vectors were allocated.
    pub fn len(&self) -> u32 {
        self.n
    }

    /// The Linux IRQ number of vector `i`.
    pub fn irq(&self, i: u32) -> Result<u32> {
        if i >= self.n {
            return Err(EINVAL);
        }
        // SAFETY: the device holds `n` vectors (allocated by
        // `alloc_msix`), and `i` is below it.
        let irq = unsafe { bindings::pci_irq_vector(self.dev.raw, i) };
        u32::try_from(irq).map_err(|_| Error::from_errno(irq))
    }
}

impl Drop for IrqVectors {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc_msix`; every handler on them was
        // freed before (the owner's field order), freed once, here.
        unsafe { bindings::pci_free_irq_vectors(self.dev.raw) };
    }
}

/// A PCI driver's C side: `struct pci_driver` and its id table (one id
/// and the terminating zero entry), inside its [`Registration`].
#[repr(C)]
pub struct RawPciDriver {
    driver: bindings::pci_driver,
    ids: [bindings::pci_device_id; 2],
}

/// The PCI bus, for [`crate::driver::Registration`]; a driver matches
/// one vendor and device id (`Driver::IDS`), any subsystem.
pub struct PciBus;

impl Bus for PciBus {
    type Raw = bindings::pci_dev;
    type RawDriver = RawPciDriver;
    type Ids = (u16, u16);
    type Device<'a> = Device<'a>;
    const WHAT: &'static str = "the PCI driver";

    unsafe fn register<T: Driver<PciBus>>(drv: *mut RawPciDriver) -> Result {
        let (vendor, device) = T::IDS;
        let id = bindings::pci_device_id {
            vendor: vendor.into(),
            device: device.into(),
            // `PCI_ANY_ID` is `~0`, stored in `__u32` fields.
            subvendor: bindings::PCI_ANY_ID as u32,
            subdevice: bindings::PCI_ANY_ID as u32,
            ..Default::default()
        };
        // SAFETY: `drv` is valid for writes and pinned (function
        // contract), so the id table pointer into it stays valid.
        unsafe {
            drv.write(RawPciDriver {
                driver: bindings::pci_driver {
                    name: driver::module_name(),
                    id_table: addr_of!((*drv).ids).cast(),
                    probe: Some(probe_callback::<T>),
                    remove: Some(driver::remove_callback::<PciBus, T>),
                    ..Default::default()
                },
                ids: [id, Default::default()],
            })
        };
        // SAFETY: the driver is built above, where it stays until
        // `unregister` (function contract); the module and its name
        // outlive it.
        to_result(unsafe {
            bindings::__pci_register_driver(
                addr_of_mut!((*drv).driver),
                crate::THIS_MODULE.as_ptr(),
                driver::module_name(),
            )
        })
    }

    unsafe fn unregister(drv: *mut RawPciDriver) {
        // SAFETY: registered by `register`, unregistered once (function
        // contract).
        unsafe { bindings::pci_unregister_driver(addr_of_mut!((*drv).driver)) }
    }

    unsafe fn raw_driver(drv: *mut bindings::device_driver) -> *mut RawPciDriver {
        // SAFETY: `drv` is the generic driver of a `pci_driver`, the
        // `driver` field of a `RawPciDriver` (function contract):
        // `to_pci_driver`, then one more step back.
        unsafe {
            let pdrv = kernel::container_of!(drv, bindings::pci_driver, driver);
            kernel::container_of!(pdrv, RawPciDriver, driver).cast_mut()
        }
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

/// `pci_driver.probe`: the PCI core passes the matching id too, which the
/// driver does not need (it matches one).
///
/// # Safety
///
/// Called by the PCI core with a live device being bound to a driver
/// [`PciBus::register`] registered for `T`.
unsafe extern "C" fn probe_callback<T: Driver<PciBus>>(
    pdev: *mut bindings::pci_dev,
    _id: *const bindings::pci_device_id,
) -> c_int {
    // SAFETY: as this function's contract.
    unsafe { driver::probe_callback::<PciBus, T>(pdev) }
}

/// A registered PCI driver (`/sys/bus/pci/drivers/<module>`).
pub type PciDriverRegistration<T> = Registration<PciBus, T>;

/// A device's memory mapped write-back, accessed coherently.
pub struct DeviceMem {
    map: WbMap,
}

impl DeviceMem {
    /// Maps a memory BAR this driver has claimed.
    pub fn map(region: &Region) -> Result<DeviceMem> {
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

impl crate::coherent::Coherent for DeviceMem {
    fn window(&self) -> crate::coherent::Window<'_> {
        self.map.window()
    }
}
