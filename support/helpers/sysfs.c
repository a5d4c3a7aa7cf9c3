// SPDX-License-Identifier: GPL-2.0
/* sysfs attributes (support/sysfs.rs builds the directories, and
 * support/miscdevice.rs a misc device's attributes, in Rust). */

#include "../helpers.h"

#include <linux/sysfs.h>

/* In C: sysfs_attr_init() is a macro (a lockdep class per call site). */
void cxlf_sysfs_attr_init(struct attribute *attr)
{
	sysfs_attr_init(attr);
}
