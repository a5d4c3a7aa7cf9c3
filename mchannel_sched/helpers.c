// SPDX-License-Identifier: GPL-2.0
/* The support layer's C helpers, and this module's parameters. */
#include "../support/helpers.c"

CXLF_PARAM_UINT(max_threads, 1024, "Most threads attached at once (16..65536)");
