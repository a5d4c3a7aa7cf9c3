// SPDX-License-Identifier: GPL-2.0

//! A NIC port's network interface. `open` places the queue pairs (as the
//! mode says), posts the RX buffers, requests each queue's interrupt for
//! its NAPI context and configures the device; `stop` undoes it in
//! reverse and frees the rings once the device has let go of them
//! (`recovery.rs`). A watch follows the device's heartbeat and link:
//! carrier on while both are alive, a device that comes back from a stall
//! is configured afresh, and queue pairs that stalled while it runs are
//! restarted.
//!
//! Lock order: `watch`, then `up`, then a queue's `health`, `held`,
//! `lanes` and a TX queue's slot `txq[q]` (the last two IRQ-off
//! spinlocks, leaves: nothing is taken under them, and nothing that
//! can free memory is dropped under them). `up` owns the queues, their
//! interrupts and the memory lent to the device, `held` the memory the
//! device has not let go of yet, `lanes` the running queues for the
//! counters.
//!
//! A transmit takes no lock of the port's but its TX queue's slot
//! `txq[q]`, only to take a reference on the queue (and the stack holds
//! that TX queue's xmit lock around it, so no other transmit contends
//! for it); then the queue's own `tx` lock (`queue.rs`). Nothing is
//! shared between the TX queues on that path.

use crate::config::{self, Answer};
use crate::io::NicIo;
use crate::queue::{Counters, Queue, Shape};
use crate::recovery::{Lent, Pace, Resets, Why};
use crate::ring::device::mode_bit;
use crate::ring::device::{
    header, DriverConfig, FLAG_TX_INLINE, HEARTBEAT_TIMEOUT_MS, LINK_UP, MODE_OFF, MODE_PCIE,
    MODE_TYPE1, MODE_TYPE2, QUEUES_MAX, VECTOR_QUEUE0,
};
use crate::ring::index::{RingSize, RING_MAX};
use crate::ring::layout::{FRAME_MIN, MTU_MAX};
use crate::ring::plan::{Bump, Sizes};
use crate::stats;
use crate::support::coherent::Coherent;
use crate::support::dma::CoherentAllocation;
use crate::support::hrtimer::ArcHrTimerHandle;
use crate::support::irq;
use crate::support::kvec::VecExt;
use crate::support::napi::Napi;
use crate::support::netdev::{
    ethtool_string, Change, NetDevice, Netdev, NetdevRef, Params, RtnlGuard, SkBuff, Stats,
    StringSet, STRING_LEN,
};
use crate::support::spinlock_irq::RawSpinLockIrq;
use crate::support::time;
use crate::support::workqueue::{Periodic, PeriodicWork};
use crate::ticker::{Ticker, PERIOD_US_MAX, PERIOD_US_MIN};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::c_str;
use kernel::init::pin_init_array_from_fn;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// The smallest MTU (IPv4's).
pub(crate) const MTU_MIN: u32 = 68;
const _: () = assert!(MTU_MIN > FRAME_MIN);
/// How often the watch looks at the device.
const WATCH_MS: u32 = 50;
/// How long the stack's TX watchdog lets a TX queue stay stopped (with
/// carrier): it covers what the watch's own rules cannot see, such as a
/// wake-up that never came for entries the device did take.
pub(crate) const TX_WATCHDOG_MS: u32 = 5000;

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
    /// 0: the device interrupts; else a timer polls every this many us.
    pub(crate) rx_usecs: u32,
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
            interrupts: self.rx_usecs == 0,
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

/// A running queue pair: its polling timer and interrupt go before its
/// NAPI context.
struct Lane {
    ticker: Option<ArcHrTimerHandle<Ticker>>,
    _irq: irq::Registration<Napi<Queue>>,
    napi: Arc<Napi<Queue>>,
}

/// The queues while the interface is up.
///
/// # Invariants
///
/// - `lent` holds every host allocation any lane's rings use, named to
///   the device in config `named`; they are freed only through
///   [`Lent`] (once the device answered a later config).
/// - `configured`: the device took the config naming `lanes` (its ack
///   carried that config's generation).
/// - The port's `lanes` table and `txq` slots hold exactly these lanes'
///   queues (slot `q`: queue `q`, the others empty) from before `start`
///   enables their NAPI contexts until `finish` empties them, after
///   every transmit and poll has ended and before it frees anything.
struct Up {
    lanes: KVec<Lane>,
    /// Host memory the device was told about, in config `named`.
    lent: KVec<Arc<CoherentAllocation>>,
    named: u32,
    configured: bool,
}

