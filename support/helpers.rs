// SPDX-License-Identifier: GPL-2.0

//! Declarations of the C helpers in `helpers.c` (see `helpers.h`). Only the
//! wrappers in this directory call them. Whatever the 6.12 bindings give
//! Rust directly (exported functions, constants, plain struct fields) is
//! used from `kernel::bindings` instead.

// The C structs are only passed by pointer. Without CONFIG_LOCKDEP they
// contain empty `lockdep_map`s, which this lint flags even behind a
// pointer; the kernel's bindings crate allows it for the same reason.
#![allow(improper_ctypes)]

use kernel::bindings;
use kernel::error::{from_err_ptr, Result};
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

/// Runs a registration (a C one returns a handle or an `ERR_PTR`, turned
/// into a `Result` by `kernel::error::from_err_ptr`) and logs a failure.
pub(crate) fn register_with<R>(what: &str, register: impl FnOnce() -> Result<R>) -> Result<R> {
    register().inspect_err(|err| {
        kernel::pr_err!("cannot register {}: error {}\n", what, err.to_errno());
    })
}

/// Like [`register_with`], for a registration that only returns a handle
/// or an `ERR_PTR`.
pub(crate) fn register_err_ptr<T>(what: &str, raw: *mut T) -> Result<*mut T> {
    register_with(what, || from_err_ptr(raw))
}

/// `struct cxlf_pci_driver`: a PCI driver and its id table, owned by C.
#[repr(C)]
pub(crate) struct CxlfPciDriver {
    _opaque: [u8; 0],
}

/// `struct cxlf_netdev_stats`: the counters a driver fills for
/// `struct cxlf_ethtool_params`: what ethtool's ring, channel, coalesce
/// and private-flag commands read and change.
#[repr(C)]
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CxlfEthtoolParams {
    pub(crate) rx_ring: u32,
    pub(crate) tx_ring: u32,
    pub(crate) rx_ring_max: u32,
    pub(crate) tx_ring_max: u32,
    pub(crate) channels: u32,
    pub(crate) channels_max: u32,
    pub(crate) rx_usecs: u32,
    pub(crate) rx_frames: u32,
    pub(crate) priv_flags: u32,
}

/// `ndo_get_stats64`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct CxlfNetdevStats {
    pub(crate) rx_packets: u64,
    pub(crate) tx_packets: u64,
    pub(crate) rx_bytes: u64,
    pub(crate) tx_bytes: u64,
    pub(crate) rx_errors: u64,
    pub(crate) tx_errors: u64,
    pub(crate) rx_dropped: u64,
    pub(crate) tx_dropped: u64,
}

/// `struct cxlf_netdev_ops`: a network driver's callbacks, each with the
/// driver's data pointer.
#[repr(C)]
pub(crate) struct CxlfNetdevOps {
    pub(crate) open: Option<unsafe extern "C" fn(*mut c_void, *mut bindings::net_device) -> c_int>,
    pub(crate) stop: Option<unsafe extern "C" fn(*mut c_void, *mut bindings::net_device) -> c_int>,
    pub(crate) xmit: Option<
        unsafe extern "C" fn(
            *mut c_void,
            *mut bindings::net_device,
            *mut bindings::sk_buff,
            u16,
        ) -> c_int,
    >,
    pub(crate) stats: Option<unsafe extern "C" fn(*mut c_void, *mut CxlfNetdevStats)>,
    pub(crate) change_mtu:
        Option<unsafe extern "C" fn(*mut c_void, *mut bindings::net_device, c_int) -> c_int>,
    pub(crate) drvinfo: Option<unsafe extern "C" fn(*mut c_void, *mut bindings::ethtool_drvinfo)>,
    pub(crate) get_params:
        Option<unsafe extern "C" fn(*mut c_void, *mut CxlfEthtoolParams) -> c_int>,
    pub(crate) set_params: Option<
        unsafe extern "C" fn(
            *mut c_void,
            *mut bindings::net_device,
            *const CxlfEthtoolParams,
            u32,
        ) -> c_int,
    >,
    pub(crate) string_count: Option<unsafe extern "C" fn(*mut c_void, u32) -> c_int>,
    pub(crate) strings: Option<unsafe extern "C" fn(*mut c_void, u32, *mut u8, u32)>,
    pub(crate) stat_values: Option<unsafe extern "C" fn(*mut c_void, *mut u64, u32)>,
    pub(crate) tx_timeout:
        Option<unsafe extern "C" fn(*mut c_void, *mut bindings::net_device, c_uint)>,
}

/// `struct cxlf_dax_driver`: a dax bus driver, owned by C.
#[repr(C)]
pub(crate) struct CxlfDaxDriver {
    _opaque: [u8; 0],
}

