// SPDX-License-Identifier: GPL-2.0
/*
 * Each module compiles this file once, through its own <dir>/helpers.c
 * (an object linked into two modules is a kbuild error). Every exported
 * helper says, "In C:", why Rust cannot do it through the 6.12 bindings.
 */
#include "helpers.h"

#include <asm/cacheflush.h>
#include <linux/cred.h>
#include <linux/dax.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/hrtimer.h>
#include <linux/kobject.h>
#include <linux/memremap.h>
#include <linux/netdevice.h>
#include <linux/perf_event.h>
#include <linux/pci.h>
#include <linux/rtnetlink.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>

/* Private to drivers/dax; found through -I$(srctree)/drivers/dax. */
#include "bus.h"
#include "dax-private.h"

/*
 * The miscdevice and a per-registration copy of the file operations, so
 * that .owner is the registering module: the VFS then holds a module
 * reference for every open file, and the module cannot be unloaded under
 * an open file.
 */
struct cxlf_misc {
	struct miscdevice misc;
	struct file_operations fops;
	/* The registration's, and one per open file: see cxlf_misc_release. */
	refcount_t refs;
	int (*rust_open)(struct inode *inode, struct file *file);
	int (*rust_release)(struct inode *inode, struct file *file);
	void *data;
	char name[32];
	/* Read-only sysfs attributes of the device, all shown by `show`. */
	ssize_t (*show)(void *data, unsigned int index, char *buf);
	struct device_attribute *dattrs;
	struct attribute **attrs;
	struct attribute_group group;
	const struct attribute_group *groups[2];
};

static ssize_t cxlf_misc_attr_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	/* misc_register() makes the miscdevice the device's drvdata. */
	struct miscdevice *misc = dev_get_drvdata(dev);
	struct cxlf_misc *m = container_of(misc, struct cxlf_misc, misc);

	return m->show(m->data, attr - m->dattrs, buf);
}

static void cxlf_misc_free(struct cxlf_misc *m)
{
	kfree(m->attrs);
	kfree(m->dattrs);
	kfree(m);
}

static void cxlf_misc_put(struct cxlf_misc *m)
{
	if (refcount_dec_and_test(&m->refs))
		cxlf_misc_free(m);
}

/* Files keep this module's reference through a static copy of no ops. */
static const struct file_operations cxlf_misc_retired_fops = {
	.owner = THIS_MODULE,
};

/* misc_open() has pointed f_op at m->fops and holds misc_mtx. */
static int cxlf_misc_open(struct inode *inode, struct file *file)
{
	struct cxlf_misc *m = container_of(file->f_op, struct cxlf_misc, fops);
	int ret = m->rust_open(inode, file);

	if (!ret)
		refcount_inc(&m->refs);
	return ret;
}

/*
 * Open files outlive the registration, and with it the file_operations
 * copy they point to. Each file holds a reference on the copy; after the
 * driver's release, f_op moves to a static table with the same owner,
 * because __fput() drops the module reference through f_op after ->release
 * returns. The copy goes with the last file (or the deregistration).
 */
static int cxlf_misc_release(struct inode *inode, struct file *file)
{
	struct cxlf_misc *m = container_of(file->f_op, struct cxlf_misc, fops);
	int ret = m->rust_release(inode, file);

	file->f_op = &cxlf_misc_retired_fops;
	cxlf_misc_put(m);
	return ret;
}

/* In C: struct miscdevice is not in 6.12's bindings_helper.h. */
struct cxlf_misc *cxlf_misc_register(const char *name, umode_t mode,
				     const struct file_operations *template,
				     struct module *owner, void *data,
				     const char *const *attr_names,
				     unsigned int nr_attrs,
				     ssize_t (*show)(void *data,
						     unsigned int index,
						     char *buf))
{
	struct cxlf_misc *m = kzalloc(sizeof(*m), GFP_KERNEL);
	unsigned int i;
	int err;

	if (!m)
		return ERR_PTR(-ENOMEM);
	if (strscpy(m->name, name, sizeof(m->name)) < 0) {
		kfree(m);
		return ERR_PTR(-ENAMETOOLONG);
	}
	if (nr_attrs) {
		m->dattrs = kcalloc(nr_attrs, sizeof(*m->dattrs), GFP_KERNEL);
		m->attrs = kcalloc(nr_attrs + 1, sizeof(*m->attrs), GFP_KERNEL);
		if (!m->dattrs || !m->attrs) {
			cxlf_misc_free(m);
			return ERR_PTR(-ENOMEM);
		}
		for (i = 0; i < nr_attrs; i++) {
			sysfs_attr_init(&m->dattrs[i].attr);
			m->dattrs[i].attr.name = attr_names[i];
			m->dattrs[i].attr.mode = 0444;
			m->dattrs[i].show = cxlf_misc_attr_show;
			m->attrs[i] = &m->dattrs[i].attr;
		}
		m->show = show;
		m->group.attrs = m->attrs;
		m->groups[0] = &m->group;
		m->misc.groups = m->groups;
	}
	m->fops = *template;
	m->fops.owner = owner;
	m->rust_open = template->open;
	m->rust_release = template->release;
	m->fops.open = cxlf_misc_open;
	m->fops.release = cxlf_misc_release;
	refcount_set(&m->refs, 1);
	m->data = data;
	m->misc.minor = MISC_DYNAMIC_MINOR;
	m->misc.name = m->name;
	m->misc.mode = mode;
	m->misc.fops = &m->fops;
	err = misc_register(&m->misc);
	if (err) {
		cxlf_misc_free(m);
		return ERR_PTR(err);
	}
	return m;
}

/*
 * device_destroy() drains running sysfs callbacks before it returns; open
 * files keep the file operations until they are released.
 * In C: struct cxlf_misc embeds a struct miscdevice.
 */
void cxlf_misc_deregister(struct cxlf_misc *m)
{
	misc_deregister(&m->misc);
	cxlf_misc_put(m);
}

/* In C: struct cxlf_misc embeds a struct miscdevice. */
int cxlf_misc_minor(const struct cxlf_misc *m)
{
	return m->misc.minor;
}

/*
 * misc_open() points private_data at the miscdevice before ->open runs.
 * In C: container_of() on a struct miscdevice.
 */
void *cxlf_misc_data_of_open_file(struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return container_of(misc, struct cxlf_misc, misc)->data;
}

