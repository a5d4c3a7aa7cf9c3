//! Memory endpoints: a device controller plus a simple bank model of DRAM.
//!
//! What is modelled: the controller's processing (Table III device controller
//! time, 40 ns) as a pipelined delay, then one of `banks` DRAM banks (line
//! interleaved) that serves one access at a time, first come first served,
//! with an open-row policy: an access to the bank's open row takes
//! `row_hit_ns`, any other `row_miss_ns` (precharge + activate + read). What
//! is not: refresh, bus turnaround inside the DIMM, scheduling reorders
//! (ESF integrates DRAMsim3 for that). Addresses are device (DPA) line numbers
//! after de-interleaving.

use crate::config::{ns_to_ps, MemoryConfig};
use crate::event::Ps;
use anyhow::{bail, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryParams {
    pub controller_ps: Ps,
    pub banks: u32,
    pub lines_per_row: u64,
    pub row_hit_ps: Ps,
    pub row_miss_ps: Ps,
}

impl MemoryParams {
    pub fn resolve(c: &MemoryConfig, line_bytes: u32) -> Result<MemoryParams> {
        if c.banks == 0 || c.banks > 1 << 16 {
            bail!("memory banks = {}: between 1 and 65536", c.banks);
        }
        if c.row_bytes < line_bytes as u64 || c.row_bytes % line_bytes as u64 != 0 {
            bail!(
                "memory row_bytes = {}: must be a multiple of the line size {line_bytes}",
                c.row_bytes
            );
        }
        let row_hit_ps = ns_to_ps("memory row_hit_ns", c.row_hit_ns)?;
        let row_miss_ps = ns_to_ps("memory row_miss_ns", c.row_miss_ns)?;
        if row_miss_ps < row_hit_ps {
            bail!("memory row_miss_ns must be at least row_hit_ns");
        }
        Ok(MemoryParams {
            controller_ps: ns_to_ps("memory controller_ns", c.controller_ns)?,
            banks: c.banks,
            lines_per_row: c.row_bytes / line_bytes as u64,
            row_hit_ps,
            row_miss_ps,
        })
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Bank {
    free_at: Ps,
    open_row: u64,
    open: bool,
}

#[derive(Clone, Debug, Default)]
pub struct MemCounters {
    pub reads: u64,
    pub writes: u64,
    pub row_hits: u64,
    pub row_misses: u64,
    /// Time accesses waited for a busy bank (after the controller).
    pub bank_wait_ps: u64,
}

#[derive(Debug)]
pub struct Dram {
    params: MemoryParams,
    banks: Vec<Bank>,
    pub counters: MemCounters,
}

impl Dram {
    pub fn new(params: MemoryParams) -> Dram {
        Dram {
            banks: vec![Bank::default(); params.banks as usize],
            params,
            counters: MemCounters::default(),
        }
    }

    /// An access to device line `line` arriving at the controller at `now`:
    /// returns when its data is ready.
    #[inline]
    pub fn access(&mut self, now: Ps, line: u64, write: bool) -> Ps {
        let p = &self.params;
        let b = (line % p.banks as u64) as usize;
        let row = line / p.banks as u64 / p.lines_per_row;
        let bank = &mut self.banks[b];
        let ready = now.saturating_add(p.controller_ps);
        let start = ready.max(bank.free_at);
        let hit = bank.open && bank.open_row == row;
        let service = if hit { p.row_hit_ps } else { p.row_miss_ps };
        bank.open = true;
        bank.open_row = row;
        bank.free_at = start.saturating_add(service);
        let c = &mut self.counters;
        c.bank_wait_ps = c.bank_wait_ps.saturating_add(start - ready);
        if write {
            c.writes += 1;
        } else {
            c.reads += 1;
        }
        if hit {
            c.row_hits += 1;
        } else {
            c.row_misses += 1;
        }
        bank.free_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banks_serialise_and_rows_hit() {
        let p = MemoryParams::resolve(&MemoryConfig::default(), 64).unwrap();
        let mut d = Dram::new(p);
        // Table III controller 40 ns + row miss 50 ns.
        assert_eq!(d.access(0, 0, false), 90_000);
        // Same bank (line 64 with 64 banks), same row: waits, then a hit.
        assert_eq!(d.access(0, 64, false), 108_000);
        // Another bank is independent.
        assert_eq!(d.access(0, 1, false), 90_000);
        assert_eq!(d.counters.row_hits, 1);
    }
}
