// SPDX-License-Identifier: GPL-2.0
/* ZONE_DEVICE pagemaps and their page references. */

#include "../helpers.h"

#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/slab.h>

/* In C: struct dev_pagemap ends in a union with a flexible array. */
struct dev_pagemap *cxlf_pagemap_create(u64 start, u64 len, int nid,
					void **vaddr)
{
	struct dev_pagemap *pgmap = kzalloc(sizeof(*pgmap), GFP_KERNEL);
	void *addr;

	if (!pgmap)
		return ERR_PTR(-ENOMEM);
	/* Order-0 pages: a PMD maps 512 of them, as device-dax with 4K align. */
	pgmap->type = MEMORY_DEVICE_GENERIC;
	pgmap->range.start = start;
	pgmap->range.end = start + len - 1;
	pgmap->nr_range = 1;
	addr = memremap_pages(pgmap, nid);
	if (IS_ERR(addr)) {
		kfree(pgmap);
		return addr;
	}
	*vaddr = addr;
	return pgmap;
}

/* In C: frees the struct dev_pagemap cxlf_pagemap_create allocated. */
void cxlf_pagemap_destroy(struct dev_pagemap *pgmap)
{
	memunmap_pages(pgmap);
	kfree(pgmap);
}

/*
 * Pages of [pfn, pfn + nr) that someone other than their pagemap holds a
 * reference to (a GUP get or pin: O_DIRECT, io_uring, RDMA, a kernel
 * user). An idle MEMORY_DEVICE_GENERIC page has a count of one.
 * In C: pfn_to_page() is a macro, page_ref_count() a static inline.
 */
unsigned long cxlf_pages_referenced(unsigned long pfn, unsigned long nr)
{
	unsigned long i, busy = 0;

	for (i = 0; i < nr; i++) {
		if (page_ref_count(pfn_to_page(pfn + i)) > 1)
			busy++;
		if (!(i % 4096))
			cond_resched();
	}
	return busy;
}