/* In C: struct miscdevice is not in 6.12's bindings_helper.h. */
struct kobject *cxlf_misc_kobject(struct cxlf_misc *m)
{
	return &m->misc.this_device->kobj;
}

/*
 * A sysfs directory of read-only attributes, all shown by one callback
 * with the directory's data pointer. The kobject is the core's
 * (kobject_create_and_add: its release is core code, so a delayed release,
 * CONFIG_DEBUG_KOBJECT_RELEASE, never calls into an unloaded module);
 * the attributes and the data pointer are this module's, freed once
 * kobject_del() has removed the files. In C: kobj_attribute and
 * container_of().
 */
struct cxlf_dir_attr {
	struct kobj_attribute ka;
	struct cxlf_dir *dir;
	unsigned int index;
};

struct cxlf_dir {
	struct kobject *kobj;
	void *data;
	ssize_t (*show)(void *data, unsigned int index, char *buf);
	struct cxlf_dir_attr *attrs;
	struct attribute **ptrs;
	struct attribute_group group;
};

static ssize_t cxlf_dir_show(struct kobject *kobj, struct kobj_attribute *ka,
			     char *buf)
{
	struct cxlf_dir_attr *a = container_of(ka, struct cxlf_dir_attr, ka);

	return a->dir->show(a->dir->data, a->index, buf);
}

static void cxlf_dir_free(struct cxlf_dir *d)
{
	kfree(d->ptrs);
	kfree(d->attrs);
	kfree(d);
}

/*
 * NULL from kobject_create_and_add() is -ENOMEM, or a duplicate name
 * (which the callers prevent).
 */
struct cxlf_dir *cxlf_dir_create(struct kobject *parent, const char *name,
				 void *data, const char *const *attr_names,
				 unsigned int nr_attrs,
				 ssize_t (*show)(void *data, unsigned int index,
						 char *buf))
{
	struct cxlf_dir *d = kzalloc(sizeof(*d), GFP_KERNEL);
	unsigned int i;
	int err;

	if (!d)
		return ERR_PTR(-ENOMEM);
	d->attrs = kcalloc(nr_attrs, sizeof(*d->attrs), GFP_KERNEL);
	d->ptrs = kcalloc(nr_attrs + 1, sizeof(*d->ptrs), GFP_KERNEL);
	if (!d->attrs || !d->ptrs) {
		cxlf_dir_free(d);
		return ERR_PTR(-ENOMEM);
	}
	for (i = 0; i < nr_attrs; i++) {
		sysfs_attr_init(&d->attrs[i].ka.attr);
		d->attrs[i].ka.attr.name = attr_names[i];
		d->attrs[i].ka.attr.mode = 0444;
		d->attrs[i].ka.show = cxlf_dir_show;
		d->attrs[i].dir = d;
		d->attrs[i].index = i;
		d->ptrs[i] = &d->attrs[i].ka.attr;
	}
	d->group.attrs = d->ptrs;
	d->data = data;
	d->show = show;
	d->kobj = kobject_create_and_add(name, parent);
	if (!d->kobj) {
		cxlf_dir_free(d);
		return ERR_PTR(-ENOMEM);
	}
	if (nr_attrs) {
		err = sysfs_create_group(d->kobj, &d->group);
		if (err) {
			kobject_put(d->kobj);
			cxlf_dir_free(d);
			return ERR_PTR(err);
		}
	}
	return d;
}

/*
 * kobject_del() removes the directory and its files and waits for running
 * show callbacks (kernfs drains its active references), so the
 * attributes, and the caller's data, may be freed once this returns.
 */
void cxlf_dir_destroy(struct cxlf_dir *d)
{
	kobject_del(d->kobj);
	kobject_put(d->kobj);
	cxlf_dir_free(d);
}

/* In C: struct cxlf_dir is private to this file. */
struct kobject *cxlf_dir_kobject(struct cxlf_dir *d)
{
	return d->kobj;
}

struct cxlf_dax_driver {
	struct dax_device_driver dax;
	void *data;
};

/*
 * The dax bus names the driver after the module (KBUILD_MODNAME).
 * In C: struct dax_device_driver is private to drivers/dax.
 */
struct cxlf_dax_driver *cxlf_dax_driver_register(int (*probe)(struct dev_dax *),
						 void (*remove)(struct dev_dax *),
						 void *data)
{
	struct cxlf_dax_driver *d = kzalloc(sizeof(*d), GFP_KERNEL);
	int err;

	if (!d)
		return ERR_PTR(-ENOMEM);
	/*
	 * Device type: matches device-mode dax instances, but binds only to
	 * unbound ones; operators move an instance here with unbind/bind.
	 */
	d->dax.type = DAXDRV_DEVICE_TYPE;
	d->dax.probe = probe;
	d->dax.remove = remove;
	d->data = data;
	err = dax_driver_register(&d->dax);
	if (err) {
		kfree(d);
		return ERR_PTR(err);
	}
	return d;
}

/* In C: struct dax_device_driver is private to drivers/dax. */
void cxlf_dax_driver_unregister(struct cxlf_dax_driver *d)
{
	dax_driver_unregister(&d->dax);
	kfree(d);
}

/*
 * Only valid from probe/remove, while dev_dax is bound to our driver.
 * In C: struct dev_dax is private to drivers/dax.
 */
void *cxlf_dev_dax_driver_data(struct dev_dax *dev_dax)
{
	struct dax_device_driver *drv =
		container_of(dev_dax->dev.driver, struct dax_device_driver, drv);

	return container_of(drv, struct cxlf_dax_driver, dax)->data;
}

/* In C: struct dev_dax is private to drivers/dax. */
struct device *cxlf_dev_dax_device(struct dev_dax *dev_dax)
{
	return &dev_dax->dev;
}

/* In C: struct dev_dax is private to drivers/dax. */
int cxlf_dev_dax_nr_ranges(const struct dev_dax *dev_dax)
{
	return dev_dax->nr_range;
}

/* In C: struct dev_dax is private to drivers/dax. */
int cxlf_dev_dax_range(const struct dev_dax *dev_dax, int i, u64 *start,
		       u64 *end, u64 *pgoff)
{
	if (i < 0 || i >= dev_dax->nr_range)
		return -EINVAL;
	*start = dev_dax->ranges[i].range.start;
	*end = dev_dax->ranges[i].range.end;
	*pgoff = dev_dax->ranges[i].pgoff;
	return 0;
}

