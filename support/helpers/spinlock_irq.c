// SPDX-License-Identifier: GPL-2.0
/* Raw spinlocks. */

#include "../helpers.h"

#include <linux/spinlock.h>

/*
 * In C: raw_spin_lock_irqsave and raw_spin_unlock_irqrestore are macros,
 * and raw_spin_lock_init a macro with its own lock class unless lockdep
 * is on (then __raw_spin_lock_init, with the caller's class).
 */
void cxlf_raw_spin_lock_init(raw_spinlock_t *lock, const char *name,
			     struct lock_class_key *key)
{
#ifdef CONFIG_DEBUG_SPINLOCK
	__raw_spin_lock_init(lock, name, key, LD_WAIT_SPIN);
#else
	raw_spin_lock_init(lock);
#endif
}

unsigned long cxlf_raw_spin_lock_irqsave(raw_spinlock_t *lock)
{
	unsigned long flags;

	raw_spin_lock_irqsave(lock, flags);
	return flags;
}

void cxlf_raw_spin_unlock_irqrestore(raw_spinlock_t *lock, unsigned long flags)
{
	raw_spin_unlock_irqrestore(lock, flags);
}
