// SPDX-License-Identifier: GPL-2.0
/* Clocks and sleeping. */

#include "../helpers.h"

#include <linux/hrtimer.h>
#include <linux/sched/signal.h>
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

/*
 * In C: set_current_state is a macro (with the barrier a sleep needs), and
 * fatal_signal_pending a static inline.
 * Sleeps TASK_KILLABLE until CLOCK_MONOTONIC reaches abs_ns, a wakeup or
 * a fatal signal, whichever comes first; returns whether a fatal signal
 * is pending.
 */
bool cxlf_sleep_until_killable(u64 abs_ns, u64 slack_ns)
{
	ktime_t expires = ns_to_ktime(abs_ns);

	set_current_state(TASK_KILLABLE);
	schedule_hrtimeout_range(&expires, slack_ns, HRTIMER_MODE_ABS);
	__set_current_state(TASK_RUNNING);
	return fatal_signal_pending(current);
}
