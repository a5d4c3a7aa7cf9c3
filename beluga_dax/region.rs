// SPDX-License-Identifier: GPL-2.0

//! The in-kernel region API (`beluga_region.h`): named shared objects for
//! other modules, found by pool name in the registry of bound pools.

use crate::device::PoolDevice;
use crate::drain::Drains;
use crate::mapping::HoldRef;
use crate::pool::objects::{Name, FLAG_SHARED};
use crate::support::region::provider::{RegionSource, RevokeHook, SharedRegion};
use crate::support::sharedmem::SharedMem;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// Two hosts creating one region at once: how often, and how long apart,
/// the one that lost looks for the winner's object.
const REGION_RACE_TRIES: u32 = 50;
const REGION_RACE_MS: u32 = 20;

/// Objects created for kernel users belong to root, mode 0600.
const KERNEL_UID: u32 = 0;
const KERNEL_MODE: u32 = 0o600;

/// The pools bound to this driver, and those unbound that wait for
/// their pages' last references (`drain.rs`).
#[pin_data]
pub(crate) struct Registry {
    #[pin]
    pools: Mutex<KVec<Arc<PoolDevice>>>,
    #[pin]
    pub(crate) drains: Drains,
}

impl Registry {
    pub(crate) fn new() -> Result<Arc<Registry>> {
        Arc::pin_init(
            try_pin_init!(Registry {
                pools <- new_mutex!(KVec::new(), "beluga:registry"),
                drains <- Drains::new(),
            }? Error),
            GFP_KERNEL,
        )
    }

    pub(crate) fn add(&self, dev: Arc<PoolDevice>) -> Result {
        self.pools.lock().push(dev, GFP_KERNEL)?;
        Ok(())
    }

    pub(crate) fn remove(&self, dev: &PoolDevice) {
        let mut pools = self.pools.lock();
        let all = core::mem::replace(&mut *pools, KVec::new());
        for p in all {
            if !core::ptr::eq(&*p, dev) {
                // Cannot fail: the vector had room for all of them before.
                let _ = pools.push(p, GFP_KERNEL);
            }
        }
    }

    fn find(&self, name: &CStr) -> Option<Arc<PoolDevice>> {
        let pools = self.pools.lock();
        pools
            .iter()
            .find(|p| p.name().as_bytes() == name.as_bytes())
            .cloned()
    }
}

/// A region held for a kernel user: one use of the object, so the host
/// keeps its hold until the user puts it (then the object, named and
/// shared, stays in the pool for the next user).
pub(crate) struct KernelRegion {
    /// The kernel's write-back mapping of the object; dropped first.
    mem: SharedMem,
    /// The user's revoke callback, in `holding`'s list until drop.
    hook: Arc<RevokeHook>,
    holding: HoldRef,
}

impl Drop for KernelRegion {
    fn drop(&mut self) {
        // Waits for a callback in progress; none runs after this.
        self.hook.clear();
        self.holding.remove_hook(&self.hook);
    }
}

impl SharedRegion for KernelRegion {
    fn phys(&self) -> u64 {
        self.holding.phys()
    }

    fn size(&self) -> u64 {
        self.holding.size
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result {
        let at = usize::try_from(offset).map_err(|_| EINVAL)?;
        self.holding.while_held(|| self.mem.read(at, out))
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result {
        let at = usize::try_from(offset).map_err(|_| EINVAL)?;
        self.holding.while_held(|| self.mem.write(at, data))
    }

    fn mem(&self) -> &SharedMem {
        &self.mem
    }

    fn accessible(&self) -> bool {
        self.holding.accessible()
    }

    fn hook(&self) -> &RevokeHook {
        &self.hook
    }
}

impl RegionSource for Registry {
    type Region = KernelRegion;

    fn get(&self, pool: &CStr, name: &CStr, size: u64) -> Result<Arc<KernelRegion>> {
        let dev = self.find(pool).ok_or_else(|| {
            pr_err!("region {:?}: no pool named {:?}\n", name, pool);
            ENODEV
        })?;
        let object = Name::new(name.as_bytes()).map_err(|_| EINVAL)?;
        let mut tries = 0u32;
        let holding = loop {
            match dev.open(object, KERNEL_UID, true) {
                Err(e) if e == ENOENT => {}
                other => break other?,
            }
            match dev.alloc(size, FLAG_SHARED, KERNEL_MODE, Some(object), KERNEL_UID) {
                // Another host is creating it: its table entry exists at
                // the manager before this host's open can see it. Again,
                // for up to a second.
                Err(e) if e == EEXIST && tries < REGION_RACE_TRIES => {
                    tries += 1;
                    crate::support::time::sleep_ms_interruptible(REGION_RACE_MS)?;
                }
                other => break other?,
            }
        };
        // Dropping `holding` on failure gives the use back.
        // `open` as admin skips the mode check: an object a user created
        // under this name (before the kernel user loaded) would hand the
        // kernel's data plane to that user's mapping. Only one the kernel
        // made is taken.
        if holding.handle.uid != KERNEL_UID || holding.handle.mode != KERNEL_MODE {
            pr_err!(
                "{}: region {:?} refused: the object is owned by uid {} mode {:o}, not the kernel's\n",
                dev.name(),
                name,
                holding.handle.uid,
                holding.handle.mode
            );
            return Err(EPERM);
        }
        let len = usize::try_from(holding.size).map_err(|_| EINVAL)?;
        let mem = SharedMem::map(holding.phys(), len)?;
        let hook = RevokeHook::new()?;
        // Revoked since `open`: refused here, not missed later.
        holding.add_hook(hook.clone())?;
        let region = KernelRegion { mem, hook, holding };
        let region = Arc::new(region, GFP_KERNEL)?;
        if region.holding.size < size {
            pr_err!(
                "{}: region {:?} exists with {} bytes, {} asked\n",
                dev.name(),
                name,
                region.holding.size,
                size
            );
            return Err(EINVAL);
        }
        pr_info!(
            "{}: region {:?} for a kernel user: {} bytes at {:#x}\n",
            dev.name(),
            name,
            region.holding.size,
            region.phys()
        );
        Ok(region)
    }
}