/* In C: struct dev_dax is private to drivers/dax. */
unsigned int cxlf_dev_dax_align(const struct dev_dax *dev_dax)
{
	return dev_dax->align;
}

/* In C: struct dev_dax is private to drivers/dax. */
int cxlf_dev_dax_id(const struct dev_dax *dev_dax)
{
	return dev_dax->id;
}

/*
 * The node device-dax gives the instance's pages.
 * In C: struct dev_dax is private to drivers/dax.
 */
int cxlf_dev_dax_target_node(const struct dev_dax *dev_dax)
{
	return dev_dax->target_node;
}

/*
 * The dax device's own inode (as device-dax's open uses): its address
 * space is where the instance's user mappings live, whoever opened the
 * file and through whichever device node. Valid while dev_dax is bound.
 * In C: struct dev_dax is private to drivers/dax.
 */
struct inode *cxlf_dev_dax_inode(struct dev_dax *dev_dax)
{
	return dax_inode(dev_dax->dax_dev);
}

/* In C: struct dev_dax is private to drivers/dax. */
int cxlf_dev_dax_region_id(const struct dev_dax *dev_dax)
{
	return dev_dax->region->id;
}

/* In C: vm_flags_set() is a static inline (it write-locks the VMA). */
void cxlf_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_set(vma, flags);
}

/* In C: vm_flags_clear() is a static inline (it write-locks the VMA). */
void cxlf_vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_clear(vma, flags);
}

/* In C: pgprot_noncached() is a macro. */
pgprot_t cxlf_pgprot_noncached(pgprot_t prot)
{
	return pgprot_noncached(prot);
}

/*
 * PFN_DEV alone: a special (struct-page-less) entry of a VM_PFNMAP
 * mapping. With PFN_MAP: a devmap entry of a ZONE_DEVICE page, so that
 * GUP, pins and the mempolicy walk find real pages (as device-dax maps).
 * In C: __pfn_to_pfn_t() is a static inline, PFN_DEV and PFN_MAP macros.
 */
pfn_t cxlf_pfn_to_pfn_t(unsigned long pfn, bool devmap)
{
	return __pfn_to_pfn_t(pfn, devmap ? PFN_DEV | PFN_MAP : PFN_DEV);
}

/* In C: struct dev_pagemap ends in a union with a flexible array. */
struct dev_pagemap *cxlf_pagemap_create(u64 start, u64 len, int nid,
					void **vaddr)
{
	struct dev_pagemap *pgmap = kzalloc(sizeof(*pgmap), GFP_KERNEL);
	void *addr;

	if (!pgmap)
		return ERR_PTR(-ENOMEM);
	/* Order-0 pages: a PMD maps 512 of them, as device-dax with 4K align. */
	pgmap->type = MEMORY_DEVICE_GENERIC;
	pgmap->range.start = start;
	pgmap->range.end = start + len - 1;
	pgmap->nr_range = 1;
	addr = memremap_pages(pgmap, nid);
	if (IS_ERR(addr)) {
		kfree(pgmap);
		return addr;
	}
	*vaddr = addr;
	return pgmap;
}

/* In C: frees the struct dev_pagemap cxlf_pagemap_create allocated. */
void cxlf_pagemap_destroy(struct dev_pagemap *pgmap)
{
	memunmap_pages(pgmap);
	kfree(pgmap);
}

/*
 * Pages of [pfn, pfn + nr) that someone other than their pagemap holds a
 * reference to (a GUP get or pin: O_DIRECT, io_uring, RDMA, a kernel
 * user). An idle MEMORY_DEVICE_GENERIC page has a count of one.
 * In C: pfn_to_page() is a macro, page_ref_count() a static inline.
 */
unsigned long cxlf_pages_referenced(unsigned long pfn, unsigned long nr)
{
	unsigned long i, busy = 0;

	for (i = 0; i < nr; i++) {
		if (page_ref_count(pfn_to_page(pfn + i)) > 1)
			busy++;
		if (!(i % 4096))
			cond_resched();
	}
	return busy;
}

/*
 * Zeroes [addr, addr + len) of shared memory and writes it back, in
 * chunks with a reschedule point between them (a pool section is 2 MiB,
 * and on an emulated CXL window every store traps).
 * In C: a memset64()/clflush_cache_range() loop with cond_resched().
 */
void cxlf_clear_flush(void *addr, size_t len)
{
	const size_t chunk = SZ_64K;
	size_t done = 0;

	/* 8-byte stores: an emulated window traps once per store. */
	if (!IS_ALIGNED((unsigned long)addr | len, 8)) {
		memset(addr, 0, len);
		clflush_cache_range(addr, len);
		return;
	}
	while (done < len) {
		size_t n = min(chunk, len - done);

		memset64(addr + done, 0, n / 8);
		clflush_cache_range(addr + done, n);
		done += n;
		cond_resched();
	}
}

/* In C: current_euid() is a macro. */
u32 cxlf_current_euid(void)
{
	return from_kuid_munged(&init_user_ns, current_euid());
}

/* In C: ktime_get_boottime_ns() is a static inline. */
u64 cxlf_ktime_boottime_ns(void)
{
	return ktime_get_boottime_ns();
}

struct cxlf_periodic {
	struct delayed_work dwork;
	/* Returns the milliseconds until the next run. */
	unsigned int (*fn)(void *ctx);
	void *ctx;
	/* The system's high-priority queue, or one of the work's own. */
	struct workqueue_struct *wq;
	bool own_wq;
	bool stopping;
};

static void cxlf_periodic_run(struct work_struct *work)
{
	struct cxlf_periodic *p =
		container_of(to_delayed_work(work), struct cxlf_periodic, dwork);

	unsigned int next_ms = p->fn(p->ctx);

	if (!READ_ONCE(p->stopping))
		queue_delayed_work(p->wq, &p->dwork,
				   max(1UL, msecs_to_jiffies(next_ms)));
}

/*
 * In C: INIT_DELAYED_WORK() is a macro (and the work is embedded). With a
 * `wq_name`, the work gets an ordered high-priority queue of its own, so a
 * run that waits on a device for seconds holds no shared worker.
 */