/// `struct dev_dax`, private to drivers/dax.
#[repr(C)]
pub(crate) struct RawDevDax {
    _opaque: [u8; 0],
}

extern "C" {
    pub(crate) fn cxlf_sysfs_attr_init(attr: *mut bindings::attribute);

    pub(crate) fn cxlf_vm_flags_set(
        vma: *mut bindings::vm_area_struct,
        flags: bindings::vm_flags_t,
    );
    pub(crate) fn cxlf_vm_flags_clear(
        vma: *mut bindings::vm_area_struct,
        flags: bindings::vm_flags_t,
    );
    pub(crate) fn cxlf_pgprot_noncached(prot: bindings::pgprot_t) -> bindings::pgprot_t;
    pub(crate) fn cxlf_pfn_to_pfn_t(pfn: c_ulong, devmap: bool) -> bindings::pfn_t;

    pub(crate) fn cxlf_pfn_to_page(pfn: c_ulong) -> *mut bindings::page;
    pub(crate) fn cxlf_page_ref_count(page: *const bindings::page) -> c_int;
    pub(crate) fn cxlf_cond_resched();

    pub(crate) fn cxlf_current_euid() -> u32;
    pub(crate) fn cxlf_ktime_boottime_ns() -> u64;

    pub(crate) fn cxlf_init_delayed_work(
        dwork: *mut bindings::delayed_work,
        func: bindings::work_func_t,
    );

    pub(crate) fn cxlf_tracepoint_unregister(
        tp: *mut bindings::tracepoint,
        probe: *mut c_void,
        data: *mut c_void,
    );
    pub(crate) fn cxlf_tracepoint_synchronize_unregister();

    pub(crate) fn cxlf_raw_spin_lock_init(
        lock: *mut bindings::raw_spinlock_t,
        name: *const c_char,
        key: *mut bindings::lock_class_key,
    );
    pub(crate) fn cxlf_raw_spin_lock_irqsave(lock: *mut bindings::raw_spinlock_t) -> c_ulong;
    pub(crate) fn cxlf_raw_spin_unlock_irqrestore(
        lock: *mut bindings::raw_spinlock_t,
        flags: c_ulong,
    );

    pub(crate) fn cxlf_this_cpu() -> c_uint;
    pub(crate) fn cxlf_ktime_ns() -> u64;
    pub(crate) fn cxlf_rcu_read_lock();
    pub(crate) fn cxlf_rcu_read_unlock();
    pub(crate) fn cxlf_task_cred(task: *const bindings::task_struct) -> *const bindings::cred;
    pub(crate) fn cxlf_first_thread(task: *mut bindings::task_struct)
        -> *mut bindings::task_struct;
    pub(crate) fn cxlf_next_thread(t: *mut bindings::task_struct) -> *mut bindings::task_struct;
    pub(crate) fn cxlf_set_current_state(state: c_uint);
    pub(crate) fn cxlf___set_current_state(state: c_uint);
    pub(crate) fn cxlf_fatal_signal_pending() -> bool;
    pub(crate) fn cxlf_dax_driver_register(
        probe: unsafe extern "C" fn(*mut RawDevDax) -> c_int,
        remove: unsafe extern "C" fn(*mut RawDevDax),
        data: *mut c_void,
    ) -> *mut CxlfDaxDriver;
    pub(crate) fn cxlf_dax_driver_unregister(drv: *mut CxlfDaxDriver);
    pub(crate) fn cxlf_pci_driver_register(
        vendor: u16,
        device: u16,
        probe: unsafe extern "C" fn(*mut bindings::pci_dev) -> c_int,
        remove: unsafe extern "C" fn(*mut bindings::pci_dev),
        data: *mut c_void,
    ) -> *mut CxlfPciDriver;
    pub(crate) fn cxlf_pci_driver_unregister(drv: *mut CxlfPciDriver);
    pub(crate) fn cxlf_pci_driver_data(pdev: *mut bindings::pci_dev) -> *mut c_void;
    pub(crate) fn cxlf_pci_device(pdev: *mut bindings::pci_dev) -> *mut bindings::device;
    pub(crate) fn cxlf_pci_vendor(pdev: *mut bindings::pci_dev) -> u16;
    pub(crate) fn cxlf_pci_device_id(pdev: *mut bindings::pci_dev) -> u16;
    pub(crate) fn cxlf_pci_resource(
        pdev: *mut bindings::pci_dev,
        bar: c_int,
        start: *mut u64,
        len: *mut u64,
        mem: *mut bool,
    ) -> c_int;
    pub(crate) fn cxlf_pci_alloc_msix(pdev: *mut bindings::pci_dev, n: c_uint) -> c_int;
    pub(crate) fn cxlf_netdev_alloc(
        txqs: c_uint,
        rxqs: c_uint,
        ops: *const CxlfNetdevOps,
        data: *mut c_void,
    ) -> *mut bindings::net_device;
    pub(crate) fn cxlf_netdev_register(
        dev: *mut bindings::net_device,
        parent: *mut bindings::device,
        mac: *const u8,
        min_mtu: c_uint,
        max_mtu: c_uint,
        watchdog_ms: c_uint,
    ) -> c_int;
    pub(crate) fn cxlf_netdev_set_carrier(dev: *mut bindings::net_device, on: bool);
    pub(crate) fn cxlf_netdev_name(dev: *mut bindings::net_device) -> *const c_char;
    pub(crate) fn cxlf_netdev_mtu(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_tx_all(dev: *mut bindings::net_device, start: bool);
    pub(crate) fn cxlf_skb_free(skb: *mut bindings::sk_buff);
    pub(crate) fn cxlf_netdev_open(dev: *mut bindings::net_device) -> c_int;
    pub(crate) fn cxlf_netdev_close(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_netdev_set_mtu(dev: *mut bindings::net_device, mtu: c_int) -> c_int;
    pub(crate) fn cxlf_netdev_carrier_ok(dev: *mut bindings::net_device) -> bool;
    pub(crate) fn cxlf_netdev_get_stats(dev: *mut bindings::net_device, out: *mut CxlfNetdevStats);
    pub(crate) fn cxlf_netdev_send_frame(dev: *mut bindings::net_device, len: c_uint) -> c_int;
    pub(crate) fn cxlf_netdev_hold(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_netdev_put(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_netdev_txq_stop(dev: *mut bindings::net_device, q: u16);
    pub(crate) fn cxlf_netdev_txq_wake(dev: *mut bindings::net_device, q: u16);
    pub(crate) fn cxlf_netdev_txq_stopped(dev: *mut bindings::net_device, q: u16) -> bool;
    pub(crate) fn cxlf_netdev_tx_disable(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_netdev_xmit_more() -> bool;
    pub(crate) fn cxlf_rtnl_trylock() -> bool;
    pub(crate) fn cxlf_rtnl_unlock();
    pub(crate) fn cxlf_netdev_set_queues(
        dev: *mut bindings::net_device,
        txq: c_uint,
        rxq: c_uint,
    ) -> c_int;
    pub(crate) fn cxlf_napi_add(
        dev: *mut bindings::net_device,
        poll: unsafe extern "C" fn(*mut c_void, *mut bindings::napi_struct, c_int) -> c_int,
        data: *mut c_void,
        rxq: u16,
    ) -> *mut bindings::napi_struct;
    pub(crate) fn cxlf_napi_del(napi: *mut bindings::napi_struct);
    pub(crate) fn cxlf_napi_set_irq(napi: *mut bindings::napi_struct, irq: c_int);
    pub(crate) fn cxlf_napi_enable(napi: *mut bindings::napi_struct);
    pub(crate) fn cxlf_napi_disable(napi: *mut bindings::napi_struct);
    pub(crate) fn cxlf_napi_schedule(napi: *mut bindings::napi_struct);
    pub(crate) fn cxlf_napi_complete_done(napi: *mut bindings::napi_struct, work: c_int) -> bool;
    pub(crate) fn cxlf_napi_dev(napi: *mut bindings::napi_struct) -> *mut bindings::net_device;
    pub(crate) fn cxlf_napi_receive(
        napi: *mut bindings::napi_struct,
        data: *const c_void,
        len: c_uint,
    ) -> c_int;
    pub(crate) fn cxlf_dev_dax_driver_data(dev_dax: *mut RawDevDax) -> *mut c_void;
    pub(crate) fn cxlf_dev_dax_device(dev_dax: *mut RawDevDax) -> *mut bindings::device;
    pub(crate) fn cxlf_dev_dax_nr_ranges(dev_dax: *const RawDevDax) -> c_int;
    pub(crate) fn cxlf_dev_dax_range(
        dev_dax: *const RawDevDax,
        i: c_int,
        start: *mut u64,
        end: *mut u64,
        pgoff: *mut u64,
    ) -> c_int;
    pub(crate) fn cxlf_dev_dax_align(dev_dax: *const RawDevDax) -> c_uint;
    pub(crate) fn cxlf_dev_dax_id(dev_dax: *const RawDevDax) -> c_int;
    pub(crate) fn cxlf_dev_dax_region_id(dev_dax: *const RawDevDax) -> c_int;
    pub(crate) fn cxlf_dev_dax_target_node(dev_dax: *const RawDevDax) -> c_int;
    pub(crate) fn cxlf_dev_dax_inode(dev_dax: *mut RawDevDax) -> *mut bindings::inode;
}
