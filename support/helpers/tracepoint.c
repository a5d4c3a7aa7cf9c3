// SPDX-License-Identifier: GPL-2.0
/* Probes on the kernel's tracepoints (support/tracepoint.rs finds the
 * tracepoints and registers the probes). */

#include "../helpers.h"

#include <linux/tracepoint.h>

/* In C: WARN_ON() is a macro (the architecture's bug table). */
void cxlf_tracepoint_unregister(struct tracepoint *tp, void *probe, void *data)
{
	WARN_ON(tracepoint_probe_unregister(tp, probe, data));
}

/* In C: tracepoint_synchronize_unregister() is a static inline. */
void cxlf_tracepoint_synchronize_unregister(void)
{
	tracepoint_synchronize_unregister();
}
