// SPDX-License-Identifier: GPL-2.0

//! Bringing drack0 up at load: the region (host 0 formats it; every
//! host checks its header, which is another host's and so hostile),
//! this host's join (a new epoch), and its ends of every pair.

use crate::link::{Ends, Link};
use crate::pool::{Mem, Pool};
use drack_core::layout::{Geometry, GeometryError, HOSTS_MAX, LINE};
use drack_core::mem::fetch;
use drack_core::peer::{attach, format, join, DstEnd, SrcEnd};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// Entries of each pair's `ref_queue`, and buffers of each source.
const REF_SLOTS: u32 = 128;
const BUFS: u32 = 256;

/// Buffers the largest frame takes (a jumbo frame up to the MTU takes
/// three): a lend cap below this never lends such frames.
const LEND_ALL: u32 = 3;

/// Lease bounds, milliseconds.
const LEASE_MS_MIN: u32 = 100;
pub(crate) const LEASE_MS_MAX: u32 = 600_000;

/// What the module parameters ask for.
pub(crate) struct Config<'a> {
    pub(crate) pool: &'a CStr,
    pub(crate) region: &'a CStr,
    pub(crate) me: u32,
    pub(crate) hosts: u32,
    pub(crate) lease_ms: u32,
    pub(crate) lend_cap: u32,
}

fn why(e: GeometryError) -> &'static str {
    match e {
        GeometryError::Hosts => "host count",
        GeometryError::RefSlots => "queue entries",
        GeometryError::Bufs => "buffer count",
        // Also a wrong signature, version or checksum.
        GeometryError::TooLarge => "signature, checksum or size",
    }
}

