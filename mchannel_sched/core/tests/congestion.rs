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
    run_plant(max, device, demands, periods, false)
}

/// `run`, where `carried` caps the rate at what the device carries (a
/// device cannot go faster than it does, whatever the channels ask).
fn run_plant(
    max: u64,
    device: u64,
    demands: &[u64],
    periods: usize,
    carried: bool,
) -> Vec<(u64, u64)> {
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
        if carried {
            f = f.min(device);
        }
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
        // on average, never far above it, and not starved. The additive
        // step is 1 % of the maximum a period, 8 % of a device of an
        // eighth of it: the saw-tooth peaks up to 6 % above such a device.
        let tail = &trace[200..];
        let mean = tail.iter().map(|t| t.1 as f64).sum::<f64>() / tail.len() as f64;
        let most = tail.iter().map(|t| t.0).max().unwrap();
        prop_assert!(most as f64 <= device as f64 * 1.08, "C up to {} of {}", most, device);
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

proptest! {
    /// An overload followed by the throttled channels: the load factor
    /// must not outlive the congestion and keep cutting C. With DCTCP's g
    /// of 1/16, or cuts in periods without congestion, the component fell
    /// to 2-11 % of the device within 100 periods (what `tools/cxlsim`
    /// found against simulated queues).
    #[test]
    fn an_overload_does_not_collapse_the_capacity(
        max in 100 * MB..100 * GB,
        eighths in 1u64..=8,
        channels in 1usize..6,
        overload in 2u64..8,
    ) {
        let device = max / 8 * eighths;
        let demand = max.saturating_mul(overload) / channels as u64;
        let trace = run_plant(max, device, &vec![demand; channels], 400, true);
        // From the third period on (the first carries nothing yet).
        let least = trace[2..].iter().map(|t| t.1).min().unwrap();
        prop_assert!(
            least as f64 >= device as f64 * 0.5,
            "F fell to {} of the device's {}", least, device
        );
    }
}
