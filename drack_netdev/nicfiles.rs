// SPDX-License-Identifier: GPL-2.0

//! Lent NICs in sysfs, `/sys/class/net/drack0/nics/`: `lend` and
//! `unlend` (root with `CAP_NET_ADMIN` writes an interface's name; the
//! write fails with the reason in the log), and per slot `<n>/`:
//! `ifname` (empty when nothing is lent there), `generation`, `mtu`,
//! `carrier` (as the heartbeat publishes them), and the counters
//! `to_nic_frames`, `to_nic_bytes`, `to_nic_dropped` (the vNICs' frames
//! this host sent on the NIC) and `from_nic_frames`, `from_nic_bytes`,
//! `from_nic_dropped` (what the NIC received for vNICs). `tools/drack`
//! reads and writes them.
//!
//! Locks: `show` and `store` take `Owner::lent` (and RTNL before it, to
//! lend), never while a directory is removed (the directories go before
//! the owner's teardown).

use crate::owner::Owner;
use crate::support::cred::capable_net_admin;
use crate::support::sysfs::{AttributeBuffer, Attributes, Dir, Parent};
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};
use drack_core::nic::NICS_MAX;
use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// An interface name's bytes at most (`IFNAMSIZ` less its NUL).
pub(crate) const IFNAME_MAX: usize = 15;

/// `nics/lend` and `nics/unlend`.
struct Control {
    owner: Arc<Owner>,
}

/// The interface name written to `lend` or `unlend`, NUL-terminated in
/// `buf`: one line of 1 to 15 bytes, no `/`, space or control byte.
pub(crate) fn ifname<'a>(input: &[u8], buf: &'a mut [u8; IFNAME_MAX + 1]) -> Result<&'a CStr> {
    let name = input.strip_suffix(b"\n").unwrap_or(input);
    let bad = |b: &u8| *b == b'/' || *b <= b' ' || *b >= 0x7f;
    if name.is_empty() || name.len() > IFNAME_MAX || name.iter().any(bad) {
        pr_err!("nics: not an interface name\n");
        return Err(EINVAL);
    }
    *buf = [0; IFNAME_MAX + 1];
    buf.get_mut(..name.len())
        .ok_or(EINVAL)?
        .copy_from_slice(name);
    let len = name.len().checked_add(1).ok_or(EINVAL)?;
    CStr::from_bytes_with_nul(buf.get(..len).ok_or(EINVAL)?).map_err(|_| EINVAL)
}

impl Attributes for Control {
    const NAMES: &'static [&'static CStr] = &[c_str!("lend"), c_str!("unlend")];
    const WRITABLE: u64 = 0b11;

    fn show(&self, _index: usize, _out: &mut AttributeBuffer<'_>) -> Result {
        // Write-only in effect: the slots say what is lent.
        Ok(())
    }

    fn store(&self, index: usize, input: &[u8]) -> Result {
        if !capable_net_admin() {
            crate::support::pr_info_ratelimited!("nics: lending a NIC needs CAP_NET_ADMIN\n");
            return Err(EPERM);
        }
        let mut buf = [0u8; IFNAME_MAX + 1];
        let name = ifname(input, &mut buf)?;
        match index {
            0 => self.owner.lend(name).map(|_| ()),
            1 => self.owner.unlend(name),
            _ => Err(EINVAL),
        }
    }
}

/// `nics/<slot>/`.
struct SlotView {
    owner: Arc<Owner>,
    slot: u8,
}

impl Attributes for SlotView {
    const NAMES: &'static [&'static CStr] = &[
        c_str!("ifname"),
        c_str!("generation"),
        c_str!("mtu"),
        c_str!("carrier"),
        c_str!("to_nic_frames"),
        c_str!("to_nic_bytes"),
        c_str!("to_nic_dropped"),
        c_str!("from_nic_frames"),
        c_str!("from_nic_bytes"),
        c_str!("from_nic_dropped"),
    ];

    fn show(&self, index: usize, out: &mut AttributeBuffer<'_>) -> Result {
        let r = match index {
            1..=3 => {
                let rec = self.owner.record(self.slot);
                match index {
                    1 => writeln!(out, "{}", rec.generation),
                    2 => writeln!(out, "{}", rec.mtu),
                    _ => writeln!(out, "{}", u32::from(rec.carrier)),
                }
            }
            _ => self.owner.with_slot(self.slot, |l| {
                let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
                match (index, l) {
                    (0, Some((name, _))) => writeln!(out, "{}", name.to_str().unwrap_or("?")),
                    (0, None) => writeln!(out),
                    (_, None) => writeln!(out, "0"),
                    (i, Some((_, p))) => {
                        let c = &p.counters;
                        let v = match i {
                            4 => get(&c.to_nic_frames),
                            5 => get(&c.to_nic_bytes),
                            6 => get(&c.to_nic_dropped),
                            7 => get(&c.from_nic_frames),
                            8 => get(&c.from_nic_bytes),
                            _ => get(&c.from_nic_dropped),
                        };
                        writeln!(out, "{}", v)
                    }
                }
            }),
        };
        r.map_err(|_| EINVAL)
    }
}

/// `nics/` and its slots' directories, removed in field order.
pub(crate) struct NicFiles {
    _slots: KVec<Dir<SlotView>>,
    _dir: Dir<Control>,
}

impl NicFiles {
    pub(crate) fn new(parent: Parent<'_>, owner: &Arc<Owner>) -> Result<NicFiles> {
        let control = Arc::new(
            Control {
                owner: owner.clone(),
            },
            GFP_KERNEL,
        )?;
        let dir = Dir::new(parent, b"nics", control)?;
        let mut slots = KVec::with_capacity(NICS_MAX, GFP_KERNEL)?;
        for slot in 0..NICS_MAX as u8 {
            let view = Arc::new(
                SlotView {
                    owner: owner.clone(),
                    slot,
                },
                GFP_KERNEL,
            )?;
            let name = [b'0'.saturating_add(slot)];
            slots.push(Dir::new(dir.as_parent(), &name, view)?, GFP_KERNEL)?;
        }
        Ok(NicFiles {
            _slots: slots,
            _dir: dir,
        })
    }
}
