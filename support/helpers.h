/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C side of the cxlfabric support layer: only what Rust cannot reach
 * through 6.12's bindings (static inlines, macros, structures that
 * bindgen does not see or cannot express). Each definition in helpers.c
 * says why it is C. Only the Rust wrappers in support/ call these, through
 * support/helpers.rs. Registrations return an ERR_PTR on failure.
 */
#ifndef CXLFABRIC_SUPPORT_HELPERS_H
#define CXLFABRIC_SUPPORT_HELPERS_H

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pfn_t.h>

/* sysfs attributes (of directories and misc devices). */
struct attribute;
void cxlf_sysfs_attr_init(struct attribute *attr);

/* Setting up a VMA in ->mmap, and page-frame entries for its faults. */
void cxlf_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags);
void cxlf_vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags);
pgprot_t cxlf_pgprot_noncached(pgprot_t prot);
pfn_t cxlf_pfn_to_pfn_t(unsigned long pfn, bool devmap);

/* Struct pages, ZONE_DEVICE pages, and their users. */
struct page;
struct page *cxlf_pfn_to_page(unsigned long pfn);
int cxlf_page_ref_count(const struct page *page);
void cxlf_get_page(struct page *page);
void cxlf_put_page(struct page *page);
void cxlf_cond_resched(void);

/* Writing back a range of non-coherent shared memory. */
void cxlf_write_back(void *addr, size_t len);

/* The calling task, and the clock. */
u32 cxlf_current_euid(void);
u64 cxlf_ktime_boottime_ns(void);

/* Delayed work. */
struct delayed_work;
void cxlf_init_delayed_work(struct delayed_work *dwork, work_func_t func);

/*
 * A module parameter, defined in the module's own helpers.c and read
 * through support::params (module! has no parameters in 6.12).
 */
#define CXLF_PARAM_UINT(pname, value, desc)                                   \
	static unsigned int pname = value;                                    \
	module_param(pname, uint, 0444);                                      \
	MODULE_PARM_DESC(pname, desc);                                        \
	unsigned int cxlf_param_##pname(void);                                \
	unsigned int cxlf_param_##pname(void)                                 \
	{                                                                     \
		return READ_ONCE(pname);                                      \
	}

/*
 * A string module parameter of at most 31 bytes (module_param_string()
 * refuses longer ones), read through support::params. Read-only (0444),
 * so it does not change after load.
 */
#define CXLF_PARAM_STRING(pname, desc)                                        \
	static char pname[32];                                                \
	module_param_string(pname, pname, sizeof(pname), 0444);               \
	MODULE_PARM_DESC(pname, desc);                                        \
	const char *cxlf_param_##pname(void);                                 \
	const char *cxlf_param_##pname(void)                                  \
	{                                                                     \
		return pname;                                                 \
	}

/* Probes on the kernel's tracepoints. */
struct tracepoint;
void cxlf_tracepoint_unregister(struct tracepoint *tp, void *probe, void *data);
void cxlf_tracepoint_synchronize_unregister(void);

/* Raw spinlocks taken with interrupts off. */
void cxlf_raw_spin_lock_init(raw_spinlock_t *lock, const char *name,
			     struct lock_class_key *key);
unsigned long cxlf_raw_spin_lock_irqsave(raw_spinlock_t *lock);
void cxlf_raw_spin_unlock_irqrestore(raw_spinlock_t *lock, unsigned long flags);

/* CPUs, the monotonic clock, RCU, tasks, and the current task's state. */
struct cred;
unsigned int cxlf_this_cpu(void);
u64 cxlf_ktime_ns(void);
void cxlf_rcu_read_lock(void);
void cxlf_rcu_read_unlock(void);
const struct cred *cxlf_task_cred(const struct task_struct *task);
struct task_struct *cxlf_first_thread(struct task_struct *task);
struct task_struct *cxlf_next_thread(struct task_struct *t);
void cxlf_set_current_state(unsigned int state);
void cxlf___set_current_state(unsigned int state);
bool cxlf_fatal_signal_pending(void);

/* PCI devices (struct pci_dev is opaque to Rust). */
struct pci_dev;
struct resource;
struct device *cxlf_pci_device(struct pci_dev *pdev);
u16 cxlf_pci_vendor(struct pci_dev *pdev);
u16 cxlf_pci_device_id(struct pci_dev *pdev);
struct resource *cxlf_pci_resource(struct pci_dev *pdev, int bar);

