// SPDX-License-Identifier: GPL-2.0
/*
 * Interfaces other drivers own, lent to a module (support/abstractions/
 * netlend/: references by name, rx_handlers, notifiers, transmit).
 * struct net_device is opaque to 6.12's Rust bindings: its fields and
 * static inlines are reached through these one-liners.
 */

#include "../helpers.h"

#include <linux/netdevice.h>
#include <linux/skbuff.h>

/* In C: a field of the opaque struct. */
int cxlf_netdev_ifindex(struct net_device *dev)
{
	return READ_ONCE(dev->ifindex);
}

/* In C: a bit field of the opaque struct. */
unsigned int cxlf_netdev_priv_flags(struct net_device *dev)
{
	return dev->priv_flags;
}

/* In C: a field of the opaque struct (ARPHRD_*). */
unsigned int cxlf_netdev_type(struct net_device *dev)
{
	return dev->type;
}

/* In C: a field of the opaque struct. */
unsigned int cxlf_netdev_addr_len(struct net_device *dev)
{
	return dev->addr_len;
}

/* In C: a field of the opaque struct (stable under RTNL). */
bool cxlf_netdev_registered(struct net_device *dev)
{
	return READ_ONCE(dev->reg_state) == NETREG_REGISTERED;
}

/* In C: netdev_uc_count() is a macro. */
unsigned int cxlf_netdev_uc_count(struct net_device *dev)
{
	return netdev_uc_count(dev);
}

/* In C: an RCU-protected field of the opaque struct. */
void *cxlf_netdev_rx_handler_data(struct net_device *dev)
{
	return rcu_dereference(dev->rx_handler_data);
}

/* In C: netdev_hold() is a static inline (a tracked reference). */
void cxlf_netdev_hold_tracked(struct net_device *dev, netdevice_tracker *tracker)
{
	netdev_hold(dev, tracker, GFP_KERNEL);
}

/* In C: netdev_put() is a static inline. */
void cxlf_netdev_put_tracked(struct net_device *dev, netdevice_tracker *tracker)
{
	netdev_put(dev, tracker);
}

/* In C: netdev_notifier_info_to_dev() is a static inline. */
struct net_device *cxlf_netdev_notifier_dev(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

/* In C: LL_RESERVED_SPACE() is a macro over fields of the opaque struct. */
unsigned int cxlf_netdev_ll_reserved(struct net_device *dev)
{
	return LL_RESERVED_SPACE(dev) + dev->needed_tailroom;
}

/* In C: NETIF_F_GRO is a macro; features a field of the opaque struct. */
bool cxlf_netdev_gro_on(struct net_device *dev)
{
	return dev->features & NETIF_F_GRO;
}

/* In C: as above (the caller holds RTNL, then updates the features). */
void cxlf_netdev_want_gro(struct net_device *dev, bool on)
{
	dev->wanted_features = on ? dev->wanted_features | NETIF_F_GRO :
				    dev->wanted_features & ~NETIF_F_GRO;
}

/* In C: pkt_type is a bit field. */
unsigned int cxlf_skb_pkt_type(struct sk_buff *skb)
{
	return skb->pkt_type;
}

/* In C: the field sits in a struct_group (bindgen names it by position). */
__be16 cxlf_skb_protocol(struct sk_buff *skb)
{
	return skb->protocol;
}

/* In C: static inlines; INT_MAX when no MAC header was set. */
int cxlf_skb_mac_offset(struct sk_buff *skb)
{
	return skb_mac_header_was_set(skb) ? skb_mac_offset(skb) : INT_MAX;
}
