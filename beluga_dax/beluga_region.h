/* SPDX-License-Identifier: GPL-2.0 */
/*
 * beluga_dax's in-kernel region API: a named region of a beluga pool,
 * shared across hosts, for other modules' state (mchannel_sched's and
 * drack_netdev's cross-host bookkeeping).
 *
 * beluga_region_get() creates the shared object `name` of at least `size`
 * bytes in pool `pool` ("beluga0.0"), or opens it if another host (or
 * module) created it, and holds it for this host. beluga_region_put()
 * lets go of it (the object is freed when no host holds it any more);
 * call it before the module exits.
 *
 * The kernel mapping is reached through beluga_region_read() and
 * beluga_region_write(), which keep the flush discipline of non-coherent
 * pool memory and fail with -ENODEV once the pool is unbound, rather than
 * through a pointer that would dangle after an unbind. The physical range
 * (for device DMA, e.g. descriptor rings) is valid while the region is
 * held and the pool bound.
 *
 * Rust modules reach these through support/region.rs.
 */
#ifndef CXLFABRIC_BELUGA_REGION_H
#define CXLFABRIC_BELUGA_REGION_H

#include <linux/mm.h>
#include <linux/types.h>

struct beluga_region;

struct beluga_region *beluga_region_get(const char *pool, const char *name,
					u64 size, int *err);
void beluga_region_put(struct beluga_region *region);
u64 beluga_region_phys(const struct beluga_region *region);
u64 beluga_region_size(const struct beluga_region *region);
int beluga_region_read(const struct beluga_region *region, u64 offset,
		       void *buf, size_t len);
int beluga_region_write(const struct beluga_region *region, u64 offset,
			const void *buf, size_t len);

/*
 * The page at @offset of the region: the pool's memory has struct pages
 * (ZONE_DEVICE), valid while the region is held. A reference taken on it
 * (get_page, an sk_buff fragment) keeps the object's sections from reuse
 * until it is dropped, and must be dropped before beluga_dax unbinds.
 */
static inline struct page *beluga_region_page(const struct beluga_region *region,
					      u64 offset)
{
	if (offset >= beluga_region_size(region))
		return NULL;
	return pfn_to_page(PHYS_PFN(beluga_region_phys(region) + offset));
}

#endif
