// SPDX-License-Identifier: GPL-2.0
/* This module's parameters. */
#include "../support/helpers.h"

CXLF_PARAM_STRING(pool, "beluga pool holding the drack region (e.g. beluga0.0; empty: no interface)");
CXLF_PARAM_STRING(region, "Name of the drack region in the pool (default drack0)");
CXLF_PARAM_UINT(host_index, 0, "This host's index among the pool's hosts (0..hosts-1); host 0 formats the region");
CXLF_PARAM_UINT(hosts, 8, "Hosts the region is laid out for when host 0 formats it (2..8)");
CXLF_PARAM_UINT(lease_ms, 1000, "A peer whose heartbeat stops for this long is dead (100..600000)");
CXLF_PARAM_UINT(lend_cap, 128, "Most buffers of one source lent to the stack at once; beyond, frames are copied (0..256; below 3 jumbo frames are never lent)");
CXLF_PARAM_STRING(lend, "Interfaces lent to the rack at load, comma-separated, at most 31 characters (as drack lend each)");