struct cxlf_periodic *cxlf_periodic_start(unsigned int (*fn)(void *ctx),
					  void *ctx, unsigned int first_ms,
					  const char *wq_name)
{
	struct cxlf_periodic *p = kzalloc(sizeof(*p), GFP_KERNEL);

	if (!p)
		return ERR_PTR(-ENOMEM);
	p->wq = system_highpri_wq;
	if (wq_name) {
		p->wq = alloc_ordered_workqueue("%s", WQ_HIGHPRI, wq_name);
		if (!p->wq) {
			kfree(p);
			return ERR_PTR(-ENOMEM);
		}
		p->own_wq = true;
	}
	INIT_DELAYED_WORK(&p->dwork, cxlf_periodic_run);
	p->fn = fn;
	p->ctx = ctx;
	queue_delayed_work(p->wq, &p->dwork, msecs_to_jiffies(first_ms));
	return p;
}

/* Returns after the last run has finished; the work re-queues itself, which
 * cancel_delayed_work_sync() is documented to handle. */
/* In C: struct cxlf_periodic embeds the delayed work. */
void cxlf_periodic_stop(struct cxlf_periodic *p)
{
	WRITE_ONCE(p->stopping, true);
	cancel_delayed_work_sync(&p->dwork);
	if (p->own_wq)
		destroy_workqueue(p->wq);
	kfree(p);
}

/*
 * The kernel's own tracepoints, found by name. In C: struct tracepoint is
 * not in the 6.12 bindings, the scheduler's tracepoints are not exported
 * as symbols (for_each_kernel_tracepoint is the way to reach them), and
 * tracepoint_synchronize_unregister is a static inline.
 */
struct cxlf_tp_lookup {
	const char *name;
	struct tracepoint *tp;
};

static void cxlf_tp_match(struct tracepoint *tp, void *priv)
{
	struct cxlf_tp_lookup *lookup = priv;

	if (!lookup->tp && !strcmp(tp->name, lookup->name))
		lookup->tp = tp;
}

void *cxlf_tracepoint_register(const char *name, void *probe, void *data)
{
	struct cxlf_tp_lookup lookup = { .name = name };
	int err;

	for_each_kernel_tracepoint(cxlf_tp_match, &lookup);
	if (!lookup.tp)
		return ERR_PTR(-ENOENT);
	err = tracepoint_probe_register(lookup.tp, probe, data);
	return err ? ERR_PTR(err) : lookup.tp;
}

void cxlf_tracepoint_unregister(void *tp, void *probe, void *data)
{
	WARN_ON(tracepoint_probe_unregister(tp, probe, data));
}

void cxlf_tracepoint_sync(void)
{
	tracepoint_synchronize_unregister();
}

/*
 * In C: task_work_add is not in the 6.12 bindings (linux/task_work.h is
 * not in bindings_helper.h), and its notify modes are an enum whose
 * values Rust should not copy.
 */
int cxlf_task_work_add(struct task_struct *task, struct callback_head *work,
		       bool signal, bool no_alloc)
{
	int flags = no_alloc ? TWAF_NO_ALLOC : 0;

	return task_work_add(task, work, (signal ? TWA_SIGNAL : TWA_RESUME) | flags);
}

/*
 * In C: raw_spin_lock_irqsave and raw_spin_unlock_irqrestore are macros,
 * and raw_spin_lock_init a macro with its own lock class unless lockdep
 * is on (then __raw_spin_lock_init, with the caller's class).
 */
void cxlf_raw_spin_lock_init(raw_spinlock_t *lock, const char *name,
			     struct lock_class_key *key)
{
#ifdef CONFIG_DEBUG_SPINLOCK
	__raw_spin_lock_init(lock, name, key, LD_WAIT_SPIN);
#else
	raw_spin_lock_init(lock);
#endif
}

unsigned long cxlf_raw_spin_lock_irqsave(raw_spinlock_t *lock)
{
	unsigned long flags;

	raw_spin_lock_irqsave(lock, flags);
	return flags;
}

void cxlf_raw_spin_unlock_irqrestore(raw_spinlock_t *lock, unsigned long flags)
{
	raw_spin_unlock_irqrestore(lock, flags);
}

/* In C: smp_processor_id is a macro (with a preemption check). */
unsigned int cxlf_this_cpu(void)
{
	return raw_smp_processor_id();
}

/* In C: ktime_get_ns is a static inline. */
u64 cxlf_ktime_ns(void)
{
	return ktime_get_ns();
}

/*
 * In C: set_current_state is a macro (with the barrier a sleep needs), and
 * fatal_signal_pending a static inline.
 * Sleeps TASK_KILLABLE until CLOCK_MONOTONIC reaches abs_ns, a wakeup or
 * a fatal signal, whichever comes first; returns whether a fatal signal
 * is pending.
 */
bool cxlf_sleep_until_killable(u64 abs_ns, u64 slack_ns)
{
	ktime_t expires = ns_to_ktime(abs_ns);

	set_current_state(TASK_KILLABLE);
	schedule_hrtimeout_range(&expires, slack_ns, HRTIMER_MODE_ABS);
	__set_current_state(TASK_RUNNING);
	return fatal_signal_pending(current);
}

/*
 * In C: the pid lookup needs rcu_read_lock (a static inline) around
 * find_vpid, and the task flags test reads PF_* macros.
 * Returns a counted reference to the thread `nr` in the caller's pid
 * namespace, or NULL.
 */
struct task_struct *cxlf_get_task_by_vpid(pid_t nr)
{
	struct task_struct *task;

	rcu_read_lock();
	task = pid_task(find_vpid(nr), PIDTYPE_PID);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	return task;
}

bool cxlf_task_is_user(const struct task_struct *task)
{
	return !(READ_ONCE(task->flags) & (PF_KTHREAD | PF_EXITING));
}

bool cxlf_task_exiting(const struct task_struct *task)
{
	return READ_ONCE(task->flags) & PF_EXITING;
}

pid_t cxlf_task_tgid(const struct task_struct *task)
{
	return task_tgid_vnr((struct task_struct *)task);
}

pid_t cxlf_task_vpid(const struct task_struct *task)
{
	return task_pid_vnr((struct task_struct *)task);
}

/*
 * In C: the credentials of another task are read under RCU (__task_cred
 * is a macro). The rule of setpriority(2) (set_one_prio): the caller's
 * euid is the target's uid or euid, or it has CAP_SYS_NICE over the
 * target's user namespace.
 */
bool cxlf_may_renice(const struct task_struct *task)
{
	const struct cred *cred = current_cred(), *pcred;
	bool ok;

	rcu_read_lock();
	pcred = __task_cred(task);
	ok = uid_eq(pcred->uid, cred->euid) || uid_eq(pcred->euid, cred->euid) ||
	     ns_capable(pcred->user_ns, CAP_SYS_NICE);
	rcu_read_unlock();
	return ok;
}

