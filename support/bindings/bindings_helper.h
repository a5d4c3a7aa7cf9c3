/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the support layer needs from C beyond 6.12's `kernel::bindings`
 * (whose bindings_helper.h has no netdevice.h, miscdevice.h or pci.h).
 * bindgen reads this once per module directory (scripts/cxlfabric.mk);
 * `parameters` says which items it generates. Upstream kernels that
 * bind these headers make it unnecessary.
 */
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/ethtool.h>
#include <linux/miscdevice.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/rtnetlink.h>

/* Private to drivers/dax; found through -I$(srctree)/drivers/dax. */
#include "bus.h"
#include "dax-private.h"

/*
 * Constants bindgen cannot evaluate (function-like macros), as the
 * kernel's own bindings_helper.h gives them: a const it can read.
 */
const u32 CXLF_ETHTOOL_COALESCE_RX_USECS = ETHTOOL_COALESCE_RX_USECS;
const u32 CXLF_ETHTOOL_COALESCE_RX_MAX_FRAMES = ETHTOOL_COALESCE_RX_MAX_FRAMES;
const int CXLF_NAPI_POLL_WEIGHT = NAPI_POLL_WEIGHT;
const int CXLF_MISC_DYNAMIC_MINOR = MISC_DYNAMIC_MINOR;
const int CXLF_NET_IP_ALIGN = NET_IP_ALIGN;
const u32 CXLF_MAX_SKB_FRAGS = MAX_SKB_FRAGS;

/* Tracepoints, perf events and task work (support/tracepoint.rs, perf.rs,
 * task_work.rs). */
#include <linux/perf_event.h>
#include <linux/task_work.h>
#include <linux/tracepoint.h>
