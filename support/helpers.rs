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

/// `struct cxlf_periodic`: a self-requeueing delayed work, owned by C.
#[repr(C)]
pub(crate) struct CxlfPeriodic {
    _opaque: [u8; 0],
}

/// `struct cxlf_dir`: a sysfs directory, owned by C (its kobject).
#[repr(C)]
pub(crate) struct CxlfDir {
    _opaque: [u8; 0],
}

extern "C" {
    pub(crate) fn cxlf_sysfs_attr_init(attr: *mut bindings::attribute);

    pub(crate) fn cxlf_dir_create(
        parent: *mut bindings::kobject,
        name: *const c_char,
        data: *mut c_void,
        attr_names: *const *const c_char,
        nr_attrs: c_uint,
        show: Option<unsafe extern "C" fn(*mut c_void, c_uint, *mut c_char) -> isize>,
    ) -> *mut CxlfDir;
    pub(crate) fn cxlf_dir_destroy(dir: *mut CxlfDir);
    pub(crate) fn cxlf_dir_kobject(dir: *mut CxlfDir) -> *mut bindings::kobject;

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

    pub(crate) fn cxlf_pagemap_create(
        start: u64,
        len: u64,
        nid: c_int,
        vaddr: *mut *mut c_void,
    ) -> *mut bindings::dev_pagemap;
    pub(crate) fn cxlf_pagemap_destroy(pgmap: *mut bindings::dev_pagemap);
    pub(crate) fn cxlf_pages_referenced(pfn: c_ulong, nr: c_ulong) -> c_ulong;
    pub(crate) fn cxlf_clear_flush(addr: *mut c_void, len: usize);

    pub(crate) fn cxlf_current_euid() -> u32;
    pub(crate) fn cxlf_ktime_boottime_ns() -> u64;

    pub(crate) fn cxlf_periodic_start(
        func: unsafe extern "C" fn(*mut c_void) -> c_uint,
        ctx: *mut c_void,
        first_ms: c_uint,
        wq_name: *const c_char,
    ) -> *mut CxlfPeriodic;
    pub(crate) fn cxlf_periodic_stop(periodic: *mut CxlfPeriodic);

    pub(crate) fn cxlf_tracepoint_register(
        name: *const c_char,
        probe: *mut c_void,
        data: *mut c_void,
    ) -> *mut c_void;
    pub(crate) fn cxlf_tracepoint_unregister(
        tp: *mut c_void,
        probe: *mut c_void,
        data: *mut c_void,
    );
    pub(crate) fn cxlf_tracepoint_sync();

    pub(crate) fn cxlf_task_work_add(
        task: *mut bindings::task_struct,
        work: *mut bindings::callback_head,
        signal: bool,
        no_alloc: bool,
    ) -> c_int;

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
    pub(crate) fn cxlf_sleep_until_killable(abs_ns: u64, slack_ns: u64) -> bool;
    pub(crate) fn cxlf_get_task_by_vpid(nr: bindings::pid_t) -> *mut bindings::task_struct;
    pub(crate) fn cxlf_task_is_user(task: *const bindings::task_struct) -> bool;
    pub(crate) fn cxlf_task_exiting(task: *const bindings::task_struct) -> bool;
    pub(crate) fn cxlf_task_tgid(task: *const bindings::task_struct) -> bindings::pid_t;
    pub(crate) fn cxlf_task_vpid(task: *const bindings::task_struct) -> bindings::pid_t;
    pub(crate) fn cxlf_may_renice(task: *const bindings::task_struct) -> bool;
    pub(crate) fn cxlf_perf_counter_create(
        task: *mut bindings::task_struct,
        type_: u32,
        config: u64,
    ) -> *mut bindings::perf_event;
    pub(crate) fn cxlf_perf_counter_read(event: *mut bindings::perf_event) -> u64;
    pub(crate) fn cxlf_perf_counter_release(event: *mut bindings::perf_event);

    pub(crate) fn cxlf_for_each_thread(
        task: *mut bindings::task_struct,
        func: unsafe extern "C" fn(*mut c_void, *mut bindings::task_struct) -> bool,
        ctx: *mut c_void,
    );

    pub(crate) fn cxlf_pci_device(pdev: *mut bindings::pci_dev) -> *mut bindings::device;
    pub(crate) fn cxlf_pci_vendor(pdev: *mut bindings::pci_dev) -> u16;
    pub(crate) fn cxlf_pci_device_id(pdev: *mut bindings::pci_dev) -> u16;
    pub(crate) fn cxlf_pci_resource(
        pdev: *mut bindings::pci_dev,
        bar: c_int,
    ) -> *mut bindings::resource;
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
}
