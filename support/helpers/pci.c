// SPDX-License-Identifier: GPL-2.0
/* PCI drivers, BARs and MSI-X vectors. */

#include "../helpers.h"

#include <linux/pci.h>
#include <linux/slab.h>

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
	/* The module, not KBUILD_MODNAME: that names this object. */
	d->pdrv.name = THIS_MODULE->name;
	d->pdrv.id_table = d->ids;
	d->pdrv.probe = cxlf_pci_probe;
	d->pdrv.remove = cxlf_pci_remove;
	err = __pci_register_driver(&d->pdrv, THIS_MODULE, THIS_MODULE->name);
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
