// SPDX-License-Identifier: GPL-2.0

//! A NIC port's network interface. `open` places the queue pairs (as the
//! mode says), posts the RX buffers, requests each queue's interrupt for
//! its NAPI context and configures the device; `stop` undoes it in
//! reverse after the device has let go of the rings. A watch follows the
//! device's heartbeat and link: carrier on while both are alive, and a
//! device that comes back from a stall is configured afresh.
//!
//! Lock order: `watch`, then `up`, then `lanes` (an IRQ-off spinlock,
//! held only to look a queue up or swap the table). Transmits look their
//! queue up in `lanes`; `up` owns the queues, their interrupts and the
//! memory lent to the device.

use crate::config::{self, Answer};
use crate::io::NicIo;
use crate::queue::{Counters, Queue, Shape};
use crate::ring::device::{
    header, DriverConfig, FLAG_TX_INLINE, HEARTBEAT_TIMEOUT_MS, LINK_UP, MODE_OFF, MODE_PCIE,
    MODE_TYPE1, MODE_TYPE2, QUEUES_MAX, VECTOR_QUEUE0,
};
use crate::ring::index::RingSize;
use crate::ring::layout::{FRAME_MIN, MTU_MAX};
use crate::ring::plan::{Bump, Sizes};
use crate::support::coherent::Coherent;
use crate::support::dma::CoherentAllocation;
use crate::support::irq;
use crate::support::napi::Napi;
use crate::support::netdev::{NetDevice, Netdev, NetdevRef, SkBuff, Stats};
use crate::support::spinlock_irq::RawSpinLockIrq;
use crate::support::time;
use crate::support::workqueue::{Periodic, PeriodicWork};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::c_str;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// The smallest MTU (IPv4's).
pub(crate) const MTU_MIN: u32 = 68;
const _: () = assert!(MTU_MIN > FRAME_MIN);
/// How often the watch looks at the device.
const WATCH_MS: u32 = 50;

/// What an operator chooses (applied at the next `open`, or at once by
/// restarting the queues).
#[derive(Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) mode: u32,
    pub(crate) queues: u32,
    pub(crate) tx: RingSize,
    pub(crate) rx: RingSize,
    pub(crate) batch: u32,
    pub(crate) mtu: u32,
}

impl Settings {
    fn shape(&self) -> Result<Shape> {
        let sizes = Sizes::new(self.tx, self.rx, self.mtu).map_err(|e| {
            pr_info!(
                "rings of {}/{} entries at MTU {}: {:?}\n",
                self.tx.get(),
                self.rx.get(),
                self.mtu,
                e
            );
            EINVAL
        })?;
        Ok(Shape {
            mode: self.mode,
            sizes,
            batch: self.batch,
            inline: self.mode != MODE_PCIE,
            doorbell: self.mode == MODE_PCIE,
        })
    }
}

/// The name of a mode, for the log and ethtool.
pub(crate) fn mode_name(mode: u32) -> &'static str {
    match mode {
        MODE_TYPE1 => "type1",
        MODE_TYPE2 => "type2",
        MODE_PCIE => "pcie",
        _ => "off",
    }
}

/// A running queue pair: its interrupt goes before its NAPI context.
struct Lane {
    _irq: irq::Registration<Napi<Queue>>,
    napi: Arc<Napi<Queue>>,
}

/// The queues while the interface is up.
struct Up {
    lanes: KVec<Lane>,
    /// Host memory the device was told about; freed only once the device
    /// has let go of it (or is known to have reset).
    lent: KVec<Arc<CoherentAllocation>>,
    configured: bool,
}

#[pin_data]
pub(crate) struct Port {
    io: Arc<NicIo>,
    queues_max: u32,
    #[pin]
    settings: Mutex<Settings>,
    #[pin]
    watch: Mutex<Option<Periodic<Watch>>>,
    #[pin]
    up: Mutex<Option<Up>>,
    #[pin]
    lanes: RawSpinLockIrq<KVec<Arc<Queue>>>,
    /// Counters of queues torn down (the interface's keep counting).
    retired: Counters,
}

