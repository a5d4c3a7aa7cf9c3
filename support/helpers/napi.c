// SPDX-License-Identifier: GPL-2.0
/* NAPI (support/napi.rs builds and polls the contexts). */

#include "../helpers.h"

#include <linux/bottom_half.h>
#include <linux/netdevice.h>
#include <linux/preempt.h>
#include <linux/skbuff.h>

/* In C: in_interrupt() is a macro. */
bool cxlf_in_interrupt(void)
{
	return in_interrupt();
}

/* In C: local_bh_disable() is a static inline. */
void cxlf_local_bh_disable(void)
{
	local_bh_disable();
}

/* In C: local_bh_enable() is a static inline. */
void cxlf_local_bh_enable(void)
{
	local_bh_enable();
}

/* In C: skb_record_rx_queue() is a static inline. */
void cxlf_skb_record_rx_queue(struct sk_buff *skb, u16 rxq)
{
	skb_record_rx_queue(skb, rxq);
}
