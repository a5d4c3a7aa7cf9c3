// SPDX-License-Identifier: GPL-2.0
/* The support layer's C helpers, compiled into this module. */
#include "../support/helpers.c"

CXLF_PARAM_UINT(host_index, 0,
		"This host's slot in the pools it joins (unique per host)");
CXLF_PARAM_UINT(lease_ms, 2000, "Lease period in milliseconds (100..600000)");
