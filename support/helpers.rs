// SPDX-License-Identifier: GPL-2.0

//! Declarations of the C helpers in `helpers/<part>.c` (see `helpers.h`),
//! each compiled with its part, whose C object the module then links. Only
//! the wrappers in this crate call them. Whatever the 6.12 bindings give
//! Rust directly (exported functions, constants, plain struct fields) is
//! used from `kernel::bindings` instead.

// The C structs are only passed by pointer. Without CONFIG_LOCKDEP they
// contain empty `lockdep_map`s, which this lint flags even behind a
// pointer; the kernel's bindings crate allows it for the same reason.
#![allow(improper_ctypes)]

// Each part's declarations use some of these; a module may have none.
#[allow(unused_imports)]
use super::bindings;
#[allow(unused_imports)]
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

#[cfg(cxlf_support = "cred")]
extern "C" {
    pub(crate) fn cxlf_current_euid() -> u32;
}

#[cfg(cxlf_support = "mm")]
extern "C" {
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
}

#[cfg(cxlf_support = "napi")]
extern "C" {
    pub(crate) fn cxlf_in_interrupt() -> bool;
    pub(crate) fn cxlf_local_bh_disable();
    pub(crate) fn cxlf_local_bh_enable();
    pub(crate) fn cxlf_skb_record_rx_queue(skb: *mut bindings::sk_buff, rxq: u16);
}

#[cfg(cxlf_support = "rxfrag")]
extern "C" {
    pub(crate) fn cxlf_skb_nr_frags(skb: *mut bindings::sk_buff) -> c_uint;
    pub(crate) fn cxlf_skb_add_rx_frag(
        skb: *mut bindings::sk_buff,
        i: c_uint,
        page: *mut bindings::page,
        off: c_uint,
        len: c_uint,
        truesize: c_uint,
    );
    pub(crate) fn cxlf_skb_set_shared_frag(skb: *mut bindings::sk_buff);
}

// An interface's sysfs directory as a parent of the driver's own.
#[cfg(all(cxlf_support = "netdev", cxlf_support = "sysfs"))]
extern "C" {
    pub(crate) fn cxlf_netdev_kobj(dev: *mut bindings::net_device) -> *mut bindings::kobject;
}

