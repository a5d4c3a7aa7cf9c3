// SPDX-License-Identifier: GPL-2.0
/* Tasks: the current CPU, RCU, another task's credentials, thread lists,
 * the current task's state (support/task.rs). */

#include "../helpers.h"

#include <linux/cred.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/smp.h>

/* In C: smp_processor_id is a macro (with a preemption check). */
unsigned int cxlf_this_cpu(void)
{
	return raw_smp_processor_id();
}

/* In C: rcu_read_lock() is a static inline (with its lockdep map). */
void cxlf_rcu_read_lock(void)
{
	rcu_read_lock();
}

/* In C: rcu_read_unlock() is a static inline. */
void cxlf_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

/* In C: __task_cred() is a macro (rcu_dereference). Under RCU. */
const struct cred *cxlf_task_cred(const struct task_struct *task)
{
	return __task_cred(task);
}

/* In C: for_each_thread() is a macro over an RCU list. Under RCU; NULL if
 * the group has no threads left. */
struct task_struct *cxlf_first_thread(struct task_struct *task)
{
	return list_first_or_null_rcu(&task->signal->thread_head, struct task_struct, thread_node);
}

/* In C: __next_thread() is a static inline. Under RCU; NULL after the
 * last thread. */
struct task_struct *cxlf_next_thread(struct task_struct *t)
{
	return __next_thread(t);
}

/* In C: set_current_state() is a macro (with the barrier a sleep needs). */
void cxlf_set_current_state(unsigned int state)
{
	set_current_state(state);
}

/* In C: __set_current_state() is a macro. */
void cxlf___set_current_state(unsigned int state)
{
	__set_current_state(state);
}

/* In C: fatal_signal_pending() is a static inline. */
bool cxlf_fatal_signal_pending(void)
{
	return fatal_signal_pending(current);
}