impl Port {
    pub(crate) fn new(io: Arc<NicIo>, queues_max: u32, settings: Settings) -> Result<Arc<Port>> {
        Arc::pin_init(
            pin_init!(Port {
                io,
                queues_max,
                settings <- new_mutex!(settings, "cxlnic:settings"),
                watch <- new_mutex!(None, "cxlnic:watch"),
                up <- new_mutex!(None, "cxlnic:up"),
                lanes <- crate::new_raw_spinlock_irq!(KVec::new(), "cxlnic:lanes"),
                retired: Counters::default(),
            }),
            GFP_KERNEL,
        )
    }

    /// The MTU range the interface offers.
    pub(crate) const fn mtu_range() -> (u32, u32) {
        (MTU_MIN, MTU_MAX)
    }

    /// Places and starts the queues, and configures the device.
    fn start(&self, dev: &Netdev<'_>) -> Result<Up> {
        let s = *self.settings.lock();
        let shape = s.shape()?;
        let mut bump = Bump::new(self.io.mem.len() as u64);
        let mut up = Up {
            lanes: KVec::new(),
            lent: KVec::new(),
            configured: false,
        };
        let mut cfg = DriverConfig {
            mode: s.mode,
            queues: s.queues,
            tx_size: s.tx.get(),
            rx_size: s.rx.get(),
            batch: s.batch,
            flags: if shape.inline { FLAG_TX_INLINE } else { 0 },
            ..DriverConfig::default()
        };
        // Until the device has the config, an error frees what `up` holds.
        for q in 0..s.queues {
            let index = u16::try_from(q)?;
            let queue = Queue::new(index, self.io.clone(), shape, &mut bump, &mut up.lent)?;
            let slot = cfg.queue.get_mut(q as usize).ok_or(EINVAL)?;
            *slot = queue.config();
            queue.prime()?;
            let napi = Arc::new(Napi::add(dev, queue)?, GFP_KERNEL)?;
            let irq = irq::Registration::request(
                self.io.irq(VECTOR_QUEUE0 + q)?,
                c_str!("cxlnic_drv-queue"),
                napi.clone(),
            )?;
            up.lanes.push(Lane { _irq: irq, napi }, GFP_KERNEL)?;
        }
        let mut table = KVec::with_capacity(up.lanes.len(), GFP_KERNEL)?;
        for lane in up.lanes.iter() {
            table.push(lane.napi.data().into(), GFP_KERNEL)?;
        }
        match config::exchange(&self.io, &cfg)? {
            Answer::Taken => up.configured = true,
            Answer::Refused(code) => {
                pr_info!(
                    "{}: the device refused the {} config (code {})\n",
                    dev.name(),
                    mode_name(s.mode),
                    code
                );
                // It took nothing: the memory is ours again.
                self.finish(dev, up, false);
                return Err(EINVAL);
            }
            Answer::Silent => pr_info!(
                "{}: the device did not answer within {} ms; carrier stays off until it does\n",
                dev.name(),
                config::ANSWER_MS
            ),
        }
        for lane in up.lanes.iter() {
            lane.napi.enable();
        }
        let empty = core::mem::replace(&mut *self.lanes.lock(), table);
        drop(empty);
        dev.tx_all(true);
        Ok(up)
    }

