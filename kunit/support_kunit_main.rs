// SPDX-License-Identifier: GPL-2.0

//! Tests of the cxlfabric support layer.
//!
//! KUnit suites run when this module is loaded (results in
//! /sys/kernel/debug/kunit/<suite>/results). The module also registers
//! `/dev/cxlfabric_misc_test` (ABI in `uapi/src/selftest.rs`) for the
//! scenario `tests/vm/scenarios/05_support_miscdevice.sh`, which drives the
//! miscdevice wrapper from user space: open/release, ioctl, mmap, and
//! module unload while a file is open. It also registers a dax bus driver
//! (named after the module), which records what it sees at probe so that the
//! scenario `06_support_dax_driver.sh` can check the dax wrapper.
//!
//! The suites are in `support_cases/`, one file per wrapper tested.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::alloc::flags::GFP_KERNEL;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::UserSlice;

use cxlf_support as support;

use support::dax::{DaxBus, DaxDriverRegistration, DevDax};
use support::driver::Driver;
use support::fs::File;
use support::miscdevice::{MiscDevice, MiscDeviceOptions, MiscDeviceRegistration};
use support::mm::VmaNew;
use support::page::alloc_filled_page;
use support::task_work::{self, Notify, Pending, TaskWork};
use support::uapi::{ioctl, selftest as abi};

module! {
    type: SupportKunit,
    name: "cxlfabric_support_kunit",
    author: "cxlfabric developers",
    description: "KUnit suites and a test device for the cxlfabric support layer",
    license: "GPL",
}

/// State of the test device, shared by every open file and by the test
/// dax driver.
struct DeviceState {
    opens: AtomicU64,
    /// What the test's task work added, and the items not yet run.
    task_work_sum: AtomicU64,
    task_work: Arc<Pending>,
    /// What the dax driver saw at probe; `dax_bound` is 0 when unbound.
    dax_bound: AtomicU64,
    dax_id: AtomicU64,
    dax_start: AtomicU64,
    dax_size: AtomicU64,
}

impl DeviceState {
    fn new(opens: u64) -> Result<Arc<DeviceState>> {
        let state = DeviceState {
            opens: AtomicU64::new(opens),
            task_work_sum: AtomicU64::new(0),
            task_work: Arc::new(Pending::new(), GFP_KERNEL)?,
            dax_bound: AtomicU64::new(0),
            dax_id: AtomicU64::new(0),
            dax_start: AtomicU64::new(0),
            dax_size: AtomicU64::new(0),
        };
        Ok(Arc::new(state, GFP_KERNEL)?)
    }
}

/// The test dax driver's per-instance object.
struct TestDaxBinding {
    state: Arc<DeviceState>,
}

impl Driver<DaxBus> for TestDaxBinding {
    type RegistrationData = Arc<DeviceState>;
    const IDS: () = ();

    fn probe(dev: &DevDax<'_>, state: &Arc<DeviceState>) -> Result<Pin<KBox<Self>>> {
        let first = dev.range(0)?;
        pr_info!(
            "dax{}: bound, {} range(s), first {:#x}-{:#x}, {} bytes, align {}\n",
            dev.id(),
            dev.nr_ranges(),
            first.start,
            first.end,
            dev.size(),
            dev.align()
        );
        state.dax_id.store(dev.id() as u64, Ordering::Relaxed);
        state.dax_start.store(first.start, Ordering::Relaxed);
        state.dax_size.store(dev.size(), Ordering::Relaxed);
        state.dax_bound.store(1, Ordering::Release);
        Ok(KBox::pin(
            TestDaxBinding {
                state: state.clone(),
            },
            GFP_KERNEL,
        )?)
    }

    fn remove(self: Pin<&Self>, dev: &DevDax<'_>) {
        pr_info!("dax{}: unbound\n", dev.id());
        self.state.dax_bound.store(0, Ordering::Release);
    }
}

/// The test's task work: adds `value` to the device's sum.
struct AddToSum {
    device: Arc<DeviceState>,
    value: u64,
}

impl TaskWork for AddToSum {
    fn run(self) {
        self.device
            .task_work_sum
            .fetch_add(self.value, Ordering::AcqRel);
    }
}

/// State of one open file.
struct OpenFile {
    device: Arc<DeviceState>,
    value: AtomicU64,
}

struct TestDevice;

