// SPDX-License-Identifier: GPL-2.0
/* Ethernet devices and their ethtool operations. */

#include "../helpers.h"

#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>

/*
 * Network devices. In C: struct net_device is opaque to 6.12's Rust
 * bindings (netdevice.h is not in bindings_helper.h), the driver core
 * calls net_device_ops and ethtool_ops with its own signatures, and
 * netdev_priv, the carrier and queue calls are static inlines. The
 * private area holds the Rust side's callbacks and data pointer; every
 * trampoline passes that pointer on.
 */
struct cxlf_netdev_priv {
	const struct cxlf_netdev_ops *ops;
	void *data;
};

static void *cxlf_nd_data(struct net_device *dev)
{
	return ((struct cxlf_netdev_priv *)netdev_priv(dev))->data;
}

static const struct cxlf_netdev_ops *cxlf_nd_ops(struct net_device *dev)
{
	return ((struct cxlf_netdev_priv *)netdev_priv(dev))->ops;
}

static int cxlf_nd_open(struct net_device *dev)
{
	return cxlf_nd_ops(dev)->open(cxlf_nd_data(dev), dev);
}

static int cxlf_nd_stop(struct net_device *dev)
{
	return cxlf_nd_ops(dev)->stop(cxlf_nd_data(dev), dev);
}

static netdev_tx_t cxlf_nd_xmit(struct sk_buff *skb, struct net_device *dev)
{
	return cxlf_nd_ops(dev)->xmit(cxlf_nd_data(dev), dev, skb,
				       skb_get_queue_mapping(skb)) ?
		       NETDEV_TX_BUSY : NETDEV_TX_OK;
}

static void cxlf_nd_stats(struct net_device *dev, struct rtnl_link_stats64 *s)
{
	struct cxlf_netdev_stats st = {};

	cxlf_nd_ops(dev)->stats(cxlf_nd_data(dev), &st);
	s->rx_packets = st.rx_packets;
	s->tx_packets = st.tx_packets;
	s->rx_bytes = st.rx_bytes;
	s->tx_bytes = st.tx_bytes;
	s->rx_errors = st.rx_errors;
	s->tx_errors = st.tx_errors;
	s->rx_dropped = st.rx_dropped;
	s->tx_dropped = st.tx_dropped;
}

static int cxlf_nd_change_mtu(struct net_device *dev, int mtu)
{
	int err = cxlf_nd_ops(dev)->change_mtu(cxlf_nd_data(dev), dev, mtu);

	if (!err)
		WRITE_ONCE(dev->mtu, mtu);
	return err;
}

static void cxlf_nd_tx_timeout(struct net_device *dev, unsigned int txqueue)
{
	cxlf_nd_ops(dev)->tx_timeout(cxlf_nd_data(dev), dev, txqueue);
}

#define CXLF_NETDEV_OPS                                  \
	.ndo_open = cxlf_nd_open,                        \
	.ndo_stop = cxlf_nd_stop,                        \
	.ndo_start_xmit = cxlf_nd_xmit,                  \
	.ndo_get_stats64 = cxlf_nd_stats,                \
	.ndo_change_mtu = cxlf_nd_change_mtu,            \
	.ndo_validate_addr = eth_validate_addr,          \
	.ndo_set_mac_address = eth_mac_addr

static const struct net_device_ops cxlf_netdev_ops = {
	CXLF_NETDEV_OPS,
};

/*
 * With the stack's TX watchdog: only for drivers that take its call (the
 * net core arms the watchdog whenever ndo_tx_timeout is set).
 */
static const struct net_device_ops cxlf_netdev_ops_watchdog = {
	CXLF_NETDEV_OPS,
	.ndo_tx_timeout = cxlf_nd_tx_timeout,
};

static void cxlf_et_drvinfo(struct net_device *dev, struct ethtool_drvinfo *info)
{
	/* The module, not KBUILD_MODNAME: that names this object. */
	strscpy(info->driver, THIS_MODULE->name, sizeof(info->driver));
	if (dev->dev.parent)
		strscpy(info->bus_info, dev_name(dev->dev.parent),
			sizeof(info->bus_info));
	cxlf_nd_ops(dev)->drvinfo(cxlf_nd_data(dev), info);
}

