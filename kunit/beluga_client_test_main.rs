// SPDX-License-Identifier: GPL-2.0

//! beluga_client_test: a module that uses beluga_dax's in-kernel region
//! API the way mchannel_sched and drack_netdev do. At load it obtains the
//! shared region `kclient.test` of `size_mib` MiB from pool `beluga0.0`,
//! writes [`pattern_byte`] over its first 64 KiB and last page through the
//! locked accessors and reads them back; then it checks the access
//! sections (under a spinlock, so in atomic context), their bounds, range
//! write-back and invalidation and the pages' reference counts, logging
//! `check <name>: ok` for each, and registers a revoke handler. With
//! `hold_page=1` it keeps a reference on the page at 64 KiB until unload.
//! At unload it checks that access sections fail once the region was
//! revoked (and succeed otherwise), and releases the region. Scenario
//! `22_beluga_region` checks the result from user space.

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::c_str;
use kernel::new_spinlock;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::ARef;

use cxlf_support as support;

use support::page::SharedPage;
use support::params::module_param_uint;
use support::region::{Access, Region, RevokeHandler};
use support::uapi::selftest::pattern_byte;

module! {
    type: BelugaClient,
    name: "beluga_client_test",
    author: "cxlfabric developers",
    description: "Test user of beluga_dax's in-kernel region API",
    license: "GPL",
}

module_param_uint!(
    /// Size of the region, in MiB.
    size_mib
);

module_param_uint!(
    /// Keep a reference on a page of the region until unload (1) or not (0).
    hold_page
);

const SPAN: usize = 64 * 1024;
/// Where the access checks write: the page after the pattern.
const AREA: u64 = SPAN as u64;

struct BelugaClient {
    /// Dropped before `region` (field order), like a lent fragment.
    page: Option<ARef<SharedPage>>,
    revoked: Arc<Revoked>,
    region: Region,
}

/// Records the revoke callback.
struct Revoked {
    ran: AtomicBool,
}

impl RevokeHandler for Revoked {
    fn revoked(&self) {
        self.ran.store(true, Ordering::Release);
        pr_info!("revoke callback ran\n");
    }
}

fn fill(region: &Region, offset: u64, len: usize) -> Result {
    let mut chunk = [0u8; 512];
    let mut done = 0;
    while done < len {
        let n = chunk.len().min(len - done);
        for (i, b) in chunk[..n].iter_mut().enumerate() {
            *b = pattern_byte(offset as usize + done + i);
        }
        region.write(offset + done as u64, &chunk[..n])?;
        done += n;
    }
    let mut back = [0u8; 512];
    done = 0;
    while done < len {
        let n = back.len().min(len - done);
        region.read(offset + done as u64, &mut back[..n])?;
        if back[..n]
            .iter()
            .enumerate()
            .any(|(i, b)| *b != pattern_byte(offset as usize + done + i))
        {
            pr_err!("read back differs at {:#x}\n", offset as usize + done);
            return Err(EIO);
        }
        done += n;
    }
    Ok(())
}

/// Fails with a log line unless `cond`.
fn expect(cond: bool, what: &str) -> Result {
    if cond {
        return Ok(());
    }
    pr_err!("check failed: {}\n", what);
    Err(EINVAL)
}

/// An access section, or `ENODEV`.
fn access(region: &Region) -> Result<Access<'_>> {
    region.access().ok_or_else(|| {
        pr_err!("access section refused on a live region\n");
        ENODEV
    })
}

/// Writes, writes back, invalidates and reads back through an access
/// section with a spinlock held (preemption off: a sleeping access would
/// be caught by CONFIG_DEBUG_ATOMIC_SLEEP and lockdep).
fn check_atomic(region: &Region) -> Result {
    let lock = KBox::pin_init(new_spinlock!(0u32, "beluga_client:atomic"), GFP_KERNEL)?;
    let data: [u8; 100] = core::array::from_fn(|i| (i as u8) ^ 0xA5);
    let mut back = [0u8; 100];
    let word = {
        let _guard = lock.lock();
        let a = access(region)?;
        // Unaligned, across a line boundary.
        a.write(AREA + 30, &data)?;
        a.write_u64(AREA + 256, 0x0123_4567_89ab_cdef)?;
        a.write_back(AREA, 512)?;
        a.invalidate(AREA, 512)?;
        a.read(AREA + 30, &mut back)?;
        a.read_u64(AREA + 256)?
    };
    expect(back == data, "bytes read back in an access section")?;
    expect(word == 0x0123_4567_89ab_cdef, "u64 read back")?;
    // The locked path sees what the section wrote back, and the other way.
    let mut locked = [0u8; 100];
    region.read(AREA + 30, &mut locked)?;
    expect(locked == data, "locked read of a section's write")?;
    region.write(AREA + 256, &0x1122_3344_5566_7788u64.to_le_bytes())?;
    let a = access(region)?;
    a.invalidate(AREA + 256, 8)?;
    expect(
        a.read_u64(AREA + 256)? == 0x1122_3344_5566_7788,
        "section read of a locked write",
    )?;
    pr_info!("check atomic: ok\n");
    Ok(())
}

