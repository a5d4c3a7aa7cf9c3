//! The stall rules against any values a device can write: they never
//! fail to compute, and a device that keeps taking entries or receiving
//! frames is never taken as stalled, whatever it writes beside.

use cxlnic_ring::health::{tx_waiting, Look, Watchdog, TX_STUCK_MS};
use proptest::prelude::*;

/// Looks every `step` ms with the device's words as given.
fn looks(steps: &[(u16, u32, u32, u64, u64)]) -> Vec<Look> {
    let mut now = 0u64;
    steps
        .iter()
        .map(|&(step, beat, dev_head, tx_faults, rx_faults)| {
            now += u64::from(step);
            Look {
                now_ms: now,
                beat,
                tx_head: 7,
                tx_tail: 7u32.wrapping_add(dev_head % 300),
                tx_dev_head: dev_head,
                tx_faults,
                rx_faults,
                rx_frames: now,
            }
        })
        .collect()
}

proptest! {
    #[test]
    fn hostile_words_never_break_the_rules(
        steps in proptest::collection::vec(any::<(u16, u32, u32, u64, u64)>(), 1..200)
    ) {
        let mut w = Watchdog::new();
        for l in looks(&steps) {
            let _ = w.look(&l);
            prop_assert!(tx_waiting(&l) <= l.tx_tail.wrapping_sub(l.tx_head));
        }
    }

    /// A device whose head moves more often than every `TX_STUCK_MS`
    /// (and which receives all along) is never stalled, whatever its
    /// heartbeat and fault counts.
    #[test]
    fn a_device_that_moves_is_never_stalled(
        steps in proptest::collection::vec((1u16..200, any::<u32>(), any::<u64>()), 1..300)
    ) {
        let mut w = Watchdog::new();
        let mut now = 0u64;
        let mut head = 0u32;
        let mut since = 0u64;
        for (step, beat, faults) in steps {
            now += u64::from(step);
            if now - since >= TX_STUCK_MS - 200 {
                head = head.wrapping_add(1);
                since = now;
            }
            let l = Look {
                now_ms: now,
                beat,
                tx_head: head,
                tx_tail: head.wrapping_add(5),
                tx_dev_head: head,
                tx_faults: faults,
                rx_faults: faults,
                rx_frames: now,
            };
            let got = w.look(&l);
            prop_assert_eq!(got, None, "at {} ms", now);
        }
    }
}
