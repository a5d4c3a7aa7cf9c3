// SPDX-License-Identifier: GPL-2.0

//! DRack: pass-by-reference virtual NICs over a shared CXL pool
//!
//! One interface per host, `drack0`, on a region of a beluga pool that
//! every host of the rack shares (`pool=`, `region=`): a frame is written
//! into the sender's pool buffer once and only a reference moves; the
//! receiver lends the pool page to its stack as an skb fragment and
//! gives the buffer back once the stack let go. The protocol, layout and
//! checks are the `no_std` core's (`core/`, crate `drack_core`); this
//! module is the net_device, NAPI polled by a timer, and the copies.
//! `Documentation/cxlfabric/drack.rst` describes both.
//!
//! Files: `setup` (format or check the region, join), `link` (the
//! state, its locks), `tx`, `rx`, `poll` (NAPI, heartbeats, leases,
//! carrier), `ticker` (the polling timer), `netdev` (ndo and ethtool),
//! `stats`, `pool` (the region's memory as the core sees it).

use kernel::prelude::*;
use kernel::sync::Arc;

use cxlf_support as support;

mod lease;
mod link;
mod netdev;
mod nicfiles;
mod owner;
mod peers;
mod poll;
mod pool;
mod reclaim;
mod rx;
mod setup;
mod stats;
mod ticker;
mod tx;
mod vnic;

use link::{mac_of, Link};
use support::hrtimer::ArcHrTimerHandle;
use support::napi::Napi;
use support::netdev::{Placement, Registration};
use support::netlend::NotifierRegistration;
use support::workqueue::Periodic;

module! {
    type: DrackNetdev,
    name: "drack_netdev",
    author: "cxlfabric developers",
    description: "DRack: pass-by-reference virtual NICs over a shared CXL pool",
    license: "GPL",
}

support::params::module_param_string!(
    /// The beluga pool holding the drack region; empty: no interface.
    pool
);
support::params::module_param_string!(
    /// The region's name in the pool (default `drack0`).
    region
);
support::params::module_param_uint!(
    /// This host's index among the pool's hosts.
    host_index
);
support::params::module_param_uint!(
    /// Hosts the region is laid out for (host 0 formats it).
    hosts
);
support::params::module_param_uint!(
    /// A peer whose heartbeat stops for this long is dead.
    lease_ms
);
support::params::module_param_uint!(
    /// Most buffers of one source lent to the stack at once.
    lend_cap
);
support::params::module_param_string!(
    /// Interfaces lent at load, comma-separated (as `drack lend` each),
    /// before the first beat: a host that comes back keeps its peers'
    /// vNICs on them.
    lend
);

/// drack0, torn down in field order: the vNICs' work item (stopped),
/// the vNICs (the last reference: each out of the poll's table, then
/// unregistered), the lent NICs' files (no more `lend`), every lent NIC
/// given back, the netdevice notifier, the reclaiming work item, the
/// timer (no more polls
/// scheduled), NAPI (disabled and removed), the per-peer sysfs files
/// (before the interface they are under), the interface (unregistered:
/// no more transmits), then the state, whose lend table is forgotten
/// without putting the stack's page references (beluga's unbind waits
/// for those), and the region.
struct Drack0 {
    _vnic_work: Periodic<vnic::Vnics>,
    _vnics: Arc<vnic::Vnics>,
    _nic_files: nicfiles::NicFiles,
    _unlend: UnlendAll,
    _notifier: NotifierRegistration<owner::Owner>,
    _reclaim: Periodic<reclaim::Reclaim>,
    _ticker: ArcHrTimerHandle<ticker::Ticker>,
    _napi: Arc<Napi<Link>>,
    _peers: peers::PeerFiles,
    reg: Registration<Link>,
    _link: Arc<Link>,
}

impl Drack0 {
    fn new() -> Result<Drack0> {
        let region = match region().as_bytes() {
            b"" => kernel::c_str!("drack0"),
            _ => region(),
        };
        let config = setup::Config {
            pool: pool(),
            region,
            me: host_index(),
            hosts: hosts(),
            lease_ms: lease_ms(),
            lend_cap: lend_cap(),
        };
        let link = config.link()?;
        let at = Placement::detached(mac_of(link.me))
            .named(kernel::c_str!("drack%d"))
            .mtu_range(netdev::MTU_MIN, drack_core::layout::MTU_MAX)
            // A TX queue per peer (`tx.rs`), the one at our index for
            // frames to every peer.
            .queues(link.geom.hosts(), 1)
            .sw_irq_coalesce();
        let reg = Registration::register(link.clone(), &at)?;
        let napi = Arc::new(Napi::add(&reg.netdev(), link.clone(), 0)?, GFP_KERNEL)?;
        napi.enable();
        let peers = peers::PeerFiles::new(reg.as_parent(), &link)?;
        let owner = owner::Owner::new(link.clone())?;
        let notifier = NotifierRegistration::register(owner.clone())?;
        let unlend = UnlendAll(owner.clone());
        // Before the timer: the first table published has them.
        owner.lend_list(lend().as_bytes())?;
        let ticker = ticker::Ticker::start(napi.clone())?;
        let reclaim = Arc::new(reclaim::Reclaim::new(napi.clone()), GFP_KERNEL)?;
        let reclaim = Periodic::start(reclaim, reclaim::RECLAIM_MS)?;
        let nic_files = nicfiles::NicFiles::new(reg.as_parent(), &owner)?;
        let vnics = vnic::Vnics::new(link.clone())?;
        let vnic_work = Periodic::start(vnics.clone(), vnic::RECONCILE_MS)?;
        pr_info!("{} is host {}'s interface\n", reg.name(), link.me);
        Ok(Drack0 {
            _vnic_work: vnic_work,
            _vnics: vnics,
            _nic_files: nic_files,
            _unlend: unlend,
            _notifier: notifier,
            _reclaim: reclaim,
            _ticker: ticker,
            _napi: napi,
            _peers: peers,
            reg,
            _link: link,
        })
    }
}

impl Drop for Drack0 {
    fn drop(&mut self) {
        // Peers see the carrier go when our heartbeat stops (a lease).
        self.reg.set_carrier(false);
    }
}

/// Gives back every lent NIC when dropped.
struct UnlendAll(Arc<owner::Owner>);

impl Drop for UnlendAll {
    fn drop(&mut self) {
        self.0.unlend_all();
    }
}

struct DrackNetdev {
    _dev: Option<Drack0>,
}

impl kernel::Module for DrackNetdev {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        if pool().as_bytes().is_empty() {
            pr_info!("loaded; no pool= given: no interface\n");
            return Ok(DrackNetdev { _dev: None });
        }
        let dev = Drack0::new()?;
        Ok(DrackNetdev { _dev: Some(dev) })
    }
}

impl Drop for DrackNetdev {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