/// Every access outside the region, misaligned word or overflowing range
/// is refused.
fn check_bounds(region: &Region) -> Result {
    let a = access(region)?;
    let len = a.len();
    expect(len == region.size(), "section length")?;
    let mut two = [0u8; 2];
    expect(a.read(len - 1, &mut two).is_err(), "read past the end")?;
    expect(a.write(len - 1, &two).is_err(), "write past the end")?;
    expect(a.write(u64::MAX, &two).is_err(), "write at u64::MAX")?;
    expect(a.read(len, &mut []).is_ok(), "empty read at the end")?;
    expect(a.read_u64(len - 8).is_ok(), "last word")?;
    expect(a.read_u64(len).is_err(), "word at the end")?;
    expect(a.read_u64(AREA + 4).is_err(), "misaligned word")?;
    expect(
        a.write_u64(u64::MAX - 7, 0).is_err(),
        "word at u64::MAX - 7",
    )?;
    pr_info!("check bounds: ok\n");
    Ok(())
}

/// Write-back and invalidation accept every range inside the region and
/// refuse the others (TCG models no caches: what the lines hold is
/// checked by `check_atomic` and the scenario, on real hardware by drack).
fn check_ranges(region: &Region) -> Result {
    let a = access(region)?;
    let len = a.len();
    for (off, n) in [
        (0, 0),
        (0, 1),
        (63, 2),
        (len - 1, 1),
        (0, len),
        (AREA, 4096),
    ] {
        expect(a.write_back(off, n).is_ok(), "write-back inside")?;
        expect(a.invalidate(off, n).is_ok(), "invalidate inside")?;
    }
    for (off, n) in [(len, 1), (1, len), (u64::MAX, 2), (len - 1, u64::MAX)] {
        expect(a.write_back(off, n).is_err(), "write-back outside")?;
        expect(a.invalidate(off, n).is_err(), "invalidate outside")?;
    }
    pr_info!("check ranges: ok\n");
    Ok(())
}

/// Pages: one reference per `ARef`, distinct pages per offset, only
/// page-aligned offsets inside the region.
fn check_pages(region: &Region) -> Result {
    let a = access(region)?;
    let page = PAGE_SIZE as u64;
    let first = a.page(AREA)?;
    let base = first.ref_count();
    let again = first.clone();
    expect(first.ref_count() == base + 1, "a clone takes a reference")?;
    drop(again);
    expect(first.ref_count() == base, "a drop puts it")?;
    expect(
        a.page_ref_count(AREA)? == base,
        "the in-place count takes no reference",
    )?;
    expect(a.page_ref_count(AREA + 1).is_err(), "unaligned count")?;
    expect(a.page_ref_count(a.len()).is_err(), "count at the end")?;
    let next = a.page(AREA + page)?;
    expect(next.as_ptr() != first.as_ptr(), "distinct pages")?;
    expect(a.page(a.len() - page).is_ok(), "last page")?;
    expect(a.page(a.len()).is_err(), "page at the end")?;
    expect(a.page(AREA + 1).is_err(), "unaligned page")?;
    pr_info!("check pages: ok (count {} while held)\n", base);
    Ok(())
}

impl kernel::Module for BelugaClient {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let size = u64::from(size_mib()) << 20;
        let mut region = Region::get(c_str!("beluga0.0"), c_str!("kclient.test"), size)?;
        let end = region.size() - 4096;
        fill(&region, 0, SPAN)?;
        fill(&region, end, 4096)?;
        // Out of range is refused, not followed.
        if region.write(region.size() - 1, &[0, 0]).is_ok() {
            pr_err!("a write past the region was accepted\n");
            return Err(EINVAL);
        }
        check_atomic(&region)?;
        check_bounds(&region)?;
        check_ranges(&region)?;
        check_pages(&region)?;
        let revoked = Arc::new(
            Revoked {
                ran: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )?;
        region.on_revoke(revoked.clone())?;
        let page = match hold_page() {
            0 => None,
            _ => Some(access(&region)?.page(AREA)?),
        };
        pr_info!(
            "region kclient.test: {} bytes at {:#x}, pattern written\n",
            region.size(),
            region.phys()
        );
        Ok(BelugaClient {
            page,
            revoked,
            region,
        })
    }
}

impl Drop for BelugaClient {
    fn drop(&mut self) {
        let open = self.region.access().is_some();
        match (self.revoked.ran.load(Ordering::Acquire), open) {
            (true, false) => pr_info!("access after revoke refused\n"),
            (false, true) => pr_info!("access while held: ok\n"),
            (ran, open) => pr_err!("revoke callback ran: {}, access open: {}\n", ran, open),
        }
        if let Some(page) = self.page.take() {
            pr_info!("dropping the held page (count {})\n", page.ref_count());
        }
    }
}
