// SPDX-License-Identifier: GPL-2.0
/* Misc devices (support/miscdevice.rs builds and registers them). */

#include "../helpers.h"

#include <linux/sysfs.h>

/* In C: sysfs_attr_init() is a macro (a lockdep class per call site). */
void cxlf_sysfs_attr_init(struct attribute *attr)
{
	sysfs_attr_init(attr);
}
