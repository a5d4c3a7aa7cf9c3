// SPDX-License-Identifier: GPL-2.0
/* Periodic delayed work. */

#include "../helpers.h"

#include <linux/slab.h>
#include <linux/workqueue.h>

struct cxlf_periodic {
	struct delayed_work dwork;
	/* Returns the milliseconds until the next run. */
	unsigned int (*fn)(void *ctx);
	void *ctx;
	/* The system's high-priority queue, or one of the work's own. */
	struct workqueue_struct *wq;
	bool own_wq;
	bool stopping;
};

static void cxlf_periodic_run(struct work_struct *work)
{
	struct cxlf_periodic *p =
		container_of(to_delayed_work(work), struct cxlf_periodic, dwork);

	unsigned int next_ms = p->fn(p->ctx);

	if (!READ_ONCE(p->stopping))
		queue_delayed_work(p->wq, &p->dwork,
				   max(1UL, msecs_to_jiffies(next_ms)));
}

/*
 * In C: INIT_DELAYED_WORK() is a macro (and the work is embedded). With a
 * `wq_name`, the work gets an ordered high-priority queue of its own, so a
 * run that waits on a device for seconds holds no shared worker.
 */
struct cxlf_periodic *cxlf_periodic_start(unsigned int (*fn)(void *ctx),
					  void *ctx, unsigned int first_ms,
					  const char *wq_name)
{
	struct cxlf_periodic *p = kzalloc(sizeof(*p), GFP_KERNEL);

	if (!p)
		return ERR_PTR(-ENOMEM);
	p->wq = system_highpri_wq;
	if (wq_name) {
		p->wq = alloc_ordered_workqueue("%s", WQ_HIGHPRI, wq_name);
		if (!p->wq) {
			kfree(p);
			return ERR_PTR(-ENOMEM);
		}
		p->own_wq = true;
	}
	INIT_DELAYED_WORK(&p->dwork, cxlf_periodic_run);
	p->fn = fn;
	p->ctx = ctx;
	queue_delayed_work(p->wq, &p->dwork, msecs_to_jiffies(first_ms));
	return p;
}

/* Returns after the last run has finished; the work re-queues itself, which
 * cancel_delayed_work_sync() is documented to handle. */
/* In C: struct cxlf_periodic embeds the delayed work. */
void cxlf_periodic_stop(struct cxlf_periodic *p)
{
	WRITE_ONCE(p->stopping, true);
	cancel_delayed_work_sync(&p->dwork);
	if (p->own_wq)
		destroy_workqueue(p->wq);
	kfree(p);
}
