// SPDX-License-Identifier: GPL-2.0

//! What `/dev/cxlnic` asks of a store (put, get, del), the periodic
//! work's look at the device, and the NIC's removal.

#![deny(clippy::arithmetic_side_effects)]

use super::log::command_record;
use super::state::{now_ms, Kvs, RESEND_GAP_MS};
use crate::ring::device::HEARTBEAT_TIMEOUT_MS;
use crate::ring::kvs::{Op, Record, TableError};
use crate::support::pr_info_ratelimited;
use kernel::prelude::*;

/// `ENOSPC` and `EINVAL` for what the table refused.
fn table_error(who: &CStr, e: TableError) -> Error {
    match e {
        TableError::Full => {
            pr_info_ratelimited!("{}: KVS: both buckets of the key are full\n", who);
            ENOSPC
        }
        TableError::NotFound => ENOENT,
        TableError::TooLong | TableError::BadRecord => EINVAL,
    }
}

// What the ioctls do.
impl Kvs {
    /// Writes `key`'s `value`: a new key directly into the host table, a
    /// present one through the device while it serves.
    pub(crate) fn put(&self, who: &CStr, key: &[u8], value: &[u8]) -> Result {
        let area = self.area(who)?;
        let mut st = self.lock(who)?;
        self.ensure_host(&mut st, area, who)?;
        self.drain(&mut st, area, who);
        let found = st
            .host
            .as_ref()
            .and_then(|h| h.table.find(&h.slots(area), key));
        match found {
            Some((slot, _)) if st.serving => {
                let rec = command_record(Op::Put, key, value, slot)?;
                self.command(&mut st, area, who, &rec)
            }
            Some((slot, _)) => {
                let h = st.host.as_ref().ok_or(EINVAL)?;
                h.table
                    .update(&mut h.slots(area), slot, key, value)
                    .map_err(|e| table_error(who, e))
            }
            None => {
                let h = st.host.as_ref().ok_or(EINVAL)?;
                h.table
                    .insert(&mut h.slots(area), key, value)
                    .map(|_| ())
                    .map_err(|e| table_error(who, e))
            }
        }
    }

    /// `key`'s value (its record), after applying the log.
    pub(crate) fn get(&self, who: &CStr, key: &[u8]) -> Result<Record> {
        let area = self.area(who)?;
        let mut st = self.lock(who)?;
        self.drain(&mut st, area, who);
        st.host
            .as_ref()
            .and_then(|h| h.table.find(&h.slots(area), key))
            .map(|(_, r)| r)
            .ok_or(ENOENT)
    }

    /// Deletes `key`: through the device while it serves, else directly.
    pub(crate) fn del(&self, who: &CStr, key: &[u8]) -> Result {
        let area = self.area(who)?;
        let mut st = self.lock(who)?;
        self.drain(&mut st, area, who);
        let found = st
            .host
            .as_ref()
            .and_then(|h| h.table.find(&h.slots(area), key));
        let Some((slot, _)) = found else {
            return Err(ENOENT);
        };
        if st.serving {
            let rec = command_record(Op::Del, key, &[], slot)?;
            return self.command(&mut st, area, who, &rec);
        }
        let h = st.host.as_ref().ok_or(EINVAL)?;
        h.table
            .remove(&mut h.slots(area), slot, key)
            .map_err(|e| table_error(who, e))
    }
}

// The periodic drain and the NIC's removal.
impl Kvs {
    /// Every few tens of milliseconds: takes a late answer, follows the
    /// heartbeat (a device back from a stall is configured again if the
    /// offload is enabled; the log entries it had not handed over are
    /// lost with its reset), and applies the log.
    pub(crate) fn tick(&self, who: &CStr) {
        let Some(area) = &self.area else {
            return;
        };
        let mut st = self.state.lock();
        if st.gone {
            return;
        }
        let now = now_ms();
        let _ = self.answer(&mut st, area, who);
        let beat = area.heartbeat();
        if beat != st.beat {
            st.beat = beat;
            st.beat_since_ms = now;
            if st.lost {
                st.lost = false;
                st.resend = true;
            }
        } else if now.saturating_sub(st.beat_since_ms) >= u64::from(HEARTBEAT_TIMEOUT_MS) {
            st.lost = true;
        }
        self.drain(&mut st, area, who);
        if st.resend && now.saturating_sub(st.resent_ms) >= RESEND_GAP_MS {
            st.resend = false;
            st.resent_ms = now;
            if st.enabled && st.host.is_some() {
                pr_info_ratelimited!(
                    "{}: the device restarted: sending the KVS config again\n",
                    who
                );
                let _ = self.configure(&mut st, area, who, true);
            }
        }
    }

    /// The NIC goes: the device is told to stop and the table freed if it
    /// answers; otherwise the table is kept for good (it may still read
    /// it). Every later operation gets `ENODEV`.
    pub(crate) fn shutdown(&self, who: &CStr) {
        let mut st = self.state.lock();
        st.gone = true;
        self.set_enabled(&mut st, false);
        if let Some(area) = &self.area {
            if st.lent || st.pending.is_some() {
                let _ = self.answer(&mut st, area, who);
                self.drain(&mut st, area, who);
                let _ = self.configure(&mut st, area, who, false);
            }
        }
        let Some(host) = st.host.take() else {
            return;
        };
        if st.lent {
            pr_warn!(
                "{}: the device has not let go of the KVS host table: {} KiB kept for good\n",
                who,
                host.bytes() >> 10
            );
            core::mem::forget(host);
        }
    }
}
