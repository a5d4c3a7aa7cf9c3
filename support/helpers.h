/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C side of the cxlfabric support layer: what the 6.12 Rust bindings lack
 * (struct miscdevice is not in bindings_helper.h, vm_flags is a union) and
 * static inline functions. Only the Rust wrappers in support/ call these.
 */
#ifndef CXLFABRIC_SUPPORT_HELPERS_H
#define CXLFABRIC_SUPPORT_HELPERS_H

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>

struct cxlf_misc;

struct cxlf_misc *cxlf_misc_register(const char *name, umode_t mode,
				     const struct file_operations *template,
				     struct module *owner, void *data,
				     const char *const *attr_names,
				     unsigned int nr_attrs,
				     ssize_t (*show)(void *data,
						     unsigned int index,
						     char *buf),
				     int *err);
void cxlf_misc_deregister(struct cxlf_misc *misc);
int cxlf_misc_minor(const struct cxlf_misc *misc);
void *cxlf_misc_data_of_open_file(struct file *file);

/* Mappings of device memory without struct pages (VM_PFNMAP). */
void cxlf_vma_setup_pfnmap(struct vm_area_struct *vma, unsigned int cache_mode,
			   bool writable,
			   const struct vm_operations_struct *ops,
			   void *private);
void *cxlf_vma_private(const struct vm_area_struct *vma);
struct vm_area_struct *cxlf_vmf_vma(const struct vm_fault *vmf);
unsigned long cxlf_vmf_address(const struct vm_fault *vmf);
bool cxlf_vmf_is_write(const struct vm_fault *vmf);
vm_fault_t cxlf_vmf_insert_pfn(struct vm_fault *vmf, unsigned long pfn);
vm_fault_t cxlf_vmf_insert_pfn_pmd(struct vm_fault *vmf, unsigned long pfn);
unsigned int cxlf_pmd_order(void);

/* Mappings of ZONE_DEVICE pages (devmap entries), and their pagemap. */
void cxlf_vma_setup_devmap(struct vm_area_struct *vma, bool writable,
			   const struct vm_operations_struct *ops,
			   void *private);
vm_fault_t cxlf_vmf_insert_devmap(struct vm_fault *vmf, unsigned long pfn);
vm_fault_t cxlf_vmf_insert_devmap_pmd(struct vm_fault *vmf, unsigned long pfn);
struct dev_pagemap;
struct dev_pagemap *cxlf_pagemap_create(u64 start, u64 len, int nid,
					void **vaddr, int *err);
void cxlf_pagemap_destroy(struct dev_pagemap *pgmap);
unsigned long cxlf_pages_referenced(unsigned long pfn, unsigned long nr);
struct page *cxlf_pfn_to_page(unsigned long pfn);
void cxlf_clear_flush(void *addr, size_t len);

/* The inode whose address space an open file's mappings live in. */
struct inode *cxlf_file_inode_get(struct file *file);
void cxlf_file_set_mapping(struct file *file, struct inode *inode);
void cxlf_inode_put(struct inode *inode);
struct inode *cxlf_inode_get(struct inode *inode);
void cxlf_inode_unmap_range(struct inode *inode, u64 start, u64 len);

/* The calling task. */
bool cxlf_capable_sys_admin(void);
u32 cxlf_current_euid(void);
bool cxlf_signal_pending(void);
u64 cxlf_ktime_boottime_ns(void);

/* A function run again and again on a high-priority workqueue. */
struct cxlf_periodic;
struct cxlf_periodic *cxlf_periodic_start(unsigned int (*fn)(void *ctx),
					  void *ctx, unsigned int first_ms,
					  int *err);
void cxlf_periodic_stop(struct cxlf_periodic *periodic);

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

unsigned long cxlf_vma_start(const struct vm_area_struct *vma);
unsigned long cxlf_vma_end(const struct vm_area_struct *vma);
unsigned long cxlf_vma_flags(const struct vm_area_struct *vma);
unsigned long cxlf_vm_flag_shared(void);
unsigned long cxlf_vm_flag_mayshare(void);
unsigned long cxlf_vm_flag_write(void);

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
						 void *data, int *err);
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
struct inode *cxlf_dev_dax_inode_get(struct dev_dax *dev_dax);
void cxlf_dev_set_drvdata(struct device *dev, void *data);
void *cxlf_dev_get_drvdata(const struct device *dev);

#endif
