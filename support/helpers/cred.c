// SPDX-License-Identifier: GPL-2.0
/* Credentials (support/cred.rs). */

#include "../helpers.h"

#include <linux/cred.h>
#include <linux/uidgid.h>

/* In C: current_euid() is a macro. */
u32 cxlf_current_euid(void)
{
	return from_kuid_munged(&init_user_ns, current_euid());
}
