//! The congestion model in closed loop with AIMD (Algorithm 1 lines
//! 21-26) and Eq. 4: for any configured maximum, any true device
//! throughput below it and any overload, the capacity estimate leaves the
//! configured maximum and saw-tooths just under the device's throughput.

use mchannel_core::component::{Component, Params};
use mchannel_core::congestion::Congestion;
use proptest::prelude::*;

const MB: u64 = 1_000_000;
const GB: u64 = 1_000_000_000;

/// Runs `periods` control periods (one component, channels of weight one
/// with `demands`, rates the next period `min(alpha, D)`); returns each
/// period's (C, F).
fn run(max: u64, device: u64, demands: &[u64], periods: usize) -> Vec<(u64, u64)> {
    let mut c = Component::new(Params::default_for(max)).unwrap();
    let signal = Congestion::Model { capacity: device };
    let cap = *demands.iter().max().unwrap();
    let mut f = 0u64;
    let mut out = vec![];
    for _ in 0..periods {
        c.update_load(signal.signal(c.rate()));
        c.adjust_capacity();
        let alpha = c.update_share(f, cap);
        f = demands.iter().map(|&d| d.min(alpha)).sum();
        out.push((c.capacity(), f));
    }
    out
}

proptest! {
    #[test]
    fn capacity_settles_under_the_model_device(
        max in 100 * MB..100 * GB,
        eighths in 1u64..8,
        channels in 1usize..6,
        overload in 2u64..8,
    ) {
        let device = max / 8 * eighths;
        let demand = max.saturating_mul(overload) / channels as u64;
        let trace = run(max, device, &vec![demand; channels], 1_000);
        // After 2 s (200 periods of 10 ms): below the device's throughput
        // on average, never far above it, and not starved.
        let tail = &trace[200..];
        let mean = tail.iter().map(|t| t.1 as f64).sum::<f64>() / tail.len() as f64;
        let most = tail.iter().map(|t| t.0).max().unwrap();
        prop_assert!(most as f64 <= device as f64 * 1.05, "C up to {} of {}", most, device);
        prop_assert!(mean >= device as f64 * 0.7, "mean F {} of {}", mean, device);
        prop_assert!(mean <= device as f64, "mean F {} of {}", mean, device);
    }

    #[test]
    fn a_device_faster_than_the_maximum_never_cuts(
        max in 100 * MB..100 * GB,
        channels in 1usize..6,
    ) {
        let trace = run(max, max.saturating_mul(2), &vec![max; channels], 300);
        prop_assert!(trace.iter().all(|t| t.0 == max));
    }
}
