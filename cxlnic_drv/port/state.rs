// SPDX-License-Identifier: GPL-2.0

//! A port's state: the settings, the running queues (`Up`), the TX
//! queues' slots, the memory the device still holds, and the watch.

use super::settings::{Settings, MTU_MIN};
use crate::io::NicIo;
use crate::kvs::Kvs;
use crate::queue::{Counters, Queue};
use crate::recovery::{Lent, Pace, Resets};
use crate::ring::device::QUEUES_MAX;
use crate::ring::layout::MTU_MAX;
use crate::support::dma::CoherentAllocation;
use crate::support::hrtimer::ArcHrTimerHandle;
use crate::support::irq;
use crate::support::napi::Napi;
use crate::support::netdev::NetdevRef;
use crate::support::spinlock_irq::RawSpinLockIrq;
use crate::support::time;
use crate::support::workqueue::Periodic;
use crate::ticker::Ticker;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use kernel::init::pin_init_array_from_fn;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// How often the watch looks at the device.
pub(super) const WATCH_MS: u32 = 50;
/// How long the stack's TX watchdog lets a TX queue stay stopped (with
/// carrier): it covers what the watch's own rules cannot see, such as a
/// wake-up that never came for entries the device did take.
pub(crate) const TX_WATCHDOG_MS: u32 = 5000;
/// The first and longest waits between attempts to configure a device
/// that is running but did not take a config.
pub(super) const RETRY_FIRST_MS: u64 = 1000;
pub(super) const RETRY_MAX_MS: u64 = 60_000;

/// A running queue pair: its polling timer and interrupt go before its
/// NAPI context.
pub(super) struct Lane {
    pub(super) ticker: Option<ArcHrTimerHandle<Ticker>>,
    pub(super) _irq: irq::Registration<Napi<Queue>>,
    pub(super) napi: Arc<Napi<Queue>>,
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
pub(super) struct Up {
    pub(super) lanes: KVec<Lane>,
    /// Host memory the device was told about, in config `named`.
    pub(super) lent: KVec<Arc<CoherentAllocation>>,
    pub(super) named: u32,
    pub(super) configured: bool,
}

/// A TX queue's slot in [`Port::txq`]: the queue pair its transmits go
/// to. A cache line of its own, so that transmits on different TX queues
/// share none.
#[pin_data]
#[repr(align(64))]
pub(super) struct TxSlot {
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
    pub(super) fn get(&self) -> Option<Arc<Queue>> {
        self.queue.lock().clone()
    }

    /// Puts `q` in the slot (`None`: empties it); the one it held goes
    /// after the lock (it may free memory).
    pub(super) fn set(&self, q: Option<Arc<Queue>>) {
        let old = core::mem::replace(&mut *self.queue.lock(), q);
        drop(old);
    }
}

/// A NIC port's network interface (see `mod.rs` for its lock order).
#[pin_data]
pub(crate) struct Port {
    pub(super) io: Arc<NicIo>,
    pub(super) queues_max: u32,
    /// Modes the device has (`mode_bit`).
    pub(super) modes: u32,
    #[pin]
    pub(super) settings: Mutex<Settings>,
    #[pin]
    pub(super) watch: Mutex<Option<Periodic<Watch>>>,
    #[pin]
    pub(super) up: Mutex<Option<Up>>,
    /// The running queues, for the counters (`ndo_get_stats64`,
    /// `ethtool -S`) and teardown; transmits do not take it.
    #[pin]
    pub(super) lanes: RawSpinLockIrq<KVec<Arc<Queue>>>,
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
    pub(super) txq: [TxSlot; QUEUES_MAX as usize],
    /// Slot `q`: what queue pair `q`'s queues counted before they were
    /// torn down (restarts, `ethtool -G`/`-L`, MTU changes, link down),
    /// so no counter of the interface or of `ethtool -S` goes back.
    pub(super) retired: [Counters; QUEUES_MAX as usize],
    /// Rings the device has not let go of yet: freed by the watch when it
    /// does. While any are held, the watch neither configures the device
    /// again nor restarts its queues (each time would hold more).
    #[pin]
    pub(super) held: Mutex<KVec<Lent>>,
    /// Restarts of the rings (`ethtool -S`), and their pace.
    pub(crate) resets: Resets,
    pub(super) pace: Pace,
    /// TX queues the stack's watchdog named (bit `q`), for the watch.
    pub(super) timed_out: AtomicU32,
    /// The key-value offload (its own lock; `kvs/`).
    pub(crate) kvs: Arc<Kvs>,
}

impl Port {
    pub(crate) fn new(
        io: Arc<NicIo>,
        queues_max: u32,
        modes: u32,
        settings: Settings,
        kvs: Arc<Kvs>,
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
                retired: Default::default(),
                held <- new_mutex!(KVec::new(), "cxlnic:held"),
                resets: Resets::default(),
                pace: Pace::new(),
                timed_out: AtomicU32::new(0),
                kvs,
            }),
            GFP_KERNEL,
        )
    }

    /// The MTU range the interface offers.
    pub(crate) const fn mtu_range() -> (u32, u32) {
        (MTU_MIN, MTU_MAX)
    }
}

/// Follows the device: heartbeat, link, and a device back from a stall
/// (`watch.rs`).
pub(super) struct Watch {
    pub(super) port: Arc<Port>,
    pub(super) dev: NetdevRef,
    pub(super) beat: AtomicU32,
    pub(super) since_ms: AtomicU64,
    pub(super) lost: AtomicBool,
    /// When to try configuring an unconfigured device next, and the
    /// wait after that (doubling up to a minute).
    pub(super) retry_ms: AtomicU64,
    pub(super) backoff_ms: AtomicU64,
}

/// Boot time in milliseconds (counts across suspend).
pub(super) fn now_ms() -> u64 {
    time::boottime_ns() / 1_000_000
}
