// SPDX-License-Identifier: GPL-2.0
/*
 * Each module compiles this file once, through its own <dir>/helpers.c
 * (an object linked into two modules is a kbuild error).
 */
#include <linux/slab.h>

#include "helpers.h"

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
	void *data;
};

struct cxlf_misc *cxlf_misc_register(const char *name, umode_t mode,
				     const struct file_operations *template,
				     struct module *owner, void *data,
				     int *err)
{
	struct cxlf_misc *m = kzalloc(sizeof(*m), GFP_KERNEL);

	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	m->fops = *template;
	m->fops.owner = owner;
	m->data = data;
	m->misc.minor = MISC_DYNAMIC_MINOR;
	m->misc.name = name;
	m->misc.mode = mode;
	m->misc.fops = &m->fops;
	*err = misc_register(&m->misc);
	if (*err) {
		kfree(m);
		return NULL;
	}
	return m;
}

void cxlf_misc_deregister(struct cxlf_misc *m)
{
	misc_deregister(&m->misc);
	kfree(m);
}

int cxlf_misc_minor(const struct cxlf_misc *m)
{
	return m->misc.minor;
}

/* misc_open() points private_data at the miscdevice before ->open runs. */
void *cxlf_misc_data_of_open_file(struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return container_of(misc, struct cxlf_misc, misc)->data;
}

unsigned long cxlf_vma_start(const struct vm_area_struct *vma)
{
	return vma->vm_start;
}

unsigned long cxlf_vma_end(const struct vm_area_struct *vma)
{
	return vma->vm_end;
}

unsigned long cxlf_vma_flags(const struct vm_area_struct *vma)
{
	return vma->vm_flags;
}

unsigned long cxlf_vm_flag_shared(void)
{
	return VM_SHARED;
}

unsigned long cxlf_vm_flag_mayshare(void)
{
	return VM_MAYSHARE;
}

unsigned long cxlf_vm_flag_write(void)
{
	return VM_WRITE;
}

struct cxlf_dax_driver {
	struct dax_device_driver dax;
	void *data;
};

/* The dax bus names the driver after the module (KBUILD_MODNAME). */
struct cxlf_dax_driver *cxlf_dax_driver_register(int (*probe)(struct dev_dax *),
						 void (*remove)(struct dev_dax *),
						 void *data, int *err)
{
	struct cxlf_dax_driver *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	/*
	 * Device type: matches device-mode dax instances, but binds only to
	 * unbound ones; operators move an instance here with unbind/bind.
	 */
	d->dax.type = DAXDRV_DEVICE_TYPE;
	d->dax.probe = probe;
	d->dax.remove = remove;
	d->data = data;
	*err = dax_driver_register(&d->dax);
	if (*err) {
		kfree(d);
		return NULL;
	}
	return d;
}

void cxlf_dax_driver_unregister(struct cxlf_dax_driver *d)
{
	dax_driver_unregister(&d->dax);
	kfree(d);
}

/* Only valid from probe/remove, while dev_dax is bound to our driver. */
void *cxlf_dev_dax_driver_data(struct dev_dax *dev_dax)
{
	struct dax_device_driver *drv =
		container_of(dev_dax->dev.driver, struct dax_device_driver, drv);

	return container_of(drv, struct cxlf_dax_driver, dax)->data;
}

struct device *cxlf_dev_dax_device(struct dev_dax *dev_dax)
{
	return &dev_dax->dev;
}

int cxlf_dev_dax_nr_ranges(const struct dev_dax *dev_dax)
{
	return dev_dax->nr_range;
}

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

unsigned int cxlf_dev_dax_align(const struct dev_dax *dev_dax)
{
	return dev_dax->align;
}

int cxlf_dev_dax_id(const struct dev_dax *dev_dax)
{
	return dev_dax->id;
}

void cxlf_dev_set_drvdata(struct device *dev, void *data)
{
	dev_set_drvdata(dev, data);
}

void *cxlf_dev_get_drvdata(const struct device *dev)
{
	return dev_get_drvdata(dev);
}
