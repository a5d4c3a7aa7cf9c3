// SPDX-License-Identifier: GPL-2.0

//! beluga_dax: a multi-host CXL pool allocator on the dax bus (Beluga,
//! SIGMOD '26). Design, format and protocol:
//! `Documentation/cxlfabric/beluga.rst`.
//!
//! Bound to a device-dax instance `daxX.Y`, the driver claims and maps its
//! range, joins the pool as host `host_index` (when it is formatted), and
//! registers `/dev/belugaX.Y` with the ioctls of `uapi/src/beluga.rs`.
//! Unbinding revokes every mapping, leaves the pool cleanly and returns the
//! instance to the bus untouched.

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

mod chardev;
mod device;
mod mapping;
mod pool;
mod region;

use chardev::PoolFile;
use device::{Config, PoolDevice, Reaper};
use kernel::str::CString;
use kernel::sync::Arc;
use region::Registry;
use support::dax::{DaxDriver, DaxDriverRegistration, DevDax};
use support::miscdevice::{MiscDeviceOptions, MiscDeviceRegistration};
use support::params::module_param_uint;
use support::region::provider::{export_beluga_regions, SourceCell};
use support::sharedmem::ClaimedRange;
use support::workqueue::Periodic;

module! {
    type: BelugaDax,
    name: "beluga_dax",
    author: "cxlfabric developers",
    description: "Beluga: multi-host CXL pool allocator on the dax bus",
    license: "GPL",
}

module_param_uint!(
    /// This host's slot in the pools it joins (unique per host).
    host_index
);
module_param_uint!(
    /// Lease period in milliseconds.
    lease_ms
);

/// Bound pools, for the region API other modules call.
static REGIONS: SourceCell<Registry> = SourceCell::new();
export_beluga_regions!(crate::REGIONS, crate::region::Registry);

/// One bound pool. Dropped at unbind: the device node goes first (no new
/// opens, no sysfs reads), then the reaper and the tick, then the pool
/// itself.
struct BelugaPool {
    misc: Option<Pin<KBox<MiscDeviceRegistration<PoolFile>>>>,
    reaper: Option<Periodic<Reaper>>,
    tick: Option<Periodic<PoolDevice>>,
    dev: Arc<PoolDevice>,
    registry: Arc<Registry>,
}

impl DaxDriver for BelugaPool {
    type RegistrationData = Arc<Registry>;

    fn probe(dax: &DevDax<'_>, registry: &Arc<Registry>) -> Result<Pin<KBox<Self>>> {
        let name = CString::try_from_fmt(kernel::fmt!("beluga{}.{}", dax.region_id(), dax.id()))?;
        if dax.nr_ranges() != 1 {
            pr_err!(
                "{}: {} ranges; only single-range instances are supported\n",
                &*name,
                dax.nr_ranges()
            );
            return Err(EINVAL);
        }
        let range = dax.range(0)?;
        let len = usize::try_from(range.len()).map_err(|_| EINVAL)?;
        let claim = ClaimedRange::claim(range.start, len, kernel::c_str!("beluga_dax"))?;
        let config = Config {
            name,
            host_index: host_index(),
            lease_ms: lease_ms(),
        };
        let dev = PoolDevice::new(config, claim, dax.inode(), dax.target_node())?;
        let misc = KBox::pin_init(
            MiscDeviceRegistration::register(
                MiscDeviceOptions {
                    name: dev.name(),
                    mode: 0o660,
                },
                dev.clone(),
            ),
            GFP_KERNEL,
        );
        let misc = match misc {
            Ok(misc) => misc,
            Err(e) => {
                dev.shutdown();
                return Err(e);
            }
        };
        let tick = match Periodic::start(dev.clone(), 0) {
            Ok(tick) => tick,
            Err(e) => {
                drop(misc);
                dev.shutdown();
                return Err(e);
            }
        };
        let reaper = match Arc::new(Reaper(dev.clone()), GFP_KERNEL)
            .map_err(Error::from)
            .and_then(|r| Periodic::start(r, 0))
        {
            Ok(reaper) => reaper,
            Err(e) => {
                drop(misc);
                drop(tick);
                dev.shutdown();
                return Err(e);
            }
        };
        let pool = KBox::pin(
            BelugaPool {
                misc: Some(misc),
                reaper: Some(reaper),
                tick: Some(tick),
                dev: dev.clone(),
                registry: registry.clone(),
            },
            GFP_KERNEL,
        )?;
        // Dropping `pool` on failure undoes everything above.
        registry.add(dev)?;
        Ok(pool)
    }

    fn remove(self: Pin<&Self>, _dax: &DevDax<'_>) {
        pr_info!("{}: unbinding\n", self.dev.name());
    }
}

impl Drop for BelugaPool {
    fn drop(&mut self) {
        self.registry.remove(&self.dev);
        drop(self.misc.take());
        drop(self.reaper.take());
        drop(self.tick.take());
        self.dev.shutdown();
        pr_info!("{}: released\n", self.dev.name());
    }
}

struct BelugaDax {
    _driver: Pin<KBox<DaxDriverRegistration<BelugaPool>>>,
}

impl kernel::Module for BelugaDax {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let lease = lease_ms();
        if !(100..=600_000).contains(&lease) {
            pr_err!("lease_ms={} is outside 100..=600000\n", lease);
            return Err(EINVAL);
        }
        let registry = Registry::new()?;
        let driver = KBox::pin_init(
            DaxDriverRegistration::register(registry.clone()),
            GFP_KERNEL,
        )?;
        REGIONS.install(registry);
        Ok(BelugaDax { _driver: driver })
    }
}

impl Drop for BelugaDax {
    fn drop(&mut self) {
        // No module using the region API is loaded any more (each holds a
        // reference to this one while it is).
        REGIONS.remove();
    }
}
