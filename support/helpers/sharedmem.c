// SPDX-License-Identifier: GPL-2.0
/* Shared memory: clearing and writing back. */

#include "../helpers.h"

#include <asm/cacheflush.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/string.h>

/*
 * Zeroes [addr, addr + len) of shared memory and writes it back, in
 * chunks with a reschedule point between them (a pool section is 2 MiB,
 * and on an emulated CXL window every store traps).
 * In C: a memset64()/clflush_cache_range() loop with cond_resched().
 */
void cxlf_clear_flush(void *addr, size_t len)
{
	const size_t chunk = SZ_64K;
	size_t done = 0;

	/* 8-byte stores: an emulated window traps once per store. */
	if (!IS_ALIGNED((unsigned long)addr | len, 8)) {
		memset(addr, 0, len);
		clflush_cache_range(addr, len);
		return;
	}
	while (done < len) {
		size_t n = min(chunk, len - done);

		memset64(addr + done, 0, n / 8);
		clflush_cache_range(addr + done, n);
		done += n;
		cond_resched();
	}
}
