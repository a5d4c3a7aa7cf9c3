// SPDX-License-Identifier: GPL-2.0
/* Delayed work (support/workqueue.rs runs it periodically). */

#include "../helpers.h"

#include <linux/workqueue.h>

/* In C: INIT_DELAYED_WORK() is a macro (a lockdep class per call site). */
void cxlf_init_delayed_work(struct delayed_work *dwork, work_func_t func)
{
	INIT_DELAYED_WORK(dwork, func);
}
