//! A non-coherent pool shared by several hosts, for the tests (host and
//! KUnit alike; no allocation: it lives in a buffer the caller gives).
//!
//! Each host has its own cache of 64-byte lines over the pool memory. A
//! read fills a line from memory if it is not cached and then reads the
//! cached copy, however old; a write fills the line the same way and
//! dirties it. Only [`PoolMem::write_back`] copies dirty lines to memory,
//! and only [`PoolMem::invalidate`] drops a cached copy (writing a dirty
//! one back first, as clflush does). So a missing write-back hides a
//! write from the other hosts, and a missing invalidate shows a stale
//! line: the protocol tests fail.
//!
//! The model also records which host first wrote each line back: a line
//! written back by a second host is a [`Model::conflicts`], which the
//! layout promises never happens.

use core::cell::{RefCell, RefMut};

use super::layout::LINE;
use super::mem::{OutOfBounds, PoolMem};

const VALID: u8 = 1;
const DIRTY: u8 = 2;
const HOSTS: usize = super::layout::HOSTS_MAX as usize;

struct Inner<'a> {
    mem: &'a mut [u8],
    caches: [&'a mut [u8]; HOSTS],
    // Per host, per line: VALID | DIRTY.
    states: [&'a mut [u8]; HOSTS],
    // Per line: 0, or 1 + the host that first wrote it back.
    writer: &'a mut [u8],
    conflicts: u32,
    dirty_invalidates: u32,
}

/// The pool and its hosts' caches.
pub struct Model<'a> {
    hosts: usize,
    len: usize,
    inner: RefCell<Inner<'a>>,
}

/// One host's view of a [`Model`]: its [`PoolMem`].
pub struct HostMem<'m, 'a> {
    model: &'m Model<'a>,
    host: usize,
}

/// The first `n` bytes of `buf`, and the rest.
fn take(buf: &mut [u8], n: usize) -> Option<(&mut [u8], &mut [u8])> {
    if buf.len() < n {
        return None;
    }
    Some(buf.split_at_mut(n))
}

/// Copies `s` into `d` (equal lengths; a zip cannot panic).
fn copy(d: &mut [u8], s: &[u8]) {
    d.iter_mut().zip(s).for_each(|(d, s)| *d = *s);
}

fn lines_of(len: usize) -> usize {
    len.div_ceil(LINE as usize)
}

impl<'a> Model<'a> {
    /// Bytes a model of `len` pool bytes and `hosts` hosts needs.
    pub fn bytes_needed(len: usize, hosts: usize) -> usize {
        let lines = lines_of(len);
        let len = lines.saturating_mul(LINE as usize);
        len.saturating_mul(hosts.saturating_add(1))
            .saturating_add(lines.saturating_mul(hosts.saturating_add(1)))
    }