    /// Stops the queues, takes the rings back from the device and frees
    /// them (`tell`: configure the device off first).
    fn finish(&self, dev: &Netdev<'_>, up: Up, tell: bool) {
        dev.set_carrier(false);
        dev.tx_disable();
        // No transmit runs any more: the table's references are the last
        // but the NAPI contexts'.
        let table = core::mem::take(&mut *self.lanes.lock());
        drop(table);
        for lane in up.lanes.iter() {
            lane.napi.disable();
        }
        let released = !tell || self.release_rings(dev);
        for lane in up.lanes.iter() {
            self.retire(&lane.napi.data().counters);
        }
        let Up { lanes, lent, .. } = up;
        drop(lanes);
        if released {
            drop(lent);
        } else {
            let bytes: usize = lent.iter().map(|m| m.len()).sum();
            pr_warn!(
                "{}: the device still holds its rings: keeping {} KiB of them for good\n",
                dev.name(),
                bytes >> 10
            );
            core::mem::forget(lent);
        }
    }

    /// Configures the device off; whether it no longer uses the rings:
    /// it said so, or it is not running (a device that stalls comes back
    /// from reset, without the old config).
    fn release_rings(&self, dev: &Netdev<'_>) -> bool {
        let beat = self.io.heartbeat();
        let off = DriverConfig {
            mode: MODE_OFF,
            ..DriverConfig::default()
        };
        match config::exchange(&self.io, &off) {
            Ok(Answer::Taken) => true,
            _ if self.io.heartbeat() == beat => {
                pr_info!(
                    "{}: the device is not running: its rings are free\n",
                    dev.name()
                );
                true
            }
            _ => false,
        }
    }

