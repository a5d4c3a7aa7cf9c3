// SPDX-License-Identifier: GPL-2.0
/*
 * Network devices (support/netdev.rs builds the ops tables and registers
 * them). struct net_device is opaque to 6.12's Rust bindings: its fields
 * and static inlines are reached through these one-liners.
 */

#include "../helpers.h"

#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/nsproxy.h>
#include <linux/skbuff.h>
#include <net/net_namespace.h>

/* In C: netdev_priv() is a static inline. */
void *cxlf_netdev_priv(struct net_device *dev)
{
	return netdev_priv(dev);
}

/* In C: the embedded device's kobject (sysfs directories under it). */
struct kobject *cxlf_netdev_kobj(struct net_device *dev)
{
	return &dev->dev.kobj;
}

/* In C: a field of the opaque struct. */
void cxlf_netdev_set_netdev_ops(struct net_device *dev,
				const struct net_device_ops *ops)
{
	dev->netdev_ops = ops;
}

/* In C: a field of the opaque struct. */
void cxlf_netdev_set_ethtool_ops(struct net_device *dev,
				 const struct ethtool_ops *ops)
{
	dev->ethtool_ops = ops;
}

/* In C: SET_NETDEV_DEV() is a macro. */
void cxlf_netdev_set_parent(struct net_device *dev, struct device *parent)
{
	SET_NETDEV_DEV(dev, parent);
}

/* In C: eth_hw_addr_set() is a static inline. */
void cxlf_netdev_set_mac(struct net_device *dev, const u8 *mac)
{
	eth_hw_addr_set(dev, mac);
}

/* In C: a field of the opaque struct. */
void cxlf_netdev_set_min_mtu(struct net_device *dev, unsigned int mtu)
{
	dev->min_mtu = mtu;
}

/* In C: a field of the opaque struct. */
void cxlf_netdev_set_max_mtu(struct net_device *dev, unsigned int mtu)
{
	dev->max_mtu = mtu;
}

/* In C: a field of the opaque struct; msecs_to_jiffies() is inline. */
void cxlf_netdev_set_watchdog_ms(struct net_device *dev, unsigned int ms)
{
	dev->watchdog_timeo = msecs_to_jiffies(ms);
}

/* In C: the name is a field of the opaque struct. */
const char *cxlf_netdev_name(struct net_device *dev)
{
	return dev->name;
}

/*
 * In C: ifindex and the namespace are fields of the opaque struct,
 * dev_net() and net_eq() static inlines. The ifindex if the interface is
 * in the calling task's network namespace (where an ifindex from it
 * means this interface), else 0 (no interface has it).
 */
int cxlf_netdev_ifindex_here(struct net_device *dev)
{
	struct nsproxy *ns = current->nsproxy;

	if (!ns || !net_eq(dev_net(dev), ns->net_ns))
		return 0;
	return READ_ONCE(dev->ifindex);
}

/* In C: the address is a field of the opaque struct. */
const u8 *cxlf_netdev_addr(struct net_device *dev)
{
	return dev->dev_addr;
}

/* In C: the parent is a field of the opaque struct, dev_name() inline. */
const char *cxlf_netdev_parent_name(struct net_device *dev)
{
	return dev->dev.parent ? dev_name(dev->dev.parent) : NULL;
}

/* In C: mtu is a field of the opaque struct. */
unsigned int cxlf_netdev_mtu(struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}

/* In C: mtu is a field of the opaque struct (written under RTNL). */
void cxlf_netdev_write_mtu(struct net_device *dev, unsigned int mtu)
{
	WRITE_ONCE(dev->mtu, mtu);
}

/* In C: a field of the opaque struct. */
unsigned int cxlf_netdev_num_tx_queues(struct net_device *dev)
{
	return dev->num_tx_queues;
}

/* In C: a field of the opaque struct. */
unsigned int cxlf_netdev_real_num_tx_queues(struct net_device *dev)
{
	return dev->real_num_tx_queues;
}

/* In C: netif_carrier_ok() is a static inline. */
bool cxlf_netdev_carrier_ok(struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

/* In C: netif_tx_start_all_queues() is a static inline. */
void cxlf_netdev_tx_start_all(struct net_device *dev)
{
	netif_tx_start_all_queues(dev);
}

/* In C: netif_tx_stop_all_queues() is a static inline. */
void cxlf_netdev_tx_stop_all(struct net_device *dev)
{
	netif_tx_stop_all_queues(dev);
}

/* In C: netif_tx_disable() is a static inline. */
void cxlf_netdev_tx_disable(struct net_device *dev)
{
	netif_tx_disable(dev);
}

/* In C: static inlines. The caller checks `q` (netdev_get_tx_queue does not). */
void cxlf_netdev_txq_stop(struct net_device *dev, u16 q)
{
	netif_tx_stop_queue(netdev_get_tx_queue(dev, q));
}

/* In C: static inlines. The caller checks `q`. */
void cxlf_netdev_txq_wake(struct net_device *dev, u16 q)
{
	netif_tx_wake_queue(netdev_get_tx_queue(dev, q));
}

/* In C: netdev_xmit_more() is a macro over per-CPU softnet data. */
bool cxlf_netdev_xmit_more(void)
{
	return netdev_xmit_more();
}

/* In C: dev_hold() is a static inline (a per-CPU reference). */
void cxlf_netdev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

/* In C: dev_put() is a static inline. */
void cxlf_netdev_put(struct net_device *dev)
{
	dev_put(dev);
}

/* In C: dev_kfree_skb_any() is a static inline. */
void cxlf_skb_free(struct sk_buff *skb)
{
	dev_kfree_skb_any(skb);
}

/* In C: skb_reserve() is a static inline. */
void cxlf_skb_reserve(struct sk_buff *skb, unsigned int len)
{
	skb_reserve(skb, len);
}

/* In C: skb_reset_mac_header() is a static inline. */
void cxlf_skb_reset_mac_header(struct sk_buff *skb)
{
	skb_reset_mac_header(skb);
}

/* In C: the field sits in a struct_group (bindgen names it by position). */
void cxlf_skb_set_protocol(struct sk_buff *skb, __be16 protocol)
{
	skb->protocol = protocol;
}