impl Config<'_> {
    fn check(&self) -> Result<Geometry> {
        if !(LEASE_MS_MIN..=LEASE_MS_MAX).contains(&self.lease_ms) {
            pr_err!(
                "lease_ms={} is outside {}..={}\n",
                self.lease_ms,
                LEASE_MS_MIN,
                LEASE_MS_MAX
            );
            return Err(EINVAL);
        }
        if self.lend_cap > BUFS {
            pr_err!(
                "lend_cap={} is above the {} buffers of a source\n",
                self.lend_cap,
                BUFS
            );
            return Err(EINVAL);
        }
        if self.lend_cap == 0 {
            pr_info!("lend_cap=0: no buffer is lent, every frame is copied\n");
        } else if self.lend_cap < LEND_ALL {
            pr_info!(
                "lend_cap={}: frames of more than {} buffers are never lent\n",
                self.lend_cap,
                self.lend_cap
            );
        }
        let geom = Geometry::new(self.hosts, REF_SLOTS, BUFS, true).map_err(|e| {
            pr_err!("hosts={}: bad {} (2..={})\n", self.hosts, why(e), HOSTS_MAX);
            EINVAL
        })?;
        if self.me >= self.hosts {
            pr_err!("host_index={} is not below hosts={}\n", self.me, self.hosts);
            return Err(EINVAL);
        }
        Ok(geom)
    }

    /// drack0's state: the region held, formatted or checked, joined.
    pub(crate) fn link(&self) -> Result<Arc<Link>> {
        let want = self.check()?;
        let pool = Pool::get(self.pool, self.region, want.total_bytes()).inspect_err(|e| {
            if *e == EINVAL && self.me != 0 {
                self.explain_size();
            }
        })?;
        // The access sections are RCU read-side: nothing in them sleeps,
        // so the ends are allocated between the two.
        let (geom, epoch) = {
            let mem = Self::mem(&pool, self.region)?;
            let geom = self.geometry(&mem, &want)?;
            if self.me >= geom.hosts() {
                pr_err!(
                    "host_index={} is not below the region's {} hosts\n",
                    self.me,
                    geom.hosts()
                );
                return Err(EINVAL);
            }
            if geom.hosts() != self.hosts {
                pr_info!(
                    "region {:?}: its header is laid out for {} hosts (hosts={} ignored)\n",
                    self.region,
                    geom.hosts(),
                    self.hosts
                );
            }
            let epoch = join(&mem, &geom, self.me).map_err(|_| {
                pr_err!(
                    "region {:?}: cannot write this host's heartbeat line to join\n",
                    self.region
                );
                EIO
            })?;
            (geom, epoch)
        };
        let mut ends = self.ends(geom, epoch)?;
        self.start(&Self::mem(&pool, self.region)?, &mut ends)?;
        pr_info!(
            "host {} of {} joined region {:?} of {:?} (epoch {}, {} bytes)\n",
            self.me,
            geom.hosts(),
            self.region,
            self.pool,
            epoch,
            geom.total_bytes()
        );
        let lease_ns = u64::from(self.lease_ms) * 1_000_000;
        Link::new(pool, geom, self.me, epoch, lease_ns, ends)
    }

    /// The region's geometry: its header's if valid; host 0 formats a
    /// region whose header line is zero. A damaged or hostile header is
    /// refused, never overwritten.
    fn geometry(&self, mem: &Mem<'_>, want: &Geometry) -> Result<Geometry> {
        match attach(mem) {
            Ok(g) => return Ok(g),
            Err(e) => {
                let line: [u8; LINE as usize] = fetch(mem, 0).map_err(|_| EIO)?;
                if line.iter().any(|b| *b != 0) {
                    pr_err!(
                        "region {:?}: header refused ({}); not formatting over it\n",
                        self.region,
                        why(e)
                    );
                    return Err(EINVAL);
                }
            }
        }
        if self.me != 0 {
            pr_err!(
                "region {:?} is not formatted yet: load host 0 first\n",
                self.region
            );
            return Err(EAGAIN);
        }
        format(mem, want).map_err(|e| {
            pr_err!("cannot format region {:?}: {}\n", self.region, why(e));
            EINVAL
        })?;
        pr_info!(
            "formatted region {:?} for {} hosts\n",
            self.region,
            want.hosts()
        );
        Ok(*want)
    }

    /// The region exists but is smaller than `hosts=` asks: most likely
    /// host 0 formatted it for fewer hosts. Says so if its header tells.
    fn explain_size(&self) {
        let Ok(pool) = Pool::get(self.pool, self.region, LINE) else {
            return;
        };
        let Some(mem) = pool.mem() else {
            return;
        };
        if let Ok(g) = attach(&mem) {
            if g.hosts() != self.hosts {
                pr_err!(
                    "region {:?}: its header is laid out for {} hosts, this host has hosts={}: load every host with the same hosts=\n",
                    self.region,
                    g.hosts(),
                    self.hosts
                );
            }
        }
    }

    /// The region's memory, for one access section.
    fn mem<'a>(pool: &'a Pool, region: &CStr) -> Result<Mem<'a>> {
        pool.mem().ok_or_else(|| {
            pr_err!("region {:?} is revoked already\n", region);
            ENODEV
        })
    }

    /// This host's source and destination ends of every pair (allocates:
    /// no access section open).
    fn ends(&self, geom: Geometry, epoch: u32) -> Result<Ends> {
        let hosts = geom.hosts() as usize;
        let mut srcs = KVec::with_capacity(hosts, GFP_KERNEL)?;
        let mut dsts = KVec::with_capacity(hosts, GFP_KERNEL)?;
        for p in 0..geom.hosts() {
            if p == self.me {
                srcs.push(None, GFP_KERNEL)?;
                dsts.push(None, GFP_KERNEL)?;
                continue;
            }
            let s = SrcEnd::new(geom, self.me, p, epoch).ok_or_else(|| {
                pr_err!("no source end towards host {} for this geometry\n", p);
                EINVAL
            })?;
            let d = DstEnd::new(geom, self.me, p, epoch, self.lend_cap).ok_or_else(|| {
                pr_err!(
                    "no destination end from host {} (lend_cap={})\n",
                    p,
                    self.lend_cap
                );
                EINVAL
            })?;
            srcs.push(Some(KBox::new(s, GFP_KERNEL)?), GFP_KERNEL)?;
            dsts.push(Some(KBox::new(d, GFP_KERNEL)?), GFP_KERNEL)?;
        }
        Ok((srcs, dsts))
    }

    /// Starts every end (sessions begin), inside one access section.
    fn start(&self, mem: &Mem<'_>, ends: &mut Ends) -> Result {
        let fail = |p: usize| {
            pr_err!(
                "region {:?}: cannot start the pair with host {}: out of bounds\n",
                self.region,
                p
            );
            EIO
        };
        for (p, s) in ends.0.iter_mut().enumerate() {
            if let Some(s) = s {
                s.start(mem).map_err(|_| fail(p))?;
            }
        }
        for (p, d) in ends.1.iter_mut().enumerate() {
            if let Some(d) = d {
                let held = Self::adopt(mem, d);
                d.start(mem).map_err(|_| fail(p))?;
                if held > 0 {
                    pr_info!(
                        "host {}: the stack still holds {} of its buffers (lent before a reload): kept from it until let go\n",
                        p,
                        held
                    );
                }
            }
        }
        Ok(())
    }

    /// Adopts the buffers of `d`'s pair whose pages the stack still
    /// holds, lent by an earlier load of this module (a socket has not
    /// read them): the source must not send in them until they come
    /// back. Returns how many.
    fn adopt(mem: &Mem<'_>, d: &mut DstEnd) -> u32 {
        let geom = *d.geometry();
        let mut held = 0u32;
        for b in 0..geom.bufs() {
            let busy = geom
                .buffer(d.pair(), b)
                .is_some_and(|off| !mem.page_idle(off));
            if busy && u16::try_from(b).is_ok_and(|b| d.adopt(b)) {
                held = held.saturating_add(1);
            }
        }
        held
    }
}
