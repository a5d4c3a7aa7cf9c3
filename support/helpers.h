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

/* ZONE_DEVICE pages, and their users. */
struct page;
struct page *cxlf_pfn_to_page(unsigned long pfn);
int cxlf_page_ref_count(const struct page *page);
void cxlf_cond_resched(void);

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

/*
 * The dax bus. struct dax_device_driver and struct dev_dax are declared in
 * drivers/dax/bus.h and drivers/dax/dax-private.h, private to drivers/dax:
 * building needs a full kernel source tree, not a distribution's header
 * package (see Documentation/cxlfabric/support.rst).
 */
struct dev_dax;
struct cxlf_dax_driver;

struct cxlf_dax_driver *cxlf_dax_driver_register(int (*probe)(struct dev_dax *),
						 void (*remove)(struct dev_dax *),
						 void *data);
void cxlf_dax_driver_unregister(struct cxlf_dax_driver *drv);
void *cxlf_dev_dax_driver_data(struct dev_dax *dev_dax);
struct device *cxlf_dev_dax_device(struct dev_dax *dev_dax);
int cxlf_dev_dax_nr_ranges(const struct dev_dax *dev_dax);
int cxlf_dev_dax_range(const struct dev_dax *dev_dax, int i, u64 *start,
		       u64 *end, u64 *pgoff);
unsigned int cxlf_dev_dax_align(const struct dev_dax *dev_dax);
int cxlf_dev_dax_id(const struct dev_dax *dev_dax);
int cxlf_dev_dax_region_id(const struct dev_dax *dev_dax);
int cxlf_dev_dax_target_node(const struct dev_dax *dev_dax);
struct inode *cxlf_dev_dax_inode(struct dev_dax *dev_dax);

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

/* PCI drivers and devices (struct pci_driver, pci_dev are opaque to Rust). */
struct pci_dev;
struct cxlf_pci_driver;
struct cxlf_pci_driver *cxlf_pci_driver_register(u16 vendor, u16 device,
						 int (*probe)(struct pci_dev *),
						 void (*remove)(struct pci_dev *),
						 void *data);
void cxlf_pci_driver_unregister(struct cxlf_pci_driver *d);
void *cxlf_pci_driver_data(struct pci_dev *pdev);
struct device *cxlf_pci_device(struct pci_dev *pdev);
u16 cxlf_pci_vendor(struct pci_dev *pdev);
u16 cxlf_pci_device_id(struct pci_dev *pdev);
int cxlf_pci_resource(struct pci_dev *pdev, int bar, u64 *start, u64 *len,
		      bool *mem);
int cxlf_pci_alloc_msix(struct pci_dev *pdev, unsigned int n);

/* Network devices (struct net_device is opaque to Rust). */
struct net_device;
struct sk_buff;
struct ethtool_drvinfo;
struct cxlf_netdev_stats {
	u64 rx_packets, tx_packets, rx_bytes, tx_bytes;
	u64 rx_errors, tx_errors, rx_dropped, tx_dropped;
};
/* What ethtool -g/-G, -l/-L, -C and --show/set-priv-flags change. */
struct cxlf_ethtool_params {
	u32 rx_ring, tx_ring, rx_ring_max, tx_ring_max;
	u32 channels, channels_max;
	u32 rx_usecs, rx_frames;
	u32 priv_flags;
};
#define CXLF_ET_RINGS 1
#define CXLF_ET_CHANNELS 2
#define CXLF_ET_COALESCE 3
#define CXLF_ET_PRIV_FLAGS 4
/* String sets: ethtool -S counters, private flags. */
#define CXLF_ET_SET_STATS 0
#define CXLF_ET_SET_PRIV_FLAGS 1
struct cxlf_netdev_ops {
	int (*open)(void *data, struct net_device *dev);
	int (*stop)(void *data, struct net_device *dev);
	/* 0: taken (sent or dropped); nonzero: busy, keep it queued. */
	int (*xmit)(void *data, struct net_device *dev, struct sk_buff *skb,
		    u16 queue);
	void (*stats)(void *data, struct cxlf_netdev_stats *stats);
	int (*change_mtu)(void *data, struct net_device *dev, int mtu);
	void (*drvinfo)(void *data, struct ethtool_drvinfo *info);
	int (*get_params)(void *data, struct cxlf_ethtool_params *p);
	int (*set_params)(void *data, struct net_device *dev,
			  const struct cxlf_ethtool_params *p, u32 what);
	/* Strings are ETH_GSTRING_LEN bytes each, `n` of them. */
	int (*string_count)(void *data, u32 set);
	void (*strings)(void *data, u32 set, u8 *buf, u32 n);
	void (*stat_values)(void *data, u64 *out, u32 n);
	/* The stack's TX watchdog named TX queue `queue` (softirq, with the
	 * TX queues frozen); NULL: no watchdog. */
	void (*tx_timeout)(void *data, struct net_device *dev,
			   unsigned int queue);
};
struct net_device *cxlf_netdev_alloc(unsigned int txqs, unsigned int rxqs,
				     const struct cxlf_netdev_ops *ops,
				     void *data);
int cxlf_netdev_register(struct net_device *dev, struct device *parent,
			 const u8 *mac, unsigned int min_mtu,
			 unsigned int max_mtu, unsigned int watchdog_ms);
void cxlf_netdev_set_carrier(struct net_device *dev, bool on);
const char *cxlf_netdev_name(struct net_device *dev);
unsigned int cxlf_netdev_mtu(struct net_device *dev);
void cxlf_netdev_tx_all(struct net_device *dev, bool start);
void cxlf_skb_free(struct sk_buff *skb);
int cxlf_netdev_open(struct net_device *dev);
void cxlf_netdev_close(struct net_device *dev);
int cxlf_netdev_set_mtu(struct net_device *dev, int mtu);
bool cxlf_netdev_carrier_ok(struct net_device *dev);
void cxlf_netdev_get_stats(struct net_device *dev, struct cxlf_netdev_stats *out);
int cxlf_netdev_send_frame(struct net_device *dev, unsigned int len);
void cxlf_netdev_hold(struct net_device *dev);
void cxlf_netdev_put(struct net_device *dev);
void cxlf_netdev_txq_stop(struct net_device *dev, u16 q);
void cxlf_netdev_txq_wake(struct net_device *dev, u16 q);
bool cxlf_netdev_txq_stopped(struct net_device *dev, u16 q);
void cxlf_netdev_tx_disable(struct net_device *dev);
bool cxlf_netdev_xmit_more(void);
bool cxlf_rtnl_trylock(void);
void cxlf_rtnl_unlock(void);
int cxlf_netdev_set_queues(struct net_device *dev, unsigned int txq,
			   unsigned int rxq);
struct napi_struct;
struct napi_struct *cxlf_napi_add(struct net_device *dev,
				  int (*poll)(void *, struct napi_struct *, int),
				  void *data, u16 rxq);
void cxlf_napi_del(struct napi_struct *napi);
void cxlf_napi_set_irq(struct napi_struct *napi, int irq);
void cxlf_napi_enable(struct napi_struct *napi);
void cxlf_napi_disable(struct napi_struct *napi);
void cxlf_napi_schedule(struct napi_struct *napi);
bool cxlf_napi_complete_done(struct napi_struct *napi, int work);
struct net_device *cxlf_napi_dev(struct napi_struct *napi);
int cxlf_napi_receive(struct napi_struct *napi, const void *data,
		      unsigned int len);

#endif
