// SPDX-License-Identifier: GPL-2.0
/* This module's parameters. */
#include "../support/helpers.h"

CXLF_PARAM_STRING(mode, "Queue mode of every NIC bound from now on: type1 (rings and buffers in host memory), type2 (RX and buffers in device memory), pcie (type1 with an MMIO doorbell per batch)");
CXLF_PARAM_UINT(kvs_buckets, 1024, "Buckets of each NIC's KVS host table (4 pairs each; a power of two up to 8192), allocated on first use");
CXLF_PARAM_UINT(kvs_port, 7878, "UDP port of the KVS offload unless set through /dev/cxlnic");
