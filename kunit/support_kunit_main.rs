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

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::alloc::flags::{GFP_ATOMIC, GFP_KERNEL};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::uaccess::UserSlice;

use cxlf_support as support;
use support::{impl_has_hr_timer, kassert, kassert_eq, kunit_tests};

use support::dax::{DaxBus, DaxDriverRegistration, DevDax};
use support::driver::Driver;
use support::fs::File;
use support::hrtimer::{
    ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerMode, HrTimerPointer, HrTimerRestart,
};
use support::kunit::{in_kunit_test, suite_name};
use support::miscdevice::{MiscDevice, MiscDeviceOptions, MiscDeviceRegistration};
use support::mm::{self, VmaNew};
use support::napi::{Napi, NapiPoll, Poll};
use support::netdev::{
    NetDevice, Netdev, Placement, Registration as NetRegistration, RtnlGuard, SkBuff,
    Stats as NetStats,
};
use support::page::alloc_filled_page;
use support::pci::{PciBus, PciDriverRegistration};
use support::perf::{Counter, Event};
use support::ratelimit::{RateLimit, Verdict, BURST, INTERVAL_NS};
use support::spinlock_irq::RawSpinLockIrq;
use support::sysfs::{AttributeBuffer, Attributes, Dir};
use support::task_work::{self, Notify, Pending, TaskWork, TaskWorkBox};
use support::tracepoint::{SchedProbes, SchedRegistration};
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

fn case_runs_in_kunit_context() -> Result {
    kassert!(in_kunit_test());
    Ok(())
}

fn suite_name_is_nul_terminated_and_padded() -> Result {
    let name = suite_name("abc");
    kassert_eq!(name[0], b'a');
    kassert_eq!(name[2], b'c');
    kassert!(name[3..].iter().all(|&c| c == 0));
    Ok(())
}

fn suite_name_takes_255_bytes() -> Result {
    const LONG: [u8; 255] = [b'x'; 255];
    let text = core::str::from_utf8(&LONG).map_err(|_| EINVAL)?;
    let name = suite_name(text);
    kassert_eq!(name[254], b'x');
    kassert_eq!(name[255], 0);
    Ok(())
}

fn question_mark_propagates_ok() -> Result {
    let value: Result<u32> = Ok(7);
    kassert_eq!(value?, 7);
    Ok(())
}

fn register(
    name: &'static kernel::str::CStr,
    opens: u64,
) -> Result<Pin<KBox<MiscDeviceRegistration<TestDevice>>>> {
    let state = DeviceState::new(opens)?;
    KBox::pin_init(
        MiscDeviceRegistration::<TestDevice>::register(
            MiscDeviceOptions { name, mode: 0o600 },
            state,
        ),
        GFP_KERNEL,
    )
}

/// MISC_DYNAMIC_MINOR: what the minor would still be if registration had
/// not assigned one.
const MISC_DYNAMIC_MINOR: i32 = 255;

fn misc_registration_gets_a_dynamic_minor() -> Result {
    let reg = register(kernel::c_str!("cxlfabric_kunit_misc_a"), 0)?;
    kassert!(
        reg.minor() >= 0 && reg.minor() != MISC_DYNAMIC_MINOR,
        "minor {}",
        reg.minor()
    );
    Ok(())
}

fn two_registrations_get_distinct_minors() -> Result {
    let a = register(kernel::c_str!("cxlfabric_kunit_misc_b"), 0)?;
    let b = register(kernel::c_str!("cxlfabric_kunit_misc_c"), 0)?;
    kassert!(a.minor() != b.minor());
    Ok(())
}

fn registration_data_is_what_was_given() -> Result {
    let reg = register(kernel::c_str!("cxlfabric_kunit_misc_d"), 41)?;
    kassert_eq!(reg.data().opens.load(Ordering::Relaxed), 41);
    Ok(())
}

fn misc_name_can_be_reused_after_drop() -> Result {
    drop(register(kernel::c_str!("cxlfabric_kunit_misc_e"), 0)?);
    let again = register(kernel::c_str!("cxlfabric_kunit_misc_e"), 0);
    kassert!(
        again.is_ok(),
        "re-registering a dropped name failed: {:?}",
        again.err()
    );
    Ok(())
}