/*
 * In C: for_each_thread is a macro over RCU lists. Calls fn for every
 * thread of task's thread group, under rcu_read_lock (fn must not sleep),
 * until it returns false.
 */
void cxlf_for_each_thread(struct task_struct *task,
			  bool (*fn)(void *ctx, struct task_struct *t), void *ctx)
{
	struct task_struct *t;

	rcu_read_lock();
	for_each_thread(task, t) {
		if (!fn(ctx, t))
			break;
	}
	rcu_read_unlock();
}

/*
 * A counting perf event on one task, user mode only (kernel-mode events
 * of another task are what perf_event_paranoid keeps from unprivileged
 * users; a channel's owner may be one). Returns the event or an ERR_PTR.
 * In C: perf_event.h is not in 6.12's bindings_helper.h (struct
 * perf_event_attr is opaque to Rust there, and its flags are bitfields).
 */
struct perf_event *cxlf_perf_counter_create(struct task_struct *task,
					    u32 type, u64 config)
{
	struct perf_event_attr attr = {
		.type = type,
		.size = sizeof(attr),
		.config = config,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};

	return perf_event_create_kernel_counter(&attr, -1, task, NULL, NULL);
}

/* In C: perf_event_read_value() is not in 6.12's bindings. */
u64 cxlf_perf_counter_read(struct perf_event *event)
{
	u64 enabled, running;

	return perf_event_read_value(event, &enabled, &running);
}

/* In C: perf_event_release_kernel() is not in 6.12's bindings. */
void cxlf_perf_counter_release(struct perf_event *event)
{
	perf_event_release_kernel(event);
}

/*
 * PCI drivers. In C: struct pci_driver and struct pci_dev are opaque in
 * 6.12's Rust bindings (pci.h is not in bindings_helper.h), the id table
 * is built with a macro, and the driver core calls probe with an id the
 * Rust side does not need. One id per driver: what the project's drivers
 * match.
 */
struct cxlf_pci_driver {
	struct pci_driver pdrv;
	struct pci_device_id ids[2];
	int (*probe)(struct pci_dev *pdev);
	void (*remove)(struct pci_dev *pdev);
	void *data;
};

static struct cxlf_pci_driver *cxlf_pci_driver_of(struct pci_dev *pdev)
{
	return container_of(to_pci_driver(pdev->dev.driver),
			    struct cxlf_pci_driver, pdrv);
}

static int cxlf_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	return cxlf_pci_driver_of(pdev)->probe(pdev);
}

static void cxlf_pci_remove(struct pci_dev *pdev)
{
	cxlf_pci_driver_of(pdev)->remove(pdev);
}

/* The driver is /sys/bus/pci/drivers/<module name>. */
struct cxlf_pci_driver *cxlf_pci_driver_register(u16 vendor, u16 device,
						 int (*probe)(struct pci_dev *),
						 void (*remove)(struct pci_dev *),
						 void *data)
{
	struct cxlf_pci_driver *d = kzalloc(sizeof(*d), GFP_KERNEL);
	int err;

	if (!d)
		return ERR_PTR(-ENOMEM);
	d->ids[0].vendor = vendor;
	d->ids[0].device = device;
	d->ids[0].subvendor = PCI_ANY_ID;
	d->ids[0].subdevice = PCI_ANY_ID;
	d->probe = probe;
	d->remove = remove;
	d->data = data;
	d->pdrv.name = KBUILD_MODNAME;
	d->pdrv.id_table = d->ids;
	d->pdrv.probe = cxlf_pci_probe;
	d->pdrv.remove = cxlf_pci_remove;
	err = __pci_register_driver(&d->pdrv, THIS_MODULE, KBUILD_MODNAME);
	if (err) {
		kfree(d);
		return ERR_PTR(err);
	}
	return d;
}

/* In C: struct cxlf_pci_driver is private to this file. */
void cxlf_pci_driver_unregister(struct cxlf_pci_driver *d)
{
	pci_unregister_driver(&d->pdrv);
	kfree(d);
}

/* Only valid from probe and remove, while pdev is bound to our driver. */
void *cxlf_pci_driver_data(struct pci_dev *pdev)
{
	return cxlf_pci_driver_of(pdev)->data;
}

/* In C: struct pci_dev is opaque to Rust. */
struct device *cxlf_pci_device(struct pci_dev *pdev)
{
	return &pdev->dev;
}

/* In C: struct pci_dev is opaque to Rust. */
u16 cxlf_pci_vendor(struct pci_dev *pdev)
{
	return pdev->vendor;
}

/* In C: struct pci_dev is opaque to Rust. */
u16 cxlf_pci_device_id(struct pci_dev *pdev)
{
	return pdev->device;
}

/*
 * In C: pci_resource_start/len and the flags are macros over the opaque
 * struct. -EINVAL for a BAR that does not exist or is unassigned.
 */
int cxlf_pci_resource(struct pci_dev *pdev, int bar, u64 *start, u64 *len,
		      bool *mem)
{
	if (bar < 0 || bar >= PCI_STD_NUM_BARS || !pci_resource_len(pdev, bar) ||
	    pci_resource_flags(pdev, bar) & IORESOURCE_UNSET)
		return -EINVAL;
	*start = pci_resource_start(pdev, bar);
	*len = pci_resource_len(pdev, bar);
	*mem = pci_resource_flags(pdev, bar) & IORESOURCE_MEM;
	return 0;
}

/*
 * Exactly n MSI-X vectors, or an error. In C: pci_alloc_irq_vectors is a
 * static inline and PCI_IRQ_MSIX a macro.
 */
int cxlf_pci_alloc_msix(struct pci_dev *pdev, unsigned int n)
{
	int got = pci_alloc_irq_vectors(pdev, n, n, PCI_IRQ_MSIX);

	return got < 0 ? got : 0;
}

/*
 * Network devices. In C: struct net_device is opaque to 6.12's Rust
 * bindings (netdevice.h is not in bindings_helper.h), the driver core
 * calls net_device_ops and ethtool_ops with its own signatures, and
 * netdev_priv, the carrier and queue calls are static inlines. The
 * private area holds the Rust side's callbacks and data pointer; every
 * trampoline passes that pointer on.
 */
struct cxlf_netdev_priv {
	const struct cxlf_netdev_ops *ops;
	void *data;
};

