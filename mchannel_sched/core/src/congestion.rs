//! Congestion signals: the `L` of Eq. 6, behind one interface.
//!
//! A component's signal is either injected (a fixed share of overloaded
//! responses, as testbed hardware or an operator gives it) or produced by
//! a model of a device that really delivers `capacity` bytes per second,
//! whatever the configured maximum says. The model stands in for the CXL
//! 3.2 device-load field (§4.4): responses are marked overloaded once the
//! device's queue builds, which starts at [`MODEL_KNEE_PPM`] of its
//! throughput and covers every response at full throughput:
//!
//! ```text
//! L = 0                                   F <= knee * T
//! L = (F - knee * T) / ((1 - knee) * T)   in between (capped at 1)
//! ```
//!
//! With AIMD (Algorithm 1 lines 21-26) the capacity estimate C then settles
//! where `l` crosses delta, just under T.

use super::fixed::{mul_div, Q32};

/// Where the model's queue starts to build: 90 % of its throughput.
pub const MODEL_KNEE_PPM: u32 = 900_000;

/// A component's source of `L`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Congestion {
    /// A fixed signal, at most one.
    Injected(Q32),
    /// A device that delivers `capacity` bytes per second (> 0).
    Model {
        /// What the device really delivers, T, in bytes per second.
        capacity: u64,
    },
}

impl Default for Congestion {
    fn default() -> Congestion {
        Congestion::Injected(Q32::ZERO)
    }
}

impl Congestion {
    /// `L` for a component that carried `rate` bytes per second in the
    /// last period; at most one.
    pub fn signal(&self, rate: u64) -> Q32 {
        match *self {
            Congestion::Injected(l) => l.min(Q32::ONE),
            Congestion::Model { capacity } => model_signal(capacity, rate),
        }
    }
}

fn model_signal(capacity: u64, rate: u64) -> Q32 {
    let knee = mul_div(capacity, u64::from(MODEL_KNEE_PPM), 1_000_000);
    let span = capacity.saturating_sub(knee);
    if rate <= knee {
        Q32::ZERO
    } else if span == 0 {
        // No throughput at all (INJECT takes a model of zero for no model).
        Q32::ONE
    } else {
        Q32::ratio(rate.saturating_sub(knee), span).min(Q32::ONE)
    }
}
