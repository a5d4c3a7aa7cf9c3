// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_sysfs`: sysfs directories.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::alloc::flags::GFP_KERNEL;
use kernel::prelude::*;
use kernel::sync::Arc;

use cxlf_support as support;
use support::sysfs::{AttributeBuffer, Attributes, Dir};
use support::{kassert, kassert_eq, kunit_tests};

use super::miscdevice::register;

/// How many `Shown` values were dropped.
static SHOWN_DROPS: AtomicU64 = AtomicU64::new(0);

struct Shown(u64);

impl Drop for Shown {
    fn drop(&mut self) {
        SHOWN_DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

impl Attributes for Shown {
    const NAMES: &'static [&'static kernel::str::CStr] = &[kernel::c_str!("value")];

    fn show(&self, _index: usize, out: &mut AttributeBuffer<'_>) -> Result {
        use core::fmt::Write;
        writeln!(out, "{}", self.0).map_err(|_| EINVAL)
    }
}

fn sysfs_dir_owns_its_data_until_removed() -> Result {
    let reg = register(kernel::c_str!("cxlfabric_kunit_misc_f"), 0)?;
    let drops = || SHOWN_DROPS.load(Ordering::Relaxed);
    let before = drops();
    let dir = Dir::new(reg.as_parent(), b"d", Arc::new(Shown(7), GFP_KERNEL)?)?;
    let inner = Dir::new(dir.as_parent(), b"inner", Arc::new(Shown(8), GFP_KERNEL)?)?;
    // A directory keeps what it shows.
    kassert_eq!(drops(), before);
    drop(inner);
    kassert_eq!(drops(), before + 1);
    drop(dir);
    kassert_eq!(drops(), before + 2);
    // The name is free again once removed.
    drop(Dir::new(
        reg.as_parent(),
        b"d",
        Arc::new(Shown(9), GFP_KERNEL)?,
    )?);
    kassert_eq!(drops(), before + 3);
    // Refused names give their data back.
    let long = Dir::new(
        reg.as_parent(),
        &[b'x'; 64],
        Arc::new(Shown(1), GFP_KERNEL)?,
    );
    kassert!(long.err() == Some(EINVAL));
    let nul = Dir::new(reg.as_parent(), b"a\0b", Arc::new(Shown(1), GFP_KERNEL)?);
    kassert!(nul.err() == Some(EINVAL));
    kassert_eq!(drops(), before + 5);
    Ok(())
}

kunit_tests!(
    cxlfabric_support_sysfs,
    [sysfs_dir_owns_its_data_until_removed]
);
