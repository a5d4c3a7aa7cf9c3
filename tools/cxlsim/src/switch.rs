//! Switches: port-based routing (PBR) with per-port output queues.
//!
//! What is modelled: a message entering a switch pays the PCIe port delay
//! (Table III: 25 ns; every device port entered pays it, requesters' and
//! memories' too) and the switching time (Table III: 20 ns), then joins the
//! output queue of the egress port its routing picks (the queue belongs to
//! the link direction leaving that port, see `link.rs`). Routing follows the
//! interconnect layer's shortest paths, looked up by destination PBR id:
//! with several equal-cost egress ports, oblivious routing takes a fixed one
//! per (source, destination) pair, the one its requester-memory flow was
//! pinned to so the fabric's links are evenly loaded (`Routes::balance`;
//! other pairs: index (source + destination) mod count); adaptive routing
//! takes the one with the fewest messages queued or in transfer, ties going
//! to the oblivious choice.
//! Not modelled: credit-based flow control (queues are unbounded; the
//! requesters' queue capacities bound what is in flight), virtual channels,
//! cut-through.

use crate::config::{ns_to_ps, Routing, SwitchConfig};
use crate::event::Ps;
use anyhow::Result;

/// Resolved switch parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchParams {
    /// Port delay, paid on entering any device.
    pub port_ps: Ps,
    /// Switching time, paid inside switches.
    pub switching_ps: Ps,
    pub adaptive: bool,
}

impl SwitchParams {
    pub fn resolve(c: &SwitchConfig) -> Result<SwitchParams> {
        Ok(SwitchParams {
            port_ps: ns_to_ps("switch port_delay_ns", c.port_delay_ns)?,
            switching_ps: ns_to_ps("switch switching_ns", c.switching_ns)?,
            adaptive: c.routing == Routing::Adaptive,
        })
    }

    /// Ingress delay of a switch.
    pub fn switch_ingress_ps(&self) -> Ps {
        self.port_ps.saturating_add(self.switching_ps)
    }
}

/// Picks one of the equal-cost egress ports `cands` (non-empty):
/// `first(count)` is the oblivious choice's index, `load(port)` the adaptive
/// metric.
#[inline]
pub fn choose(
    cands: &[u16],
    first: impl FnOnce(usize) -> usize,
    adaptive: bool,
    mut load: impl FnMut(u16) -> usize,
) -> u16 {
    let n = cands.len();
    if n == 1 {
        return cands[0];
    }
    let first = first(n) % n;
    if !adaptive {
        return cands[first];
    }
    let mut best = cands[first];
    let mut best_load = usize::MAX;
    for k in 0..n {
        let c = cands[(first + k) % n];
        let l = load(c);
        if l < best_load {
            best_load = l;
            best = c;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oblivious_takes_its_choice_adaptive_follows_load() {
        let c = [3u16, 7];
        assert_eq!(choose(&c, |_| 0, false, |_| 0), 3);
        assert_eq!(choose(&c, |_| 1, false, |_| 0), 7);
        assert_eq!(choose(&c, |_| 0, true, |p| if p == 3 { 5 } else { 1 }), 7);
        // Ties go to the oblivious choice.
        assert_eq!(choose(&c, |_| 1, true, |_| 2), 7);
        assert_eq!(choose(&[9], |_| 0, true, |_| 0), 9);
    }

    #[test]
    fn table_iii_defaults() {
        let p = SwitchParams::resolve(&SwitchConfig::default()).unwrap();
        assert_eq!(p.port_ps, 25_000);
        assert_eq!(p.switch_ingress_ps(), 45_000);
        assert!(!p.adaptive);
    }
}
