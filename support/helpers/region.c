// SPDX-License-Identifier: GPL-2.0
/* beluga_dax's region API, consumer side (support/region.rs). */

#include "../helpers.h"

#include <linux/libnvdimm.h>

/*
 * In C: arch_wb_cache_pmem() is declared in libnvdimm.h, which the
 * bindings do not read, and wmb() is a macro. On x86 the first is clwb of
 * each line (clflushopt or clflush where the CPU lacks clwb, patched by
 * alternatives), the second sfence: the lines are written back when this
 * returns.
 */
void cxlf_write_back(void *addr, size_t len)
{
	arch_wb_cache_pmem(addr, len);
	wmb();
}
