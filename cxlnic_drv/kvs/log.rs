// SPDX-License-Identifier: GPL-2.0

//! The log the device fills and the commands the driver posts: applying
//! the log to the host table (checked, entry by entry), and a command's
//! round trip (room, post, wait while applying the log).

#![deny(clippy::arithmetic_side_effects)]

use super::area::Area;
use super::state::{bump, Kvs, State, WAIT_MS};
use crate::ring::index::{distance, within};
use crate::ring::kvs::{DeviceLine, DriverLine, Op, Record, CMD_ENTRIES, LOG_ENTRIES};
use crate::support::error::etimedout;
use crate::support::pr_info_ratelimited;
use crate::support::time;
use kernel::prelude::*;

/// The command `op` on `key` (`value`) in host slot `slot`.
pub(super) fn command_record(op: Op, key: &[u8], value: &[u8], slot: u32) -> Result<Record> {
    let mut rec = Record::pair(key, value).ok_or(EINVAL)?;
    rec.op = op.to_u8();
    rec.slot = slot;
    Ok(rec)
}

// The log and the commands.
impl Kvs {
    /// Applies the device's log from `log_head` up to its tail (checked:
    /// no further than the ring holds), while it serves.
    pub(super) fn drain(&self, st: &mut State, area: &Area, who: &CStr) {
        if !st.serving {
            return;
        }
        let Ok(line) = area.device_line() else {
            return;
        };
        let limit = st.log_head.wrapping_add(LOG_ENTRIES);
        if !within(st.log_head, line.log_tail, limit) {
            bump(&self.counters.bad_records);
            pr_info_ratelimited!(
                "{}: KVS log tail {} outside {}..={}: the device lost its place; configuring it again\n",
                who,
                line.log_tail,
                st.log_head,
                limit
            );
            st.resend = true;
            return;
        }
        self.apply_log(st, area, line.log_tail);
    }

    /// Applies every entry whose tag is there, at most a ring's worth
    /// (the device's tail is no bound once it stopped serving).
    pub(super) fn drain_tagged(&self, st: &mut State, area: &Area, _who: &CStr) {
        let limit = st.log_head.wrapping_add(LOG_ENTRIES);
        self.apply_log(st, area, limit);
    }

    /// Applies entries from `log_head` up to `end` (or the first one not
    /// written yet), then tells the device how far it got.
    fn apply_log(&self, st: &mut State, area: &Area, end: u32) {
        let Some(host) = st.host.as_ref() else {
            return;
        };
        let table = host.table;
        let mut slots = host.slots(area);
        let start = st.log_head;
        let mut head = start;
        while head != end {
            let Ok(Some(rec)) = area.log_entry(head) else {
                break;
            };
            match table.apply(&mut slots, &rec) {
                Ok(_) => bump(&self.counters.log_applied),
                Err(_) => bump(&self.counters.bad_records),
            }
            head = head.wrapping_add(1);
        }
        if head != start {
            st.log_head = head;
            let _ = area.set_driver_line(&DriverLine {
                cmd_tail: st.cmd_tail,
                log_head: head,
                moves: host.moves(),
            });
        }
    }

    /// Posts `rec` (`command_record`) as a command and waits until the
    /// device carried it out (applying its log meanwhile, which makes
    /// room for the command's own entry), then applies the log.
    pub(super) fn command(&self, st: &mut State, area: &Area, who: &CStr, rec: &Record) -> Result {
        // Room: commands that timed out earlier may still be posted.
        let room = |st: &State, l: &DeviceLine| distance(l.cmd_head, st.cmd_tail) < CMD_ENTRIES;
        if !self.wait(st, area, who, room)? {
            return self.timed_out(who, "found no room for a command");
        }
        let index = st.cmd_tail;
        area.post_command(index, rec)?;
        st.cmd_tail = index.wrapping_add(1);
        area.set_driver_line(&DriverLine {
            cmd_tail: st.cmd_tail,
            log_head: st.log_head,
            moves: st.host.as_ref().map_or(0, |h| h.moves()),
        })?;
        let next = index.wrapping_add(1);
        let taken = |st: &State, l: &DeviceLine| within(next, l.cmd_head, st.cmd_tail);
        if !self.wait(st, area, who, taken)? {
            // It stays posted: the device may take it later, and the log
            // then carries it.
            return self.timed_out(who, "did not take a command");
        }
        self.drain(st, area, who);
        Ok(())
    }

    fn timed_out(&self, who: &CStr, what: &str) -> Result {
        bump(&self.counters.timed_out);
        pr_info_ratelimited!("{}: KVS: the device {} within {} ms\n", who, what, WAIT_MS);
        Err(etimedout())
    }

    /// Waits up to [`WAIT_MS`] (sleeping, applying the log) until `done`;
    /// whether it came. `ENODEV` if the device stopped serving meanwhile
    /// (its log went back: a reset).
    fn wait(
        &self,
        st: &mut State,
        area: &Area,
        who: &CStr,
        done: impl Fn(&State, &DeviceLine) -> bool,
    ) -> Result<bool> {
        for _ in 0..WAIT_MS {
            self.drain(st, area, who);
            if st.resend {
                return Ok(false);
            }
            if done(st, &area.device_line()?) {
                return Ok(true);
            }
            time::sleep_ms(1);
        }
        Ok(false)
    }
}