fn misc_name_too_long_is_refused() -> Result {
    // 32 bytes: with its NUL, one more than the C side's buffer.
    let name = kernel::c_str!("cxlfabric_kunit_misc_name_32byte");
    kassert_eq!(name.len(), 32);
    let reg = register(name, 0);
    kassert!(
        matches!(reg, Err(e) if e == EINVAL),
        "expected EINVAL, got {:?}",
        reg.err()
    );
    Ok(())
}

fn vm_flags_match_the_kernel_abi() -> Result {
    // include/linux/mm.h; these values are user-visible through /proc/*/smaps.
    kassert_eq!(mm::flags::WRITE, 0x2);
    kassert_eq!(mm::flags::SHARED, 0x8);
    kassert_eq!(mm::flags::MAYSHARE, 0x80);
    // x86-64 with 4 KiB pages: a PMD maps 2 MiB.
    kassert_eq!(PAGE_SIZE << mm::pmd_order(), 2 << 20);
    Ok(())
}

fn ioctl_numbers_encode_direction_and_size() -> Result {
    kassert_eq!(ioctl::size_of_cmd(abi::SET_VALUE), 8);
    kassert_eq!(abi::SET_VALUE >> 30, ioctl::IOC_WRITE);
    kassert_eq!(abi::GET_VALUE >> 30, ioctl::IOC_READ);
    kassert!(abi::SET_VALUE != abi::GET_VALUE && abi::GET_VALUE != abi::GET_OPENS);
    Ok(())
}

/// Counts its callbacks; restarts (1 ms later) until it has run `runs`
/// times.
#[pin_data]
struct Ticker {
    #[pin]
    timer: HrTimer<Ticker>,
    count: AtomicU32,
    runs: u32,
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for Ticker { self.timer }
}

impl HrTimerCallback for Ticker {
    fn run(this: ArcBorrow<'_, Self>) -> HrTimerRestart {
        let n = this.count.fetch_add(1, Ordering::Relaxed) + 1;
        if n < this.runs {
            this.timer.forward_now(1_000_000);
            HrTimerRestart::Restart
        } else {
            HrTimerRestart::NoRestart
        }
    }
}

fn ticker(runs: u32, mode: HrTimerMode) -> Result<Arc<Ticker>> {
    Arc::pin_init(
        pin_init!(Ticker {
            timer <- HrTimer::new(mode),
            count: AtomicU32::new(0),
            runs,
        }),
        GFP_KERNEL,
    )
}

fn hrtimer_fires_once_after_its_delay() -> Result {
    let t = ticker(1, HrTimerMode::Relative)?;
    let handle = t.clone().start(1_000_000);
    support::time::sleep_ms_interruptible(30)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 1);
    kassert!(!handle.cancel(), "not armed any more");
    Ok(())
}

fn hrtimer_cancelled_before_expiry_never_runs() -> Result {
    let t = ticker(1, HrTimerMode::RelativePinned)?;
    let handle = t.clone().start(10_000_000_000);
    kassert!(handle.get().timer.is_active());
    kassert_eq!(handle.try_cancel(), Some(true));
    kassert_eq!(handle.try_cancel(), Some(false));
    drop(handle);
    kassert_eq!(t.count.load(Ordering::Relaxed), 0);
    Ok(())
}

fn hrtimer_restarts_after_moving_forward() -> Result {
    let t = ticker(3, HrTimerMode::Relative)?;
    let handle = t.clone().start(1_000_000);
    support::time::sleep_ms_interruptible(60)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 3);
    kassert!(!t.timer.is_active());
    drop(handle);
    Ok(())
}

fn hrtimer_dropping_the_handle_cancels() -> Result {
    let t = ticker(1, HrTimerMode::Relative)?;
    drop(t.clone().start(2_000_000));
    support::time::sleep_ms_interruptible(20)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 0);
    kassert!(!t.timer.is_active());
    Ok(())
}

fn hrtimer_idle_handle_runs_only_when_restarted() -> Result {
    let t = ticker(1, HrTimerMode::RelativePinned)?;
    let handle = ArcHrTimerHandle::idle(t.clone());
    support::time::sleep_ms_interruptible(5)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 0);
    kassert!(!t.timer.is_active());
    handle.restart(1_000_000);
    support::time::sleep_ms_interruptible(30)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 1);
    // Restarting an armed timer moves its expiry: it runs once, late.
    handle.restart(1_000_000);
    handle.restart(10_000_000_000);
    support::time::sleep_ms_interruptible(30)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 1);
    kassert!(t.timer.is_active());
    kassert!(handle.cancel(), "was armed");
    kassert!(!t.timer.is_active());
    Ok(())
}

