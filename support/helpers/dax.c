// SPDX-License-Identifier: GPL-2.0
/* The dax bus: drivers and the private struct dev_dax (needs -I$(srctree)/drivers/dax). */

#include "../helpers.h"

#include <linux/dax.h>
#include <linux/slab.h>

/* Private to drivers/dax; found through -I$(srctree)/drivers/dax. */
#include "bus.h"
#include "dax-private.h"

struct cxlf_dax_driver {
	struct dax_device_driver dax;
	void *data;
};

/*
 * The dax bus names the driver after the module. (THIS_MODULE->name, not
 * KBUILD_MODNAME: this object is named after its part, support_dax.o.)
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
	err = __dax_driver_register(&d->dax, THIS_MODULE, THIS_MODULE->name);
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