    /// A model of `len` zeroed pool bytes shared by `hosts` hosts, in
    /// `buf` (at least [`Model::bytes_needed`]); `None` if it does not fit
    /// or `hosts` is not in `1..=HOSTS_MAX`.
    pub fn new(buf: &'a mut [u8], len: usize, hosts: usize) -> Option<Model<'a>> {
        if hosts == 0 || hosts > HOSTS {
            return None;
        }
        let lines = lines_of(len);
        let bytes = lines.checked_mul(LINE as usize)?;
        let (mem, mut rest) = take(buf, bytes)?;
        let mut caches: [&'a mut [u8]; HOSTS] = Default::default();
        let mut states: [&'a mut [u8]; HOSTS] = Default::default();
        for (c, s) in caches.iter_mut().zip(states.iter_mut()).take(hosts) {
            let (cache, r) = take(rest, bytes)?;
            let (state, r) = take(r, lines)?;
            state.fill(0);
            (*c, *s, rest) = (cache, state, r);
        }
        let (writer, _) = take(rest, lines)?;
        mem.fill(0);
        writer.fill(0);
        Some(Model {
            hosts,
            len: bytes,
            inner: RefCell::new(Inner {
                mem,
                caches,
                states,
                writer,
                conflicts: 0,
                dirty_invalidates: 0,
            }),
        })
    }

    /// Host `host`'s access (`host` below the model's hosts).
    pub fn host(&self, host: usize) -> HostMem<'_, 'a> {
        HostMem {
            model: self,
            host: host.min(self.hosts.saturating_sub(1)),
        }
    }

    /// The model's state. Nothing here calls out while it holds it, so
    /// the borrow cannot fail; where it would, the access fails (no
    /// panic path: 6.12's objtool does not know `RefCell`'s).
    fn inner(&self) -> Result<RefMut<'_, Inner<'a>>, OutOfBounds> {
        self.inner.try_borrow_mut().map_err(|_| OutOfBounds)
    }

    /// Lines written back by more than one host.
    pub fn conflicts(&self) -> u32 {
        self.inner().map_or(u32::MAX, |i| i.conflicts)
    }

    /// Invalidates that found a dirty line (a host dropping a line it
    /// wrote but did not write back: a bug unless it meant to).
    pub fn dirty_invalidates(&self) -> u32 {
        self.inner().map_or(u32::MAX, |i| i.dirty_invalidates)
    }

    /// Writes the pool memory directly (formatting, or a hostile peer
    /// that ignores caches); no host's cache sees it until it invalidates.
    pub fn poke(&self, off: u64, data: &[u8]) -> Result<(), OutOfBounds> {
        let mut i = self.inner()?;
        let at = usize::try_from(off).map_err(|_| OutOfBounds)?;
        let d = i
            .mem
            .get_mut(at..at.checked_add(data.len()).ok_or(OutOfBounds)?)
            .ok_or(OutOfBounds)?;
        copy(d, data);
        Ok(())
    }

    /// Reads the pool memory directly.
    pub fn peek(&self, off: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        let i = self.inner()?;
        let at = usize::try_from(off).map_err(|_| OutOfBounds)?;
        let s = i
            .mem
            .get(at..at.checked_add(buf.len()).ok_or(OutOfBounds)?)
            .ok_or(OutOfBounds)?;
        copy(buf, s);
        Ok(())
    }

    /// Evicts host `host`'s line `line` as a cache may at any time: a
    /// dirty line is written back, a clean one dropped.
    pub fn evict(&self, host: usize, line: usize) {
        let Ok(mut i) = self.inner() else {
            return;
        };
        if host < self.hosts && line < lines_of(self.len) {
            i.write_back_line(host, line);
            if let Some(s) = i.states[host].get_mut(line) {
                *s = 0;
            }
        }
    }

    /// Lines covering `off..off + len`, or `OutOfBounds`.
    fn lines(&self, off: u64, len: u64) -> Result<core::ops::Range<usize>, OutOfBounds> {
        let end = off.checked_add(len).ok_or(OutOfBounds)?;
        if end > self.len as u64 {
            return Err(OutOfBounds);
        }
        let first = usize::try_from(off / LINE).map_err(|_| OutOfBounds)?;
        let last = usize::try_from(end.div_ceil(LINE)).map_err(|_| OutOfBounds)?;
        Ok(first..last)
    }
}

impl Inner<'_> {
    fn fill(&mut self, host: usize, line: usize) {
        let l = LINE as usize;
        let Some(state) = self.states[host].get(line).copied() else {
            return;
        };
        if state & VALID == 0 {
            let at = line.saturating_mul(l);
            if let (Some(c), Some(m)) = (
                self.caches[host].get_mut(at..at.saturating_add(l)),
                self.mem.get(at..at.saturating_add(l)),
            ) {
                copy(c, m);
            }
            if let Some(s) = self.states[host].get_mut(line) {
                *s = VALID;
            }
        }
    }

    fn write_back_line(&mut self, host: usize, line: usize) {
        let l = LINE as usize;
        let Some(state) = self.states[host].get(line).copied() else {
            return;
        };
        if state & DIRTY != 0 {
            let at = line.saturating_mul(l);
            if let (Some(c), Some(m)) = (
                self.caches[host].get(at..at.saturating_add(l)),
                self.mem.get_mut(at..at.saturating_add(l)),
            ) {
                copy(m, c);
            }
            if let Some(s) = self.states[host].get_mut(line) {
                *s = VALID;
            }
            if let Some(w) = self.writer.get_mut(line) {
                let me = u8::try_from(host).unwrap_or(u8::MAX).saturating_add(1);
                if *w == 0 {
                    *w = me;
                } else if *w != me {
                    self.conflicts = self.conflicts.saturating_add(1);
                }
            }
        }
    }
}

impl PoolMem for HostMem<'_, '_> {
    fn len(&self) -> u64 {
        self.model.len as u64
    }

    fn read(&self, off: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        let lines = self.model.lines(off, buf.len() as u64)?;
        let mut i = self.model.inner()?;
        for line in lines {
            i.fill(self.host, line);
        }
        let at = usize::try_from(off).map_err(|_| OutOfBounds)?;
        let s = i.caches[self.host]
            .get(at..at.saturating_add(buf.len()))
            .ok_or(OutOfBounds)?;
        copy(buf, s);
        Ok(())
    }

    fn write(&self, off: u64, data: &[u8]) -> Result<(), OutOfBounds> {
        let lines = self.model.lines(off, data.len() as u64)?;
        let mut i = self.model.inner()?;
        for line in lines {
            i.fill(self.host, line);
            if let Some(s) = i.states[self.host].get_mut(line) {
                *s = VALID | DIRTY;
            }
        }
        let at = usize::try_from(off).map_err(|_| OutOfBounds)?;
        let d = i.caches[self.host]
            .get_mut(at..at.saturating_add(data.len()))
            .ok_or(OutOfBounds)?;
        copy(d, data);
        Ok(())
    }

    fn write_back(&self, off: u64, len: u64) -> Result<(), OutOfBounds> {
        let lines = self.model.lines(off, len)?;
        let mut i = self.model.inner()?;
        for line in lines {
            i.write_back_line(self.host, line);
        }
        Ok(())
    }

    fn invalidate(&self, off: u64, len: u64) -> Result<(), OutOfBounds> {
        let lines = self.model.lines(off, len)?;
        let mut i = self.model.inner()?;
        for line in lines {
            if i.states[self.host]
                .get(line)
                .is_some_and(|s| s & DIRTY != 0)
            {
                i.dirty_invalidates = i.dirty_invalidates.saturating_add(1);
            }
            i.write_back_line(self.host, line);
            if let Some(s) = i.states[self.host].get_mut(line) {
                *s = 0;
            }
        }
        Ok(())
    }
}