static void *cxlf_nd_data(struct net_device *dev)
{
	return ((struct cxlf_netdev_priv *)netdev_priv(dev))->data;
}

static const struct cxlf_netdev_ops *cxlf_nd_ops(struct net_device *dev)
{
	return ((struct cxlf_netdev_priv *)netdev_priv(dev))->ops;
}

static int cxlf_nd_open(struct net_device *dev)
{
	return cxlf_nd_ops(dev)->open(cxlf_nd_data(dev), dev);
}

static int cxlf_nd_stop(struct net_device *dev)
{
	return cxlf_nd_ops(dev)->stop(cxlf_nd_data(dev), dev);
}

static netdev_tx_t cxlf_nd_xmit(struct sk_buff *skb, struct net_device *dev)
{
	return cxlf_nd_ops(dev)->xmit(cxlf_nd_data(dev), dev, skb,
				       skb_get_queue_mapping(skb)) ?
		       NETDEV_TX_BUSY : NETDEV_TX_OK;
}

static void cxlf_nd_stats(struct net_device *dev, struct rtnl_link_stats64 *s)
{
	struct cxlf_netdev_stats st = {};

	cxlf_nd_ops(dev)->stats(cxlf_nd_data(dev), &st);
	s->rx_packets = st.rx_packets;
	s->tx_packets = st.tx_packets;
	s->rx_bytes = st.rx_bytes;
	s->tx_bytes = st.tx_bytes;
	s->rx_errors = st.rx_errors;
	s->tx_errors = st.tx_errors;
	s->rx_dropped = st.rx_dropped;
	s->tx_dropped = st.tx_dropped;
}

static int cxlf_nd_change_mtu(struct net_device *dev, int mtu)
{
	int err = cxlf_nd_ops(dev)->change_mtu(cxlf_nd_data(dev), dev, mtu);

	if (!err)
		WRITE_ONCE(dev->mtu, mtu);
	return err;
}

static void cxlf_nd_tx_timeout(struct net_device *dev, unsigned int txqueue)
{
	cxlf_nd_ops(dev)->tx_timeout(cxlf_nd_data(dev), dev, txqueue);
}

#define CXLF_NETDEV_OPS                                  \
	.ndo_open = cxlf_nd_open,                        \
	.ndo_stop = cxlf_nd_stop,                        \
	.ndo_start_xmit = cxlf_nd_xmit,                  \
	.ndo_get_stats64 = cxlf_nd_stats,                \
	.ndo_change_mtu = cxlf_nd_change_mtu,            \
	.ndo_validate_addr = eth_validate_addr,          \
	.ndo_set_mac_address = eth_mac_addr

static const struct net_device_ops cxlf_netdev_ops = {
	CXLF_NETDEV_OPS,
};

/*
 * With the stack's TX watchdog: only for drivers that take its call (the
 * net core arms the watchdog whenever ndo_tx_timeout is set).
 */
static const struct net_device_ops cxlf_netdev_ops_watchdog = {
	CXLF_NETDEV_OPS,
	.ndo_tx_timeout = cxlf_nd_tx_timeout,
};

static void cxlf_et_drvinfo(struct net_device *dev, struct ethtool_drvinfo *info)
{
	strscpy(info->driver, KBUILD_MODNAME, sizeof(info->driver));
	if (dev->dev.parent)
		strscpy(info->bus_info, dev_name(dev->dev.parent),
			sizeof(info->bus_info));
	cxlf_nd_ops(dev)->drvinfo(cxlf_nd_data(dev), info);
}

/*
 * The settings ethtool changes go through one get/set pair on the Rust
 * side: a setter reads the current values, changes its part and hands
 * the whole on, with which part changed.
 */
static int cxlf_et_params(struct net_device *dev, struct cxlf_ethtool_params *p)
{
	memset(p, 0, sizeof(*p));
	return cxlf_nd_ops(dev)->get_params(cxlf_nd_data(dev), p);
}

static int cxlf_et_set(struct net_device *dev,
		       const struct cxlf_ethtool_params *p, u32 what)
{
	return cxlf_nd_ops(dev)->set_params(cxlf_nd_data(dev), dev, p, what);
}

static void cxlf_et_get_ringparam(struct net_device *dev,
				  struct ethtool_ringparam *ring,
				  struct kernel_ethtool_ringparam *kring,
				  struct netlink_ext_ack *extack)
{
	struct cxlf_ethtool_params p;

	if (cxlf_et_params(dev, &p))
		return;
	ring->rx_max_pending = p.rx_ring_max;
	ring->tx_max_pending = p.tx_ring_max;
	ring->rx_pending = p.rx_ring;
	ring->tx_pending = p.tx_ring;
}

static int cxlf_et_set_ringparam(struct net_device *dev,
				 struct ethtool_ringparam *ring,
				 struct kernel_ethtool_ringparam *kring,
				 struct netlink_ext_ack *extack)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	if (ring->rx_mini_pending || ring->rx_jumbo_pending)
		return -EINVAL;
	p.rx_ring = ring->rx_pending;
	p.tx_ring = ring->tx_pending;
	return cxlf_et_set(dev, &p, CXLF_ET_RINGS);
}

static void cxlf_et_get_channels(struct net_device *dev,
				 struct ethtool_channels *ch)
{
	struct cxlf_ethtool_params p;

	if (cxlf_et_params(dev, &p))
		return;
	ch->max_combined = p.channels_max;
	ch->combined_count = p.channels;
}

static int cxlf_et_set_channels(struct net_device *dev,
				struct ethtool_channels *ch)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	if (ch->rx_count || ch->tx_count || ch->other_count)
		return -EINVAL;
	p.channels = ch->combined_count;
	return cxlf_et_set(dev, &p, CXLF_ET_CHANNELS);
}

static int cxlf_et_get_coalesce(struct net_device *dev,
				struct ethtool_coalesce *c,
				struct kernel_ethtool_coalesce *kc,
				struct netlink_ext_ack *extack)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	c->rx_coalesce_usecs = p.rx_usecs;
	c->rx_max_coalesced_frames = p.rx_frames;
	return 0;
}

static int cxlf_et_set_coalesce(struct net_device *dev,
				struct ethtool_coalesce *c,
				struct kernel_ethtool_coalesce *kc,
				struct netlink_ext_ack *extack)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	p.rx_usecs = c->rx_coalesce_usecs;
	p.rx_frames = c->rx_max_coalesced_frames;
	return cxlf_et_set(dev, &p, CXLF_ET_COALESCE);
}

