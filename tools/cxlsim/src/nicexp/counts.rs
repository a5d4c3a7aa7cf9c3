//! The per-frame transaction counts the device model reports (the
//! `cost-*` series of `tests/vm/bench/40_cxlnic.sh`): what the replay
//! takes as input. Counts are decimal (a count per frame over a run);
//! they become integer thousandths once, with range checks, and a
//! frame's share of them is spread over the frames without rounding
//! drift (`per_frame`).
//!
//! JSON: `{"type1": {...}, "type2": {...}, "pcie": {...}}`, each with
//! every field of [`Counts`] but the optional KVS ones. Anything missing,
//! unknown, negative or above [`MAX_PER_FRAME`] is refused.
#![deny(clippy::arithmetic_side_effects)]

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// Largest count of a transaction on a frame's path (descriptor reads,
/// head stores, interrupts, doorbells, KVS lookups). The device model
/// reports at most about one of each; 64 keeps a replayed frame's steps
/// (and the frames a slow one overlaps) small.
pub const MAX_PER_FRAME: f64 = 64.0;
/// Largest count of empty polls per frame (they are traffic, not
/// replayed one by one; a device idle for seconds between frames polls
/// millions of times).
pub const MAX_POLLS_PER_FRAME: f64 = 1e9;

/// Per-frame counts of one mode, as the device model reports them:
/// descriptor reads, empty polls and doorbells per frame sent; head
/// stores and interrupts per frame sent or received.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    pub desc_reads_per_frame: f64,
    pub empty_polls_per_frame: f64,
    pub head_writes_per_frame: f64,
    pub interrupts_per_frame: f64,
    pub doorbells_per_frame: f64,
    /// KVS lookups per request served from the NIC's memory and from the
    /// host's (absent: the workload's computed hit ratio).
    #[serde(default)]
    pub kvs_hits_per_request: Option<f64>,
    #[serde(default)]
    pub kvs_misses_per_request: Option<f64>,
}

/// The three modes' counts.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModeCounts {
    pub type1: Counts,
    pub type2: Counts,
    pub pcie: Counts,
}

impl Default for ModeCounts {
    /// The device model's documented per-frame costs
    /// (`Documentation/cxlfabric/cxlnic.rst`, "Coherent transactions per
    /// frame": medians of 2000 UDP request/responses per mode).
    fn default() -> Self {
        let c = |polls: f64, doorbells: f64| Counts {
            desc_reads_per_frame: 1.0,
            empty_polls_per_frame: polls,
            head_writes_per_frame: 1.0,
            interrupts_per_frame: 0.5,
            doorbells_per_frame: doorbells,
            kvs_hits_per_request: None,
            kvs_misses_per_request: None,
        };
        ModeCounts {
            type1: c(225.0, 0.0),
            type2: c(230.0, 0.0),
            pcie: c(0.0, 1.0),
        }
    }
}

/// A count in thousandths per frame (or per request).
pub type Milli = u64;

/// Checked counts of one mode, in thousandths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Checked {
    pub desc_reads: Milli,
    pub empty_polls: Milli,
    pub head_writes: Milli,
    pub interrupts: Milli,
    pub doorbells: Milli,
    pub kvs_hits: Option<Milli>,
    pub kvs_misses: Option<Milli>,
}

fn milli(what: &str, v: f64, max: f64) -> Result<Milli> {
    if !v.is_finite() {
        bail!("{what}: {v} is not a number");
    }
    if v < 0.0 {
        bail!("{what}: {v} is negative");
    }
    if v > max {
        bail!("{what}: {v} is above the largest count accepted ({max})");
    }
    // In range: v * 1000 <= 1e12, exact enough and far below u64::MAX.
    Ok((v * 1000.0).round() as Milli)
}

impl Counts {
    pub fn check(&self, mode: &str) -> Result<Checked> {
        let f = |name: &str, v: f64, max: f64| milli(&format!("{mode}.{name}"), v, max);
        let kvs = |name: &str, v: Option<f64>| v.map(|v| f(name, v, MAX_PER_FRAME)).transpose();
        let c = Checked {
            desc_reads: f(
                "desc_reads_per_frame",
                self.desc_reads_per_frame,
                MAX_PER_FRAME,
            )?,
            empty_polls: f(
                "empty_polls_per_frame",
                self.empty_polls_per_frame,
                MAX_POLLS_PER_FRAME,
            )?,
            head_writes: f(
                "head_writes_per_frame",
                self.head_writes_per_frame,
                MAX_PER_FRAME,
            )?,
            interrupts: f(
                "interrupts_per_frame",
                self.interrupts_per_frame,
                MAX_PER_FRAME,
            )?,
            doorbells: f(
                "doorbells_per_frame",
                self.doorbells_per_frame,
                MAX_PER_FRAME,
            )?,
            kvs_hits: kvs("kvs_hits_per_request", self.kvs_hits_per_request)?,
            kvs_misses: kvs("kvs_misses_per_request", self.kvs_misses_per_request)?,
        };
        if c.kvs_hits.is_some() != c.kvs_misses.is_some() {
            bail!("{mode}: kvs_hits_per_request and kvs_misses_per_request go together");
        }
        Ok(c)
    }
}

impl ModeCounts {
    /// Reads and checks a counts file.
    pub fn from_json(text: &str) -> Result<ModeCounts> {
        let c: ModeCounts = serde_json::from_str(text).context("per-frame counts (JSON)")?;
        c.check()?;
        Ok(c)
    }

    pub fn load(path: &std::path::Path) -> Result<ModeCounts> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::from_json(&text).with_context(|| format!("in {}", path.display()))
    }

    pub fn check(&self) -> Result<[Checked; 3]> {
        Ok([
            self.type1.check("type1")?,
            self.type2.check("type2")?,
            self.pcie.check("pcie")?,
        ])
    }
}

/// How many of a count `c` (thousandths per frame) frame `i` carries:
/// floor((i + 1) c / 1000) - floor(i c / 1000), so any `n` frames in a
/// row carry the count's share within one. `None` on overflow (frames
/// and counts are bounded far below it).
pub fn per_frame(c: Milli, i: u64) -> Option<u64> {
    let before = i.checked_mul(c)? / 1000;
    let after = i.checked_add(1)?.checked_mul(c)? / 1000;
    after.checked_sub(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_frame_spreads_fractions_exactly() {
        for c in [0, 250, 500, 1000, 1500, 225_000] {
            let total: u64 = (0..1000).map(|i| per_frame(c, i).unwrap()).sum();
            assert_eq!(total, c, "1000 frames carry the count's thousandths");
        }
        assert_eq!(per_frame(u64::MAX, 2), None);
    }
}
