// SPDX-License-Identifier: GPL-2.0

//! Rate measurement (the core's `meter.rs` says what bytes each meter
//! counts): a channel's meter from its spec, the perf counters of the
//! threads on perf-metered channels, and the counts threads report.
//!
//! Perf counters are created and read in process context only (both may
//! sleep), so neither ATTACH nor the fork probe makes them: each control
//! period, under the fabric lock, [`PerfCounters::collect`] reads every
//! counter into its thread's `counted`, drops those whose thread left its
//! channel (or whose channel changed its event), and creates one for each
//! thread that has none. A thread is counted from the period after it
//! joins. Creating the event once at CREATE/SET on the caller itself is
//! what tells user space whether this machine has it.

#![deny(clippy::arithmetic_side_effects)]

use crate::control::meter::Meter;
use crate::pr_info_ratelimited;
use crate::support::cred;
use crate::support::kvec::VecExt;
use crate::support::perf::{Counter, Event};
use crate::support::uapi::mchannel as abi;
use crate::threads::Threads;
use kernel::prelude::*;
use kernel::task::Task;
use kernel::types::ARef;

/// A channel's meter as configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct ChannelMeter {
    pub(crate) meter: Meter,
    /// The perf meter's event.
    pub(crate) event: Option<Event>,
}

impl ChannelMeter {
    /// Its `abi::METER_*`.
    pub(crate) fn kind(&self) -> u32 {
        match self.meter {
            Meter::None => abi::METER_NONE,
            Meter::Emulated { .. } => abi::METER_EMULATED,
            Meter::Perf { .. } => abi::METER_PERF,
            Meter::Reported => abi::METER_REPORTED,
        }
    }
}

fn check_perf_type(type_: u32) -> Result {
    match type_ {
        abi::PERF_TYPE_HARDWARE
        | abi::PERF_TYPE_SOFTWARE
        | abi::PERF_TYPE_HW_CACHE
        | abi::PERF_TYPE_RAW => Ok(()),
        _ => refuse!(EINVAL, "mchannel: perf type {} is not accepted\n", type_),
    }
}

/// The meter `spec` asks for, checked; a perf event is tried once on the
/// caller. Process context.
pub(crate) fn meter_of(spec: &abi::ChannelSpec) -> Result<ChannelMeter> {
    let perf_set = spec.perf_type != 0 || spec.perf_config != 0;
    if spec.meter != abi::METER_PERF && perf_set {
        refuse!(
            EINVAL,
            "mchannel: perf event given to a meter that is not perf\n"
        );
    }
    let scale = spec.meter_scale;
    let meter = match spec.meter {
        abi::METER_NONE | abi::METER_REPORTED if scale != 0 => {
            refuse!(EINVAL, "mchannel: meter {} takes no scale\n", spec.meter)
        }
        abi::METER_NONE => Meter::None,
        abi::METER_REPORTED => Meter::Reported,
        abi::METER_EMULATED if !(1..=abi::METER_SCALE_MAX).contains(&scale) => refuse!(
            EINVAL,
            "mchannel: emulated meter of {} B/us is outside 1..={}\n",
            scale,
            abi::METER_SCALE_MAX
        ),
        abi::METER_EMULATED => Meter::Emulated {
            bytes_per_us: scale,
        },
        abi::METER_PERF if !(1..=abi::PERF_BYTES_MAX).contains(&scale) => refuse!(
            EINVAL,
            "mchannel: {} bytes per perf event is outside 1..={}\n",
            scale,
            abi::PERF_BYTES_MAX
        ),
        abi::METER_PERF => Meter::Perf {
            bytes_per_event: scale,
        },
        other => refuse!(EINVAL, "mchannel: unknown meter {}\n", other),
    };
    let event = if spec.meter == abi::METER_PERF {
        // Its counts show in world-readable sysfs, for whatever threads
        // get attached: perf's own rule for counting others' events.
        if !cred::capable_perfmon() {
            refuse!(
                EPERM,
                "mchannel: a perf meter needs CAP_PERFMON (or CAP_SYS_ADMIN)\n"
            );
        }
        check_perf_type(spec.perf_type)?;
        let event = Event {
            type_: spec.perf_type,
            config: spec.perf_config,
        };
        if let Err(e) = Counter::new(kernel::current!(), event) {
            refuse!(
                e,
                "mchannel: perf event type {} config {:#x} is not available here: error {} \
                 (no PMU for it? under TCG use the emulated meter)\n",
                event.type_,
                event.config,
                e.to_errno()
            );
        }
        Some(event)
    } else {
        None
    };
    Ok(ChannelMeter { meter, event })
}