static u32 cxlf_et_get_priv_flags(struct net_device *dev)
{
	struct cxlf_ethtool_params p;

	return cxlf_et_params(dev, &p) ? 0 : p.priv_flags;
}

static int cxlf_et_set_priv_flags(struct net_device *dev, u32 flags)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	p.priv_flags = flags;
	return cxlf_et_set(dev, &p, CXLF_ET_PRIV_FLAGS);
}

static int cxlf_et_set_of(int sset)
{
	switch (sset) {
	case ETH_SS_STATS:
		return CXLF_ET_SET_STATS;
	case ETH_SS_PRIV_FLAGS:
		return CXLF_ET_SET_PRIV_FLAGS;
	default:
		return -EOPNOTSUPP;
	}
}

static int cxlf_et_get_sset_count(struct net_device *dev, int sset)
{
	int set = cxlf_et_set_of(sset);

	if (set < 0)
		return set;
	return cxlf_nd_ops(dev)->string_count(cxlf_nd_data(dev), set);
}

static void cxlf_et_get_strings(struct net_device *dev, u32 sset, u8 *buf)
{
	int set = cxlf_et_set_of(sset);
	int n;

	if (set < 0)
		return;
	/* The core sized `buf` from get_sset_count, under RTNL as now. */
	n = cxlf_nd_ops(dev)->string_count(cxlf_nd_data(dev), set);
	if (n > 0)
		cxlf_nd_ops(dev)->strings(cxlf_nd_data(dev), set, buf, n);
}

static void cxlf_et_get_stats(struct net_device *dev,
			      struct ethtool_stats *stats, u64 *data)
{
	cxlf_nd_ops(dev)->stat_values(cxlf_nd_data(dev), data, stats->n_stats);
}

static const struct ethtool_ops cxlf_ethtool_ops = {
	.supported_coalesce_params = ETHTOOL_COALESCE_RX_USECS |
				     ETHTOOL_COALESCE_RX_MAX_FRAMES,
	.get_drvinfo = cxlf_et_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_ringparam = cxlf_et_get_ringparam,
	.set_ringparam = cxlf_et_set_ringparam,
	.get_channels = cxlf_et_get_channels,
	.set_channels = cxlf_et_set_channels,
	.get_coalesce = cxlf_et_get_coalesce,
	.set_coalesce = cxlf_et_set_coalesce,
	.get_priv_flags = cxlf_et_get_priv_flags,
	.set_priv_flags = cxlf_et_set_priv_flags,
	.get_sset_count = cxlf_et_get_sset_count,
	.get_strings = cxlf_et_get_strings,
	.get_ethtool_stats = cxlf_et_get_stats,
};

/*
 * An Ethernet device with `txqs`/`rxqs` queues whose callbacks are `ops`
 * with `data`; not registered yet. NULL without memory.
 */
struct net_device *cxlf_netdev_alloc(unsigned int txqs, unsigned int rxqs,
				     const struct cxlf_netdev_ops *ops,
				     void *data)
{
	struct net_device *dev =
		alloc_etherdev_mqs(sizeof(struct cxlf_netdev_priv), txqs, rxqs);
	struct cxlf_netdev_priv *p;

	if (!dev)
		return NULL;
	p = netdev_priv(dev);
	p->ops = ops;
	p->data = data;
	dev->netdev_ops =
		ops->tx_timeout ? &cxlf_netdev_ops_watchdog : &cxlf_netdev_ops;
	dev->ethtool_ops = &cxlf_ethtool_ops;
	return dev;
}

/*
 * Registers `dev` under `parent` with `mac`, an MTU range and the TX
 * watchdog's timeout (0: the net core's 5 s).
 */
int cxlf_netdev_register(struct net_device *dev, struct device *parent,
			 const u8 *mac, unsigned int min_mtu,
			 unsigned int max_mtu, unsigned int watchdog_ms)
{
	SET_NETDEV_DEV(dev, parent);
	eth_hw_addr_set(dev, mac);
	dev->min_mtu = min_mtu;
	dev->max_mtu = max_mtu;
	if (watchdog_ms)
		dev->watchdog_timeo = msecs_to_jiffies(watchdog_ms);
	netif_carrier_off(dev);
	return register_netdev(dev);
}

/* In C: netif_carrier_on/off take the opaque struct. */
void cxlf_netdev_set_carrier(struct net_device *dev, bool on)
{
	if (on)
		netif_carrier_on(dev);
	else
		netif_carrier_off(dev);
}

/* In C: the name is a field of the opaque struct. */
const char *cxlf_netdev_name(struct net_device *dev)
{
	return dev->name;
}

/* In C: mtu is a field of the opaque struct. */
unsigned int cxlf_netdev_mtu(struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}

/* In C: netif_tx_{start,stop}_all_queues are static inlines. */
void cxlf_netdev_tx_all(struct net_device *dev, bool start)
{
	if (start)
		netif_tx_start_all_queues(dev);
	else
		netif_tx_stop_all_queues(dev);
}

/* In C: dev_kfree_skb_any is a static inline. */
void cxlf_skb_free(struct sk_buff *skb)
{
	dev_kfree_skb_any(skb);
}

/*
 * Bringing an interface up and down, its MTU, carrier and counters, as
 * the stack does (under RTNL). In C: rtnl_lock/unlock pair with calls on
 * the opaque struct; netif_carrier_ok is a static inline.
 */
int cxlf_netdev_open(struct net_device *dev)
{
	int err;

	rtnl_lock();
	err = dev_open(dev, NULL);
	rtnl_unlock();
	return err;
}

void cxlf_netdev_close(struct net_device *dev)
{
	rtnl_lock();
	dev_close(dev);
	rtnl_unlock();
}

int cxlf_netdev_set_mtu(struct net_device *dev, int mtu)
{
	int err;

	rtnl_lock();
	err = dev_set_mtu(dev, mtu);
	rtnl_unlock();
	return err;
}

