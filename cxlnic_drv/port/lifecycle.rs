// SPDX-License-Identifier: GPL-2.0

//! Starting and stopping the queue pairs: `start` places them, requests
//! their interrupts, configures the device and only then lets transmits
//! and polls in; `finish` shuts transmits and polls out before it takes
//! the rings back from the device.
//!
//! Locks: `up` (by `restart` and `configured`; `start` and `finish` run
//! under it or with the `Up` taken out of it), then `settings` (a copy,
//! in `start`), `lanes` and the `txq` slots (IRQ-off leaves), and `held`
//! through `release`, each alone.

use super::settings::{mode_name, Settings};
use super::state::{Lane, Port, Up};
use crate::config::{self, Answer};
use crate::queue::{Queue, Shape};
use crate::recovery::Lent;
use crate::ring::device::{DriverConfig, FLAG_TX_INLINE, QUEUES_MAX, VECTOR_QUEUE0};
use crate::ring::plan::Bump;
use crate::support::irq;
use crate::support::napi::Napi;
use crate::support::netdev::Netdev;
use crate::ticker::Ticker;
use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

/// How [`Port::finish`] gets the rings back.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Finish {
    /// Configure the device off, and free them once it answered.
    Tell,
    /// The device refused the config naming them: it took none.
    Refused,
}

/// The config naming `s`'s rings (their places filled in by `add_lanes`).
fn driver_config(s: &Settings, shape: &Shape) -> DriverConfig {
    DriverConfig {
        mode: s.mode,
        queues: s.queues,
        tx_size: s.tx.get(),
        rx_size: s.rx.get(),
        batch: s.batch,
        flags: if shape.inline { FLAG_TX_INLINE } else { 0 },
        ..DriverConfig::default()
    }
}

impl Port {
    /// Places and starts the queues, and configures the device. Every
    /// fallible step comes before the device is told where the rings
    /// are: an error frees what `up` holds, which no one else has seen.
    pub(super) fn start(&self, dev: &Netdev<'_>) -> Result<Up> {
        let s = *self.settings.lock();
        let shape = s.shape()?;
        let mut up = Up {
            lanes: KVec::new(),
            lent: KVec::new(),
            named: 0,
            configured: false,
        };
        let mut cfg = driver_config(&s, &shape);
        self.add_lanes(dev, &s, shape, &mut up, &mut cfg)?;
        let mut table = KVec::with_capacity(up.lanes.len(), GFP_KERNEL)?;
        for lane in up.lanes.iter() {
            table.push(lane.napi.data().into(), GFP_KERNEL)?;
        }
        let sent = config::exchange(&self.io, &cfg)?;
        // From here the device may use the rings.
        up.named = sent.gen;
        if !Self::answered(dev, &mut up, sent.answer, s.mode) {
            // It took nothing: the memory is ours again.
            self.finish(dev, up, Finish::Refused);
            return Err(EINVAL);
        }
        self.publish(dev, &up, table);
        Ok(up)
    }

    /// Places `s.queues` queue pairs into `up` (their memory, NAPI
    /// contexts, interrupts and timers; none enabled yet) and names them
    /// in `cfg`.
    fn add_lanes(
        &self,
        dev: &Netdev<'_>,
        s: &Settings,
        shape: Shape,
        up: &mut Up,
        cfg: &mut DriverConfig,
    ) -> Result {
        // Nothing from the KVS area on (the device's own).
        let mut bump = Bump::new(self.io.placement_end());
        for q in 0..s.queues {
            let index = u16::try_from(q)?;
            let queue = Queue::new(index, self.io.clone(), shape, &mut bump, &mut up.lent)?;
            let slot = cfg.queue.get_mut(q as usize).ok_or(EINVAL)?;
            *slot = queue.config();
            let lane = self.lane(dev, queue, index, s.rx_usecs)?;
            up.lanes.push(lane, GFP_KERNEL)?;
        }
        Ok(())
    }