    fn retire(&self, c: &Counters) {
        let pairs = [
            (&self.retired.tx_packets, &c.tx_packets),
            (&self.retired.tx_bytes, &c.tx_bytes),
            (&self.retired.tx_dropped, &c.tx_dropped),
            (&self.retired.rx_packets, &c.rx_packets),
            (&self.retired.rx_bytes, &c.rx_bytes),
            (&self.retired.rx_dropped, &c.rx_dropped),
            (&self.retired.rx_faults, &c.rx_faults),
            (&self.retired.tx_faults, &c.tx_faults),
        ];
        for (to, from) in pairs {
            to.fetch_add(from.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Tears the queues down and starts them again with the current
    /// settings (the watch, an MTU change). The watch must not run.
    fn restart(&self, dev: &Netdev<'_>) -> Result {
        let mut up = self.up.lock();
        if let Some(old) = up.take() {
            self.finish(dev, old, true);
        }
        *up = Some(self.start(dev)?);
        Ok(())
    }

    fn configured(&self) -> bool {
        self.up.lock().as_ref().is_some_and(|u| u.configured)
    }

    fn start_watch(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        let w = Watch {
            port: this.clone(),
            dev: dev.hold(),
            beat: AtomicU32::new(this.io.heartbeat()),
            since_ms: AtomicU64::new(now_ms()),
            lost: AtomicBool::new(false),
        };
        *this.watch.lock() = Some(Periodic::start(Arc::new(w, GFP_KERNEL)?, WATCH_MS)?);
        Ok(())
    }

    /// Stops the watch (waiting for a run in progress).
    fn stop_watch(&self) {
        let w = self.watch.lock().take();
        drop(w);
    }

    fn sum(&self, s: &mut Stats) {
        let add = |s: &mut Stats, c: &Counters| {
            let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
            s.tx_packets += get(&c.tx_packets);
            s.tx_bytes += get(&c.tx_bytes);
            s.tx_dropped += get(&c.tx_dropped);
            s.tx_errors += get(&c.tx_faults);
            s.rx_packets += get(&c.rx_packets);
            s.rx_bytes += get(&c.rx_bytes);
            s.rx_dropped += get(&c.rx_dropped);
            s.rx_errors += get(&c.rx_faults);
        };
        add(s, &self.retired);
        for q in self.lanes.lock().iter() {
            add(s, &q.counters);
        }
    }
}

fn now_ms() -> u64 {
    time::boottime_ns() / 1_000_000
}

impl NetDevice for Port {
    fn open(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        dev.set_carrier(false);
        let queues = this.settings.lock().queues;
        dev.set_queues(queues, queues)?;
        let up = this.start(dev)?;
        *this.up.lock() = Some(up);
        if let Err(e) = Self::start_watch(this, dev) {
            if let Some(up) = this.up.lock().take() {
                this.finish(dev, up, true);
            }
            return Err(e);
        }
        Ok(())
    }

    fn stop(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        this.stop_watch();
        let up = this.up.lock().take();
        if let Some(up) = up {
            this.finish(dev, up, true);
        }
        Ok(())
    }

    fn start_xmit(
        this: &Arc<Self>,
        dev: &Netdev<'_>,
        skb: SkBuff,
        queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        let q = this.lanes.lock().get(usize::from(queue)).cloned();
        match q {
            Some(q) => q.xmit(dev, skb),
            None => {
                // Between a restart's teardown and its start.
                this.retired.tx_dropped.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    fn stats(this: &Arc<Self>, stats: &mut Stats) {
        this.sum(stats);
    }

    fn change_mtu(this: &Arc<Self>, dev: &Netdev<'_>, mtu: u32) -> Result {
        let (lo, hi) = Self::mtu_range();
        if !(lo..=hi).contains(&mtu) {
            return Err(EINVAL);
        }
        let old = {
            let mut s = this.settings.lock();
            let new = Settings { mtu, ..*s };
            new.shape()?;
            core::mem::replace(&mut *s, new)
        };
        if this.up.lock().is_none() {
            return Ok(());
        }
        // Buffers are sized for the MTU: start the queues again.
        this.stop_watch();
        let r = this.restart(dev);
        if r.is_err() {
            *this.settings.lock() = old;
            let _ = this.restart(dev);
        }
        let _ = Self::start_watch(this, dev);
        r
    }
}

/// Follows the device: heartbeat, link, and a device back from a stall.
struct Watch {
    port: Arc<Port>,
    dev: NetdevRef,
    beat: AtomicU32,
    since_ms: AtomicU64,
    lost: AtomicBool,
}

impl PeriodicWork for Watch {
    fn run(&self) -> u32 {
        let io = &self.port.io;
        let dev = self.dev.get();
        let beat = io.heartbeat();
        let now = now_ms();
        if beat != self.beat.swap(beat, Ordering::Relaxed) {
            self.since_ms.store(now, Ordering::Relaxed);
            if self.lost.load(Ordering::Relaxed) || !self.port.configured() {
                pr_info!("{}: the device is running: configuring it\n", dev.name());
                let ok = self.port.restart(&dev).is_ok() && self.port.configured();
                self.lost.store(!ok, Ordering::Relaxed);
            }
        } else if !self.lost.load(Ordering::Relaxed)
            && now.saturating_sub(self.since_ms.load(Ordering::Relaxed))
                >= u64::from(HEARTBEAT_TIMEOUT_MS)
        {
            pr_info!(
                "{}: the device's heartbeat stood still for {} ms: carrier off\n",
                dev.name(),
                HEARTBEAT_TIMEOUT_MS
            );
            self.lost.store(true, Ordering::Relaxed);
        }
        let link = !self.lost.load(Ordering::Relaxed)
            && self.port.configured()
            && io.header32(header::LINK) == LINK_UP;
        if link != dev.carrier_ok() {
            dev.set_carrier(link);
        }
        WATCH_MS
    }
}

/// The settings a port starts with: `mode` from the module parameter,
/// two queue pairs (fewer if the device has fewer), 256-entry rings.
pub(crate) fn default_settings(mode: u32, queues_max: u32) -> Settings {
    Settings {
        mode,
        queues: queues_max.clamp(1, 2).min(QUEUES_MAX),
        tx: RING_DEFAULT,
        rx: RING_DEFAULT,
        batch: 8,
        mtu: 1500,
    }
}

const RING_DEFAULT: RingSize = match RingSize::new(256) {
    Some(r) => r,
    None => panic!("256 is a ring size"),
};