bool cxlf_netdev_carrier_ok(struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

void cxlf_netdev_get_stats(struct net_device *dev, struct cxlf_netdev_stats *out)
{
	struct rtnl_link_stats64 s;

	dev_get_stats(dev, &s);
	out->rx_packets = s.rx_packets;
	out->tx_packets = s.tx_packets;
	out->rx_bytes = s.rx_bytes;
	out->tx_bytes = s.tx_bytes;
	out->rx_errors = s.rx_errors;
	out->tx_errors = s.tx_errors;
	out->rx_dropped = s.rx_dropped;
	out->tx_dropped = s.tx_dropped;
}

/*
 * Sends an Ethernet frame of `len` bytes (to the interface's own
 * address) through the stack's queueing, as a socket would: what the
 * support tests use. In C: skb construction is static inlines.
 */
int cxlf_netdev_send_frame(struct net_device *dev, unsigned int len)
{
	struct sk_buff *skb;
	struct ethhdr *eth;

	if (len < ETH_HLEN)
		return -EINVAL;
	skb = alloc_skb(len + NET_IP_ALIGN, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, NET_IP_ALIGN);
	eth = skb_put_zero(skb, len);
	ether_addr_copy(eth->h_dest, dev->dev_addr);
	ether_addr_copy(eth->h_source, dev->dev_addr);
	eth->h_proto = htons(ETH_P_802_3_MIN);
	skb_reset_mac_header(skb);
	skb->dev = dev;
	skb->protocol = eth->h_proto;
	return dev_queue_xmit(skb);
}

/*
 * A reference on a net_device for an object that outlives a callback
 * (unregistering waits for it). In C: dev_hold/dev_put are inlines.
 */
void cxlf_netdev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void cxlf_netdev_put(struct net_device *dev)
{
	dev_put(dev);
}

/*
 * TX queue `q`: stop, wake, query; a queue past those allocated is
 * ignored (netdev_get_tx_queue does not check). In C: static inlines.
 */
void cxlf_netdev_txq_stop(struct net_device *dev, u16 q)
{
	if (q < dev->num_tx_queues)
		netif_tx_stop_queue(netdev_get_tx_queue(dev, q));
}

void cxlf_netdev_txq_wake(struct net_device *dev, u16 q)
{
	if (q < dev->num_tx_queues)
		netif_tx_wake_queue(netdev_get_tx_queue(dev, q));
}

bool cxlf_netdev_txq_stopped(struct net_device *dev, u16 q)
{
	return q < dev->num_tx_queues &&
	       netif_tx_queue_stopped(netdev_get_tx_queue(dev, q));
}

/* RTNL, if no one holds it (for work that must not wait on it). */
bool cxlf_rtnl_trylock(void)
{
	return rtnl_trylock();
}

void cxlf_rtnl_unlock(void)
{
	rtnl_unlock();
}

/* Stops every TX queue and waits out transmits in progress. */
void cxlf_netdev_tx_disable(struct net_device *dev)
{
	netif_tx_disable(dev);
}

/* Whether the stack has more packets for this queue right now. */
bool cxlf_netdev_xmit_more(void)
{
	return netdev_xmit_more();
}

/* The queues the stack uses (of those allocated); under RTNL or before
 * registering. */
int cxlf_netdev_set_queues(struct net_device *dev, unsigned int txq,
			   unsigned int rxq)
{
	unsigned int old = dev->real_num_tx_queues;
	int err = netif_set_real_num_tx_queues(dev, txq);

	if (err)
		return err;
	err = netif_set_real_num_rx_queues(dev, rxq);
	if (err)
		netif_set_real_num_tx_queues(dev, old);
	return err;
}

/*
 * NAPI. The napi_struct sits in a C allocation with the Rust side's poll
 * function and data pointer; the poll trampoline finds them by
 * container_of. napi_schedule, napi_complete_done and the skb building
 * are static inlines.
 */
struct cxlf_napi {
	struct napi_struct napi;
	int (*poll)(void *data, struct napi_struct *napi, int budget);
	void *data;
	u16 rxq;
};

static int cxlf_napi_poll(struct napi_struct *napi, int budget)
{
	struct cxlf_napi *n = container_of(napi, struct cxlf_napi, napi);

	return n->poll(n->data, napi, budget);
}

/* A NAPI context on `dev` for RX queue `rxq`, disabled; NULL without
 * memory. */
struct napi_struct *cxlf_napi_add(struct net_device *dev,
				  int (*poll)(void *, struct napi_struct *, int),
				  void *data, u16 rxq)
{
	struct cxlf_napi *n = kzalloc(sizeof(*n), GFP_KERNEL);

	if (!n)
		return NULL;
	n->poll = poll;
	n->data = data;
	n->rxq = rxq;
	netif_napi_add(dev, &n->napi, cxlf_napi_poll);
	return &n->napi;
}

/* Removes a disabled context (waiting out an RCU grace period) and
 * frees it. */
void cxlf_napi_del(struct napi_struct *napi)
{
	netif_napi_del(napi);
	kfree(container_of(napi, struct cxlf_napi, napi));
}

/* In C: a static inline. The interrupt is what netlink's napi-get reports
 * for the context. */
void cxlf_napi_set_irq(struct napi_struct *napi, int irq)
{
	netif_napi_set_irq(napi, irq);
}

void cxlf_napi_enable(struct napi_struct *napi)
{
	napi_enable(napi);
}

void cxlf_napi_disable(struct napi_struct *napi)
{
	napi_disable(napi);
}

/*
 * From any context: in process context with bottom halves off, so the
 * NET_RX softirq runs when they come back on rather than being left
 * pending (which the idle path warns about).
 */
void cxlf_napi_schedule(struct napi_struct *napi)
{
	if (in_interrupt()) {
		napi_schedule(napi);
	} else {
		local_bh_disable();
		napi_schedule(napi);
		local_bh_enable();
	}
}

bool cxlf_napi_complete_done(struct napi_struct *napi, int work)
{
	return napi_complete_done(napi, work);
}

/* The device a context is on (for the poll's TX side). */
struct net_device *cxlf_napi_dev(struct napi_struct *napi)
{
	return napi->dev;
}

/*
 * Hands `len` bytes at `data` (a frame the device wrote) to the stack as
 * a received Ethernet frame, through GRO. -ENOMEM if no buffer.
 */
int cxlf_napi_receive(struct napi_struct *napi, const void *data,
		      unsigned int len)
{
	struct sk_buff *skb = napi_alloc_skb(napi, len);

	if (!skb)
		return -ENOMEM;
	skb_put_data(skb, data, len);
	skb_record_rx_queue(skb, container_of(napi, struct cxlf_napi, napi)->rxq);
	skb->protocol = eth_type_trans(skb, napi->dev);
	napi_gro_receive(napi, skb);
	return 0;
}
