// SPDX-License-Identifier: GPL-2.0
/* The support layer's C helpers, compiled into this module. */
#include "../support/helpers.c"