/*
 * The settings ethtool changes go through one get/set pair on the Rust
 * side: a setter reads the current values, changes its part and hands
 * the whole on, with which part changed.
 */
static int cxlf_et_params(struct net_device *dev, struct cxlf_ethtool_params *p)
{
	memset(p, 0, sizeof(*p));
	return cxlf_nd_ops(dev)->get_params(cxlf_nd_data(dev), p);
}

static int cxlf_et_set(struct net_device *dev,
		       const struct cxlf_ethtool_params *p, u32 what)
{
	return cxlf_nd_ops(dev)->set_params(cxlf_nd_data(dev), dev, p, what);
}

static void cxlf_et_get_ringparam(struct net_device *dev,
				  struct ethtool_ringparam *ring,
				  struct kernel_ethtool_ringparam *kring,
				  struct netlink_ext_ack *extack)
{
	struct cxlf_ethtool_params p;

	if (cxlf_et_params(dev, &p))
		return;
	ring->rx_max_pending = p.rx_ring_max;
	ring->tx_max_pending = p.tx_ring_max;
	ring->rx_pending = p.rx_ring;
	ring->tx_pending = p.tx_ring;
}

static int cxlf_et_set_ringparam(struct net_device *dev,
				 struct ethtool_ringparam *ring,
				 struct kernel_ethtool_ringparam *kring,
				 struct netlink_ext_ack *extack)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	if (ring->rx_mini_pending || ring->rx_jumbo_pending)
		return -EINVAL;
	p.rx_ring = ring->rx_pending;
	p.tx_ring = ring->tx_pending;
	return cxlf_et_set(dev, &p, CXLF_ET_RINGS);
}

static void cxlf_et_get_channels(struct net_device *dev,
				 struct ethtool_channels *ch)
{
	struct cxlf_ethtool_params p;

	if (cxlf_et_params(dev, &p))
		return;
	ch->max_combined = p.channels_max;
	ch->combined_count = p.channels;
}

static int cxlf_et_set_channels(struct net_device *dev,
				struct ethtool_channels *ch)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	if (ch->rx_count || ch->tx_count || ch->other_count)
		return -EINVAL;
	p.channels = ch->combined_count;
	return cxlf_et_set(dev, &p, CXLF_ET_CHANNELS);
}

static int cxlf_et_get_coalesce(struct net_device *dev,
				struct ethtool_coalesce *c,
				struct kernel_ethtool_coalesce *kc,
				struct netlink_ext_ack *extack)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	c->rx_coalesce_usecs = p.rx_usecs;
	c->rx_max_coalesced_frames = p.rx_frames;
	return 0;
}

static int cxlf_et_set_coalesce(struct net_device *dev,
				struct ethtool_coalesce *c,
				struct kernel_ethtool_coalesce *kc,
				struct netlink_ext_ack *extack)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	p.rx_usecs = c->rx_coalesce_usecs;
	p.rx_frames = c->rx_max_coalesced_frames;
	return cxlf_et_set(dev, &p, CXLF_ET_COALESCE);
}

static u32 cxlf_et_get_priv_flags(struct net_device *dev)
{
	struct cxlf_ethtool_params p;

	return cxlf_et_params(dev, &p) ? 0 : p.priv_flags;
}

static int cxlf_et_set_priv_flags(struct net_device *dev, u32 flags)
{
	struct cxlf_ethtool_params p;
	int err = cxlf_et_params(dev, &p);

	if (err)
		return err;
	p.priv_flags = flags;
	return cxlf_et_set(dev, &p, CXLF_ET_PRIV_FLAGS);
}

static int cxlf_et_set_of(int sset)
{
	switch (sset) {
	case ETH_SS_STATS:
		return CXLF_ET_SET_STATS;
	case ETH_SS_PRIV_FLAGS:
		return CXLF_ET_SET_PRIV_FLAGS;
	default:
		return -EOPNOTSUPP;
	}
}

static int cxlf_et_get_sset_count(struct net_device *dev, int sset)
{
	int set = cxlf_et_set_of(sset);

	if (set < 0)
		return set;
	return cxlf_nd_ops(dev)->string_count(cxlf_nd_data(dev), set);
}

