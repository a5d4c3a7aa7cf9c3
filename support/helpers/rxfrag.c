// SPDX-License-Identifier: GPL-2.0
/* Receiving into page fragments (support/abstractions/rxfrag.rs builds the skbs). */

#include "../helpers.h"

#include <linux/skbuff.h>

/* In C: skb_shinfo() is a macro. */
unsigned int cxlf_skb_nr_frags(struct sk_buff *skb)
{
	return skb_shinfo(skb)->nr_frags;
}

/* In C: skb_add_rx_frag() is a static inline. */
void cxlf_skb_add_rx_frag(struct sk_buff *skb, unsigned int i,
			  struct page *page, unsigned int off,
			  unsigned int len, unsigned int truesize)
{
	skb_add_rx_frag(skb, i, page, off, len, truesize);
}

/* In C: skb_shinfo() is a macro. */
void cxlf_skb_set_shared_frag(struct sk_buff *skb)
{
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
}