#[vtable]
impl MiscDevice for TestDevice {
    type Ptr = KBox<OpenFile>;
    type RegistrationData = Arc<DeviceState>;

    fn open(_file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<KBox<OpenFile>> {
        let device = misc.data().clone();
        device.opens.fetch_add(1, Ordering::Relaxed);
        Ok(KBox::new(
            OpenFile {
                device,
                value: AtomicU64::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    fn ioctl(file: &OpenFile, _f: &File, cmd: u32, arg: usize) -> Result<isize> {
        let size = ioctl::size_of_cmd(cmd);
        match cmd {
            abi::SET_VALUE => {
                let value: u64 = UserSlice::new(arg, size).reader().read()?;
                file.value.store(value, Ordering::Relaxed);
            }
            abi::GET_VALUE => {
                UserSlice::new(arg, size)
                    .writer()
                    .write(&file.value.load(Ordering::Relaxed))?;
            }
            abi::GET_OPENS => {
                let opens = file.device.opens.load(Ordering::Relaxed);
                UserSlice::new(arg, size).writer().write(&opens)?;
            }
            abi::GET_DAX_BINDING => {
                // `DaxBinding` is four u64s, in this order.
                let d = &file.device;
                let bound = d.dax_bound.load(Ordering::Acquire);
                let mut out = UserSlice::new(arg, size).writer();
                for value in [
                    bound,
                    d.dax_id.load(Ordering::Relaxed),
                    d.dax_start.load(Ordering::Relaxed),
                    d.dax_size.load(Ordering::Relaxed),
                ] {
                    out.write(&if bound == 0 { 0 } else { value })?;
                }
            }
            abi::QUEUE_TASK_WORK => {
                let value: u64 = UserSlice::new(arg, size).reader().read()?;
                let work = AddToSum {
                    device: file.device.clone(),
                    value,
                };
                let current = kernel::current!();
                task_work::add(
                    current,
                    work,
                    Notify::Signal,
                    &file.device.task_work,
                    GFP_KERNEL,
                )?;
            }
            abi::GET_TASK_WORK => {
                let d = &file.device;
                let mut out = UserSlice::new(arg, size).writer();
                out.write(&d.task_work_sum.load(Ordering::Acquire))?;
                out.write(&(d.task_work.count() as u64))?;
            }
            _ => return Err(ENOTTY),
        }
        Ok(0)
    }

    fn mmap(_file: &OpenFile, _f: &File, vma: &VmaNew) -> Result {
        if !vma.is_shared() {
            pr_info!("mmap refused: MAP_PRIVATE (only MAP_SHARED is supported)\n");
            return Err(EINVAL);
        }
        if vma.pgoff() != 0 || vma.len() != PAGE_SIZE {
            pr_info!(
                "mmap refused: offset {} pages, length {} (one page at offset 0 only)\n",
                vma.pgoff(),
                vma.len()
            );
            return Err(EINVAL);
        }
        let page = alloc_filled_page(abi::pattern_byte)?;
        // The mapping holds its own page reference; ours goes with `page`.
        vma.insert_page(vma.start(), &page)
    }
}

struct SupportKunit {
    // Dropped in order: the misc device first, then the dax driver (which
    // unbinds any instance still bound to it).
    _misc: Pin<KBox<MiscDeviceRegistration<TestDevice>>>,
    _dax: Pin<KBox<DaxDriverRegistration<TestDaxBinding>>>,
    /// Task work the test device queued: it runs this module's code.
    task_work: Arc<Pending>,
}

impl Drop for SupportKunit {
    fn drop(&mut self) {
        self.task_work.wait_idle("cxlfabric_support_kunit");
    }
}

impl kernel::Module for SupportKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let state = DeviceState::new(0)?;
        let dax = KBox::pin_init(
            DaxDriverRegistration::<TestDaxBinding>::register(state.clone()),
            GFP_KERNEL,
        )?;
        let task_work = state.task_work.clone();
        let misc = KBox::pin_init(
            MiscDeviceRegistration::<TestDevice>::register(
                MiscDeviceOptions {
                    name: kernel::c_str!("cxlfabric_misc_test"),
                    mode: 0o600,
                },
                state,
            ),
            GFP_KERNEL,
        )?;
        Ok(SupportKunit {
            _misc: misc,
            _dax: dax,
            task_work,
        })
    }
}

mod support_cases;
