//! Statistics: time-weighted queue occupancy, latency histograms and the
//! report types (serialised to JSON and CSV).

use crate::event::Ps;
use serde::{Deserialize, Serialize};

/// Time-weighted occupancy of a queue (integer in the core; averaged in the
/// report).
#[derive(Clone, Copy, Debug, Default)]
pub struct Occupancy {
    pub len: u32,
    pub max: u32,
    last: Ps,
    /// Sum of length x time (length-picoseconds).
    pub integral: u128,
}

impl Occupancy {
    #[inline]
    pub fn set(&mut self, now: Ps, len: u32) {
        self.integral += self.len as u128 * (now - self.last) as u128;
        self.last = now;
        self.len = len;
        self.max = self.max.max(len);
    }

    /// Brings the integral up to `now` without changing the length.
    pub fn flush(&mut self, now: Ps) {
        let len = self.len;
        self.set(now, len);
    }
}

/// Log-linear histogram of nanosecond values: exact below 128 ns, then 64
/// buckets per power of two (relative error below 1.6%).
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum_ps: u128,
    min_ps: Ps,
    max_ps: Ps,
}

const SUB: u32 = 64;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: vec![0; (2 * SUB + 58 * SUB) as usize],
            count: 0,
            sum_ps: 0,
            min_ps: Ps::MAX,
            max_ps: 0,
        }
    }
}

impl Histogram {
    fn index(ns: u64) -> usize {
        if ns < 2 * SUB as u64 {
            return ns as usize;
        }
        let e = 63 - ns.leading_zeros(); // >= 7
        let shift = e - 6; // keep 7 significant bits: 64..127
        let mant = (ns >> shift) as u32; // 64..=127
        (SUB * (shift + 1) + (mant - SUB)) as usize
    }

    /// Lower edge (ns) of bucket `i`.
    fn value(i: usize) -> u64 {
        let i = i as u32;
        if i < 2 * SUB {
            return i as u64;
        }
        let shift = i / SUB - 1;
        let mant = (i % SUB + SUB) as u64;
        mant << shift
    }

