// SPDX-License-Identifier: GPL-2.0

//! Calls to the pool manager through this host's mailbox, and [`Calls`],
//! the proof that this device's `calls` lock is held.
//!
//! Lock order: see `mod.rs`. [`PoolDevice::lock_calls`] takes `calls`;
//! a call takes `inner` under it, for each submit and poll, and never
//! holds `inner` across a sleep. `wait_ready` takes `inner` alone.

use super::state::{errno, PoolDevice, Status};
use crate::pool::engine::{self, Call, Handle};
use crate::support::error::etimedout;
use crate::support::time;
use kernel::prelude::*;
use kernel::sync::lock::{mutex::MutexBackend, Guard};

/// A caller polls its reply every `REPLY_POLL_US` at first, then every
/// `REPLY_POLL_SLOW_US` once the call took longer than `REPLY_FAST_NS`.
const REPLY_POLL_US: u32 = 10;
const REPLY_POLL_SLOW_US: u32 = 100;
const REPLY_FAST_NS: u64 = 2_000_000;

/// Proof that a device's `calls` lock is held, tied to that device.
///
/// As with `kernel::sync::LockedBy`, the proof names its lock: a `Calls`
/// is made only by [`PoolDevice::lock_calls`], which locks the device's
/// own `calls` mutex and keeps the device next to the guard. Everything
/// that must run under `calls` is a method of `Calls` and acts on that
/// device, so a proof from another device's lock can only act on the
/// other device: no step takes a device and a proof separately.
pub(super) struct Calls<'a> {
    dev: &'a PoolDevice,
    _guard: Guard<'a, (), MutexBackend>,
}

impl PoolDevice {
    /// Locks this device's `calls` (waiting for a call in progress).
    pub(super) fn lock_calls(&self) -> Calls<'_> {
        Calls {
            dev: self,
            _guard: self.calls.lock(),
        }
    }

    /// Waits until the manager has acknowledged this host.
    pub(crate) fn wait_ready(&self) -> Result {
        let timeout_ns = engine::expiry_ns(self.config.lease_ms) * 4;
        let start = time::boottime_ns();
        loop {
            {
                let inner = self.inner.lock();
                match (&inner.engine, inner.status) {
                    (Some(e), _) if e.is_ready() => return Ok(()),
                    (_, Status::Gone) => return Err(ENODEV),
                    (None, _) => return Err(ENXIO),
                    _ => {}
                }
            }
            if time::boottime_ns().saturating_sub(start) > timeout_ns {
                return Err(etimedout());
            }
            time::sleep_ms_interruptible(5)?;
        }
    }
}

impl<'a> Calls<'a> {
    /// The device whose `calls` this proves held.
    pub(super) fn dev(&self) -> &'a PoolDevice {
        self.dev
    }

    /// Runs `call` through the manager and waits for its answer. The
    /// caller keeps `calls` across this and the bookkeeping of the answer.
    /// An abandoned call (timeout, signal) may be served later: the
    /// reaper then reconciles.
    pub(super) fn call(&self, call: Call, admin: bool) -> Result<Handle> {
        let is_alloc = matches!(call, Call::Alloc { .. });
        let start = time::boottime_ns();
        let seq = self.submit(call, admin, start)?;
        loop {
            if let Some(answer) = self.poll(seq, start, is_alloc) {
                return answer;
            }
            let waited = time::boottime_ns().saturating_sub(start);
            let pause = if waited < REPLY_FAST_NS {
                REPLY_POLL_US
            } else {
                REPLY_POLL_SLOW_US
            };
            if let Err(e) = time::sleep_us_interruptible(pause) {
                self.abandon(seq, is_alloc);
                return Err(e);
            }
        }
    }

    /// Writes the request; its seq.
    fn submit(&self, call: Call, admin: bool, start: u64) -> Result<u64> {
        let dev = self.dev;
        let mut inner = dev.inner.lock();
        let inner = &mut *inner;
        let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
            return Err(dev.not_attached(inner.status));
        };
        engine.submit(mem, call, admin, start).map_err(errno)
    }

    /// Reads the reply to `seq`: the answer, a timeout (the call is then
    /// abandoned), or `None` while the manager has not answered.
    fn poll(&self, seq: u64, start: u64, is_alloc: bool) -> Option<Result<Handle>> {
        let dev = self.dev;
        let mut inner = dev.inner.lock();
        let inner = &mut *inner;
        let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
            return Some(Err(ENODEV));
        };
        if let Some(answer) = engine.poll(mem, seq) {
            return Some(answer.map_err(errno));
        }
        let timeout_ns = engine::expiry_ns(dev.config.lease_ms) * 4;
        if time::boottime_ns().saturating_sub(start) > timeout_ns {
            engine.abandon(seq);
            inner.reconcile = Some(is_alloc.then_some(seq));
            pr_warn!("{}: no answer from the pool manager\n", dev.name());
            return Some(Err(etimedout()));
        }
        None
    }

    /// Gives up waiting for `seq` (a signal): the reaper reconciles.
    fn abandon(&self, seq: u64, is_alloc: bool) {
        let mut inner = self.dev.inner.lock();
        if let Some(engine) = inner.engine.as_mut() {
            engine.abandon(seq);
            inner.reconcile = Some(is_alloc.then_some(seq));
        }
    }
}
