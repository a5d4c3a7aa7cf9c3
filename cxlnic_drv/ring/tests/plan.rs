//! The driver's queue layout: slot sizes, area limits, device memory.

use cxlnic_ring::device::{
    check_config, mode_bit, DriverConfig, Loc, Spaces, DATA_OFFSET, MODE_PCIE, MODE_TYPE1,
    MODE_TYPE2, SPACE_DEVICE,
};
use cxlnic_ring::index::RingSize;
use cxlnic_ring::plan::{slot_bytes, Bump, PlanError, Sizes, AREA_MAX, PARTS};
use cxlnic_ring::queue::Producer;
use proptest::prelude::*;

fn ring(n: u32) -> RingSize {
    RingSize::new(n).unwrap()
}

#[test]
fn slots_hold_a_full_frame_rounded_to_a_line() {
    assert_eq!(slot_bytes(1500), Ok(1536));
    assert_eq!(slot_bytes(68), Ok(128));
    assert_eq!(slot_bytes(9000), Ok(9024));
    assert_eq!(slot_bytes(9001), Err(PlanError::Mtu));
}

#[test]
fn areas_above_the_limit_are_refused() {
    assert!(Sizes::new(ring(256), ring(256), 9000).is_ok());
    assert_eq!(
        Sizes::new(ring(4096), ring(256), 1500),
        Err(PlanError::Area)
    );
    assert_eq!(
        Sizes::new(ring(256), ring(1024), 9000),
        Err(PlanError::Area)
    );
    let s = Sizes::new(ring(2048), ring(2048), 1500).unwrap();
    assert!(s.bytes(cxlnic_ring::device::Part::RxArea) <= AREA_MAX);
}

#[test]
fn device_memory_is_handed_out_aligned_until_full() {
    let mut b = Bump::new(DATA_OFFSET + 256);
    assert_eq!(b.take(1), Ok(DATA_OFFSET));
    assert_eq!(b.take(64), Ok(DATA_OFFSET + 64));
    assert_eq!(b.take(128), Ok(DATA_OFFSET + 128));
    assert_eq!(b.take(1), Err(PlanError::DeviceMemory));
    assert_eq!(Bump::new(DATA_OFFSET).take(1), Err(PlanError::DeviceMemory));
}

/// A plan laid out as a driver does (host parts at made-up DMA
/// addresses, device parts from a `Bump`) passes the device's check.
#[test]
fn a_planned_layout_is_one_the_device_takes() {
    for mode in [MODE_TYPE1, MODE_TYPE2, MODE_PCIE] {
        let sizes = Sizes::new(ring(256), ring(512), 4000).unwrap();
        let bar = 16 << 20;
        assert!(sizes.device_bytes(mode, 2) <= bar - DATA_OFFSET);
        let mut dev = Bump::new(bar);
        let mut host = 1u64 << 20;
        let mut c = DriverConfig {
            gen: 1,
            mode,
            queues: 2,
            tx_size: 256,
            rx_size: 512,
            batch: 8,
            ..DriverConfig::default()
        };
        for q in c.queue.iter_mut().take(2) {
            let mut locs = [Loc::default(); 7];
            for (loc, part) in locs.iter_mut().zip(PARTS) {
                let len = sizes.bytes(part);
                let space = cxlnic_ring::device::space_of(mode, part);
                let addr = if space == SPACE_DEVICE {
                    dev.take(len).unwrap()
                } else {
                    let a = host;
                    host += len.next_multiple_of(4096);
                    a
                };
                *loc = Loc {
                    space,
                    _pad: 0,
                    addr,
                };
            }
            [
                q.tx_ring,
                q.rx_ring,
                q.rx_done,
                q.driver_line,
                q.device_line,
                q.tx_area,
                q.rx_area,
            ] = locs;
            q.tx_area_len = sizes.bytes(PARTS[5]) as u32;
            q.rx_area_len = sizes.bytes(PARTS[6]) as u32;
        }
        let spaces = Spaces {
            host_bytes: 1 << 30,
            bar_bytes: bar,
        };
        let all = mode_bit(MODE_TYPE1) | mode_bit(MODE_TYPE2) | mode_bit(MODE_PCIE);
        check_config(&c, 8, all, &spaces).unwrap();
    }
}

proptest! {
    /// Taking a head in budget-sized steps frees exactly the entries
    /// taking it at once does, in order.
    #[test]
    fn consuming_in_steps_equals_consuming_at_once(
        start in any::<u32>(), posted in 0u32..=256, done in 0u32..=256, max in 1u32..64,
    ) {
        let done = done.min(posted);
        let mut p = Producer::new(ring(256), start);
        for _ in 0..posted {
            p.next().unwrap();
            p.commit();
        }
        let head = start.wrapping_add(done);
        let mut whole = p;
        let all = whole.consumed(head).unwrap();
        let mut seen = 0u32;
        loop {
            let s = p.consume(head, max).unwrap();
            prop_assert!(s.count <= max);
            prop_assert_eq!(s.start, start.wrapping_add(seen));
            if s.count == 0 {
                break;
            }
            seen += s.count;
        }
        prop_assert_eq!(seen, all.count);
        prop_assert_eq!(p.head(), whole.head());
        // A head past the tail is refused whatever the budget, and says
        // nothing is pending.
        prop_assert!(p.consume(start.wrapping_add(posted + 1), max).is_err());
        prop_assert!(!p.pending(start.wrapping_add(posted + 1)));
        prop_assert!(!p.pending(p.head()));
    }
}
