//! The device-side inclusive snoop filter (ESF's DCOH example).
//!
//! What is modelled: a fully associative buffer of `entries` lines of its
//! memory that other devices cache, each with an owner set. A coherent read
//! that misses allocates an entry; when the buffer is full a victim is chosen
//! by the policy (FIFO, LRU, LIFO, MRU or LFI) and a BISnp is sent to each of
//! its owners; the request waits until every BIRsp has come back. With
//! `invblk_max` > 1 the BISnp is an InvBlk that also clears the following
//! contiguous lines with the same owners (up to the limit). Clean evictions in
//! the requesters' caches are silent (the entry stays, as an inclusive filter
//! allows); write-backs clear the writer's ownership. Simplification: a
//! victim is taken out at once and the new line enters at once (no
//! transient states), and a BISnp racing with a fill makes the requester drop
//! the line after that access.

use crate::config::VictimPolicy;
use crate::util::FxMap;
use std::collections::BTreeSet;

/// Most lines one BISnp (InvBlk) clears.
pub const MAX_INVBLK: u32 = 4;

#[derive(Clone, Copy, Debug)]
struct Entry {
    owners: u64,
    key: (u64, u64),
}

#[derive(Clone, Debug, Default)]
pub struct SfCounters {
    pub hits: u64,
    pub misses: u64,
    pub bisnp: u64,
    pub lines_evicted: u64,
    /// Requests that waited for BIRsps, and the time they waited.
    pub waits: u64,
    pub wait_ps: u64,
}

/// Lines to invalidate at their owners: `first .. first + len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    pub first: u64,
    pub len: u32,
    pub owners: u64,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Tracked already (or room was free): go on.
    Ready,
    /// Invalidate the victim first.
    Evict(Victim),
}

#[derive(Debug)]
pub struct SnoopFilter {
    capacity: usize,
    policy: VictimPolicy,
    invblk_max: u32,
    entries: FxMap<u64, Entry>,
    order: BTreeSet<(u64, u64, u64)>,
    seq: u64,
    inserted: FxMap<u64, u64>,
    pub counters: SfCounters,
}

impl SnoopFilter {
    pub fn new(capacity: usize, policy: VictimPolicy, invblk_max: u32) -> SnoopFilter {
        SnoopFilter {
            capacity: capacity.max(1),
            policy,
            invblk_max: invblk_max.clamp(1, MAX_INVBLK),
            entries: FxMap::default(),
            order: BTreeSet::new(),
            seq: 0,
            inserted: FxMap::default(),
            counters: SfCounters::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn policy(&self) -> VictimPolicy {
        self.policy
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn remove(&mut self, line: u64) -> Option<Entry> {
        let e = self.entries.remove(&line)?;
        self.order.remove(&(e.key.0, e.key.1, line));
        Some(e)
    }

    /// A coherent read of `line` by requester `owner` (< 64).
    pub fn read(&mut self, line: u64, owner: u32) -> Lookup {
        self.seq += 1;
        let seq = self.seq;
        let bit = 1u64 << owner;
        if let Some(e) = self.entries.get_mut(&line) {
            self.counters.hits += 1;
            e.owners |= bit;
            if matches!(self.policy, VictimPolicy::Lru | VictimPolicy::Mru) {
                let old = e.key;
                e.key = (0, seq);
                self.order.remove(&(old.0, old.1, line));
                self.order.insert((0, seq, line));
            }
            return Lookup::Ready;
        }
        self.counters.misses += 1;
        let victim = if self.entries.len() >= self.capacity {
            Some(self.evict())
        } else {
            None
        };
        let key = match self.policy {
            VictimPolicy::Lfi => {
                let n = self.inserted.entry(line).or_insert(0);
                *n += 1;
                (*n, seq)
            }
            _ => (0, seq),
        };
        self.entries.insert(line, Entry { owners: bit, key });
        self.order.insert((key.0, key.1, line));
        match victim {
            Some(v) => Lookup::Evict(v),
            None => Lookup::Ready,
        }
    }

    fn evict(&mut self) -> Victim {
        let &(_, _, line) = match self.policy {
            VictimPolicy::Fifo | VictimPolicy::Lru | VictimPolicy::Lfi => self.order.first(),
            VictimPolicy::Lifo | VictimPolicy::Mru => self.order.last(),
        }
        .expect("a full filter has entries");
        let e = self.remove(line).expect("ordered entries exist");
        let mut len = 1;
        while len < self.invblk_max {
            let next = line + len as u64;
            match self.entries.get(&next) {
                Some(n) if n.owners == e.owners => {
                    self.remove(next);
                    len += 1;
                }
                _ => break,
            }
        }
        self.counters.bisnp += e.owners.count_ones() as u64;
        self.counters.lines_evicted += len as u64;
        Victim {
            first: line,
            len,
            owners: e.owners,
        }
    }

    /// A write-back of `line` by `owner`: it no longer holds the line.
    pub fn write_back(&mut self, line: u64, owner: u32) {
        if let Some(e) = self.entries.get_mut(&line) {
            e.owners &= !(1u64 << owner);
            if e.owners == 0 {
                self.remove(line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(p: VictimPolicy) -> SnoopFilter {
        let mut sf = SnoopFilter::new(3, p, 1);
        for l in [10, 20, 30] {
            assert_eq!(sf.read(l, 0), Lookup::Ready);
        }
        sf
    }

    fn victim(sf: &mut SnoopFilter, line: u64) -> u64 {
        match sf.read(line, 0) {
            Lookup::Evict(v) => v.first,
            Lookup::Ready => panic!("no eviction"),
        }
    }

    #[test]
    fn policies_pick_their_victims() {
        let mut f = fill(VictimPolicy::Fifo);
        f.read(10, 1); // a hit does not matter to FIFO
        assert_eq!(victim(&mut f, 40), 10);
        let mut f = fill(VictimPolicy::Lru);
        f.read(10, 1);
        assert_eq!(victim(&mut f, 40), 20);
        let mut f = fill(VictimPolicy::Lifo);
        f.read(30, 0);
        assert_eq!(victim(&mut f, 40), 30);
        let mut f = fill(VictimPolicy::Mru);
        f.read(10, 0);
        assert_eq!(victim(&mut f, 40), 10);
        let mut f = SnoopFilter::new(2, VictimPolicy::Lfi, 1);
        f.read(1, 0);
        f.read(2, 0);
        assert_eq!(victim(&mut f, 3), 1); // equal counts: oldest
        assert_eq!(victim(&mut f, 1), 2); // line 1 inserted twice now
        assert_eq!(victim(&mut f, 2), 3);
    }

    #[test]
    fn invblk_clears_contiguous_lines() {
        let mut f = SnoopFilter::new(4, VictimPolicy::Fifo, 3);
        for l in [5, 6, 7, 9] {
            f.read(l, 2);
        }
        match f.read(100, 2) {
            Lookup::Evict(v) => assert_eq!(
                v,
                Victim {
                    first: 5,
                    len: 3,
                    owners: 1 << 2
                }
            ),
            Lookup::Ready => panic!(),
        }
        assert_eq!(f.len(), 2);
        f.write_back(9, 2);
        assert_eq!(f.len(), 1);
    }
}
