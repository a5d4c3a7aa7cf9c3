// SPDX-License-Identifier: GPL-2.0

//! One pool bound to `beluga_dax`: its memory, its protocol engine, the
//! objects this host holds, and the periodic tick that keeps the lease.
//!
//! One file per concern; each uses only the files listed before it:
//! - `state.rs`: the device, its memory, and the state under `inner`;
//! - `stats.rs`: snapshots and counters (`GET_INFO`, `LIST`, sysfs);
//! - `attach.rs`: binding, judging the superblock, starting the engine;
//! - `calls.rs`: the call protocol, and `Calls`, the proof that this
//!   device's `calls` is held;
//! - `holdings.rs`: the objects this host holds (alloc, open, free,
//!   release, revocation);
//! - `reap.rs`: letting go of holdings nobody uses, reconciling after an
//!   abandoned call;
//! - `tick.rs`: the periodic step, its reactions, polling between steps;
//! - `admin.rs`: format and forced reclaim;
//! - `unbind.rs`: shutdown, and the drain of pinned pages.
//!
//! Lock order (outer first): `calls` -> `inner` -> a holding's `hooks` -> a
//! kernel user's revoke callback (`RevokeHook`; the user's code runs in it)
//! -> a holding's `revoked`.
//! - `calls` serialises everything that talks to the manager (one request
//!   in flight per host) together with the local bookkeeping of its
//!   answer, so no other call can run between an action and its record
//!   (an ALLOC and the holding it creates, a release and the holding it
//!   forgets). It is held across the wait for the answer. It is taken
//!   only by `PoolDevice::lock_calls`, whose `Calls` is the proof that
//!   every step needing it asks for.
//! - `inner` guards the engine and the holdings. It is held for short
//!   steps that may sleep briefly (a mutex: the pool is read and written
//!   through it, and the manager clears sections under it), never across
//!   a user copy or the wait for an answer. The mmap lock is never taken
//!   under it; `mmap` and faults take neither `calls` nor `inner`.
//! - The tick takes `inner` only; the reaper takes `calls`, then `inner`.

mod admin;
mod attach;
mod calls;
mod holdings;
mod reap;
mod state;
mod stats;
mod tick;
mod unbind;

pub(crate) use reap::Reaper;
pub(crate) use state::{Config, PoolDevice, Status};
pub(crate) use stats::Info;
