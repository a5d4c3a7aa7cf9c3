// SPDX-License-Identifier: GPL-2.0
/* Clocks (support/time.rs). */

#include "../helpers.h"

#include <linux/timekeeping.h>

/* In C: ktime_get_boottime_ns() is a static inline. */
u64 cxlf_ktime_boottime_ns(void)
{
	return ktime_get_boottime_ns();
}

/* In C: ktime_get_ns is a static inline. */
u64 cxlf_ktime_ns(void)
{
	return ktime_get_ns();
}
