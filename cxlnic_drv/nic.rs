// SPDX-License-Identifier: GPL-2.0

//! Binding a CXL-NIC: an ivshmem-doorbell PCI function (1af4:1110 with an
//! MSI-X BAR1) whose device memory (BAR2) starts with the CXL-NIC header
//! in a layout version this driver speaks. Anything else with those ids
//! (the testbed's ivshmem-plain pool, a foreign doorbell device) is
//! declined with `ENODEV` and left alone.
//!
//! Teardown is by drop order of [`Nic`]'s fields: the key-value offload
//! (out of `/dev/cxlnic`'s reach, stopped, its memory given back), the
//! interface, interrupt vectors, then the mappings, then the claimed
//! BARs, then the enabled device.

use crate::io::{NicIo, REG_DOORBELL, REG_IVPOSITION};
use crate::kvs::{Area, Kvs, KvsWork};
use crate::nics::Nics;
use crate::port::{self, Port};
use crate::ring::device::{
    mode_bit, DeviceHeader, DATA_OFFSET, HEADER_BYTES, HEADER_OFFSET, QUEUES_MAX, VECTORS,
    VECTOR_CONFIG,
};
use crate::ring::kvs::AREA_BYTES;
use crate::ring::layout::VERSION;
use crate::support::coherent::Coherent;
use crate::support::driver::Driver;
use crate::support::irq;
use crate::support::netdev::{self, NetdevRef, Placement};
use crate::support::pci::DeviceMem;
use crate::support::pci::{Device, Enabled, IoMem, IrqVectors, PciBus, Region};
use crate::support::workqueue::Periodic;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};

/// ivshmem's PCI ids (QEMU's `ivshmem-doorbell`).
const IVSHMEM_VENDOR: u16 = 0x1af4;
const IVSHMEM_DEVICE: u16 = 0x1110;
/// BARs: registers (doorbell), MSI-X table, device memory.
const BAR_REGS: u32 = 0;
const BAR_MSIX: u32 = 1;
const BAR_MEM: u32 = 2;

/// How long probe waits for its own test interrupt.
const IRQ_TEST_MS: u32 = 500;

/// Vector 0's handler: the device's config answers and link changes.
#[derive(Default)]
pub(crate) struct ConfigIrq {
    count: AtomicU64,
}

impl irq::Handler for ConfigIrq {
    fn handle(this: ArcBorrow<'_, Self>) -> bool {
        this.count.fetch_add(1, Ordering::Relaxed);
        true
    }
}

/// A NIC's key-value offload as bound: in the list `/dev/cxlnic`
/// searches, with its periodic work. Dropped first: out of the list,
/// the work stopped, then the device told to stop (the host table freed
/// if it answers), all before the interface is unregistered.
struct KvsBinding {
    nics: Arc<Nics>,
    port: Arc<Port>,
    dev: NetdevRef,
    work: Option<Periodic<KvsWork>>,
}

impl Drop for KvsBinding {
    fn drop(&mut self) {
        self.nics.remove(&self.port);
        drop(self.work.take());
        self.port.kvs.shutdown(self.dev.get().name());
    }
}

/// One bound CXL-NIC.
pub(crate) struct Nic {
    _kvs: KvsBinding,
    // Then the interface: the stack stops using the port before the
    // device does.
    port: netdev::Registration<Port>,
    // Freed before the vectors it is on.
    _config_irq: irq::Registration<ConfigIrq>,
    // What the port's queues use: mappings, DMA, vector numbers.
    _io: Arc<NicIo>,
    _vectors: IrqVectors,
    _regs_region: Region,
    _mem_region: Region,
    _enabled: Enabled,
}

impl Nic {
    /// The header at the start of device memory, if it is a CXL-NIC's
    /// in a version this driver speaks; `ENODEV` otherwise.
    fn header(dev: &Device<'_>, mem: &DeviceMem) -> Result<DeviceHeader> {
        let mut raw = [0u8; HEADER_BYTES];
        mem.read(HEADER_OFFSET as usize, &mut raw)?;
        let h = DeviceHeader::decode(&raw);
        if h.signature != crate::ring::layout::SIGNATURE {
            // Not ours: an ivshmem device for something else.
            return Err(ENODEV);
        }
        if h.version != VERSION {
            dev_info(
                dev,
                format_args!(
                    "CXL-NIC layout version {}, this driver speaks {}: left alone\n",
                    h.version, VERSION
                ),
            );
            return Err(ENODEV);
        }
        Ok(h)
    }
}

