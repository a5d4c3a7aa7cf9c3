// SPDX-License-Identifier: GPL-2.0
/* Counting perf events. */

#include "../helpers.h"

#include <linux/perf_event.h>

/*
 * A counting perf event on one task, user mode only (kernel-mode events
 * of another task are what perf_event_paranoid keeps from unprivileged
 * users; a channel's owner may be one). Returns the event or an ERR_PTR.
 * In C: perf_event.h is not in 6.12's bindings_helper.h (struct
 * perf_event_attr is opaque to Rust there, and its flags are bitfields).
 */
struct perf_event *cxlf_perf_counter_create(struct task_struct *task,
					    u32 type, u64 config)
{
	struct perf_event_attr attr = {
		.type = type,
		.size = sizeof(attr),
		.config = config,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};

	return perf_event_create_kernel_counter(&attr, -1, task, NULL, NULL);
}

/* In C: perf_event_read_value() is not in 6.12's bindings. */
u64 cxlf_perf_counter_read(struct perf_event *event)
{
	u64 enabled, running;

	return perf_event_read_value(event, &enabled, &running);
}

/* In C: perf_event_release_kernel() is not in 6.12's bindings. */
void cxlf_perf_counter_release(struct perf_event *event)
{
	perf_event_release_kernel(event);
}
