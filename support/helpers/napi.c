// SPDX-License-Identifier: GPL-2.0
/* NAPI contexts and GRO receive. */

#include "../helpers.h"

#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/slab.h>

/*
 * NAPI. The napi_struct sits in a C allocation with the Rust side's poll
 * function and data pointer; the poll trampoline finds them by
 * container_of. napi_schedule, napi_complete_done and the skb building
 * are static inlines.
 */
struct cxlf_napi {
	struct napi_struct napi;
	int (*poll)(void *data, struct napi_struct *napi, int budget);
	void *data;
	u16 rxq;
};

static int cxlf_napi_poll(struct napi_struct *napi, int budget)
{
	struct cxlf_napi *n = container_of(napi, struct cxlf_napi, napi);

	return n->poll(n->data, napi, budget);
}

/* A NAPI context on `dev` for RX queue `rxq`, disabled; NULL without
 * memory. */
struct napi_struct *cxlf_napi_add(struct net_device *dev,
				  int (*poll)(void *, struct napi_struct *, int),
				  void *data, u16 rxq)
{
	struct cxlf_napi *n = kzalloc(sizeof(*n), GFP_KERNEL);

	if (!n)
		return NULL;
	n->poll = poll;
	n->data = data;
	n->rxq = rxq;
	netif_napi_add(dev, &n->napi, cxlf_napi_poll);
	return &n->napi;
}

/* Removes a disabled context (waiting out an RCU grace period) and
 * frees it. */
void cxlf_napi_del(struct napi_struct *napi)
{
	netif_napi_del(napi);
	kfree(container_of(napi, struct cxlf_napi, napi));
}

/* In C: a static inline. The interrupt is what netlink's napi-get reports
 * for the context. */
void cxlf_napi_set_irq(struct napi_struct *napi, int irq)
{
	netif_napi_set_irq(napi, irq);
}

void cxlf_napi_enable(struct napi_struct *napi)
{
	napi_enable(napi);
}

void cxlf_napi_disable(struct napi_struct *napi)
{
	napi_disable(napi);
}

/*
 * From any context: in process context with bottom halves off, so the
 * NET_RX softirq runs when they come back on rather than being left
 * pending (which the idle path warns about).
 */
void cxlf_napi_schedule(struct napi_struct *napi)
{
	if (in_interrupt()) {
		napi_schedule(napi);
	} else {
		local_bh_disable();
		napi_schedule(napi);
		local_bh_enable();
	}
}

bool cxlf_napi_complete_done(struct napi_struct *napi, int work)
{
	return napi_complete_done(napi, work);
}

/* The device a context is on (for the poll's TX side). */
struct net_device *cxlf_napi_dev(struct napi_struct *napi)
{
	return napi->dev;
}

/*
 * Hands `len` bytes at `data` (a frame the device wrote) to the stack as
 * a received Ethernet frame, through GRO. -ENOMEM if no buffer.
 */
int cxlf_napi_receive(struct napi_struct *napi, const void *data,
		      unsigned int len)
{
	struct sk_buff *skb = napi_alloc_skb(napi, len);

	if (!skb)
		return -ENOMEM;
	skb_put_data(skb, data, len);
	skb_record_rx_queue(skb, container_of(napi, struct cxlf_napi, napi)->rxq);
	skb->protocol = eth_type_trans(skb, napi->dev);
	napi_gro_receive(napi, skb);
	return 0;
}