impl Nic {
    /// Rings this guest's own vector 0 through the doorbell and waits for
    /// the interrupt: MSI-X works end to end, or the NIC is not usable.
    fn test_interrupt(dev: &Device<'_>, regs: &IoMem, config: &ConfigIrq) -> Result {
        let me = regs.read32(REG_IVPOSITION)?;
        let before = config.count.load(Ordering::Relaxed);
        regs.write32(REG_DOORBELL, (me << 16) | VECTOR_CONFIG)?;
        for _ in 0..IRQ_TEST_MS {
            if config.count.load(Ordering::Relaxed) > before {
                return Ok(());
            }
            crate::support::time::sleep_ms_interruptible(1)?;
        }
        dev_info(
            dev,
            format_args!("MSI-X vector 0 did not arrive within {} ms\n", IRQ_TEST_MS),
        );
        Err(EIO)
    }
}

impl Nic {
    /// The mode the `mode` parameter names, if the device has it.
    fn mode(dev: &Device<'_>, header: &DeviceHeader) -> Result<u32> {
        let name = crate::mode();
        let mode = match name.as_bytes() {
            b"" | b"type1" => crate::ring::device::MODE_TYPE1,
            b"type2" => crate::ring::device::MODE_TYPE2,
            b"pcie" => crate::ring::device::MODE_PCIE,
            _ => {
                dev_info(
                    dev,
                    format_args!("mode={} is not type1, type2 or pcie\n", name),
                );
                return Err(EINVAL);
            }
        };
        if header.modes & mode_bit(mode) == 0 {
            dev_info(
                dev,
                format_args!(
                    "the device has no {} mode (modes {:#x})\n",
                    port::mode_name(mode),
                    header.modes
                ),
            );
            return Err(ENODEV);
        }
        Ok(mode)
    }
}

impl Nic {
    /// The KVS area's offset, if the header names one inside the BAR and
    /// above the driver's placements (0: none; a bad one is logged and
    /// taken as none).
    fn kvs_offset(dev: &Device<'_>, header: &DeviceHeader, bar: usize) -> usize {
        let (at, bytes) = (header.kvs_offset as usize, header.kvs_bytes as usize);
        if at == 0 {
            return 0;
        }
        let inside = at
            .checked_add(AREA_BYTES as usize)
            .is_some_and(|end| end <= bar);
        if at as u64 >= DATA_OFFSET && at % 4096 == 0 && bytes >= AREA_BYTES as usize && inside {
            return at;
        }
        dev_info(
            dev,
            format_args!(
                "KVS area at {:#x} ({:#x} bytes) does not fit BAR2 ({:#x} bytes): no KVS offload\n",
                at, bytes, bar
            ),
        );
        0
    }
}

fn dev_info(dev: &Device<'_>, args: core::fmt::Arguments<'_>) {
    pr_info!("{}: {}", dev.name(), args);
}

impl Driver<PciBus> for Nic {
    type RegistrationData = Arc<Nics>;
    const IDS: (u16, u16) = (IVSHMEM_VENDOR, IVSHMEM_DEVICE);