/// A TX queue's slot in [`Port::txq`]: the queue pair its transmits go
/// to. A cache line of its own, so that transmits on different TX queues
/// share none.
#[pin_data]
#[repr(align(64))]
struct TxSlot {
    #[pin]
    queue: RawSpinLockIrq<Option<Arc<Queue>>>,
}

impl TxSlot {
    fn new() -> impl PinInit<TxSlot> {
        pin_init!(TxSlot {
            queue <- crate::support::new_raw_spinlock_irq!(None, "cxlnic:txq"),
        })
    }

    /// The queue pair, with a reference for the caller.
    fn get(&self) -> Option<Arc<Queue>> {
        self.queue.lock().clone()
    }

    /// Puts `q` in the slot (`None`: empties it); the one it held goes
    /// after the lock (it may free memory).
    fn set(&self, q: Option<Arc<Queue>>) {
        let old = core::mem::replace(&mut *self.queue.lock(), q);
        drop(old);
    }
}

/// How [`Port::finish`] gets the rings back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Finish {
    /// Configure the device off, and free them once it answered.
    Tell,
    /// The device refused the config naming them: it took none.
    Refused,
}

#[pin_data]
pub(crate) struct Port {
    io: Arc<NicIo>,
    queues_max: u32,
    /// Modes the device has (`mode_bit`).
    modes: u32,
    #[pin]
    settings: Mutex<Settings>,
    #[pin]
    watch: Mutex<Option<Periodic<Watch>>>,
    #[pin]
    up: Mutex<Option<Up>>,
    /// The running queues, for the counters (`ndo_get_stats64`,
    /// `ethtool -S`) and teardown; transmits do not take it.
    #[pin]
    lanes: RawSpinLockIrq<KVec<Arc<Queue>>>,
    /// Slot `q`: the queue pair TX queue `q`'s transmits go to, one lock
    /// each, fixed for the port's life (the stack's queues number at
    /// most the device's, at most [`QUEUES_MAX`]).
    ///
    /// A transmit never meets a queue that is being torn down. Every
    /// teardown (`stop`, the watch's reconfiguration and the restarts of
    /// `recovery.rs`, `ethtool -G`/`-L`, an MTU change) goes through
    /// `finish`, every start through `start`, one at a time under RTNL.
    /// `start` fills the slots before it wakes the TX queues (a poll
    /// wakes only a TX queue its own transmits stopped), and
    /// `finish` empties them only after every NAPI context is disabled
    /// (no poll wakes a TX queue from then on) and `tx_disable` has
    /// stopped every TX queue under its xmit lock, which waits out a
    /// transmit in progress (the stack calls `ndo_start_xmit` only under
    /// that lock, with the queue awake). So from `tx_disable` until
    /// `start` wakes the queues again no transmit runs. A TX queue the
    /// stack takes on before the restart that brings its queue pair
    /// (`ethtool -L` sets the stack's count first) finds its slot empty
    /// and drops, counted. The reference a transmit takes is for memory
    /// safety alone (a queue cannot go while a transmit uses it); the
    /// order above is what keeps frames out of rings the device was told
    /// are gone, and the memory lent to it from outliving `Lent`'s
    /// release.
    #[pin]
    txq: [TxSlot; QUEUES_MAX as usize],
    /// Counters of queues torn down (the interface's keep counting).
    retired: Counters,
    /// Rings the device has not let go of yet: freed by the watch when it
    /// does. While any are held, the watch neither configures the device
    /// again nor restarts its queues (each time would hold more).
    #[pin]
    held: Mutex<KVec<Lent>>,
    /// Restarts of the rings (`ethtool -S`), and their pace.
    pub(crate) resets: Resets,
    pace: Pace,
    /// TX queues the stack's watchdog named (bit `q`), for the watch.
    timed_out: AtomicU32,
}

