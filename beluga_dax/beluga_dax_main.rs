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

use cxlf_support as support;

// What the ABI and the pool core must agree on, checked at compile time.
mod agreement;
mod chardev;
mod device;
mod drain;
mod mapping;
// The pool core, a crate of its own (`pool/`), under its short name.
use beluga_pool as pool;
mod region;

use chardev::PoolFile;
use device::{Config, PoolDevice, Reaper};
use kernel::str::CString;
use kernel::sync::Arc;
use region::Registry;
use support::dax::{DaxBus, DaxDriverRegistration, DevDax};
use support::driver::Driver;
use support::miscdevice::{MiscDeviceOptions, MiscDeviceRegistration};
use support::params::module_param_uint;
use support::region::provider::{export_beluga_regions, SourceCell};
use support::sharedmem::ClaimedRange;
use support::time;
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

/// One bound pool. Torn down at unbind by dropping its fields, in this
/// order: it leaves the region registry (no new kernel users), the device
/// node goes (no new opens, no sysfs reads), the reaper and the tick stop,
/// and last the pool itself shuts down (mappings revoked, the host slot
/// detached, memory released; or, while pages are pinned, handed to a
/// drain that keeps the lease and does it when they are released). A
/// probe that fails part-way drops what it built, in the reverse order,
/// the same way.
struct BelugaPool {
    _listed: Listed,
    _misc: Pin<KBox<MiscDeviceRegistration<PoolFile>>>,
    _reaper: Periodic<Reaper>,
    _quiet: StopPolling,
    _tick: Periodic<PoolDevice>,
    dev: ShutDownOnDrop,
}

/// Ends the tick's polling between steps when dropped (just before
/// `_tick`): stopping the tick waits for its work to return, which it
/// would not do while another host keeps sending requests.
struct StopPolling(Arc<PoolDevice>);

impl Drop for StopPolling {
    fn drop(&mut self) {
        self.0.stop_polling();
    }
}

/// The pool's entry in the registry, removed on drop.
struct Listed {
    registry: Arc<Registry>,
    dev: Arc<PoolDevice>,
}

impl Listed {
    fn new(registry: &Arc<Registry>, dev: &Arc<PoolDevice>) -> Result<Listed> {
        registry.add(dev.clone())?;
        Ok(Listed {
            registry: registry.clone(),
            dev: dev.clone(),
        })
    }
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.registry.remove(&self.dev);
    }
}

/// Shuts the pool down when dropped (the last field of `BelugaPool`).
struct ShutDownOnDrop(Arc<PoolDevice>, Arc<Registry>);

impl Drop for ShutDownOnDrop {
    fn drop(&mut self) {
        let dev = &self.0;
        if dev.shutdown() {
            return;
        }
        if self.1.drains.adopt(dev).is_err() {
            pr_warn!(
                "{}: no memory to drain in the background; unbind waits for the pinned pages\n",
                dev.name()
            );
            while !dev.drain_step() {
                time::sleep_ms(dev.drain_step_ms());
            }
        }
    }
}

impl Driver<DaxBus> for BelugaPool {
    type RegistrationData = Arc<Registry>;
    const IDS: () = ();

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
        // From here on, failing drops these in reverse: shutdown last.
        let shutdown = ShutDownOnDrop(dev.clone(), registry.clone());
        let tick = Periodic::start(dev.clone(), 0)?;
        let quiet = StopPolling(dev.clone());
        let reaper = Periodic::start(Arc::new(Reaper(dev.clone()), GFP_KERNEL)?, 0)?;
        let options = MiscDeviceOptions {
            name: dev.name(),
            mode: 0o660,
        };
        let misc = KBox::pin_init(
            MiscDeviceRegistration::register(options, dev.clone()),
            GFP_KERNEL,
        )?;
        let listed = Listed::new(registry, &dev)?;
        Ok(KBox::pin(
            BelugaPool {
                _listed: listed,
                _misc: misc,
                _reaper: reaper,
                _quiet: quiet,
                _tick: tick,
                dev: shutdown,
            },
            GFP_KERNEL,
        )?)
    }

    fn remove(self: Pin<&Self>, _dax: &DevDax<'_>) {
        pr_info!("{}: unbinding\n", self.dev.0.name());
    }
}

/// Dropped in field order: the driver (every pool unbinds), then the
/// wait for pools still draining pinned pages.
struct BelugaDax {
    _driver: Pin<KBox<DaxDriverRegistration<BelugaPool>>>,
    _drains: WaitDrains,
}

/// Waits on drop until no unbound pool has pages referenced.
struct WaitDrains(Arc<Registry>);

impl Drop for WaitDrains {
    fn drop(&mut self) {
        self.0.drains.wait_all();
    }
}

impl kernel::Module for BelugaDax {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let lease = lease_ms();
        let range = pool::leases::LEASE_MS_RANGE;
        if !range.contains(&lease) {
            pr_err!(
                "lease_ms={} is outside {}..={}\n",
                lease,
                range.start(),
                range.end()
            );
            return Err(EINVAL);
        }
        let registry = Registry::new()?;
        let driver = KBox::pin_init(
            DaxDriverRegistration::register(registry.clone()),
            GFP_KERNEL,
        )?;
        REGIONS.install(registry.clone());
        Ok(BelugaDax {
            _driver: driver,
            _drains: WaitDrains(registry),
        })
    }
}

impl Drop for BelugaDax {
    fn drop(&mut self) {
        // No module using the region API is loaded any more (each holds a
        // reference to this one while it is).
        REGIONS.remove();
    }
}