    fn probe(dev: &Device<'_>, nics: &Arc<Nics>) -> Result<Pin<KBox<Self>>> {
        // `new_id` can point a driver at any device: check what this is.
        if (dev.vendor_id(), dev.device_id()) != Self::IDS {
            return Err(ENODEV);
        }
        // The doorbell variant has MSI-X in BAR1; the plain one has none.
        if dev.resource(BAR_MSIX).is_err() {
            return Err(ENODEV);
        }
        let res = dev.resource(BAR_MEM)?;
        if !res.mem {
            return Err(ENODEV);
        }
        let enabled = dev.enable_device_mem()?;
        let mem_region = dev.request_region(BAR_MEM, c_str!("cxlnic_drv"))?;
        let mem = DeviceMem::map(&mem_region)?;
        let len = mem.len();
        let header = Self::header(dev, &mem)?;
        let kvs_offset = Self::kvs_offset(dev, &header, len);
        let regs_region = dev.request_region(BAR_REGS, c_str!("cxlnic_drv"))?;
        let regs = IoMem::map(dev, BAR_REGS)?;
        dev.set_master();
        let vectors = dev.alloc_msix(VECTORS)?;
        let config = Arc::new(ConfigIrq::default(), GFP_KERNEL)?;
        let config_irq = irq::Registration::request(
            vectors.irq(VECTOR_CONFIG)?,
            c_str!("cxlnic_drv"),
            config.clone(),
        )?;
        Self::test_interrupt(dev, &regs, &config)?;
        let mode = Self::mode(dev, &header)?;
        let dma = dev.dma_device();
        // The device reaches host memory from 0 up to `host_bytes`: keep
        // DMA memory below the largest power of two within it.
        let bits = 63u32.saturating_sub(header.host_bytes.leading_zeros());
        if header.host_bytes > 0 {
            dma.set_mask(bits.clamp(12, 64)).inspect_err(|_| {
                dev_info(dev, format_args!("no DMA below 2^{}\n", bits));
            })?;
        }
        let mut irqs = [0u32; VECTORS as usize];
        for (v, irq) in irqs.iter_mut().enumerate() {
            *irq = vectors.irq(v as u32)?;
        }
        let m = header.mac;
        dev_info(
            dev,
            format_args!(
                "CXL-NIC v{}, {} queue pairs (of {} here), {} MiB device memory, modes {:#x}, MAC {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, {} vectors\n",
                header.version,
                header.queues_max,
                QUEUES_MAX,
                len >> 20,
                header.modes,
                m[0], m[1], m[2], m[3], m[4], m[5],
                vectors.len()
            ),
        );
        let (min_mtu, max_mtu) = Port::mtu_range();
        let queues = header.queues_max.clamp(1, QUEUES_MAX);
        let at = Placement::under(dev, [m[0], m[1], m[2], m[3], m[4], m[5]])
            .queues(queues, queues)
            .mtu_range(min_mtu, max_mtu)
            .watchdog_ms(port::TX_WATCHDOG_MS);
        let io = Arc::new(
            NicIo::new(
                mem,
                regs,
                dma,
                header.doorbell_peer,
                header.host_bytes,
                irqs,
                kvs_offset,
            )?,
            GFP_KERNEL,
        )?;
        let settings = port::default_settings(mode, queues);
        let kvs = Kvs::new(Area::of(io.clone()), crate::default_kvs_port())?;
        let shared = Port::new(io.clone(), queues, header.modes, settings, kvs.clone())?;
        let port = netdev::Registration::register(shared.clone(), &at)?;
        // The binding's drop (even on an error below) takes it out again.
        let mut binding = KvsBinding {
            nics: nics.clone(),
            port: shared.clone(),
            dev: port.netdev().hold(),
            work: None,
        };
        binding.work = KvsWork::start(&kvs, port.netdev().hold())?;
        nics.add(port.netdev().hold(), shared)?;
        dev_info(
            dev,
            format_args!(
                "{}: MTU {}, {} mode, {} queue pairs\n",
                port.name(),
                port.mtu(),
                port::mode_name(mode),
                settings.queues
            ),
        );
        if kvs_offset != 0 {
            dev_info(
                dev,
                format_args!("{}: KVS offload area at {:#x}\n", port.name(), kvs_offset),
            );
        }
        Ok(KBox::pin(
            Nic {
                _kvs: binding,
                port,
                _config_irq: config_irq,
                _io: io,
                _vectors: vectors,
                _regs_region: regs_region,
                _mem_region: mem_region,
                _enabled: enabled,
            },
            GFP_KERNEL,
        )?)
    }

    fn remove(self: Pin<&Self>, dev: &Device<'_>) {
        dev_info(dev, format_args!("{}: CXL-NIC unbound\n", self.port.name()));
    }
}