/// A counter bumped both from a pinned timer (hard interrupt, this CPU)
/// and from process context, under one [`RawSpinLockIrq`].
#[pin_data]
struct LockedCounter {
    #[pin]
    timer: HrTimer<LockedCounter>,
    #[pin]
    count: RawSpinLockIrq<u64>,
    runs: AtomicU32,
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for LockedCounter { self.timer }
}

const TIMER_BUMPS: u32 = 200;

impl HrTimerCallback for LockedCounter {
    fn run(this: ArcBorrow<'_, Self>) -> HrTimerRestart {
        *this.count.lock() += 1;
        if this.runs.fetch_add(1, Ordering::Relaxed) + 1 < TIMER_BUMPS {
            this.timer.forward_now(20_000);
            HrTimerRestart::Restart
        } else {
            HrTimerRestart::NoRestart
        }
    }
}

fn raw_spinlock_irq_excludes_a_timer_on_the_same_cpu() -> Result {
    let c = Arc::pin_init(
        pin_init!(LockedCounter {
            timer <- HrTimer::new(HrTimerMode::RelativePinned),
            count <- crate::support::new_raw_spinlock_irq!(0u64, "kunit:locked_counter"),
            runs: AtomicU32::new(0),
        }),
        GFP_KERNEL,
    )?;
    // Were interrupts on while the lock is held, the timer firing on this
    // CPU inside the loop would spin on the lock for ever (and lockdep
    // would report the inversion).
    let handle = c.clone().start(20_000);
    let mut bumps = 0u64;
    let mut waited_ms = 0;
    while c.runs.load(Ordering::Relaxed) < TIMER_BUMPS && waited_ms < 2_000 {
        for _ in 0..1_000 {
            *c.count.lock() += 1;
            bumps += 1;
        }
        support::time::sleep_ms_interruptible(1)?;
        waited_ms += 1;
    }
    drop(handle);
    kassert_eq!(c.runs.load(Ordering::Relaxed), TIMER_BUMPS);
    kassert_eq!(*c.count.lock(), bumps + u64::from(TIMER_BUMPS));
    Ok(())
}

struct Noop;

impl TaskWork for Noop {
    fn run(self) {}
}

fn task_work_box_counts_only_while_queued() -> Result {
    let pending = Arc::new(Pending::new(), GFP_KERNEL)?;
    // Allocated ahead, even atomically; not queued: nothing to wait for,
    // and dropping it frees it (kmemleak checks on the debug kernel).
    let b = TaskWorkBox::new(Noop, &pending, GFP_ATOMIC)?;
    let c = TaskWorkBox::new(Noop, &pending, GFP_KERNEL)?;
    kassert_eq!(pending.count(), 0);
    drop(b);
    drop(c);
    kassert_eq!(pending.count(), 0);
    // What the owner waits for at unload returns at once.
    pending.wait_idle("kunit");
    Ok(())
}

/// Counts the switches of one task (by pid) and every fork and exit.
struct Watch {
    pid: i32,
    out: AtomicU64,
    into: AtomicU64,
    forks: AtomicU64,
    exits: AtomicU64,
}