impl Port {
    pub(crate) fn new(
        io: Arc<NicIo>,
        queues_max: u32,
        modes: u32,
        settings: Settings,
    ) -> Result<Arc<Port>> {
        Arc::pin_init(
            pin_init!(Port {
                io,
                queues_max,
                modes,
                settings <- new_mutex!(settings, "cxlnic:settings"),
                watch <- new_mutex!(None, "cxlnic:watch"),
                up <- new_mutex!(None, "cxlnic:up"),
                lanes <- crate::support::new_raw_spinlock_irq!(KVec::new(), "cxlnic:lanes"),
                txq <- pin_init_array_from_fn(|_| TxSlot::new()),
                retired: Counters::default(),
                held <- new_mutex!(KVec::new(), "cxlnic:held"),
                resets: Resets::default(),
                pace: Pace::new(),
                timed_out: AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// The MTU range the interface offers.
    pub(crate) const fn mtu_range() -> (u32, u32) {
        (MTU_MIN, MTU_MAX)
    }

    /// Places and starts the queues, and configures the device. Every
    /// fallible step comes before the device is told where the rings
    /// are: an error frees what `up` holds, which no one else has seen.
    fn start(&self, dev: &Netdev<'_>) -> Result<Up> {
        let s = *self.settings.lock();
        let shape = s.shape()?;
        let mut bump = Bump::new(self.io.mem.len() as u64);
        let mut up = Up {
            lanes: KVec::new(),
            lent: KVec::new(),
            named: 0,
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
        for q in 0..s.queues {
            let index = u16::try_from(q)?;
            let queue = Queue::new(index, self.io.clone(), shape, &mut bump, &mut up.lent)?;
            let slot = cfg.queue.get_mut(q as usize).ok_or(EINVAL)?;
            *slot = queue.config();
            let napi = Arc::new(Napi::add(dev, queue, index)?, GFP_KERNEL)?;
            let number = self.io.irq(VECTOR_QUEUE0 + q)?;
            napi.set_irq(number);
            let irq = irq::Registration::request(number, c_str!("cxlnic_drv-queue"), napi.clone())?;
            // Until enabled, the context ignores the timer.
            let ticker = match s.rx_usecs {
                0 => None,
                us => Some(Ticker::start(napi.clone(), us)?),
            };
            up.lanes.push(
                Lane {
                    ticker,
                    _irq: irq,
                    napi,
                },
                GFP_KERNEL,
            )?;
        }
        let mut table = KVec::with_capacity(up.lanes.len(), GFP_KERNEL)?;
        for lane in up.lanes.iter() {
            table.push(lane.napi.data().into(), GFP_KERNEL)?;
        }
        let sent = config::exchange(&self.io, &cfg)?;
        // From here the device may use the rings.
        up.named = sent.gen;
        match sent.answer {
            Answer::Taken => up.configured = true,
            Answer::Refused(code) => {
                pr_info!(
                    "{}: the device refused the {} config (code {})\n",
                    dev.name(),
                    mode_name(s.mode),
                    code
                );
                // It took nothing: the memory is ours again.
                self.finish(dev, up, Finish::Refused);
                return Err(EINVAL);
            }
            Answer::Silent => pr_info!(
                "{}: the device did not answer within {} ms; carrier stays off until it does\n",
                dev.name(),
                config::ANSWER_MS
            ),
        }
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
        Ok(up)
    }

    /// Stops the queues and takes the rings back from the device (`how`);
    /// they are freed once it let go of them.
    fn finish(&self, dev: &Netdev<'_>, mut up: Up, how: Finish) {
        dev.set_carrier(false);
        // Polls first, so none wakes a TX queue stopped below.
        for lane in up.lanes.iter_mut() {
            drop(lane.ticker.take());
            lane.napi.disable();
        }
        dev.tx_disable();
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
                self.retire(&q.counters);
            }
            core::mem::take(&mut *lanes)
        };
        drop(table);
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

    /// Configures the device off and frees `lent` if it answered; else
    /// holds it until the device answers this or a later config. A
    /// heartbeat that stands still is no answer: a device that only hung
    /// may resume where it stopped, writing into the rings.
    fn release(&self, dev: &Netdev<'_>, lent: Lent) {
        let beat = self.io.heartbeat();
        let off = DriverConfig {
            mode: MODE_OFF,
            ..DriverConfig::default()
        };
        let sent = config::exchange(&self.io, &off);
        let Err(lent) = lent.release(&self.io) else {
            return;
        };
        let why = match sent {
            Err(_) => "the off config was not written",
            Ok(_) if self.io.heartbeat() == beat => "no answer, no heartbeat",
            Ok(_) => "no answer while running",
        };
        pr_warn!(
            "{}: the device has not let go of its rings ({}): holding {} KiB until it does\n",
            dev.name(),
            why,
            lent.bytes() >> 10
        );
        // Pushed or, without memory, dropped: kept for good either way.
        let _ = self.held.lock().push(lent, GFP_KERNEL);
    }

    /// Frees the held rings the device has let go of since; whether any
    /// are still held.
    fn reap(&self, dev: &Netdev<'_>) -> bool {
        let mut held = self.held.lock();
        let mut freed = 0usize;
        let mut i = held.len();
        while let Some(at) = i.checked_sub(1) {
            i = at;
            let Some(lent) = held.swap_remove(at) else {
                continue;
            };
            match lent.release(&self.io) {
                Ok(bytes) => freed = freed.saturating_add(bytes),
                // Into the room it left: no allocation.
                Err(lent) => {
                    let _ = held.push(lent, GFP_KERNEL);
                }
            }
        }
        if freed > 0 {
            pr_info!(
                "{}: the device let go of its rings: {} KiB freed\n",
                dev.name(),
                freed >> 10
            );
        }
        !held.is_empty()
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
            self.finish(dev, old, Finish::Tell);
        }
        *up = Some(self.start(dev)?);
        Ok(())
    }

    fn configured(&self) -> bool {
        self.up.lock().as_ref().is_some_and(|u| u.configured)
    }

    /// The first stall of a running queue pair, if any (every queue's
    /// detector takes its look): the stack's TX watchdog first, then the
    /// ring core's rules.
    fn stalled(&self, now: u64, beat: u32) -> Option<(u32, Why)> {
        let up = self.up.lock();
        let up = up.as_ref().filter(|u| u.configured)?;
        let mut found = None;
        for (q, lane) in (0u32..).zip(up.lanes.iter()) {
            let stall = lane.napi.data().stalled(now, beat);
            if found.is_none() {
                found = stall.map(|s| (q, Why::Stalled(s)));
            }
        }
        let timed_out = self.timed_out.load(Ordering::Relaxed);
        if timed_out != 0 {
            return Some((timed_out.trailing_zeros(), Why::TxTimeout));
        }
        found
    }

    fn start_watch(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        let w = Watch {
            port: this.clone(),
            dev: dev.hold(),
            beat: AtomicU32::new(this.io.heartbeat()),
            since_ms: AtomicU64::new(now_ms()),
            lost: AtomicBool::new(false),
            retry_ms: AtomicU64::new(0),
            backoff_ms: AtomicU64::new(RETRY_FIRST_MS),
        };
        // Its own queue: a restart waits on the device for up to seconds.
        let w =
            Periodic::start_own_queue(Arc::new(w, GFP_KERNEL)?, WATCH_MS, c_str!("cxlnic_watch"))?;
        *this.watch.lock() = Some(w);
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
        this.reap(dev);
        let up = this.start(dev)?;
        *this.up.lock() = Some(up);
        if let Err(e) = Self::start_watch(this, dev) {
            if let Some(up) = this.up.lock().take() {
                this.finish(dev, up, Finish::Tell);
            }
            return Err(e);
        }
        Ok(())
    }

    fn stop(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        this.stop_watch();
        let up = this.up.lock().take();
        if let Some(up) = up {
            this.finish(dev, up, Finish::Tell);
        }
        Ok(())
    }

    const HAS_TX_TIMEOUT: bool = true;

    fn tx_timeout(this: &Arc<Self>, _dev: &Netdev<'_>, queue: u32) {
        // Softirq, queues frozen: the watch restarts the rings.
        let bit = 1u32.checked_shl(queue).unwrap_or(0);
        this.timed_out.fetch_or(bit, Ordering::Relaxed);
    }

    fn start_xmit(
        this: &Arc<Self>,
        dev: &Netdev<'_>,
        skb: SkBuff,
        queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        // Only this TX queue's slot (see `txq`).
        let q = this.txq.get(usize::from(queue)).and_then(TxSlot::get);
        match q {
            Some(q) => q.xmit(dev, skb),
            None => {
                // A TX queue the stack took on (`ethtool -L`) before the
                // restart that brings its queue pair.
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
        let new = Settings {
            mtu,
            ..*this.settings.lock()
        };
        // Buffers are sized for the MTU.
        Self::apply(this, dev, new)
    }

    fn params(this: &Arc<Self>) -> Result<Params> {
        let s = *this.settings.lock();
        let flags = match s.mode {
            MODE_TYPE2 => PRIV_TYPE2,
            MODE_PCIE => PRIV_PCIE,
            _ => 0,
        };
        Ok(Params {
            rx_ring: s.rx.get(),
            tx_ring: s.tx.get(),
            rx_ring_max: RING_MAX,
            tx_ring_max: RING_MAX,
            channels: s.queues,
            channels_max: this.queues_max,
            rx_usecs: s.rx_usecs,
            rx_frames: s.batch,
            priv_flags: flags,
        })
    }

    fn set_params(this: &Arc<Self>, dev: &Netdev<'_>, p: &Params, what: Change) -> Result {
        let old = *this.settings.lock();
        let new = this.settings_for(dev, old, p, what)?;
        if what == Change::Channels && new.queues != old.queues {
            dev.set_queues(new.queues, new.queues)?;
        }
        let r = Self::apply(this, dev, new);
        if r.is_err() && what == Change::Channels {
            let _ = dev.set_queues(old.queues, old.queues);
        }
        r
    }

    fn string_count(this: &Arc<Self>, set: StringSet) -> usize {
        match set {
            StringSet::Stats => stats::count(this.settings.lock().queues as usize),
            StringSet::PrivFlags => PRIV_FLAGS.len(),
        }
    }

    fn strings(_this: &Arc<Self>, set: StringSet, out: &mut [[u8; STRING_LEN]]) {
        match set {
            StringSet::Stats => stats::names(out),
            StringSet::PrivFlags => {
                for (o, name) in out.iter_mut().zip(PRIV_FLAGS) {
                    ethtool_string(o, &[name.as_bytes()]);
                }
            }
        }
    }

    fn stat_values(this: &Arc<Self>, out: &mut [u64]) {
        let lanes = this.lanes.lock();
        stats::values(&this.io, &this.resets, &lanes, out);
    }
}

/// Private flags (`ethtool --set-priv-flags`): the mode, while down.
const PRIV_TYPE2: u32 = 1 << 0;
const PRIV_PCIE: u32 = 1 << 1;
const PRIV_FLAGS: [&str; 2] = ["type2", "pcie"];

impl Port {
    /// `old` with what ethtool changed, checked; `EINVAL` (or `EBUSY`)
    /// with a log line saying why not.
    fn settings_for(
        &self,
        dev: &Netdev<'_>,
        old: Settings,
        p: &Params,
        what: Change,
    ) -> Result<Settings> {
        let mut s = old;
        let why: &str = match what {
            Change::Rings => match (RingSize::new(p.tx_ring), RingSize::new(p.rx_ring)) {
                (Some(tx), Some(rx)) if s.batch <= tx.get().min(rx.get()) => {
                    s.tx = tx;
                    s.rx = rx;
                    ""
                }
                (Some(_), Some(_)) => "rings must hold at least a batch (ethtool -C rx-frames)",
                _ => "ring sizes are powers of two from 8 to 4096",
            },
            Change::Channels if (1..=self.queues_max).contains(&p.channels) => {
                s.queues = p.channels;
                ""
            }
            Change::Channels => "channels are 1 up to the device's queue pairs",
            Change::Coalesce => {
                let usecs_ok =
                    p.rx_usecs == 0 || (PERIOD_US_MIN..=PERIOD_US_MAX).contains(&p.rx_usecs);
                if !usecs_ok {
                    "rx-usecs is 0 (interrupts) or a polling period of 10 to 100000"
                } else if p.rx_frames == 0 || p.rx_frames > s.tx.get().min(s.rx.get()) {
                    "rx-frames (the batch) is 1 up to the smaller ring"
                } else {
                    s.rx_usecs = p.rx_usecs;
                    s.batch = p.rx_frames;
                    ""
                }
            }
            Change::PrivFlags => {
                let mode = match p.priv_flags & (PRIV_TYPE2 | PRIV_PCIE) {
                    0 => MODE_TYPE1,
                    PRIV_TYPE2 => MODE_TYPE2,
                    PRIV_PCIE => MODE_PCIE,
                    _ => 0,
                };
                if p.priv_flags & !(PRIV_TYPE2 | PRIV_PCIE) != 0 || mode == 0 {
                    "one mode at most: type2 or pcie (neither: type1)"
                } else if mode != s.mode && self.up.lock().is_some() {
                    pr_info!("{}: set the mode while the interface is down\n", dev.name());
                    return Err(EBUSY);
                } else if self.modes & mode_bit(mode) == 0 {
                    "the device does not have that mode"
                } else {
                    s.mode = mode;
                    ""
                }
            }
        };
        if !why.is_empty() {
            pr_info!("{}: {}\n", dev.name(), why);
            return Err(EINVAL);
        }
        s.shape()?;
        Ok(s)
    }

    /// Takes `new` settings; while up, the queues start again with them
    /// (and with the old ones if that fails).
    fn apply(this: &Arc<Self>, dev: &Netdev<'_>, new: Settings) -> Result {
        let old = core::mem::replace(&mut *this.settings.lock(), new);
        if this.up.lock().is_none() {
            return Ok(());
        }
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
    /// When to try configuring an unconfigured device next, and the
    /// wait after that (doubling up to a minute).
    retry_ms: AtomicU64,
    backoff_ms: AtomicU64,
}

/// The first and longest waits between attempts to configure a device
/// that is running but did not take a config.
const RETRY_FIRST_MS: u64 = 1000;
const RETRY_MAX_MS: u64 = 60_000;

impl Watch {
    /// Configures the device afresh, under RTNL (as `open` does; the
    /// NAPI list changes). Not if RTNL is busy: `stop` and `apply` hold
    /// it while they wait for this watch. False if it should be tried
    /// again.
    fn reconfigure(&self, dev: &Netdev<'_>, now: u64, holding: bool) -> bool {
        if holding || now < self.retry_ms.load(Ordering::Relaxed) {
            return false;
        }
        let Some(_rtnl) = RtnlGuard::try_lock() else {
            return false;
        };
        pr_info!("{}: the device is running: configuring it\n", dev.name());
        let ok = self.port.restart(dev).is_ok() && self.port.configured();
        let backoff = self.backoff_ms.load(Ordering::Relaxed);
        if ok {
            self.backoff_ms.store(RETRY_FIRST_MS, Ordering::Relaxed);
        } else {
            self.retry_ms
                .store(now.saturating_add(backoff), Ordering::Relaxed);
            self.backoff_ms.store(
                backoff.saturating_mul(2).min(RETRY_MAX_MS),
                Ordering::Relaxed,
            );
        }
        ok
    }
}

impl Watch {
    /// Restarts the rings of a port whose queue pair `q` stalled (`why`),
    /// under RTNL (as `reconfigure`), paced (`Pace`). Not if RTNL is
    /// busy: the stall shows again on the next run.
    fn reset(&self, dev: &Netdev<'_>, q: u32, why: Why, now: u64) {
        let port = &self.port;
        if !port.pace.allows(now) {
            return;
        }
        let Some(_rtnl) = RtnlGuard::try_lock() else {
            return;
        };
        // Counted, paced and logged as it starts; the watchdog's marks
        // are answered by it.
        port.resets.count(why);
        port.pace.note(now);
        port.timed_out.store(0, Ordering::Relaxed);
        crate::support::pr_info_ratelimited!(
            "{}: queue {}: {}: restarting the rings of every queue pair\n",
            dev.name(),
            q,
            why
        );
        // A device that does not take the new config is retried as any.
        let _ = port.restart(dev);
    }
}

impl PeriodicWork for Watch {
    fn run(&self) -> u32 {
        let io = &self.port.io;
        let dev = self.dev.get();
        let holding = self.port.reap(&dev);
        let beat = io.heartbeat();
        let now = now_ms();
        if beat != self.beat.swap(beat, Ordering::Relaxed) {
            self.since_ms.store(now, Ordering::Relaxed);
            if (self.lost.load(Ordering::Relaxed) || !self.port.configured())
                && self.reconfigure(&dev, now, holding)
            {
                self.lost.store(false, Ordering::Relaxed);
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
        let lost = self.lost.load(Ordering::Relaxed);
        let link = !lost && self.port.configured() && io.header32(header::LINK) == LINK_UP;
        if link != dev.carrier_ok() {
            dev.set_carrier(link);
        }
        // A device that runs but whose queues stalled (a device that
        // stopped is the heartbeat's business).
        if !lost {
            if let Some((q, why)) = self.port.stalled(now, beat) {
                if !holding {
                    self.reset(&dev, q, why, now);
                }
            }
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
        rx_usecs: 0,
    }
}

const RING_DEFAULT: RingSize = match RingSize::new(256) {
    Some(r) => r,
    None => panic!("256 is a ring size"),
};