static void cxlf_et_get_strings(struct net_device *dev, u32 sset, u8 *buf)
{
	int set = cxlf_et_set_of(sset);
	int n;

	if (set < 0)
		return;
	/* The core sized `buf` from get_sset_count, under RTNL as now. */
	n = cxlf_nd_ops(dev)->string_count(cxlf_nd_data(dev), set);
	if (n > 0)
		cxlf_nd_ops(dev)->strings(cxlf_nd_data(dev), set, buf, n);
}

static void cxlf_et_get_stats(struct net_device *dev,
			      struct ethtool_stats *stats, u64 *data)
{
	cxlf_nd_ops(dev)->stat_values(cxlf_nd_data(dev), data, stats->n_stats);
}

static const struct ethtool_ops cxlf_ethtool_ops = {
	.supported_coalesce_params = ETHTOOL_COALESCE_RX_USECS |
				     ETHTOOL_COALESCE_RX_MAX_FRAMES,
	.get_drvinfo = cxlf_et_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_ringparam = cxlf_et_get_ringparam,
	.set_ringparam = cxlf_et_set_ringparam,
	.get_channels = cxlf_et_get_channels,
	.set_channels = cxlf_et_set_channels,
	.get_coalesce = cxlf_et_get_coalesce,
	.set_coalesce = cxlf_et_set_coalesce,
	.get_priv_flags = cxlf_et_get_priv_flags,
	.set_priv_flags = cxlf_et_set_priv_flags,
	.get_sset_count = cxlf_et_get_sset_count,
	.get_strings = cxlf_et_get_strings,
	.get_ethtool_stats = cxlf_et_get_stats,
};

/*
 * An Ethernet device with `txqs`/`rxqs` queues whose callbacks are `ops`
 * with `data`; not registered yet. NULL without memory.
 */
struct net_device *cxlf_netdev_alloc(unsigned int txqs, unsigned int rxqs,
				     const struct cxlf_netdev_ops *ops,
				     void *data)
{
	struct net_device *dev =
		alloc_etherdev_mqs(sizeof(struct cxlf_netdev_priv), txqs, rxqs);
	struct cxlf_netdev_priv *p;

	if (!dev)
		return NULL;
	p = netdev_priv(dev);
	p->ops = ops;
	p->data = data;
	dev->netdev_ops =
		ops->tx_timeout ? &cxlf_netdev_ops_watchdog : &cxlf_netdev_ops;
	dev->ethtool_ops = &cxlf_ethtool_ops;
	return dev;
}

/*
 * Registers `dev` under `parent` with `mac`, an MTU range and the TX
 * watchdog's timeout (0: the net core's 5 s).
 */
int cxlf_netdev_register(struct net_device *dev, struct device *parent,
			 const u8 *mac, unsigned int min_mtu,
			 unsigned int max_mtu, unsigned int watchdog_ms)
{
	SET_NETDEV_DEV(dev, parent);
	eth_hw_addr_set(dev, mac);
	dev->min_mtu = min_mtu;
	dev->max_mtu = max_mtu;
	if (watchdog_ms)
		dev->watchdog_timeo = msecs_to_jiffies(watchdog_ms);
	netif_carrier_off(dev);
	return register_netdev(dev);
}

/* In C: netif_carrier_on/off take the opaque struct. */
void cxlf_netdev_set_carrier(struct net_device *dev, bool on)
{
	if (on)
		netif_carrier_on(dev);
	else
		netif_carrier_off(dev);
}

/* In C: the name is a field of the opaque struct. */
const char *cxlf_netdev_name(struct net_device *dev)
{
	return dev->name;
}

/* In C: mtu is a field of the opaque struct. */
unsigned int cxlf_netdev_mtu(struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}

/* In C: netif_tx_{start,stop}_all_queues are static inlines. */
void cxlf_netdev_tx_all(struct net_device *dev, bool start)
{
	if (start)
		netif_tx_start_all_queues(dev);
	else
		netif_tx_stop_all_queues(dev);
}

/* In C: dev_kfree_skb_any is a static inline. */
void cxlf_skb_free(struct sk_buff *skb)
{
	dev_kfree_skb_any(skb);
}

/*
 * Bringing an interface up and down, its MTU, carrier and counters, as
 * the stack does (under RTNL). In C: rtnl_lock/unlock pair with calls on
 * the opaque struct; netif_carrier_ok is a static inline.
 */
