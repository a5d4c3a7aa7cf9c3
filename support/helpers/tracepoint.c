// SPDX-License-Identifier: GPL-2.0
/* Probes on the kernel's tracepoints. */

#include "../helpers.h"

#include <linux/tracepoint.h>

/*
 * The kernel's own tracepoints, found by name. In C: struct tracepoint is
 * not in the 6.12 bindings, the scheduler's tracepoints are not exported
 * as symbols (for_each_kernel_tracepoint is the way to reach them), and
 * tracepoint_synchronize_unregister is a static inline.
 */
struct cxlf_tp_lookup {
	const char *name;
	struct tracepoint *tp;
};

static void cxlf_tp_match(struct tracepoint *tp, void *priv)
{
	struct cxlf_tp_lookup *lookup = priv;

	if (!lookup->tp && !strcmp(tp->name, lookup->name))
		lookup->tp = tp;
}

void *cxlf_tracepoint_register(const char *name, void *probe, void *data)
{
	struct cxlf_tp_lookup lookup = { .name = name };
	int err;

	for_each_kernel_tracepoint(cxlf_tp_match, &lookup);
	if (!lookup.tp)
		return ERR_PTR(-ENOENT);
	err = tracepoint_probe_register(lookup.tp, probe, data);
	return err ? ERR_PTR(err) : lookup.tp;
}

void cxlf_tracepoint_unregister(void *tp, void *probe, void *data)
{
	WARN_ON(tracepoint_probe_unregister(tp, probe, data));
}

void cxlf_tracepoint_sync(void)
{
	tracepoint_synchronize_unregister();
}