#[cfg(cxlf_support = "netdev")]
extern "C" {
    pub(crate) fn cxlf_netdev_priv(dev: *mut bindings::net_device) -> *mut c_void;
    pub(crate) fn cxlf_netdev_set_netdev_ops(
        dev: *mut bindings::net_device,
        ops: *const bindings::net_device_ops,
    );
    pub(crate) fn cxlf_netdev_set_ethtool_ops(
        dev: *mut bindings::net_device,
        ops: *const bindings::ethtool_ops,
    );
    pub(crate) fn cxlf_netdev_set_parent(
        dev: *mut bindings::net_device,
        parent: *mut bindings::device,
    );
    pub(crate) fn cxlf_netdev_set_mac(dev: *mut bindings::net_device, mac: *const u8);
    pub(crate) fn cxlf_netdev_set_min_mtu(dev: *mut bindings::net_device, mtu: c_uint);
    pub(crate) fn cxlf_netdev_set_max_mtu(dev: *mut bindings::net_device, mtu: c_uint);
    pub(crate) fn cxlf_netdev_set_watchdog_ms(dev: *mut bindings::net_device, ms: c_uint);
    pub(crate) fn cxlf_netdev_name(dev: *mut bindings::net_device) -> *const c_char;
    pub(crate) fn cxlf_netdev_ifindex_here(dev: *mut bindings::net_device) -> c_int;
    pub(crate) fn cxlf_netdev_addr(dev: *mut bindings::net_device) -> *const u8;
    pub(crate) fn cxlf_netdev_parent_name(dev: *mut bindings::net_device) -> *const c_char;
    pub(crate) fn cxlf_netdev_mtu(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_write_mtu(dev: *mut bindings::net_device, mtu: c_uint);
    pub(crate) fn cxlf_netdev_num_tx_queues(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_real_num_tx_queues(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_carrier_ok(dev: *mut bindings::net_device) -> bool;
    pub(crate) fn cxlf_netdev_tx_start_all(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_netdev_tx_stop_all(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_netdev_tx_disable(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_netdev_txq_stop(dev: *mut bindings::net_device, q: u16);
    pub(crate) fn cxlf_netdev_txq_wake(dev: *mut bindings::net_device, q: u16);
    pub(crate) fn cxlf_netdev_xmit_more() -> bool;
    pub(crate) fn cxlf_netdev_hold(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_netdev_put(dev: *mut bindings::net_device);
    pub(crate) fn cxlf_skb_free(skb: *mut bindings::sk_buff);
    pub(crate) fn cxlf_skb_reserve(skb: *mut bindings::sk_buff, len: c_uint);
    pub(crate) fn cxlf_skb_reset_mac_header(skb: *mut bindings::sk_buff);
    pub(crate) fn cxlf_skb_set_protocol(skb: *mut bindings::sk_buff, protocol: u16);
}

#[cfg(cxlf_support = "netlend")]
extern "C" {
    pub(crate) fn cxlf_netdev_ifindex(dev: *mut bindings::net_device) -> c_int;
    pub(crate) fn cxlf_netdev_priv_flags(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_type(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_addr_len(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_registered(dev: *mut bindings::net_device) -> bool;
    pub(crate) fn cxlf_netdev_uc_count(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_rx_handler_data(dev: *mut bindings::net_device) -> *mut c_void;
    pub(crate) fn cxlf_netdev_hold_tracked(
        dev: *mut bindings::net_device,
        tracker: *mut bindings::netdevice_tracker,
    );
    pub(crate) fn cxlf_netdev_put_tracked(
        dev: *mut bindings::net_device,
        tracker: *mut bindings::netdevice_tracker,
    );
    pub(crate) fn cxlf_netdev_notifier_dev(info: *mut c_void) -> *mut bindings::net_device;
    pub(crate) fn cxlf_netdev_ll_reserved(dev: *mut bindings::net_device) -> c_uint;
    pub(crate) fn cxlf_netdev_gro_on(dev: *mut bindings::net_device) -> bool;
    pub(crate) fn cxlf_netdev_want_gro(dev: *mut bindings::net_device, on: bool);
    pub(crate) fn cxlf_skb_pkt_type(skb: *mut bindings::sk_buff) -> c_uint;
    pub(crate) fn cxlf_skb_protocol(skb: *mut bindings::sk_buff) -> u16;
    pub(crate) fn cxlf_skb_mac_offset(skb: *mut bindings::sk_buff) -> c_int;
}

#[cfg(cxlf_support = "page")]
extern "C" {
    pub(crate) fn cxlf_pfn_to_page(pfn: c_ulong) -> *mut bindings::page;
    pub(crate) fn cxlf_page_ref_count(page: *const bindings::page) -> c_int;
    pub(crate) fn cxlf_get_page(page: *mut bindings::page);
    pub(crate) fn cxlf_put_page(page: *mut bindings::page);
}

#[cfg(cxlf_support = "pagemap")]
extern "C" {
    pub(crate) fn cxlf_cond_resched();
}

#[cfg(all(cxlf_support = "region", not(cxlf_region_provider)))]
extern "C" {
    pub(crate) fn cxlf_write_back(addr: *mut c_void, len: usize);
}

#[cfg(cxlf_support = "pci")]
extern "C" {
    pub(crate) fn cxlf_pci_device(pdev: *mut bindings::pci_dev) -> *mut bindings::device;
    pub(crate) fn cxlf_pci_vendor(pdev: *mut bindings::pci_dev) -> u16;
    pub(crate) fn cxlf_pci_device_id(pdev: *mut bindings::pci_dev) -> u16;
    pub(crate) fn cxlf_pci_resource(
        pdev: *mut bindings::pci_dev,
        bar: c_int,
    ) -> *mut bindings::resource;
}

#[cfg(cxlf_support = "spinlock_irq")]
extern "C" {
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
}

#[cfg(cxlf_support = "sysfs")]
extern "C" {
    pub(crate) fn cxlf_sysfs_attr_init(attr: *mut bindings::attribute);
}

#[cfg(cxlf_support = "task")]
extern "C" {
    pub(crate) fn cxlf_this_cpu() -> c_uint;
    pub(crate) fn cxlf_rcu_read_lock();
    pub(crate) fn cxlf_rcu_read_unlock();
    pub(crate) fn cxlf_task_cred(task: *const bindings::task_struct) -> *const bindings::cred;
    pub(crate) fn cxlf_first_thread(task: *mut bindings::task_struct)
        -> *mut bindings::task_struct;
    pub(crate) fn cxlf_next_thread(t: *mut bindings::task_struct) -> *mut bindings::task_struct;
    pub(crate) fn cxlf_set_current_state(state: c_uint);
    pub(crate) fn cxlf___set_current_state(state: c_uint);
    pub(crate) fn cxlf_fatal_signal_pending() -> bool;
}

#[cfg(cxlf_support = "time")]
extern "C" {
    pub(crate) fn cxlf_ktime_boottime_ns() -> u64;
    pub(crate) fn cxlf_ktime_ns() -> u64;
}

#[cfg(cxlf_support = "tracepoint")]
extern "C" {
    pub(crate) fn cxlf_tracepoint_unregister(
        tp: *mut bindings::tracepoint,
        probe: *mut c_void,
        data: *mut c_void,
    );
    pub(crate) fn cxlf_tracepoint_synchronize_unregister();
}

#[cfg(cxlf_support = "workqueue")]
extern "C" {
    pub(crate) fn cxlf_init_delayed_work(
        dwork: *mut bindings::delayed_work,
        func: bindings::work_func_t,
    );
}
