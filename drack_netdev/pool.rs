// SPDX-License-Identifier: GPL-2.0

//! The drack region of a beluga pool, as the core sees it ([`PoolMem`])
//! and as the data path needs it (pages to lend, their reference counts).
//!
//! Every access goes through beluga's non-sleeping region access (usable
//! from NAPI and transmit context), which fails once the region is
//! revoked (beluga unbind): transmits drop, the poll takes the carrier
//! down and the timer stops (the revoke callback says so first). Write-back and invalidate are beluga's
//! (`clwb`/`clflushopt` of the lines, then a fence).

use crate::support::page::SharedPage;
use crate::support::region::{Access, Region, RevokeHandler};
use core::sync::atomic::{AtomicBool, Ordering};
use drack_core::mem::{OutOfBounds, PoolMem};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ARef;

/// The region, held until drop.
pub(crate) struct Pool {
    region: Region,
    revoked: Arc<Revoked>,
}

/// Set when beluga revokes the region (unbind, lost lease): the poll
/// takes the carrier down and the timer stops; transmits drop.
pub(crate) struct Revoked(AtomicBool);

impl RevokeHandler for Revoked {
    fn revoked(&self) {
        pr_warn!(
            "the pool region is being revoked: drack0 stops (lent pages stay with the stack)\n"
        );
        self.0.store(true, Ordering::Release);
    }
}

impl Pool {
    /// Creates or opens region `name` of at least `size` bytes in `pool`.
    pub(crate) fn get(pool: &CStr, name: &CStr, size: u64) -> Result<Pool> {
        let mut region = Region::get(pool, name, size).inspect_err(|e| {
            pr_err!(
                "no region {:?} of {} bytes in pool {:?}: error {}\n",
                name,
                size,
                pool,
                e.to_errno()
            )
        })?;
        let revoked = Arc::new(Revoked(AtomicBool::new(false)), GFP_KERNEL)?;
        region.on_revoke(revoked.clone())?;
        Ok(Pool { region, revoked })
    }

    /// Whether the region is revoked (or being revoked).
    pub(crate) fn is_revoked(&self) -> bool {
        self.revoked.0.load(Ordering::Acquire)
    }

    /// The region's memory, for one poll or transmit; `None` once the
    /// region is revoked.
    pub(crate) fn mem(&self) -> Option<Mem<'_>> {
        if self.is_revoked() {
            return None;
        }
        self.region.access().map(Mem)
    }
}

/// The region's memory during one access section.
pub(crate) struct Mem<'a>(Access<'a>);

impl PoolMem for Mem<'_> {
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn read(&self, off: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        self.0.read(off, buf).map_err(|_| OutOfBounds)
    }
    fn write(&self, off: u64, data: &[u8]) -> Result<(), OutOfBounds> {
        self.0.write(off, data).map_err(|_| OutOfBounds)
    }
    fn write_back(&self, off: u64, len: u64) -> Result<(), OutOfBounds> {
        self.0.write_back(off, len).map_err(|_| OutOfBounds)
    }
    fn invalidate(&self, off: u64, len: u64) -> Result<(), OutOfBounds> {
        self.0.invalidate(off, len).map_err(|_| OutOfBounds)
    }
}

impl Mem<'_> {
    /// A reference on the page of the buffer at `off` (page-aligned by
    /// the layout).
    pub(crate) fn page(&self, off: u64) -> Option<ARef<SharedPage>> {
        self.0.page(off).ok()
    }

    /// Whether nobody but the pool holds the page at `off`: its reference
    /// count, read in place (no reference taken each poll), is the one a
    /// ZONE_DEVICE page has while idle.
    pub(crate) fn page_idle(&self, off: u64) -> bool {
        self.0.page_ref_count(off).is_ok_and(|n| n == 1)
    }
}
