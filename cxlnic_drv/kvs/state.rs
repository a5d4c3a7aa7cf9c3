// SPDX-License-Identifier: GPL-2.0

//! A NIC's key-value offload as the driver runs it (the protocol of
//! `ring::kvs`, "Driver" in its `table.rs`): the host table, the config
//! exchange, commands, and the log the driver applies.
//!
//! One mutex (`state`) serializes every operation on a NIC's store: the
//! ioctls, `ethtool --set-priv-flags`, the periodic drain and the NIC's
//! removal. Under it: the port's `settings` (a copy, to check the mode)
//! and nothing else. An operation may sleep under it (up to a second per
//! wait for the device); nothing in the data path takes it.
//!
//! Rules (cxlnic.rst, "Key-value offload"):
//! - every operation applies the log first, so a direct write never
//!   lands under a log entry that predates it;
//! - while the device serves, updates and deletes of a present key are
//!   commands (the device orders them with the network's PUTs); a new
//!   key, and anything while it does not serve, is written directly;
//! - the host table is freed only once the device answered a config
//!   that disables (it reads the table until then); if it never does,
//!   the table is kept for good when the NIC goes.

#![deny(clippy::arithmetic_side_effects)]

use super::area::Area;
use super::host::HostMem;
use crate::ring::device::MODE_TYPE2;
use crate::ring::kvs::{DeviceLine, DriverLine, KvsConfig, CACHE_BUCKETS_MAX};
use crate::support::error::{eopnotsupp, etimedout};
use crate::support::pr_info_ratelimited;
use crate::support::time;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::lock::mutex::MutexBackend;
use kernel::sync::{Arc, Mutex};

/// How long the driver waits for the device to answer a config or take
/// a command, milliseconds.
pub(crate) const WAIT_MS: u32 = 1000;
/// Cache buckets unless the caller names a count.
pub(crate) const DEFAULT_CACHE_BUCKETS: u32 = 1024;
/// The shortest time between two re-sent configs (a device that keeps
/// restarting, or a hostile log tail), milliseconds.
pub(super) const RESEND_GAP_MS: u64 = 1000;

/// What an operator chooses for the offload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct KvsSettings {
    pub(crate) udp_port: u16,
    pub(crate) ipv4: [u8; 4],
    pub(crate) cache_buckets: u32,
}

/// The store's state, under [`Kvs::state`].
///
/// # Invariants
///
/// - `lent`: a config naming `host` was written and the device has not
///   answered a later one that disables (or refused it): it may read
///   the table, so `host` is not freed.
/// - `serving`: the device took the enabling config (`lent` too), and
///   its command ring and log started at `cmd_tail`/`log_head` 0 then.
/// - `started`: the device took the enabling config written last, so
///   the log's tags from `log_head` on are this epoch's (it cleared the
///   older ones when it took it); only then may entries be taken by
///   their tags alone.
pub(super) struct State {
    pub(super) host: Option<HostMem>,
    /// The operator wants the device to serve (re-sent after a reset).
    pub(super) enabled: bool,
    pub(super) serving: bool,
    pub(super) started: bool,
    pub(super) lent: bool,
    /// A config written and not answered yet: its generation, and
    /// whether it enables.
    pub(super) pending: Option<(u32, bool)>,
    pub(super) settings: KvsSettings,
    /// The generation written last.
    pub(super) gen: u32,
    pub(super) cmd_tail: u32,
    pub(super) log_head: u32,
    /// The heartbeat seen last, since when, and whether it stood still
    /// for the timeout (then a beat again means a reset).
    pub(super) beat: u32,
    pub(super) beat_since_ms: u64,
    pub(super) lost: bool,
    /// The device lost its place (a log tail behind the head): send the
    /// config again; and when it was last sent again.
    pub(super) resend: bool,
    pub(super) resent_ms: u64,
    /// The NIC is going: nothing more reaches its device.
    pub(super) gone: bool,
}

/// The driver's own counters (`ethtool -S`, `KVS_STATS`), in
/// `uapi::cxlnic::DRIVER_STATS` order.
#[derive(Default)]
pub(crate) struct KvsCounters {
    pub(crate) bad_records: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) log_applied: AtomicU64,
}

impl KvsCounters {
    pub(crate) fn values(&self) -> [u64; 3] {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            get(&self.bad_records),
            get(&self.timed_out),
            get(&self.log_applied),
        ]
    }
}

pub(super) fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// A snapshot for `KVS_STATS`.
pub(crate) struct Snapshot {
    pub(crate) enabled: bool,
    pub(crate) serving: bool,
    pub(crate) host_buckets: Option<u32>,
    pub(crate) settings: KvsSettings,
}

