//! The driver's TX queue rule (`Producer::must_stop`, `Producer::may_wake`)
//! against devices that take entries at any pace and store their head as
//! seldom as their batch allows: a transmit on an awake queue always finds
//! an entry (no `NETDEV_TX_BUSY`), and a stopped queue always wakes once
//! the device has taken what was posted (no lost wake). The driver here
//! follows `cxlnic_drv/queue/tx.rs` step by step, the device the model
//! (`tools/cxlnic-model`: it stores its head, then reads the interrupt
//! word, and interrupts if it took entries and was asked).

use cxlnic_ring::index::{RingSize, RING_MAX, RING_MIN};
use cxlnic_ring::queue::{wake_entries, Producer, FRAME_ENTRIES};
use proptest::prelude::*;

/// Both sides of one TX ring and the stack's queue in front of it.
struct World {
    driver: Producer,
    batch: u32,
    /// The stack's queue is stopped.
    stopped: bool,
    /// The driver asked for a TX interrupt.
    irq_asked: bool,
    /// A TX interrupt is pending (its NAPI poll has not run).
    irq_pending: bool,
    /// The device: entries taken, and the head it stored.
    taken: u32,
    head_word: u32,
    /// Stores its head only every batch (else also at the end of a pass).
    strict: bool,
    /// Transmits that met a full ring with the queue awake.
    busy: u32,
    stops: u32,
    wakes: u32,
}

impl World {
    fn new(size: RingSize, start: u32, batch: u32, strict: bool) -> World {
        World {
            driver: Producer::new(size, start),
            batch,
            stopped: false,
            irq_asked: false,
            irq_pending: false,
            taken: start,
            head_word: start,
            strict,
            busy: 0,
            stops: 0,
            wakes: 0,
        }
    }

    fn reclaim(&mut self) {
        self.driver
            .consumed(self.head_word)
            .expect("an honest head");
    }

    /// The stack hands the driver a frame (only on an awake queue); the
    /// device may run a pass between stopping and asking for the
    /// interrupt (`race`), which is what the re-check is for.
    fn xmit(&mut self, race: Option<u32>) {
        assert!(!self.stopped);
        if self.driver.in_flight() > 0 {
            self.reclaim();
        }
        if self.driver.next().is_none() {
            self.busy += 1;
            return;
        }
        self.driver.commit();
        if self.driver.must_stop() {
            self.reclaim();
            if self.driver.must_stop() {
                self.stopped = true;
                self.stops += 1;
                if let Some(n) = race {
                    self.device_pass(n);
                }
                self.irq_asked = true;
                // Full barrier, then the head once more.
                self.reclaim();
                if self.driver.may_wake(self.batch) {
                    self.irq_asked = false;
                    self.stopped = false;
                    self.wakes += 1;
                }
            }
        }
    }

    /// The device takes up to `n` posted entries.
    fn device_pass(&mut self, n: u32) {
        let posted = self.driver.tail().wrapping_sub(self.taken);
        let n = n.min(posted);
        for _ in 0..n {
            self.taken = self.taken.wrapping_add(1);
            if self.taken.wrapping_sub(self.head_word) >= self.batch {
                self.head_word = self.taken;
            }
        }
        if !self.strict {
            self.head_word = self.taken;
        }
        // Head stored, then (full barrier) the interrupt word read.
        if n > 0 && self.irq_asked {
            self.irq_pending = true;
        }
    }

    /// The NAPI poll's TX side.
    fn poll(&mut self) {
        self.irq_pending = false;
        self.reclaim();
        if self.stopped && self.driver.may_wake(self.batch) {
            self.irq_asked = false;
            self.stopped = false;
            self.wakes += 1;
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Xmit(Option<u32>),
    Device(u32),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        3 => prop::option::weighted(0.2, 0u32..20).prop_map(Step::Xmit),
        1 => (0u32..40).prop_map(Step::Device),
    ];
    prop::collection::vec(step, 1..600)
}

fn ring_size() -> impl Strategy<Value = RingSize> {
    (RING_MIN.trailing_zeros()..=RING_MAX.trailing_zeros())
        .prop_map(|s| RingSize::new(1 << s).expect("a power of two in range"))
}

proptest! {
    #[test]
    fn an_awake_queue_has_room_and_a_stopped_one_wakes(
        size in ring_size(),
        start in any::<u32>(),
        batch_pick in any::<u32>(),
        strict in any::<bool>(),
        steps in steps(),
    ) {
        // The driver keeps the batch within the ring.
        let batch = 1 + batch_pick % size.get();
        let mut w = World::new(size, start, batch, strict);
        for step in steps {
            match step {
                // The stack sends only on an awake queue.
                Step::Xmit(race) if !w.stopped => w.xmit(race),
                Step::Xmit(_) => {}
                Step::Device(n) => w.device_pass(n),
            }
            if w.irq_pending {
                w.poll();
            }
            prop_assert_eq!(w.busy, 0, "a transmit met a full ring");
            prop_assert!(!w.stopped || !w.driver.may_wake(batch) || w.irq_pending,
                "stopped with room and no interrupt coming");
        }
        // The device takes everything posted: a stopped queue wakes
        // through its interrupts alone.
        for _ in 0..size.get() {
            w.device_pass(1);
            if w.irq_pending {
                w.poll();
            }
        }
        prop_assert!(!w.stopped, "a wake was lost ({} stops, {} wakes)", w.stops, w.wakes);
        prop_assert_eq!(w.stops, w.wakes);
    }
}

/// A flood: the stack keeps the queue busy and the device takes a few
/// entries per pass; the queue stops and wakes, never meets a full ring.
#[test]
fn a_flood_stops_and_wakes_the_queue() {
    let size = RingSize::new(8).unwrap();
    let mut w = World::new(size, u32::MAX - 20, 8, false);
    for i in 0..10_000u32 {
        if !w.stopped {
            w.xmit(None);
        }
        if i % 3 == 0 {
            w.device_pass(2);
        }
        if w.irq_pending {
            w.poll();
        }
    }
    assert_eq!(w.busy, 0);
    assert!(w.stops > 100, "{} stops", w.stops);
    assert!(w.wakes + 1 >= w.stops);
    assert_eq!(wake_entries(size, 8), 8);
    assert_eq!(FRAME_ENTRIES, 1);
}
