// SPDX-License-Identifier: GPL-2.0
/* This module's parameters. */
#include "../support/helpers.h"

CXLF_PARAM_UINT(max_threads, 1024, "Most threads attached at once (16..65536)");
CXLF_PARAM_UINT(min_run_us, 50, "Shortest run when a thread runs less than its window, us (0..1000; 0: 1% of T_W)");
CXLF_PARAM_UINT(user_threads, 256, "Most threads one user without CAP_SYS_NICE attaches (1..max_threads)");
CXLF_PARAM_STRING(pool, "beluga pool whose region holds the cross-host slots (e.g. beluga0.0; empty: this host alone)");
CXLF_PARAM_UINT(host_index, 0, "This host's index among those sharing the pool's fabric (0..15)");
CXLF_PARAM_UINT(lease_ms, 1000, "A peer whose slot stops changing for this long is dropped (100..600000)");
