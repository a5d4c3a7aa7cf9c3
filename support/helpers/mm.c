// SPDX-License-Identifier: GPL-2.0
/* VMAs, page protections and pfn_t. */

#include "../helpers.h"

#include <linux/mm.h>
#include <linux/pfn_t.h>

/* In C: vm_flags_set() is a static inline (it write-locks the VMA). */
void cxlf_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_set(vma, flags);
}

/* In C: vm_flags_clear() is a static inline (it write-locks the VMA). */
void cxlf_vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_clear(vma, flags);
}

/* In C: pgprot_noncached() is a macro. */
pgprot_t cxlf_pgprot_noncached(pgprot_t prot)
{
	return pgprot_noncached(prot);
}

/*
 * PFN_DEV alone: a special (struct-page-less) entry of a VM_PFNMAP
 * mapping. With PFN_MAP: a devmap entry of a ZONE_DEVICE page, so that
 * GUP, pins and the mempolicy walk find real pages (as device-dax maps).
 * In C: __pfn_to_pfn_t() is a static inline, PFN_DEV and PFN_MAP macros.
 */
pfn_t cxlf_pfn_to_pfn_t(unsigned long pfn, bool devmap)
{
	return __pfn_to_pfn_t(pfn, devmap ? PFN_DEV | PFN_MAP : PFN_DEV);
}