/// A NIC's key-value offload.
#[pin_data]
pub(crate) struct Kvs {
    /// `None`: the device has no offload (every operation is refused).
    pub(crate) area: Option<Area>,
    #[pin]
    pub(super) state: Mutex<State>,
    /// `State::enabled`, for ethtool's flags without waiting on the
    /// mutex (an operation may hold it for a second). Changed with it,
    /// under RTNL (every switch is) or at removal.
    enabled: AtomicBool,
    pub(crate) counters: KvsCounters,
}

/// [`Kvs::state`], locked.
pub(super) type StateGuard<'a> = kernel::sync::lock::Guard<'a, State, MutexBackend>;

pub(super) fn now_ms() -> u64 {
    time::boottime_ns() / 1_000_000
}

impl Kvs {
    pub(crate) fn new(area: Option<Area>, udp_port: u16) -> Result<Arc<Kvs>> {
        let beat = area.as_ref().map_or(0, Area::heartbeat);
        // Generations go on from the one the device answered last (a
        // slow device never answers a new config with an old one).
        let gen = area
            .as_ref()
            .and_then(|a| a.device_line().ok())
            .map_or(0, |l| l.cfg_ack);
        Arc::pin_init(
            pin_init!(Kvs {
                area,
                state <- new_mutex!(
                    State {
                        host: None,
                        enabled: false,
                        serving: false,
                        started: false,
                        lent: false,
                        pending: None,
                        settings: KvsSettings {
                            udp_port,
                            ipv4: [0; 4],
                            cache_buckets: DEFAULT_CACHE_BUCKETS,
                        },
                        gen,
                        cmd_tail: 0,
                        log_head: 0,
                        beat,
                        beat_since_ms: now_ms(),
                        lost: false,
                        resend: false,
                        resent_ms: 0,
                        gone: false,
                    },
                    "cxlnic:kvs"
                ),
                enabled: AtomicBool::new(false),
                counters: KvsCounters::default(),
            }),
            GFP_KERNEL,
        )
    }

    /// The area, or `EOPNOTSUPP` (logged) for a device without offload.
    pub(super) fn area(&self, who: &CStr) -> Result<&Area> {
        match &self.area {
            Some(a) => Ok(a),
            None => {
                pr_info_ratelimited!("{}: device has no KVS offload\n", who);
                Err(eopnotsupp())
            }
        }
    }

    /// The state, unless the NIC is going (`ENODEV`).
    pub(super) fn lock(&self, who: &CStr) -> Result<StateGuard<'_>> {
        let st = self.state.lock();
        if st.gone {
            pr_info_ratelimited!("{}: KVS: the NIC is going away\n", who);
            return Err(ENODEV);
        }
        Ok(st)
    }

    /// Whether the operator enabled the offload (`--show-priv-flags`).
    pub(crate) fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub(super) fn set_enabled(&self, st: &mut State, on: bool) {
        st.enabled = on;
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// The state for `KVS_STATS`.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let st = self.state.lock();
        Snapshot {
            enabled: st.enabled,
            serving: st.serving,
            host_buckets: st.host.as_ref().map(|h| h.table.buckets()),
            settings: st.settings,
        }
    }

    /// The host table, allocated on first use (`kvs_buckets`).
    pub(super) fn ensure_host<'a>(
        &self,
        st: &'a mut State,
        area: &Area,
        who: &CStr,
    ) -> Result<&'a HostMem> {
        if st.host.is_none() {
            let h = HostMem::alloc(&area.io, who, crate::kvs_buckets())?;
            pr_info!(
                "{}: KVS host table: {} buckets, {} KiB\n",
                who,
                h.table.buckets(),
                h.bytes() >> 10
            );
            st.host = Some(h);
        }
        st.host.as_ref().ok_or(ENOMEM)
    }
}

// The config exchange.
impl Kvs {
    /// Enables the offload with `want` on a port in `mode` (allocating
    /// the host table if need be) and waits for the device's answer.
    pub(crate) fn enable(&self, who: &CStr, mode: u32, want: KvsSettings) -> Result {
        let area = self.area(who)?;
        if mode != MODE_TYPE2 {
            pr_info_ratelimited!(
                "{}: KVS offload needs the port in type2 mode (device memory)\n",
                who
            );
            return Err(EINVAL);
        }
        let b = want.cache_buckets;
        if !b.is_power_of_two() || b > CACHE_BUCKETS_MAX {
            pr_info_ratelimited!(
                "{}: KVS cache buckets {} is not a power of two up to {}\n",
                who,
                b,
                CACHE_BUCKETS_MAX
            );
            return Err(EINVAL);
        }
        if want.udp_port == 0 {
            pr_info_ratelimited!("{}: KVS UDP port 0\n", who);
            return Err(EINVAL);
        }
        let mut st = self.lock(who)?;
        if st.serving && st.settings == want {
            self.set_enabled(&mut st, true);
            return Ok(());
        }
        self.ensure_host(&mut st, area, who)?;
        // The device starts afresh with a new config: apply what it
        // logged so far.
        self.drain(&mut st, area, who);
        st.settings = want;
        self.set_enabled(&mut st, true);
        self.configure(&mut st, area, who, true)
    }

