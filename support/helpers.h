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
				     int *err);
void cxlf_misc_deregister(struct cxlf_misc *misc);
int cxlf_misc_minor(const struct cxlf_misc *misc);
void *cxlf_misc_data_of_open_file(struct file *file);

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
void cxlf_dev_set_drvdata(struct device *dev, void *data);
void *cxlf_dev_get_drvdata(const struct device *dev);

#endif