impl SchedProbes for Watch {
    fn switch(&self, _preempt: bool, prev: &kernel::task::Task, next: &kernel::task::Task) {
        if prev.pid() == self.pid {
            self.out.fetch_add(1, Ordering::Relaxed);
        }
        if next.pid() == self.pid {
            self.into.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn fork(&self, _parent: &kernel::task::Task, _child: &kernel::task::Task) {
        self.forks.fetch_add(1, Ordering::Relaxed);
    }
    fn exit(&self, _task: &kernel::task::Task) {
        self.exits.fetch_add(1, Ordering::Relaxed);
    }
}

fn sched_switch_probe_sees_the_sleeping_task_leave_and_return() -> Result {
    let watch = Arc::new(
        Watch {
            pid: kernel::current!().pid(),
            out: AtomicU64::new(0),
            into: AtomicU64::new(0),
            forks: AtomicU64::new(0),
            exits: AtomicU64::new(0),
        },
        GFP_KERNEL,
    )?;
    let registration = SchedRegistration::register(watch.clone())?;
    for _ in 0..3 {
        support::time::sleep_ms_interruptible(5)?;
    }
    drop(registration);
    let (out, into) = (
        watch.out.load(Ordering::Relaxed),
        watch.into.load(Ordering::Relaxed),
    );
    kassert!(out >= 3 && into >= 3, "switches out {} in {}", out, into);
    // Detached: nothing counts any more.
    support::time::sleep_ms_interruptible(5)?;
    kassert_eq!(watch.out.load(Ordering::Relaxed), out);
    Ok(())
}

/// Probes of [`NoDevice`].
static NO_DEVICE_PROBES: AtomicU64 = AtomicU64::new(0);

/// A PCI driver for an id no device has.
struct NoDevice;

impl Driver<PciBus> for NoDevice {
    type RegistrationData = ();
    const IDS: (u16, u16) = (0x1af4, 0xfffe);

    fn probe(_dev: &support::pci::Device<'_>, (): &()) -> Result<Pin<KBox<Self>>> {
        NO_DEVICE_PROBES.fetch_add(1, Ordering::Relaxed);
        Err(ENODEV)
    }
}

fn pci_driver_takes_the_module_name_until_dropped() -> Result {
    let register = || KBox::pin_init(PciDriverRegistration::<NoDevice>::register(()), GFP_KERNEL);
    let first = register()?;
    // `/sys/bus/pci/drivers/<module>` is taken: a second is refused.
    kassert!(register().is_err());
    drop(first);
    // Unregistered on drop: the name is free again.
    drop(register()?);
    kassert_eq!(NO_DEVICE_PROBES.load(Ordering::Relaxed), 0);
    Ok(())
}

/// A test interface: counts what the stack asks of it.
#[derive(Default)]
struct TestIf {
    opens: AtomicU64,
    stops: AtomicU64,
    sent: AtomicU64,
    last_len: AtomicU64,
    mtu: AtomicU64,
}

impl NetDevice for TestIf {
    fn open(this: &Arc<Self>, _dev: &Netdev<'_>) -> Result {
        this.opens.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn stop(this: &Arc<Self>, _dev: &Netdev<'_>) -> Result {
        this.stops.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn start_xmit(
        this: &Arc<Self>,
        _dev: &Netdev<'_>,
        skb: SkBuff,
        _queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        let mut head = [0u8; 14];
        // The frame is addressed to the interface itself.
        if skb.copy_to(&mut head) == Ok(14) && head[..6] == [2, 0, 0, 0, 0, 1] {
            this.sent.fetch_add(1, Ordering::Relaxed);
        }
        this.last_len.store(u64::from(skb.len()), Ordering::Relaxed);
        Ok(())
    }

    fn stats(this: &Arc<Self>, stats: &mut NetStats) {
        stats.tx_packets = this.sent.load(Ordering::Relaxed);
    }

    fn change_mtu(this: &Arc<Self>, _dev: &Netdev<'_>, mtu: u32) -> Result {
        this.mtu.store(u64::from(mtu), Ordering::Relaxed);
        Ok(())
    }
}

fn netdev_callbacks_reach_the_driver_until_unregistered() -> Result {
    let this = Arc::new(TestIf::default(), GFP_KERNEL)?;
    let at = Placement::detached([2, 0, 0, 0, 0, 1]).mtu_range(68, 9000);
    let reg = NetRegistration::register(this.clone(), &at)?;
    kassert!(reg.name().as_bytes().starts_with(b"eth"));
    // The range is the stack's to enforce; the driver sees what passes.
    reg.set_mtu(9000)?;
    kassert_eq!(this.mtu.load(Ordering::Relaxed), 9000);
    kassert!(reg.set_mtu(9001).is_err());
    kassert_eq!(reg.mtu(), 9000);
    reg.open()?;
    kassert_eq!(this.opens.load(Ordering::Relaxed), 1);
    reg.set_carrier(true);
    kassert!(reg.carrier_ok());
    // The queue starts when link watch has seen the carrier: retry.
    for _ in 0..200 {
        let _ = reg.send_frame(100);
        if this.sent.load(Ordering::Relaxed) > 0 {
            break;
        }
        support::time::sleep_ms_interruptible(5)?;
    }
    kassert!(this.sent.load(Ordering::Relaxed) >= 1);
    kassert_eq!(this.last_len.load(Ordering::Relaxed), 100);
    kassert_eq!(reg.stats().tx_packets, this.sent.load(Ordering::Relaxed));
    kassert!(reg.send_frame(10).is_err(), "shorter than a header");
    reg.close();
    kassert_eq!(this.stops.load(Ordering::Relaxed), 1);
    reg.open()?;
    // Unregistering takes it down (stop runs) and ends the callbacks.
    drop(reg);
    kassert_eq!(this.stops.load(Ordering::Relaxed), 2);
    Ok(())
}

/// A test interface that takes the stack's TX watchdog: records the
/// queue it names.
#[derive(Default)]
struct WatchedIf {
    timeouts: AtomicU64,
    queue: AtomicU64,
}

impl NetDevice for WatchedIf {
    fn open(_this: &Arc<Self>, _dev: &Netdev<'_>) -> Result {
        Ok(())
    }

    fn stop(_this: &Arc<Self>, _dev: &Netdev<'_>) -> Result {
        Ok(())
    }

    fn start_xmit(
        _this: &Arc<Self>,
        _dev: &Netdev<'_>,
        _skb: SkBuff,
        _queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        Ok(())
    }

    fn stats(_this: &Arc<Self>, _stats: &mut NetStats) {}

    fn change_mtu(_this: &Arc<Self>, _dev: &Netdev<'_>, _mtu: u32) -> Result {
        Ok(())
    }

    const HAS_TX_TIMEOUT: bool = true;

    fn tx_timeout(this: &Arc<Self>, _dev: &Netdev<'_>, queue: u32) {
        this.queue.store(u64::from(queue), Ordering::Relaxed);
        this.timeouts.fetch_add(1, Ordering::Relaxed);
    }
}

fn netdev_tx_watchdog_names_a_stopped_queue() -> Result {
    let this = Arc::new(WatchedIf::default(), GFP_KERNEL)?;
    let at = Placement::detached([2, 0, 0, 0, 0, 3])
        .queues(2, 2)
        .watchdog_ms(100);
    let reg = NetRegistration::register(this.clone(), &at)?;
    reg.open()?;
    reg.set_carrier(true);
    // Queue 1 stops and nothing wakes it. The watchdog's timer is rounded
    // to whole seconds, and runs once link watch has activated the queues.
    reg.netdev().txq_stop(1);
    for _ in 0..400 {
        if this.timeouts.load(Ordering::Relaxed) > 0 {
            break;
        }
        support::time::sleep_ms_interruptible(10)?;
    }
    kassert!(this.timeouts.load(Ordering::Relaxed) >= 1);
    kassert_eq!(this.queue.load(Ordering::Relaxed), 1);
    drop(reg);
    Ok(())
}

/// A NAPI poll that counts what the stack asks of it.
#[derive(Default)]
struct TestPoll {
    polls: AtomicU64,
    budget: AtomicU64,
    completed: AtomicU64,
}

impl Poll for TestPoll {
    fn poll(this: ArcBorrow<'_, Self>, napi: &NapiPoll<'_>, budget: u32) -> u32 {
        this.polls.fetch_add(1, Ordering::Relaxed);
        this.budget.store(u64::from(budget), Ordering::Relaxed);
        if napi.complete_done(0) {
            this.completed.fetch_add(1, Ordering::Relaxed);
        }
        0
    }
}

fn napi_polls_only_while_enabled() -> Result {
    let at = Placement::detached([2, 0, 0, 0, 0, 2]);
    let reg = NetRegistration::register(Arc::new(TestIf::default(), GFP_KERNEL)?, &at)?;
    let p = Arc::new(TestPoll::default(), GFP_KERNEL)?;
    let polls = || p.polls.load(Ordering::Relaxed);
    let napi = Napi::add(&reg.netdev(), p.clone(), 0)?;
    // Not enabled yet: scheduling does nothing.
    napi.schedule();
    support::time::sleep_ms_interruptible(20)?;
    kassert_eq!(polls(), 0);
    napi.enable();
    napi.schedule();
    // Until a poll has completed: a poll counts itself before it
    // completes, and one that found a missed schedule polls again first.
    for _ in 0..200 {
        if p.completed.load(Ordering::Relaxed) > 0 {
            break;
        }
        support::time::sleep_ms_interruptible(5)?;
    }
    // At least once: the schedule while disabled may count as missed,
    // and the core polls again after completing.
    kassert!(polls() >= 1);
    kassert!(p.budget.load(Ordering::Relaxed) > 0);
    kassert!(p.completed.load(Ordering::Relaxed) >= 1);
    // Disabled again (waiting for a running poll): no more polls.
    napi.disable();
    let seen = polls();
    napi.schedule();
    support::time::sleep_ms_interruptible(20)?;
    kassert_eq!(polls(), seen);
    // Enabling twice or dropping an enabled context is safe.
    napi.enable();
    napi.enable();
    drop(napi);
    drop(reg);
    Ok(())
}

fn rtnl_try_lock_fails_without_unlocking() -> Result {
    let mut held = None;
    for _ in 0..200 {
        held = RtnlGuard::try_lock();
        if held.is_some() {
            break;
        }
        support::time::sleep_ms_interruptible(5)?;
    }
    kassert!(held.is_some(), "RTNL busy for a second");
    // Held: a second try fails, and failing leaves it held.
    kassert!(RtnlGuard::try_lock().is_none());
    kassert!(RtnlGuard::try_lock().is_none());
    drop(held);
    let again = RtnlGuard::try_lock();
    kassert!(again.is_some());
    Ok(())
}

/// How many `Shown` values were dropped.
static SHOWN_DROPS: AtomicU64 = AtomicU64::new(0);

struct Shown(u64);

impl Drop for Shown {
    fn drop(&mut self) {
        SHOWN_DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

impl Attributes for Shown {
    const NAMES: &'static [&'static kernel::str::CStr] = &[kernel::c_str!("value")];

    fn show(&self, _index: usize, out: &mut AttributeBuffer<'_>) -> Result {
        use core::fmt::Write;
        writeln!(out, "{}", self.0).map_err(|_| EINVAL)
    }
}

fn sysfs_dir_owns_its_data_until_removed() -> Result {
    let reg = register(kernel::c_str!("cxlfabric_kunit_misc_f"), 0)?;
    let drops = || SHOWN_DROPS.load(Ordering::Relaxed);
    let before = drops();
    let dir = Dir::new(reg.as_parent(), b"d", Arc::new(Shown(7), GFP_KERNEL)?)?;
    let inner = Dir::new(dir.as_parent(), b"inner", Arc::new(Shown(8), GFP_KERNEL)?)?;
    // A directory keeps what it shows.
    kassert_eq!(drops(), before);
    drop(inner);
    kassert_eq!(drops(), before + 1);
    drop(dir);
    kassert_eq!(drops(), before + 2);
    // The name is free again once removed.
    drop(Dir::new(
        reg.as_parent(),
        b"d",
        Arc::new(Shown(9), GFP_KERNEL)?,
    )?);
    kassert_eq!(drops(), before + 3);
    // Refused names give their data back.
    let long = Dir::new(
        reg.as_parent(),
        &[b'x'; 64],
        Arc::new(Shown(1), GFP_KERNEL)?,
    );
    kassert!(long.err() == Some(EINVAL));
    let nul = Dir::new(reg.as_parent(), b"a\0b", Arc::new(Shown(1), GFP_KERNEL)?);
    kassert!(nul.err() == Some(EINVAL));
    kassert_eq!(drops(), before + 5);
    Ok(())
}

fn ratelimit_allows_a_burst_then_counts_what_it_drops() -> Result {
    let limit = RateLimit::new();
    let t0 = 1_000;
    for _ in 0..BURST {
        kassert_eq!(limit.check_at(t0), Verdict::Print { suppressed: 0 });
    }
    for _ in 0..3 {
        kassert_eq!(limit.check_at(t0 + 1), Verdict::Suppress);
    }
    kassert_eq!(
        limit.check_at(t0 + INTERVAL_NS),
        Verdict::Print { suppressed: 3 }
    );
    kassert_eq!(
        limit.check_at(t0 + INTERVAL_NS + 1),
        Verdict::Print { suppressed: 0 }
    );
    Ok(())
}

/// `PERF_TYPE_SOFTWARE`/`PERF_COUNT_SW_TASK_CLOCK`: on-CPU nanoseconds,
/// which every kernel provides (a hardware event needs a PMU).
const TASK_CLOCK: Event = Event {
    type_: 1,
    config: 1,
};

/// Spins until `counter` has counted `ns` more than `from`, for at most
/// 2 s of wall time (the test thread shares the CPUs with the boot);
/// returns what it counted.
fn spin_until_counted(counter: &Counter, from: u64, ns: u64) -> u64 {
    let start = support::time::monotonic_ns();
    loop {
        let counted = counter.read().saturating_sub(from);
        if counted >= ns || support::time::monotonic_ns() - start > 2_000_000_000 {
            return counted;
        }
        core::hint::spin_loop();
    }
}

fn perf_task_clock_counts_while_the_task_runs() -> Result {
    let c = Counter::new(kernel::current!(), TASK_CLOCK)?;
    // The reads themselves run too: the wall time spans them.
    let start = support::time::monotonic_ns();
    let before = c.read();
    let ran = spin_until_counted(&c, before, 1_000_000);
    let wall = support::time::monotonic_ns() - start;
    // It counts while the task runs, and never more than the time passed.
    kassert!(ran >= 1_000_000, "counted {} ns in {} ns", ran, wall);
    kassert!(ran <= wall + 100_000, "counted {} ns of {}", ran, wall);
    // A second counter starts from zero: it counts no more than the time
    // since it was made (however slow making one is: a debug kernel's
    // takes milliseconds); dropping the first leaves it counting.
    let made = support::time::monotonic_ns();
    let d = Counter::new(kernel::current!(), TASK_CLOCK)?;
    let first = d.read();
    let since = support::time::monotonic_ns() - made;
    kassert!(
        first <= since + 100_000,
        "counted {} ns of {}",
        first,
        since
    );
    drop(c);
    let more = spin_until_counted(&d, first, 500_000);
    kassert!(more >= 500_000, "stopped counting: {} ns in 2 s", more);
    Ok(())
}

fn perf_unknown_event_types_are_refused() -> Result {
    let bad = Event {
        type_: 0x7fff_fff0,
        config: 0,
    };
    let err = Counter::new(kernel::current!(), bad).err();
    kassert!(err == Some(ENOENT), "{:?}", err.map(|e| e.to_errno()));
    Ok(())
}

kunit_tests!(
    cxlfabric_support_perf,
    [
        perf_task_clock_counts_while_the_task_runs,
        perf_unknown_event_types_are_refused,
    ]
);

kunit_tests!(
    cxlfabric_support_kunit,
    [
        case_runs_in_kunit_context,
        suite_name_is_nul_terminated_and_padded,
        suite_name_takes_255_bytes,
        question_mark_propagates_ok,
        ratelimit_allows_a_burst_then_counts_what_it_drops,
    ]
);

kunit_tests!(
    cxlfabric_support_miscdevice,
    [
        misc_registration_gets_a_dynamic_minor,
        two_registrations_get_distinct_minors,
        registration_data_is_what_was_given,
        misc_name_can_be_reused_after_drop,
        misc_name_too_long_is_refused,
        vm_flags_match_the_kernel_abi,
        ioctl_numbers_encode_direction_and_size,
    ]
);

kunit_tests!(
    cxlfabric_support_hrtimer,
    [
        hrtimer_fires_once_after_its_delay,
        hrtimer_cancelled_before_expiry_never_runs,
        hrtimer_restarts_after_moving_forward,
        hrtimer_dropping_the_handle_cancels,
        hrtimer_idle_handle_runs_only_when_restarted,
    ]
);

kunit_tests!(
    cxlfabric_support_pci,
    [pci_driver_takes_the_module_name_until_dropped]
);

kunit_tests!(
    cxlfabric_support_netdev,
    [
        netdev_callbacks_reach_the_driver_until_unregistered,
        napi_polls_only_while_enabled,
        rtnl_try_lock_fails_without_unlocking,
        netdev_tx_watchdog_names_a_stopped_queue
    ]
);

kunit_tests!(
    cxlfabric_support_sysfs,
    [sysfs_dir_owns_its_data_until_removed]
);

kunit_tests!(
    cxlfabric_support_spinlock_irq,
    [raw_spinlock_irq_excludes_a_timer_on_the_same_cpu]
);

kunit_tests!(
    cxlfabric_support_task_work,
    [task_work_box_counts_only_while_queued]
);

kunit_tests!(
    cxlfabric_support_tracepoint,
    [sched_switch_probe_sees_the_sleeping_task_leave_and_return]
);
