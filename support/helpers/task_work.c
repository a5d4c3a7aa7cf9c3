// SPDX-License-Identifier: GPL-2.0
/* Task work. */

#include "../helpers.h"

#include <linux/task_work.h>

/*
 * In C: task_work_add is not in the 6.12 bindings (linux/task_work.h is
 * not in bindings_helper.h), and its notify modes are an enum whose
 * values Rust should not copy.
 */
int cxlf_task_work_add(struct task_struct *task, struct callback_head *work,
		       bool signal, bool no_alloc)
{
	int flags = no_alloc ? TWAF_NO_ALLOC : 0;

	return task_work_add(task, work, (signal ? TWA_SIGNAL : TWA_RESUME) | flags);
}
