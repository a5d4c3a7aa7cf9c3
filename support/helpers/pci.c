// SPDX-License-Identifier: GPL-2.0
/* PCI devices (support/pci.rs builds and registers the drivers). */

#include "../helpers.h"

#include <linux/pci.h>

/* In C: struct pci_dev is opaque in 6.12's Rust bindings. */
struct device *cxlf_pci_device(struct pci_dev *pdev)
{
	return &pdev->dev;
}

/* In C: struct pci_dev is opaque in 6.12's Rust bindings. */
u16 cxlf_pci_vendor(struct pci_dev *pdev)
{
	return pdev->vendor;
}

/* In C: struct pci_dev is opaque in 6.12's Rust bindings. */
u16 cxlf_pci_device_id(struct pci_dev *pdev)
{
	return pdev->device;
}

/* In C: pci_resource_n is a macro over the opaque struct pci_dev. */
struct resource *cxlf_pci_resource(struct pci_dev *pdev, int bar)
{
	return pci_resource_n(pdev, bar);
}
