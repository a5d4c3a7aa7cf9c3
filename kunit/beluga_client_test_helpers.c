// SPDX-License-Identifier: GPL-2.0
/* This module's parameters (it uses none of the support layer's C helpers). */
#include "../support/helpers.h"

CXLF_PARAM_UINT(size_mib, 4, "Size of the region, in MiB");
