// SPDX-License-Identifier: GPL-2.0
/* Credentials and permission checks. */

#include "../helpers.h"

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/uidgid.h>

/* In C: current_euid() is a macro. */
u32 cxlf_current_euid(void)
{
	return from_kuid_munged(&init_user_ns, current_euid());
}

/*
 * In C: the credentials of another task are read under RCU (__task_cred
 * is a macro). The rule of setpriority(2) (set_one_prio): the caller's
 * euid is the target's uid or euid, or it has CAP_SYS_NICE over the
 * target's user namespace.
 */
bool cxlf_may_renice(const struct task_struct *task)
{
	const struct cred *cred = current_cred(), *pcred;
	bool ok;

	rcu_read_lock();
	pcred = __task_cred(task);
	ok = uid_eq(pcred->uid, cred->euid) || uid_eq(pcred->euid, cred->euid) ||
	     ns_capable(pcred->user_ns, CAP_SYS_NICE);
	rcu_read_unlock();
	return ok;
}