    /// Queue pair `index`'s NAPI context, its interrupt, and its timer if
    /// it polls every `rx_usecs` (0: it does not).
    fn lane(&self, dev: &Netdev<'_>, queue: Arc<Queue>, index: u16, rx_usecs: u32) -> Result<Lane> {
        let napi = Arc::new(Napi::add(dev, queue, index)?, GFP_KERNEL)?;
        let number = self.io.irq(VECTOR_QUEUE0 + u32::from(index))?;
        napi.set_irq(number);
        let irq = irq::Registration::request(number, c_str!("cxlnic_drv-queue"), napi.clone())?;
        // Until enabled, the context ignores the timer.
        let ticker = match rx_usecs {
            0 => None,
            us => Some(Ticker::start(napi.clone(), us)?),
        };
        Ok(Lane {
            ticker,
            _irq: irq,
            napi,
        })
    }

    /// Takes the device's answer to the config naming `up` (in `mode`);
    /// false if it refused it.
    fn answered(dev: &Netdev<'_>, up: &mut Up, answer: Answer, mode: u32) -> bool {
        match answer {
            Answer::Taken => up.configured = true,
            Answer::Refused(code) => {
                pr_info!(
                    "{}: the device refused the {} config (code {})\n",
                    dev.name(),
                    mode_name(mode),
                    code
                );
                return false;
            }
            Answer::Silent => pr_info!(
                "{}: the device did not answer within {} ms; carrier stays off until it does\n",
                dev.name(),
                config::ANSWER_MS
            ),
        }
        true
    }

    /// Lets transmits and polls in: the counters' `table` and the TX
    /// slots name `up`'s queues, then the NAPI contexts run and the TX
    /// queues wake.
    fn publish(&self, dev: &Netdev<'_>, up: &Up, table: KVec<Arc<Queue>>) {
        // INVARIANT: the table and the slots now name exactly
        // `up.lanes`' queues, before any poll can wake a TX queue.
        let empty = core::mem::replace(&mut *self.lanes.lock(), table);
        drop(empty);
        for (slot, lane) in self.txq.iter().zip(up.lanes.iter()) {
            slot.set(Some(lane.napi.data().into()));
        }
        for lane in up.lanes.iter() {
            lane.napi.enable();
            // Frames may have arrived while it was still disabled.
            lane.napi.schedule();
        }
        // Woken, not only started (`tx_all`): a TX queue's qdisc may hold
        // frames from before a restart, and only a wake runs it again
        // (`netif_tx_wake_queue`). Started, it would wait for the next
        // send, which a socket whose send buffer those frames fill never
        // makes. (The polls scheduled above wake only TX queues their
        // own transmits stopped.)
        for q in (0..QUEUES_MAX).filter_map(|q| u16::try_from(q).ok()) {
            dev.txq_wake(q);
        }
    }

    /// Stops the queues and takes the rings back from the device (`how`);
    /// they are freed once it let go of them.
    pub(super) fn finish(&self, dev: &Netdev<'_>, mut up: Up, how: Finish) {
        dev.set_carrier(false);
        // Polls first, so none wakes a TX queue stopped below.
        for lane in up.lanes.iter_mut() {
            drop(lane.ticker.take());
            lane.napi.disable();
        }
        dev.tx_disable();
        self.unpublish();
        let Up {
            lanes, lent, named, ..
        } = up;
        drop(lanes);
        let lent = Lent::new(named, lent);
        match how {
            Finish::Refused => lent.refused(),
            Finish::Tell => self.release(dev, lent),
        }
    }

    /// Empties the TX slots and the counters' table, keeping the queues'
    /// counts in `retired`.
    fn unpublish(&self) {
        // No transmit or poll runs any more, nor starts before `start`
        // wakes the TX queues again (see `txq`): the counters are final,
        // and the table's and slots' references are the last but the
        // NAPI contexts'.
        for slot in self.txq.iter() {
            slot.set(None);
        }
        let table = {
            let mut lanes = self.lanes.lock();
            for q in lanes.iter() {
                self.retire(q);
            }
            core::mem::take(&mut *lanes)
        };
        drop(table);
    }

    /// Tears the queues down and starts them again with the current
    /// settings (the watch, an MTU change). The watch must not run.
    pub(super) fn restart(&self, dev: &Netdev<'_>) -> Result {
        let mut up = self.up.lock();
        if let Some(old) = up.take() {
            self.finish(dev, old, Finish::Tell);
        }
        *up = Some(self.start(dev)?);
        Ok(())
    }

    /// Whether the device took the config naming the running queues.
    pub(super) fn configured(&self) -> bool {
        self.up.lock().as_ref().is_some_and(|u| u.configured)
    }
}
