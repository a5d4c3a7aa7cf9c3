// SPDX-License-Identifier: GPL-2.0

//! Cross-host bookkeeping: this host's slots in a beluga pool region, and
//! what it reads of the other hosts' (format and liveness rules: the
//! control core's `shared.rs`). Everything read from the region is another
//! host's and is decoded and checked by the core before use.

#![deny(clippy::arithmetic_side_effects)]

use crate::control::shared::{self, PeerView, Read, Remote, Slot, MAX_HOSTS, SLOT_BYTES};
use crate::pr_info_ratelimited;
use crate::support::region::Region;
use crate::support::uapi::mchannel as abi;
use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;

const _: () = assert!(shared::NAME_BYTES == abi::NAME_BYTES);
/// `shared::REGION_NAME`, NUL-terminated for the region API.
const REGION: &CStr = c_str!("mchannel.fabric.v1");
const _: () = {
    let (a, b) = (REGION.as_bytes_with_nul(), shared::REGION_NAME.as_bytes());
    assert!(a.len() == b.len() + 1);
    let mut i = 0;
    while i < b.len() {
        assert!(a[i] == b[i]);
        i += 1;
    }
};

/// Lease bounds, milliseconds.
pub(crate) const LEASE_MS_MIN: u32 = 100;
pub(crate) const LEASE_MS_MAX: u32 = 600_000;

/// One component's view of the other hosts.
pub(crate) struct PeerSlots {
    views: [PeerView; MAX_HOSTS],
    /// Where each peer's slot for this component was last found.
    known: [Option<usize>; MAX_HOSTS],
    /// This host's slot for it, once placed.
    own: Option<usize>,
    /// What the last period found (for sysfs).
    pub(crate) last: Remote,
}

impl PeerSlots {
    pub(crate) fn new() -> Result<KBox<PeerSlots>> {
        Ok(KBox::new(
            PeerSlots {
                views: [PeerView::default(); MAX_HOSTS],
                known: [None; MAX_HOSTS],
                own: None,
                last: Remote::default(),
            },
            GFP_KERNEL,
        )?)
    }
}

/// This host's part in a pool's shared fabric state.
///
/// # Invariants
///
/// `host < MAX_HOSTS`; bit `i` of `used` is set iff one of this host's
/// components has slot `i`.
pub(crate) struct CrossHost {
    region: Region,
    host: usize,
    lease_ns: u64,
    heartbeat: u64,
    used: u64,
}

impl CrossHost {
    /// Opens (or creates) the region in `pool` and clears this host's
    /// block: slots of an earlier load are not this one's.
    pub(crate) fn new(pool: &CStr, host: u32, lease_ms: u32) -> Result<CrossHost> {
        let h = host as usize;
        if h >= MAX_HOSTS {
            pr_err!("host_index={} is not below {}\n", host, MAX_HOSTS);
            return Err(EINVAL);
        }
        if !(LEASE_MS_MIN..=LEASE_MS_MAX).contains(&lease_ms) {
            pr_err!(
                "lease_ms={} is outside {}..={}\n",
                lease_ms,
                LEASE_MS_MIN,
                LEASE_MS_MAX
            );
            return Err(EINVAL);
        }
        let region = Region::get(pool, REGION, shared::REGION_BYTES as u64).inspect_err(|e| {
            pr_err!(
                "no region {:?} in pool {:?}: error {}\n",
                REGION,
                pool,
                e.to_errno()
            )
        })?;
        // INVARIANT: checked above; nothing placed yet.
        let this = CrossHost {
            region,
            host: h,
            lease_ns: u64::from(lease_ms).saturating_mul(1_000_000),
            heartbeat: 0,
            used: 0,
        };
        this.clear()?;
        pr_info!(
            "host {} shares fabric state through {:?} in {:?} (lease {} ms)\n",
            host,
            REGION,
            pool,
            lease_ms
        );
        Ok(this)
    }

    /// Zeroes this host's block (peers then see its slots as empty).
    fn clear(&self) -> Result {
        let zero = [0u8; SLOT_BYTES];
        for i in 0..shared::SLOTS_PER_HOST {
            let at = shared::slot_offset(self.host, i).ok_or(EINVAL)?;
            self.region.write(at as u64, &zero)?;
        }
        Ok(())
    }

    pub(crate) fn host(&self) -> usize {
        self.host
    }

    /// Starts a control period.
    pub(crate) fn beat(&mut self) {
        self.heartbeat = self.heartbeat.wrapping_add(1);
    }

    /// Reads every peer's slot for component `name` and folds it in.
    pub(crate) fn peers(
        &self,
        slots: &mut PeerSlots,
        name: &[u8; abi::NAME_BYTES],
        now_ns: u64,
    ) -> Remote {
        for p in 0..MAX_HOSTS {
            if p == self.host {
                continue;
            }
            let (Some(view), Some(known)) = (slots.views.get_mut(p), slots.known.get_mut(p)) else {
                continue;
            };
            let (read, at) = shared::lookup(p, name, *known, |i| {
                let off = shared::slot_offset(p, i)?;
                let mut b = [0u8; SLOT_BYTES];
                self.region.read(off as u64, &mut b).ok()?;
                Some(b)
            });
            if matches!(read, Read::Damaged { .. } | Read::Unreadable) {
                pr_info_ratelimited!(
                    "mchannel: host {}'s slot is damaged, unreadable or another host's (same host_index?); keeping its last values\n",
                    p
                );
            }
            *known = at;
            view.observe(read, now_ns, self.lease_ns);
        }
        slots.last = shared::remote(&slots.views, self.host);
        slots.last
    }

    /// Writes this host's slot for component `name`: its own rate and
    /// per-weight demand there, and the share if it owns the component.
    pub(crate) fn publish(
        &mut self,
        slots: &mut PeerSlots,
        name: &[u8; abi::NAME_BYTES],
        (rate, cap): (u64, u64),
        alpha: u64,
    ) -> Result {
        let at = match slots.own {
            Some(at) => at,
            None => {
                let at = shared::place(name, self.used).ok_or(ENOSPC)?;
                // INVARIANT: the bit of the slot just placed.
                self.used |= 1u64 << (at % 64);
                slots.own = Some(at);
                at
            }
        };
        let mut s = Slot::new(self.host as u32, *name);
        s.heartbeat = self.heartbeat;
        s.rate = rate;
        s.cap = cap;
        if slots.last.owner {
            s.flags = shared::FLAG_OWNER;
            s.alpha = alpha;
        }
        let off = shared::slot_offset(self.host, at).ok_or(EINVAL)?;
        self.region.write(off as u64, &s.encode())
    }
}

impl Drop for CrossHost {
    fn drop(&mut self) {
        // Leaving: peers see empty slots and stop counting this host at
        // once, without waiting for the lease.
        if self.clear().is_err() {
            pr_warn!("could not clear this host's slots; peers drop them after the lease\n");
        }
    }
}
