// SPDX-License-Identifier: GPL-2.0
/* The support layer's C helpers, compiled into this module. */
#include "../support/helpers.c"

CXLF_PARAM_UINT(size_mib, 4, "Size of the region, in MiB");
