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
 * The kernel mapping is reached in two ways, each failing with -ENODEV
 * (or NULL) once the region is revoked (unbind, a lost lease, the pool
 * changing under the host):
 *
 * - beluga_region_read() and beluga_region_write() keep the flush
 *   discipline of non-coherent pool memory for the caller; they take a
 *   mutex (process context only).
 * - An access section, from any context but NMI: beluga_region_access_begin()
 *   returns the kernel address of the region's first byte and its length
 *   in *len, or NULL once the region is revoked. Until the caller ends the
 *   section with beluga_region_access_end(), in the same task and without
 *   sleeping in between (it is an RCU read-side section), the mapping
 *   stays valid and the region is not revoked: revoking waits for open
 *   sections (synchronize_rcu). Inside, the caller reads and writes plain
 *   cached memory and keeps the flush discipline itself: write back its
 *   lines after writing (arch_wb_cache_pmem, then wmb), invalidate them
 *   before reading what another host wrote (clflush_cache_range).
 *
 * beluga_region_on_revoke() registers @fn(@data) (or with NULL clears
 * it): beluga_dax calls it once, in process context, before it revokes
 * the region; access sections still succeed during the call and fail
 * after it. It holds the pool's lock meanwhile: the callback may sleep
 * but must not get, put or register on a region of the pool. Registering
 * on a revoked region fails with -ENODEV; beluga_region_put() clears the
 * callback, waiting for a call in progress.
 *
 * The physical range (for device DMA, e.g. descriptor rings) is valid
 * while the region is held and the pool bound.
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
void *beluga_region_access_begin(const struct beluga_region *region,
				 size_t *len);
void beluga_region_access_end(const struct beluga_region *region);
int beluga_region_on_revoke(const struct beluga_region *region,
			    void (*fn)(void *data), void *data);

/*
 * The page at @offset of the region: the pool's memory has struct pages
 * (ZONE_DEVICE), valid while the region is held. A reference taken on it
 * (get_page, an sk_buff fragment) keeps the object's sections from reuse
 * until it is dropped: an unbind then keeps the pool's memory (and its
 * struct pages) until the last such reference goes. Take it inside an
 * access section (the pool is bound there).
 */
static inline struct page *beluga_region_page(const struct beluga_region *region,
					      u64 offset)
{
	if (offset >= beluga_region_size(region))
		return NULL;
	return pfn_to_page(PHYS_PFN(beluga_region_phys(region) + offset));
}

#endif