int cxlf_netdev_open(struct net_device *dev)
{
	int err;

	rtnl_lock();
	err = dev_open(dev, NULL);
	rtnl_unlock();
	return err;
}

void cxlf_netdev_close(struct net_device *dev)
{
	rtnl_lock();
	dev_close(dev);
	rtnl_unlock();
}

int cxlf_netdev_set_mtu(struct net_device *dev, int mtu)
{
	int err;

	rtnl_lock();
	err = dev_set_mtu(dev, mtu);
	rtnl_unlock();
	return err;
}

bool cxlf_netdev_carrier_ok(struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

void cxlf_netdev_get_stats(struct net_device *dev, struct cxlf_netdev_stats *out)
{
	struct rtnl_link_stats64 s;

	dev_get_stats(dev, &s);
	out->rx_packets = s.rx_packets;
	out->tx_packets = s.tx_packets;
	out->rx_bytes = s.rx_bytes;
	out->tx_bytes = s.tx_bytes;
	out->rx_errors = s.rx_errors;
	out->tx_errors = s.tx_errors;
	out->rx_dropped = s.rx_dropped;
	out->tx_dropped = s.tx_dropped;
}

/*
 * Sends an Ethernet frame of `len` bytes (to the interface's own
 * address) through the stack's queueing, as a socket would: what the
 * support tests use. In C: skb construction is static inlines.
 */
int cxlf_netdev_send_frame(struct net_device *dev, unsigned int len)
{
	struct sk_buff *skb;
	struct ethhdr *eth;

	if (len < ETH_HLEN)
		return -EINVAL;
	skb = alloc_skb(len + NET_IP_ALIGN, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, NET_IP_ALIGN);
	eth = skb_put_zero(skb, len);
	ether_addr_copy(eth->h_dest, dev->dev_addr);
	ether_addr_copy(eth->h_source, dev->dev_addr);
	eth->h_proto = htons(ETH_P_802_3_MIN);
	skb_reset_mac_header(skb);
	skb->dev = dev;
	skb->protocol = eth->h_proto;
	return dev_queue_xmit(skb);
}

/*
 * A reference on a net_device for an object that outlives a callback
 * (unregistering waits for it). In C: dev_hold/dev_put are inlines.
 */
void cxlf_netdev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void cxlf_netdev_put(struct net_device *dev)
{
	dev_put(dev);
}

/*
 * TX queue `q`: stop, wake, query; a queue past those allocated is
 * ignored (netdev_get_tx_queue does not check). In C: static inlines.
 */
void cxlf_netdev_txq_stop(struct net_device *dev, u16 q)
{
	if (q < dev->num_tx_queues)
		netif_tx_stop_queue(netdev_get_tx_queue(dev, q));
}

void cxlf_netdev_txq_wake(struct net_device *dev, u16 q)
{
	if (q < dev->num_tx_queues)
		netif_tx_wake_queue(netdev_get_tx_queue(dev, q));
}

bool cxlf_netdev_txq_stopped(struct net_device *dev, u16 q)
{
	return q < dev->num_tx_queues &&
	       netif_tx_queue_stopped(netdev_get_tx_queue(dev, q));
}

/* RTNL, if no one holds it (for work that must not wait on it). */
bool cxlf_rtnl_trylock(void)
{
	return rtnl_trylock();
}

void cxlf_rtnl_unlock(void)
{
	rtnl_unlock();
}

/* Stops every TX queue and waits out transmits in progress. */
void cxlf_netdev_tx_disable(struct net_device *dev)
{
	netif_tx_disable(dev);
}

/* Whether the stack has more packets for this queue right now. */
bool cxlf_netdev_xmit_more(void)
{
	return netdev_xmit_more();
}

/* The queues the stack uses (of those allocated); under RTNL or before
 * registering. */
int cxlf_netdev_set_queues(struct net_device *dev, unsigned int txq,
			   unsigned int rxq)
{
	unsigned int old = dev->real_num_tx_queues;
	int err = netif_set_real_num_tx_queues(dev, txq);

	if (err)
		return err;
	err = netif_set_real_num_rx_queues(dev, rxq);
	if (err)
		netif_set_real_num_tx_queues(dev, old);
	return err;
}
