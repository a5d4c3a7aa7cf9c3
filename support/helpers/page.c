// SPDX-License-Identifier: GPL-2.0
/* Struct pages and their reference counts (support/page.rs; pagemap.rs
 * and region.rs use them). */

#include "../helpers.h"

#include <linux/mm.h>
#include <linux/page_ref.h>

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

/* In C: get_page() is a static inline. */
void cxlf_get_page(struct page *page)
{
	get_page(page);
}

/* In C: put_page() is a static inline. */
void cxlf_put_page(struct page *page)
{
	put_page(page);
}