    #[inline]
    pub fn record(&mut self, ps: Ps) {
        let i = Self::index(ps / 1000).min(self.buckets.len() - 1);
        self.buckets[i] += 1;
        self.count += 1;
        self.sum_ps += ps as u128;
        self.min_ps = self.min_ps.min(ps);
        self.max_ps = self.max_ps.max(ps);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Bucket lower edge `i` (ns), clamped to the samples' [min, max]: the
    /// edge alone can lie below the smallest sample.
    fn edge_ns(&self, i: usize) -> f64 {
        (Self::value(i) as f64).clamp(self.min_ps as f64 / 1000.0, self.max_ps as f64 / 1000.0)
    }

    /// The value (ns) below which a fraction `q` of the samples fall: the
    /// lower edge of its bucket (up to 1.6 % low), never outside [min, max].
    pub fn quantile_ns(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let target = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &b) in self.buckets.iter().enumerate() {
            seen += b;
            if seen >= target {
                return self.edge_ns(i);
            }
        }
        self.max_ps as f64 / 1000.0
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ps as f64 / self.count as f64 / 1000.0
        }
    }

    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.count,
            mean_ns: self.mean_ns(),
            min_ns: if self.count == 0 {
                0.0
            } else {
                self.min_ps as f64 / 1000.0
            },
            p50_ns: self.quantile_ns(0.5),
            p90_ns: self.quantile_ns(0.9),
            p99_ns: self.quantile_ns(0.99),
            p999_ns: self.quantile_ns(0.999),
            max_ns: self.max_ps as f64 / 1000.0,
        }
    }

    /// (value ns, cumulative fraction) points of the distribution.
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let mut seen = 0u64;
        for (i, &b) in self.buckets.iter().enumerate() {
            if b > 0 {
                seen += b;
                out.push((self.edge_ns(i), seen as f64 / self.count as f64));
            }
        }
        out
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub min_ns: f64,
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub max_ns: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct OccupancySummary {
    /// Time-weighted mean length over the measurement window.
    pub mean: f64,
    /// Largest length seen during the whole run.
    pub max: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct HopLatency {
    pub hops: u32,
    pub count: u64,
    pub mean_ns: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RequesterReport {
    pub name: String,
    /// Requests completed in the window.
    pub completed: u64,
    pub reads: u64,
    pub writes: u64,
    /// Completed payload bytes per second in the window (GB/s = bytes/ns).
    pub bandwidth_gbps: f64,
    pub latency: LatencySummary,
    /// Requests in flight (the request queue).
    pub queue: OccupancySummary,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Lines the requester dropped from its cache on BISnp.
    pub lines_invalidated: u64,
    /// Time the requester was blocked by its run window, in the window.
    pub gated_ns: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct LinkReport {
    /// `from->to`.
    pub name: String,
    pub from: String,
    pub to: String,
    pub duplex: String,
    /// Fraction of the window spent serialising messages in this direction.
    pub utilization: f64,
    /// Payload (data message) bytes per ns in this direction.
    pub payload_gbps: f64,
    pub messages: u64,
    pub turnaround_ns: f64,
    /// Output queue of the sending port.
    pub queue: OccupancySummary,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct SnoopReport {
    pub policy: String,
    pub hits: u64,
    pub misses: u64,
    /// BISnp messages sent (one per owner and victim block).
    pub bisnp: u64,
    /// Entries cleared by BISnp.
    pub lines_evicted: u64,
    /// Mean time a request that needed a victim waited for its BIRsps.
    pub mean_wait_ns: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct MemoryReport {
    pub name: String,
    pub reads: u64,
    pub writes: u64,
    pub row_hit_rate: f64,
    /// Mean time an access waited for its bank.
    pub mean_bank_wait_ns: f64,
    pub snoop_filter: Option<SnoopReport>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Report {
    pub seed: u64,
    pub topology: String,
    /// Simulated time at the end of the run.
    pub sim_time_ns: f64,
    /// The steady-state measurement window, one time interval for all
    /// requesters.
    pub window_start_ns: f64,
    pub window_end_ns: f64,
    /// Why the window is not a steady-state window (the run stopped before
    /// it closed, or a requester left steady state before the others
    /// warmed up); the windowed figures are then not to be trusted.
    pub window_error: Option<String>,
    pub events: u64,
    pub requests_completed: u64,
    /// Sum of the requesters' bandwidths.
    pub aggregate_bandwidth_gbps: f64,
    /// All requests of the window.
    pub latency: LatencySummary,
    /// Mean latency by the hops (links) from requester to memory, as in
    /// ESF's figure 11 (0: local cache hits).
    pub latency_by_hops: Vec<HopLatency>,
    pub requesters: Vec<RequesterReport>,
    pub links: Vec<LinkReport>,
    pub memories: Vec<MemoryReport>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_close() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile_ns(0.5);
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.02, "{p50}");
        let p99 = h.quantile_ns(0.99);
        assert!((p99 - 9900.0).abs() / 9900.0 < 0.02, "{p99}");
        assert_eq!(h.summary().max_ns, 10_000.0);
        assert!((h.mean_ns() - 5000.5).abs() < 1e-6);
        // Every bucket's lower edge maps back to itself.
        for i in 0..2000 {
            assert_eq!(Histogram::index(Histogram::value(i)), i);
        }
    }

    #[test]
    fn percentiles_stay_within_min_and_max() {
        // 1007.9 ns falls in the bucket [1000, 1008): its lower edge is
        // below every sample.
        let mut h = Histogram::default();
        for _ in 0..3 {
            h.record(1_007_900);
        }
        let s = h.summary();
        assert_eq!((s.min_ns, s.max_ns), (1007.9, 1007.9));
        for p in [s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns] {
            assert_eq!(p, 1007.9, "{s:?}");
        }
        // Spread samples: every percentile in [min, max] and in order.
        let mut h = Histogram::default();
        for v in [100_500, 130_700, 999_999, 5_000_300, 77_000_001] {
            h.record(v);
        }
        let s = h.summary();
        let ps = [s.min_ns, s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.max_ns];
        assert!(ps.windows(2).all(|w| w[0] <= w[1]), "{s:?}");
        assert!(h.cdf().iter().all(|&(v, _)| v >= s.min_ns && v <= s.max_ns));
    }

    #[test]
    fn occupancy_integrates_over_time() {
        let mut o = Occupancy::default();
        o.set(0, 2);
        o.set(10, 4);
        o.flush(20);
        assert_eq!(o.integral, 2 * 10 + 4 * 10);
        assert_eq!(o.max, 4);
    }
}