/* Network devices (struct net_device is opaque to Rust). */
struct device;
struct ethtool_ops;
struct net_device;
struct net_device_ops;
struct sk_buff;
void *cxlf_netdev_priv(struct net_device *dev);
struct kobject;
struct kobject *cxlf_netdev_kobj(struct net_device *dev);
void cxlf_netdev_set_netdev_ops(struct net_device *dev,
				const struct net_device_ops *ops);
void cxlf_netdev_set_ethtool_ops(struct net_device *dev,
				 const struct ethtool_ops *ops);
void cxlf_netdev_set_parent(struct net_device *dev, struct device *parent);
void cxlf_netdev_set_mac(struct net_device *dev, const u8 *mac);
void cxlf_netdev_set_min_mtu(struct net_device *dev, unsigned int mtu);
void cxlf_netdev_set_max_mtu(struct net_device *dev, unsigned int mtu);
void cxlf_netdev_set_watchdog_ms(struct net_device *dev, unsigned int ms);
const char *cxlf_netdev_name(struct net_device *dev);
int cxlf_netdev_ifindex_here(struct net_device *dev);
const u8 *cxlf_netdev_addr(struct net_device *dev);
const char *cxlf_netdev_parent_name(struct net_device *dev);
unsigned int cxlf_netdev_mtu(struct net_device *dev);
void cxlf_netdev_write_mtu(struct net_device *dev, unsigned int mtu);
unsigned int cxlf_netdev_num_tx_queues(struct net_device *dev);
unsigned int cxlf_netdev_real_num_tx_queues(struct net_device *dev);
bool cxlf_netdev_carrier_ok(struct net_device *dev);
void cxlf_netdev_tx_start_all(struct net_device *dev);
void cxlf_netdev_tx_stop_all(struct net_device *dev);
void cxlf_netdev_tx_disable(struct net_device *dev);
void cxlf_netdev_txq_stop(struct net_device *dev, u16 q);
void cxlf_netdev_txq_wake(struct net_device *dev, u16 q);
bool cxlf_netdev_xmit_more(void);
void cxlf_netdev_hold(struct net_device *dev);
void cxlf_netdev_put(struct net_device *dev);
void cxlf_skb_free(struct sk_buff *skb);
void cxlf_skb_reserve(struct sk_buff *skb, unsigned int len);
void cxlf_skb_reset_mac_header(struct sk_buff *skb);
void cxlf_skb_set_protocol(struct sk_buff *skb, __be16 protocol);

/* Interfaces lent by other drivers (support/abstractions/netlend/). */
#include <net/net_trackers.h>
int cxlf_netdev_ifindex(struct net_device *dev);
unsigned int cxlf_netdev_priv_flags(struct net_device *dev);
unsigned int cxlf_netdev_type(struct net_device *dev);
unsigned int cxlf_netdev_addr_len(struct net_device *dev);
bool cxlf_netdev_registered(struct net_device *dev);
unsigned int cxlf_netdev_uc_count(struct net_device *dev);
void *cxlf_netdev_rx_handler_data(struct net_device *dev);
void cxlf_netdev_hold_tracked(struct net_device *dev, netdevice_tracker *tracker);
void cxlf_netdev_put_tracked(struct net_device *dev, netdevice_tracker *tracker);
struct net_device *cxlf_netdev_notifier_dev(void *info);
unsigned int cxlf_netdev_ll_reserved(struct net_device *dev);
bool cxlf_netdev_gro_on(struct net_device *dev);
void cxlf_netdev_want_gro(struct net_device *dev, bool on);
unsigned int cxlf_skb_pkt_type(struct sk_buff *skb);
__be16 cxlf_skb_protocol(struct sk_buff *skb);
int cxlf_skb_mac_offset(struct sk_buff *skb);

/* Receiving into page fragments (support/abstractions/rxfrag.rs). */
unsigned int cxlf_skb_nr_frags(struct sk_buff *skb);
void cxlf_skb_add_rx_frag(struct sk_buff *skb, unsigned int i,
			  struct page *page, unsigned int off,
			  unsigned int len, unsigned int truesize);
void cxlf_skb_set_shared_frag(struct sk_buff *skb);

/* NAPI. */
bool cxlf_in_interrupt(void);
void cxlf_local_bh_disable(void);
void cxlf_local_bh_enable(void);
void cxlf_skb_record_rx_queue(struct sk_buff *skb, u16 rxq);

#endif
