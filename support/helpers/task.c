// SPDX-License-Identifier: GPL-2.0
/* Tasks: lookup, flags, ids, thread walks. */

#include "../helpers.h"

#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/smp.h>

/* In C: smp_processor_id is a macro (with a preemption check). */
unsigned int cxlf_this_cpu(void)
{
	return raw_smp_processor_id();
}

/*
 * In C: the pid lookup needs rcu_read_lock (a static inline) around
 * find_vpid, and the task flags test reads PF_* macros.
 * Returns a counted reference to the thread `nr` in the caller's pid
 * namespace, or NULL.
 */
struct task_struct *cxlf_get_task_by_vpid(pid_t nr)
{
	struct task_struct *task;

	rcu_read_lock();
	task = pid_task(find_vpid(nr), PIDTYPE_PID);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	return task;
}

bool cxlf_task_is_user(const struct task_struct *task)
{
	return !(READ_ONCE(task->flags) & (PF_KTHREAD | PF_EXITING));
}

bool cxlf_task_exiting(const struct task_struct *task)
{
	return READ_ONCE(task->flags) & PF_EXITING;
}

pid_t cxlf_task_tgid(const struct task_struct *task)
{
	return task_tgid_vnr((struct task_struct *)task);
}

pid_t cxlf_task_vpid(const struct task_struct *task)
{
	return task_pid_vnr((struct task_struct *)task);
}

/*
 * In C: for_each_thread is a macro over RCU lists. Calls fn for every
 * thread of task's thread group, under rcu_read_lock (fn must not sleep),
 * until it returns false.
 */
void cxlf_for_each_thread(struct task_struct *task,
			  bool (*fn)(void *ctx, struct task_struct *t), void *ctx)
{
	struct task_struct *t;

	rcu_read_lock();
	for_each_thread(task, t) {
		if (!fn(ctx, t))
			break;
	}
	rcu_read_unlock();
}
