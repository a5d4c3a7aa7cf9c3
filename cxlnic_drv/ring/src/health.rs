//! Telling a queue pair that has stalled from one that is idle or slow.
//!
//! A producer takes any head inside what it posted as the consumer's
//! progress ([`Producer::consume`](super::queue::Producer::consume)):
//! nothing tells a forged head from a real one. A device that stored one
//! and then behaves again disagrees with the driver about positions from
//! then on: its TX side waits for a tag the driver has overwritten, its
//! RX side finds buffers posted twice over and refuses them. Only a
//! restart of the rings on both sides (a new config, from index 0) brings
//! them back together; these rules say when the driver needs one. Like
//! the rest of the core they do no memory access: the caller reads its
//! counters and the device's words and hands them over ([`Look`]).
//!
//! - **TX stuck**: entries posted that the device's TX head does not
//!   cover, and that head unchanged for [`TX_STUCK_MS`], while the device
//!   beat at least [`TX_STUCK_BEATS`] times (so it ran, and had the
//!   chance to take them). Entries the device took but the driver has
//!   not freed yet (no transmit or poll since) are not waiting on it; a
//!   queue stopped on them is the stack's TX watchdog's business.
//! - **Faults that keep rising**: a direction's faults (the driver's and
//!   the device's counts) rose in each of [`FAULT_WINDOWS`] windows of
//!   [`FAULT_WINDOW_MS`] in a row without that direction making progress
//!   in any of them (no frame received; no TX entry freed). A fault now
//!   and then, with frames between, is a device dropping frames, which
//!   the ring checks already handle.
//!
//! Every value may come from a hostile device: it can make these rules
//! fire (and cost the caller a reset), never make them compute out of
//! range.

use super::index::{distance, within};

/// How long a TX head may stand still with entries out, milliseconds.
pub const TX_STUCK_MS: u64 = 1000;
/// Heartbeats (counter steps) the device must have made meanwhile.
pub const TX_STUCK_BEATS: u32 = 10;
/// The window over which faults are counted, milliseconds.
pub const FAULT_WINDOW_MS: u64 = 250;
/// How many rising windows in a row make a stall (2 s of them).
pub const FAULT_WINDOWS: u32 = 8;

/// Why a queue pair needs its rings restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    /// `waiting` TX entries not taken and the device's head stood still.
    TxStuck {
        /// TX entries out that the device's head does not cover.
        waiting: u32,
    },
    /// TX faults rose (`count` of them) and no entry was freed.
    TxFaults {
        /// TX faults over the rising windows.
        count: u64,
    },
    /// RX faults rose (`count` of them) and no frame was received.
    RxFaults {
        /// RX faults over the rising windows.
        count: u64,
    },
}

/// One look at a queue pair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Look {
    /// A clock in milliseconds that does not go backwards.
    pub now_ms: u64,
    /// The device's heartbeat.
    pub beat: u32,
    /// The driver's TX head: entries `tx_head..tx_tail` are out (the
    /// head moves when entries are freed).
    pub tx_head: u32,
    /// The driver's TX tail: the next entry it posts.
    pub tx_tail: u32,
    /// The TX head in the device's line, as read.
    pub tx_dev_head: u32,
    /// TX faults so far, the driver's and the device's counts.
    pub tx_faults: u64,
    /// RX faults so far, the driver's and the device's counts.
    pub rx_faults: u64,
    /// Frames received so far (taken from the ring, delivered or not).
    pub rx_frames: u64,
}

/// Faults rising window after window without progress.
#[derive(Debug, Clone, Copy, Default)]
struct Rising {
    window_ms: u64,
    faults: u64,
    progress: u64,
    /// Rising windows in a row, and the faults before the first.
    windows: u32,
    before: u64,
}

impl Rising {
    fn start(now_ms: u64, faults: u64, progress: u64) -> Rising {
        Rising {
            window_ms: now_ms,
            faults,
            progress,
            windows: 0,
            before: faults,
        }
    }

    /// The faults of the rising run once it is long enough.
    fn look(&mut self, now_ms: u64, faults: u64, progress: u64) -> Option<u64> {
        if now_ms.saturating_sub(self.window_ms) < FAULT_WINDOW_MS {
            return None;
        }
        if faults > self.faults && progress == self.progress {
            if self.windows == 0 {
                self.before = self.faults;
            }
            self.windows = self.windows.saturating_add(1);
        } else {
            self.windows = 0;
        }
        self.window_ms = now_ms;
        self.faults = faults;
        self.progress = progress;
        (self.windows >= FAULT_WINDOWS).then(|| faults.saturating_sub(self.before))
    }
}

/// One queue pair's stall detector, fed a [`Look`] at a time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Watchdog {
    started: bool,
    /// The device's TX head as last seen to change, when, and the
    /// heartbeat then.
    head: u32,
    head_ms: u64,
    head_beat: u32,
    tx: Rising,
    rx: Rising,
}

impl Watchdog {
    /// A detector that has seen nothing (its first look sets the baseline).
    pub const fn new() -> Watchdog {
        Watchdog {
            started: false,
            head: 0,
            head_ms: 0,
            head_beat: 0,
            tx: Rising {
                window_ms: 0,
                faults: 0,
                progress: 0,
                windows: 0,
                before: 0,
            },
            rx: Rising {
                window_ms: 0,
                faults: 0,
                progress: 0,
                windows: 0,
                before: 0,
            },
        }
    }

    /// Takes a look; the stall it shows, if any (it keeps showing it on
    /// later looks while it lasts).
    pub fn look(&mut self, l: &Look) -> Option<Stall> {
        if !self.started {
            self.started = true;
            self.rearm_tx(l);
            self.tx = Rising::start(l.now_ms, l.tx_faults, u64::from(l.tx_head));
            self.rx = Rising::start(l.now_ms, l.rx_faults, l.rx_frames);
            return None;
        }
        let stuck = self.tx_stuck(l);
        let tx = self
            .tx
            .look(l.now_ms, l.tx_faults, u64::from(l.tx_head))
            .map(|count| Stall::TxFaults { count });
        let rx = self
            .rx
            .look(l.now_ms, l.rx_faults, l.rx_frames)
            .map(|count| Stall::RxFaults { count });
        stuck.or(tx).or(rx)
    }

    fn rearm_tx(&mut self, l: &Look) {
        self.head = l.tx_dev_head;
        self.head_ms = l.now_ms;
        self.head_beat = l.beat;
    }

    fn tx_stuck(&mut self, l: &Look) -> Option<Stall> {
        let waiting = tx_waiting(l);
        if waiting == 0 || l.tx_dev_head != self.head {
            self.rearm_tx(l);
            return None;
        }
        let still = l.now_ms.saturating_sub(self.head_ms) >= TX_STUCK_MS;
        let ran = distance(self.head_beat, l.beat) >= TX_STUCK_BEATS;
        (still && ran).then_some(Stall::TxStuck { waiting })
    }
}

/// TX entries out that the device's head does not cover (all of them if
/// that head is outside what is out).
pub fn tx_waiting(l: &Look) -> u32 {
    if within(l.tx_head, l.tx_dev_head, l.tx_tail) {
        distance(l.tx_dev_head, l.tx_tail)
    } else {
        distance(l.tx_head, l.tx_tail)
    }
}