/// One thread's counter.
struct Metered {
    task: ARef<Task>,
    channel: u32,
    event: Event,
    counter: Counter,
    /// Its value at the last read.
    last: u64,
}

/// The counters of the threads on perf-metered channels.
#[derive(Default)]
pub(crate) struct PerfCounters {
    list: KVec<Metered>,
    /// Counters that could not be created (logged, retried next period).
    pub(crate) misses: u64,
}

impl PerfCounters {
    /// Once per control period, before the threads' counts are gathered:
    /// adds what each counter counted since the last period to its
    /// thread's `counted`, drops the counters of threads that left, and
    /// creates the missing ones (if `any_event`: some channel's meter is
    /// perf). `event_of` gives channel `id`'s perf event, if its meter is
    /// perf. Process context.
    pub(crate) fn collect<I>(
        &mut self,
        threads: &Threads<I>,
        event_of: impl Fn(u32) -> Option<Event>,
        any_event: bool,
    ) {
        self.read_all(threads, &event_of);
        if any_event {
            if let Err(e) = self.create_missing(threads, &event_of) {
                pr_info_ratelimited!(
                    "mchannel: perf counters not created: error {}\n",
                    e.to_errno()
                );
            }
        }
    }

    fn read_all<I>(&mut self, threads: &Threads<I>, event_of: &impl Fn(u32) -> Option<Event>) {
        let mut i = 0;
        while let Some(m) = self.list.get_mut(i) {
            let wanted = event_of(m.channel) == Some(m.event);
            let still = wanted && threads.with(&m.task, |a| a.channel() == m.channel) == Some(true);
            if !still {
                // Its thread left, or its channel changed meter: if it is
                // still on the channel, a counter for the new event is
                // made below.
                threads.with(&m.task, |a| {
                    if a.channel() == m.channel {
                        a.set_counter(false);
                    }
                });
                drop(self.list.swap_remove(i));
                continue;
            }
            let now = m.counter.read();
            let delta = now.saturating_sub(m.last);
            m.last = now;
            threads.with(&m.task, |a| {
                a.count(delta);
                a.set_counter(true);
            });
            i = i.saturating_add(1);
        }
    }

    fn create_missing<I>(
        &mut self,
        threads: &Threads<I>,
        event_of: &impl Fn(u32) -> Option<Event>,
    ) -> Result {
        // Room for every thread now attached, allocated before any lock;
        // one attached meanwhile waits for the next period.
        let room = threads.live().saturating_add(16);
        let mut missing = KVec::with_capacity(room, GFP_KERNEL)?;
        threads.for_each(|a| {
            if !a.has_counter() && missing.len() < room {
                if let Some(event) = event_of(a.channel()) {
                    let _ = missing.push((a.task().clone(), a.channel(), event), GFP_NOWAIT);
                }
            }
        });
        self.list.reserve(missing.len(), GFP_KERNEL)?;
        for (task, channel, event) in missing.into_iter() {
            let counter = match Counter::new(&task, event) {
                Ok(c) => c,
                Err(e) => {
                    self.misses = self.misses.saturating_add(1);
                    pr_info_ratelimited!(
                        "mchannel: no perf counter for a thread of channel {}: error {}\n",
                        channel,
                        e.to_errno()
                    );
                    continue;
                }
            };
            // It may have left meanwhile; then the counter goes with it.
            let kept = threads.with(&task, |a| {
                let same = a.channel() == channel;
                if same {
                    a.set_counter(true);
                }
                same
            });
            if kept == Some(true) {
                let m = Metered {
                    task,
                    channel,
                    event,
                    counter,
                    last: 0,
                };
                self.list.push(m, GFP_KERNEL)?;
            }
        }
        Ok(())
    }
}
