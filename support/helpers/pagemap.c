// SPDX-License-Identifier: GPL-2.0
/* ZONE_DEVICE pages (support/pagemap.rs creates the pagemap). */

#include "../helpers.h"

#include <linux/mm.h>
#include <linux/page_ref.h>
#include <linux/sched.h>

/* In C: pfn_to_page() is a macro. */
struct page *cxlf_pfn_to_page(unsigned long pfn)
{
	return pfn_to_page(pfn);
}

/* In C: page_ref_count() is a static inline. */
int cxlf_page_ref_count(const struct page *page)
{
	return page_ref_count(page);
}

/* In C: cond_resched() is a macro (a static call). */
void cxlf_cond_resched(void)
{
	cond_resched();
}
