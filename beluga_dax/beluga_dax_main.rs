// SPDX-License-Identifier: GPL-2.0

//! beluga_dax: a multi-host CXL pool allocator on the dax bus (Beluga,
//! SIGMOD '26). Design and format: `Documentation/cxlfabric/beluga.rst`.
//!
//! So far: a driver on the dax bus (`/sys/bus/dax/drivers/beluga_dax`)
//! that takes a device-dax instance moved to it, claims and maps its range
//! through the shared-memory accessor, and reports the pool it finds
//! (formatted, unformatted, or refused with the reason). Unbinding returns
//! the instance to the bus untouched. The allocator protocol, the char
//! device and mmap are the next steps of issue #3.

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

mod pool;

use pool::layout::{LayoutError, Superblock, SUPERBLOCK_BYTES};
use support::dax::{DaxDriver, DaxDriverRegistration, DevDax};
use support::sharedmem::SharedMem;

module! {
    type: BelugaDax,
    name: "beluga_dax",
    author: "cxlfabric developers",
    description: "Beluga: multi-host CXL pool allocator on the dax bus",
    license: "GPL",
}

/// What the superblock says about the pool.
#[derive(Debug)]
enum PoolState {
    Formatted(Superblock),
    Unformatted,
    Refused(LayoutError),
}

/// One bound pool.
struct BelugaPool {
    dax_id: i32,
    /// Holds the claim on the range and its mapping until unbind.
    _mem: SharedMem,
    state: PoolState,
}

impl BelugaPool {
    fn read_state(mem: &SharedMem) -> Result<PoolState> {
        let mut bytes = [0u8; SUPERBLOCK_BYTES];
        mem.read(0, &mut bytes)?;
        Ok(match Superblock::decode(&bytes, mem.len() as u64) {
            Ok(sb) => PoolState::Formatted(sb),
            Err(LayoutError::BadMagic) => PoolState::Unformatted,
            Err(err) => PoolState::Refused(err),
        })
    }
}

impl DaxDriver for BelugaPool {
    type RegistrationData = ();

    fn probe(dev: &DevDax<'_>, _data: &()) -> Result<Pin<KBox<Self>>> {
        if dev.nr_ranges() != 1 {
            pr_err!(
                "dax{}: {} ranges; only single-range instances are supported\n",
                dev.id(),
                dev.nr_ranges()
            );
            return Err(EINVAL);
        }
        let range = dev.range(0)?;
        let len = usize::try_from(range.len()).map_err(|_| EINVAL)?;
        let mem = SharedMem::new(range.start, len, kernel::c_str!("beluga_dax"))?;
        let state = Self::read_state(&mem)?;
        match &state {
            PoolState::Formatted(sb) => pr_info!(
                "dax{}: pool generation {}, {} sections of 2 MiB, up to {} hosts\n",
                dev.id(),
                sb.generation,
                sb.section_count,
                sb.max_hosts
            ),
            PoolState::Unformatted => {
                pr_info!(
                    "dax{}: not formatted ({} bytes at {:#x})\n",
                    dev.id(),
                    len,
                    mem.start()
                )
            }
            // Bound anyway, so an administrator can inspect or reformat it.
            PoolState::Refused(err) => {
                pr_err!("dax{}: superblock refused: {:?}\n", dev.id(), err)
            }
        }
        Ok(KBox::pin(
            BelugaPool {
                dax_id: dev.id(),
                _mem: mem,
                state,
            },
            GFP_KERNEL,
        )?)
    }

    fn remove(self: Pin<&Self>, _dev: &DevDax<'_>) {
        let state = match self.state {
            PoolState::Formatted(_) => "formatted",
            PoolState::Unformatted => "unformatted",
            PoolState::Refused(_) => "refused",
        };
        pr_info!("dax{}: released ({} pool)\n", self.dax_id, state);
    }
}

struct BelugaDax {
    _driver: Pin<KBox<DaxDriverRegistration<BelugaPool>>>,
}

impl kernel::Module for BelugaDax {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let driver = KBox::pin_init(DaxDriverRegistration::register(()), GFP_KERNEL)?;
        Ok(BelugaDax { _driver: driver })
    }
}
