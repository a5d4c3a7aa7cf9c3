// SPDX-License-Identifier: GPL-2.0
/* This module's parameters. */
#include "../support/helpers.h"

CXLF_PARAM_UINT(size_mib, 4, "Size of the region, in MiB");
CXLF_PARAM_UINT(hold_page, 0, "Keep a reference on a page of the region until unload (1)");
