// SPDX-License-Identifier: GPL-2.0
/* This module's parameters. */
#include "../support/helpers.h"

#include "beluga_region.h"

CXLF_PARAM_UINT(host_index, 0,
		"This host's slot in the pools it joins (unique per host)");
CXLF_PARAM_UINT(lease_ms, 2000, "Lease period in milliseconds (100..600000)");

/* Defined in Rust (region.rs, through support/region.rs). */
EXPORT_SYMBOL_GPL(beluga_region_get);
EXPORT_SYMBOL_GPL(beluga_region_put);
EXPORT_SYMBOL_GPL(beluga_region_phys);
EXPORT_SYMBOL_GPL(beluga_region_size);
EXPORT_SYMBOL_GPL(beluga_region_read);
EXPORT_SYMBOL_GPL(beluga_region_write);
EXPORT_SYMBOL_GPL(beluga_region_access_begin);
EXPORT_SYMBOL_GPL(beluga_region_access_end);
EXPORT_SYMBOL_GPL(beluga_region_on_revoke);
