// SPDX-License-Identifier: GPL-2.0

//! Staggered run windows on one host (`window::stagger_phase`): the
//! channels whose threads share a bottleneck component start their
//! windows evenly spaced over T_W, and a channel's threads stepped from
//! its start so that every slot of T_W / channels holds each rank at its
//! golden-ratio place in the slot, each thread's run starting an eighth
//! of its length before its place (`RunWindow::run_phase`), as the
//! simulator (`tools/cxlsim`) does.
//!
//! A channel's bottleneck is the component of least configured capacity
//! on its path (`window::bottleneck`); it counts while it has attached
//! threads. Places are recomputed only when that changes (a channel gains
//! its first thread or loses its last, or goes), not every period. A
//! thread's rank in its channel is handed out by the control loop in the
//! first period it is attached (the fork probe cannot reach the fabric),
//! from a counter per channel, and kept: places move only when channels
//! join or leave (a thread's lead moves its windows by a little with
//! each new budget). Other hosts' windows are not coordinated
//! (`Documentation/cxlfabric/mchannel.rst`).

#![deny(clippy::arithmetic_side_effects)]

use crate::attached::Attached;
use crate::control::window::{bottleneck, place, stagger_phase, Budget};
use crate::fabric::{Channel, ComponentEntry};
use kernel::prelude::*;

/// Each channel's place among those sharing its bottleneck, and what it
/// was computed from.
pub(crate) struct Places {
    /// Per channel id: its bottleneck while it had threads, at the last
    /// computation.
    keys: KVec<Option<u32>>,
}

impl Places {
    pub(crate) fn new() -> Places {
        Places { keys: KVec::new() }
    }

    /// Recomputes every channel's place if a channel joined or left a
    /// bottleneck since the last call (after the control loop counted the
    /// channels' threads).
    pub(crate) fn update(
        &mut self,
        channels: &mut KVec<Option<Channel>>,
        components: &KVec<ComponentEntry>,
    ) -> Result {
        let mut keys = KVec::with_capacity(channels.len(), GFP_KERNEL)?;
        for ch in channels.iter() {
            keys.push(
                ch.as_ref().and_then(|c| c.stagger_key(components)),
                GFP_KERNEL,
            )?;
        }
        if keys.iter().eq(self.keys.iter()) {
            return Ok(());
        }
        for (i, ch) in channels.iter_mut().enumerate() {
            if let Some(ch) = ch {
                ch.place = place(&keys, i);
            }
        }
        self.keys = keys;
        Ok(())
    }
}

impl Channel {
    /// The component its threads' windows are staggered on while it has
    /// any (a group has none), else `None`.
    fn stagger_key(&self, components: &KVec<ComponentEntry>) -> Option<u32> {
        if self.threads == 0 || self.is_group() {
            return None;
        }
        let capacity = |&c: &u32| {
            components
                .get(c as usize)
                .map_or(u64::MAX, |c| c.core.params().max_capacity)
        };
        let at = bottleneck(self.path.iter().map(capacity))?;
        self.path.get(at).copied()
    }

    /// Moves `a`'s windows (one of its threads) onto their phase: its
    /// place's, and its rank's, which it gets now if it has none, led by
    /// an eighth of its run under `budget` (`RunWindow::run_phase`: the
    /// windows move a little with each new budget).
    pub(crate) fn stagger<I>(&mut self, a: &mut Attached<I>, budget: Budget) {
        let rank = a.rank_or(|| {
            let rank = self.next_rank;
            self.next_rank = rank.saturating_add(1);
            rank
        });
        let (at, n) = self.place;
        let phase = self.window.run_phase(stagger_phase(at, n, rank), n, budget);
        a.run().set_phase(phase);
    }
}
