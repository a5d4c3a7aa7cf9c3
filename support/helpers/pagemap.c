// SPDX-License-Identifier: GPL-2.0
/* ZONE_DEVICE pages (support/pagemap.rs creates the pagemap). */

#include "../helpers.h"

#include <linux/mm.h>
#include <linux/sched.h>

/* In C: cond_resched() is a macro (a static call). */
void cxlf_cond_resched(void)
{
	cond_resched();
}