    /// Disables the offload and waits for the device's answer (the pairs
    /// stay in the host table, which is written directly from then on).
    pub(crate) fn disable(&self, who: &CStr) -> Result {
        let area = self.area(who)?;
        let mut st = self.lock(who)?;
        self.set_enabled(&mut st, false);
        if !st.lent && st.pending.is_none() {
            return Ok(());
        }
        // A late answer first: then the log is known to be this epoch's.
        let _ = self.answer(&mut st, area, who);
        self.drain(&mut st, area, who);
        self.configure(&mut st, area, who, false)
    }

    /// A generation never written before and not the one the device
    /// answered last (nor 0).
    fn next_gen(st: &mut State, line: &DeviceLine) -> u32 {
        loop {
            st.gen = st.gen.wrapping_add(1);
            if st.gen != 0 && st.gen != line.cfg_ack {
                return st.gen;
            }
        }
    }

    /// Writes a config that enables (or not) and waits up to
    /// [`WAIT_MS`] for the answer.
    pub(super) fn configure(
        &self,
        st: &mut State,
        area: &Area,
        who: &CStr,
        enable: bool,
    ) -> Result {
        let line = area.device_line()?;
        let (host_buckets, host_table, hash_seed) = match &st.host {
            Some(h) => (h.table.buckets(), h.mem.dma_handle(), h.table.seed()),
            // Disabling needs no table; enabling always has one.
            None if !enable => (0, 0, 0),
            None => return Err(EINVAL),
        };
        if enable {
            // The device starts both rings at 0 when it takes the config.
            st.serving = false;
            st.started = false;
            area.clear_commands()?;
            area.set_driver_line(&DriverLine::default())?;
            st.cmd_tail = 0;
            st.log_head = 0;
        }
        let gen = Self::next_gen(st, &line);
        let cfg = KvsConfig {
            gen,
            enable: u32::from(enable),
            udp_port: st.settings.udp_port,
            _pad: 0,
            ipv4: st.settings.ipv4,
            cache_buckets: st.settings.cache_buckets,
            host_buckets,
            host_table,
            hash_seed,
        };
        area.write_config(&cfg, gen)?;
        // From here the device may read the table (enable), or may still
        // serve until it answers (disable): no commands meanwhile.
        st.pending = Some((gen, enable));
        st.serving = false;
        if enable {
            st.lent = true;
        }
        for _ in 0..WAIT_MS {
            if let Some(r) = self.answer(st, area, who) {
                return r;
            }
            time::sleep_ms(1);
        }
        pr_info_ratelimited!(
            "{}: KVS: the device did not answer the {} config within {} ms (it may later)\n",
            who,
            if enable { "enabling" } else { "disabling" },
            WAIT_MS
        );
        Err(etimedout())
    }

    /// Takes the device's answer to the pending config, if it came.
    pub(super) fn answer(&self, st: &mut State, area: &Area, who: &CStr) -> Option<Result> {
        let (gen, enable) = st.pending?;
        let line = area.device_line().ok()?;
        if line.cfg_ack != gen {
            return None;
        }
        st.pending = None;
        if !enable {
            // It no longer serves: what it logged before is applied
            // (tags only: its tail went back to 0), then the table is
            // the driver's alone. Not if it never took the last enabling
            // config: the tags in the log are then an older epoch's,
            // already applied.
            if st.started {
                self.drain_tagged(st, area, who);
            }
            st.lent = false;
            pr_info!("{}: KVS offload disabled\n", who);
            return Some(Ok(()));
        }
        if line.cfg_status != 0 {
            // A refused config is dropped whole: the device reads no
            // table.
            st.lent = false;
            pr_info_ratelimited!(
                "{}: the device refused the KVS config (code {})\n",
                who,
                line.cfg_status
            );
            return Some(Err(EINVAL));
        }
        st.serving = true;
        st.started = true;
        pr_info!(
            "{}: KVS offload serving on UDP port {}\n",
            who,
            st.settings.udp_port
        );
        Some(Ok(()))
    }
}
