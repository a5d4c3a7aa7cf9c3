// SPDX-License-Identifier: GPL-2.0
/* This module's parameters. */
#include "../support/helpers.h"

CXLF_PARAM_STRING(mode, "Queue mode of every NIC bound from now on: type1 (rings and buffers in host memory), type2 (RX and buffers in device memory), pcie (type1 with an MMIO doorbell per batch)");
