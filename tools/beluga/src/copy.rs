//! Bulk copies into and out of pool memory, with the flush discipline of
//! memory that other hosts share without cache coherence: a writer's lines
//! must reach memory before it publishes them (write back, then fence), and
//! a reader must not be served stale lines from its own cache (invalidate,
//! fence, then load).
//!
//! On x86-64 the copies move 8 bytes per access and flush each line once
//! per copy, with one fence per copy rather than one per line. Eight bytes,
//! not sixteen: a copy to or from pool memory is bound by the memory, and
//! a core issuing two 8-byte loads or one store per cycle outruns any CXL
//! link; QEMU's TCG (the testbed) emulates 16-byte SSE accesses at 0.4x
//! the bytes per second of 8-byte ones (`Documentation/cxlfabric/
//! beluga.rst`, "Copies and flushes").
//!
//! - Writer, non-temporal ([`CopyPath::nontemporal`]): the lines the copy
//!   covers whole are written with streaming stores (`movnti`), which go
//!   to memory through the write-combining buffers and evict the line from
//!   every cache level, so they need no flush; a partial first or last
//!   line is stored through the cache and written back. One `sfence`
//!   orders all of it before whatever the caller stores next (its flag).
//! - Writer, through the cache: 8-byte stores, then each line written back
//!   with [`CopyPath::write_back`], then `sfence`.
//! - Reader: `mfence` (earlier loads are done), each line invalidated with
//!   [`CopyPath::invalidate`], `mfence` (the invalidations are done), then
//!   8-byte loads.
//!
//! `clflushopt` and `clwb` are unordered between lines (unlike `clflush`,
//! which the CPU serialises), so a batch of them costs little more than
//! its fence. [`CopyPath::detected`] picks the best the CPU has (CPUID leaf
//! 7); `clflush` is the fallback every x86-64 has.
//!
//! The unaligned edges of a copy go in the widest naturally aligned
//! accesses that fit (4, 2, 1 bytes), so an aligned 8-byte word inside a
//! copy is always one access: a flag copied out with its record is never
//! torn. Every access to the mapping is volatile: the compiler may neither
//! drop, merge nor repeat a load or store of memory another host writes.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::sync::OnceLock;

/// A cache-line flush instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// `clflush`: writes the line back if dirty and invalidates it. Every
    /// x86-64 has it; executions are ordered with each other, so a batch of
    /// them runs one line at a time.
    Clflush,
    /// `clflushopt`: as `clflush`, but only a fence orders it, so a batch
    /// of lines is flushed in parallel.
    Clflushopt,
    /// `clwb`: writes the line back if dirty and may keep a clean copy.
    /// Writers only: it does not invalidate.
    Clwb,
}

impl Flush {
    fn name(self) -> &'static str {
        match self {
            Flush::Clflush => "clflush",
            Flush::Clflushopt => "clflushopt",
            Flush::Clwb => "clwb",
        }
    }
}

/// How a [`Mapping`](crate::Mapping) copies in and out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPath {
    /// Writers store the lines they cover whole with non-temporal stores.
    pub nontemporal: bool,
    /// What writers write back the lines they store through the cache with.
    pub write_back: Flush,
    /// What readers invalidate lines with before loading them (not `Clwb`).
    pub invalidate: Flush,
}

#[derive(Clone, Copy)]
struct Cpu {
    clflushopt: bool,
    clwb: bool,
}

fn cpu() -> Cpu {
    static CPU: OnceLock<Cpu> = OnceLock::new();
    *CPU.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__cpuid, __cpuid_count};
            if __cpuid(0).eax >= 7 {
                let ebx = __cpuid_count(7, 0).ebx;
                return Cpu {
                    clflushopt: ebx & (1 << 23) != 0,
                    clwb: ebx & (1 << 24) != 0,
                };
            }
        }
        Cpu {
            clflushopt: false,
            clwb: false,
        }
    })
}

impl CopyPath {
    /// Cached stores and `clflush` on both sides: what every x86-64 can
    /// run (and the byte-for-byte discipline of the first version, with
    /// wide accesses).
    pub const FALLBACK: CopyPath = CopyPath {
        nontemporal: false,
        write_back: Flush::Clflush,
        invalidate: Flush::Clflush,
    };

    /// The best path this CPU has: non-temporal stores; `clwb`, else
    /// `clflushopt`, else `clflush` to write back; `clflushopt`, else
    /// `clflush` to invalidate. Detected once per process.
    pub fn detected() -> CopyPath {
        let cpu = cpu();
        let optimized = if cpu.clflushopt {
            Flush::Clflushopt
        } else {
            Flush::Clflush
        };
        CopyPath {
            nontemporal: cfg!(target_arch = "x86_64"),
            write_back: if cpu.clwb { Flush::Clwb } else { optimized },
            invalidate: optimized,
        }
    }

    /// The path mappings use: [`CopyPath::detected`]'s flushes, and the
    /// writer's stores that run faster here, timed once per process on a
    /// scratch buffer (as the kernel's raid6 and xor code pick their
    /// routines at boot). Every CPU measured so far streams 3.5-4x faster
    /// than it stores through the cache and writes back; QEMU's TCG
    /// emulates streaming stores at 0.65x of cached ones, and a path
    /// chosen by CPUID alone would carry the emulator's cost into every
    /// put on the testbed.
    pub fn chosen() -> CopyPath {
        static CHOSEN: OnceLock<CopyPath> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let streaming = CopyPath::detected();
            if !streaming.nontemporal {
                return streaming;
            }
            let cached = CopyPath {
                nontemporal: false,
                ..streaming
            };
            if write_ns(streaming) <= write_ns(cached) {
                streaming
            } else {
                cached
            }
        })
    }

    /// Every path this CPU can run, the one mappings use first.
    pub fn all_supported() -> Vec<CopyPath> {
        let mut out = vec![CopyPath::chosen()];
        let flushes = [Flush::Clwb, Flush::Clflushopt, Flush::Clflush];
        for nontemporal in [true, false] {
            for write_back in flushes {
                for invalidate in flushes {
                    let path = CopyPath {
                        nontemporal,
                        write_back,
                        invalidate,
                    };
                    if path.is_supported() && !out.contains(&path) {
                        out.push(path);
                    }
                }
            }
        }
        out
    }

    /// Whether this CPU has the instructions the path uses (and the path
    /// invalidates with an instruction that does invalidate).
    pub fn is_supported(&self) -> bool {
        let cpu = cpu();
        let has = |f: Flush| match f {
            Flush::Clflush => true,
            Flush::Clflushopt => cpu.clflushopt,
            Flush::Clwb => cpu.clwb,
        };
        has(self.write_back) && has(self.invalidate) && self.invalidate != Flush::Clwb
    }

    /// A short name, e.g. `nt+clwb/clflushopt` (writer's stores and
    /// write-back / reader's invalidation).
    pub fn name(&self) -> String {
        format!(
            "{}+{}/{}",
            if self.nontemporal { "nt" } else { "cached" },
            self.write_back.name(),
            self.invalidate.name()
        )
    }
}

const LINE: usize = 64;

/// The best of three timed writes of a 256 KiB scratch buffer on `path`
/// (large enough that the lines leave the first cache levels, as pool
/// writes do; about 0.1 ms natively, 1 ms under TCG).
fn write_ns(path: CopyPath) -> u128 {
    const BYTES: usize = 256 << 10;
    let src = vec![0x5au8; BYTES];
    let mut dst = vec![0u64; BYTES / 8];
    let mut best = u128::MAX;
    for _ in 0..3 {
        let start = std::time::Instant::now();
        // SAFETY: `dst` is a live, writable buffer of `BYTES` bytes, and
        // no reference to it is used during the copy; `path` is the
        // detected one or differs from it only in its stores.
        unsafe { write(dst.as_mut_ptr().cast(), &src, path) };
        best = best.min(start.elapsed().as_nanos());
    }
    std::hint::black_box(&dst);
    best
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{CopyPath, Flush, LINE};
    use std::arch::asm;
    use std::arch::x86_64::{_mm_clflush, _mm_mfence, _mm_sfence, _mm_stream_si64};

    /// Bytes per access in the body of a copy.
    const WIDE: usize = 8;

    /// Applies `how` to every line that overlaps `[start, start + len)`.
    ///
    /// # Safety
    ///
    /// The range lies in one live mapping and `how` is supported by the
    /// CPU ([`CopyPath::is_supported`]).
    unsafe fn flush_lines(start: usize, len: usize, how: Flush) {
        let end = start + len;
        let mut line = start & !(LINE - 1);
        macro_rules! each_line {
            (|$p:ident| $flush:expr) => {
                while line < end {
                    let $p = line as *const u8;
                    // SAFETY: the line overlaps the caller's mapped range
                    // (lines never straddle pages), and the caller checked
                    // that the CPU has the instruction. Flushing changes no
                    // memory contents.
                    unsafe { $flush };
                    line += LINE;
                }
            };
        }
        match how {
            Flush::Clflush => each_line!(|p| _mm_clflush(p)),
            Flush::Clflushopt => each_line!(|p| asm!(
                "clflushopt [{}]",
                in(reg) p,
                options(nostack, preserves_flags)
            )),
            Flush::Clwb => each_line!(|p| asm!(
                "clwb [{}]",
                in(reg) p,
                options(nostack, preserves_flags)
            )),
        }
    }

    /// The widest naturally aligned access at `addr`, `left` bytes
    /// before the end of a copy's edge.
    fn edge_width(addr: usize, left: usize) -> usize {
        [4, 2]
            .into_iter()
            .find(|&w| addr.is_multiple_of(w) && left >= w)
            .unwrap_or(1)
    }

    /// Stores the unaligned edge of a copy (under 8 bytes) in the widest
    /// aligned accesses that fit.
    ///
    /// # Safety
    ///
    /// `[dst, dst + src.len())` lies in one live, writable mapping.
    unsafe fn store_edge(dst: *mut u8, src: &[u8]) {
        let mut i = 0;
        while i < src.len() {
            let p = dst.wrapping_add(i);
            let w = edge_width(p as usize, src.len() - i);
            let s = &src[i..i + w];
            // SAFETY: `[p, p + w)` is inside the caller's range, and `p`
            // is aligned for the access.
            unsafe {
                match w {
                    4 => p
                        .cast::<u32>()
                        .write_volatile(u32::from_ne_bytes(s.try_into().unwrap())),
                    2 => p
                        .cast::<u16>()
                        .write_volatile(u16::from_ne_bytes(s.try_into().unwrap())),
                    _ => p.write_volatile(s[0]),
                }
            }
            i += w;
        }
    }

    /// Loads the unaligned edge of a copy (under 8 bytes) in the widest
    /// aligned accesses that fit.
    ///
    /// # Safety
    ///
    /// `[src, src + out.len())` lies in one live mapping.
    unsafe fn load_edge(src: *const u8, out: &mut [u8]) {
        let mut i = 0;
        while i < out.len() {
            let p = src.wrapping_add(i);
            let w = edge_width(p as usize, out.len() - i);
            let o = &mut out[i..i + w];
            // SAFETY: `[p, p + w)` is inside the caller's range, and `p`
            // is aligned for the access.
            unsafe {
                match w {
                    4 => o.copy_from_slice(&p.cast::<u32>().read_volatile().to_ne_bytes()),
                    2 => o.copy_from_slice(&p.cast::<u16>().read_volatile().to_ne_bytes()),
                    _ => o[0] = p.read_volatile(),
                }
            }
            i += w;
        }
    }

    /// Stores `src` at `dst` through the cache, 8 bytes at a time where
    /// `dst` is 8-byte aligned.
    ///
    /// # Safety
    ///
    /// `[dst, dst + src.len())` lies in one live, writable mapping.
    unsafe fn store(dst: *mut u8, src: &[u8]) {
        let n = src.len();
        let head = dst.align_offset(WIDE).min(n);
        let body = head + (n - head) / WIDE * WIDE;
        // SAFETY: the head is the start of the caller's range.
        unsafe { store_edge(dst, &src[..head]) };
        let mut i = head;
        while i < body {
            // SAFETY: `src[i..i + 8]` is in bounds (`i + 8 <= body <= n`),
            // and `dst + i` is inside the range and 8-byte aligned.
            unsafe {
                let v = src.as_ptr().add(i).cast::<u64>().read_unaligned();
                dst.add(i).cast::<u64>().write_volatile(v);
            }
            i += WIDE;
        }
        // SAFETY: the tail is the end of the caller's range.
        unsafe { store_edge(dst.wrapping_add(body), &src[body..]) };
    }

    /// Writes `lines` whole lines at `dst` with non-temporal stores.
    ///
    /// # Safety
    ///
    /// `dst` is 64-byte aligned, `[dst, dst + 64 * lines)` lies in one live,
    /// writable mapping, and `src` has at least `64 * lines` bytes.
    unsafe fn stream_lines(dst: *mut u8, src: *const u8, lines: usize) {
        for word in 0..lines * (LINE / WIDE) {
            // SAFETY: the word is in bounds of both buffers (caller), `d`
            // is 8-byte aligned (the lines are), and `s` may be unaligned.
            unsafe {
                let d = dst.add(word * WIDE).cast::<i64>();
                let s = src.add(word * WIDE).cast::<i64>();
                _mm_stream_si64(d, s.read_unaligned());
            }
        }
    }

    /// # Safety
    ///
    /// As [`super::write`].
    pub(super) unsafe fn write(dst: *mut u8, src: &[u8], path: CopyPath) {
        let n = src.len();
        let start = dst as usize;
        let end = start + n;
        let body_start = start.next_multiple_of(LINE);
        let body_end = end & !(LINE - 1);
        if path.nontemporal && body_start < body_end {
            let (head, body) = (body_start - start, body_end - start);
            // SAFETY: head, whole lines and tail partition the caller's
            // range; the lines start 64-byte aligned at `dst + head`.
            unsafe {
                store(dst, &src[..head]);
                stream_lines(dst.add(head), src[head..].as_ptr(), (body - head) / LINE);
                store(dst.add(body), &src[body..]);
                if head > 0 {
                    flush_lines(start, 1, path.write_back);
                }
                if body < n {
                    flush_lines(body_end, 1, path.write_back);
                }
            }
        } else {
            // SAFETY: the caller's range and path.
            unsafe {
                store(dst, src);
                flush_lines(start, n, path.write_back);
            }
        }
        // SAFETY: a fence has no preconditions. It orders the streaming
        // stores and the write-backs before every later store.
        unsafe { _mm_sfence() };
    }

    /// # Safety
    ///
    /// As [`super::read`].
    pub(super) unsafe fn read(src: *const u8, out: &mut [u8], path: CopyPath) {
        let n = out.len();
        // SAFETY: the range and the path are the caller's.
        unsafe { invalidate(src, n, path) };
        let head = src.align_offset(WIDE).min(n);
        let body = head + (n - head) / WIDE * WIDE;
        // SAFETY: the head is the start of the caller's range.
        unsafe { load_edge(src, &mut out[..head]) };
        let mut i = head;
        while i < body {
            // SAFETY: `src + i` is inside the range and 8-byte aligned, and
            // `out[i..i + 8]` is in bounds (`i + 8 <= body <= n`).
            unsafe {
                let v = src.add(i).cast::<u64>().read_volatile();
                out.as_mut_ptr().add(i).cast::<u64>().write_unaligned(v);
            }
            i += WIDE;
        }
        // SAFETY: the tail is the end of the caller's range.
        unsafe { load_edge(src.wrapping_add(body), &mut out[body..]) };
    }

    /// # Safety
    ///
    /// As [`super::write_back`].
    pub(super) unsafe fn write_back(start: *const u8, len: usize, path: CopyPath) {
        // SAFETY: the range and the path are the caller's; a fence has no
        // preconditions.
        unsafe {
            flush_lines(start as usize, len, path.write_back);
            _mm_sfence();
        }
    }

    /// # Safety
    ///
    /// As [`super::invalidate`].
    pub(super) unsafe fn invalidate(start: *const u8, len: usize, path: CopyPath) {
        // SAFETY: as in `write_back`. The first fence keeps the
        // invalidations after the loads before them (a re-check must not
        // see a line fetched early), the second keeps later loads after
        // the invalidations.
        unsafe {
            _mm_mfence();
            flush_lines(start as usize, len, path.invalidate);
            _mm_mfence();
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod portable {
    //! No cache maintenance from user space here: volatile accesses and
    //! full fences only (coherent hosts).
    use super::CopyPath;
    use std::sync::atomic::{fence, Ordering::SeqCst};

    pub(super) unsafe fn write(dst: *mut u8, src: &[u8], _: CopyPath) {
        for (i, &b) in src.iter().enumerate() {
            // SAFETY: inside the range (caller).
            unsafe { dst.add(i).write_volatile(b) };
        }
        fence(SeqCst);
    }

    pub(super) unsafe fn read(src: *const u8, out: &mut [u8], _: CopyPath) {
        fence(SeqCst);
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: inside the range (caller).
            *b = unsafe { src.add(i).read_volatile() };
        }
    }

    pub(super) unsafe fn write_back(_: *const u8, _: usize, _: CopyPath) {
        fence(SeqCst);
    }

    pub(super) unsafe fn invalidate(_: *const u8, _: usize, _: CopyPath) {
        fence(SeqCst);
    }
}

#[cfg(not(target_arch = "x86_64"))]
use portable as arch;
#[cfg(target_arch = "x86_64")]
use x86 as arch;

/// Copies `src` to `dst`, then writes it back and fences: when this
/// returns, the bytes are in memory, ordered before any later store.
///
/// # Safety
///
/// `[dst, dst + src.len())` lies in one live, writable mapping that no
/// Rust reference covers, and `path.is_supported()`.
pub(crate) unsafe fn write(dst: *mut u8, src: &[u8], path: CopyPath) {
    if !src.is_empty() {
        // SAFETY: the caller's.
        unsafe { arch::write(dst, src, path) }
    }
}

/// Invalidates `[src, src + out.len())` in this CPU's caches, fences, then
/// copies it into `out`.
///
/// # Safety
///
/// `[src, src + out.len())` lies in one live mapping that no Rust mutable
/// reference covers, and `path.is_supported()`.
pub(crate) unsafe fn read(src: *const u8, out: &mut [u8], path: CopyPath) {
    if !out.is_empty() {
        // SAFETY: the caller's.
        unsafe { arch::read(src, out, path) }
    }
}

/// Writes back the lines of `[start, start + len)` and fences: stores made
/// there before are in memory, ordered before any later store.
///
/// # Safety
///
/// The range lies in one live mapping, and `path.is_supported()`.
pub(crate) unsafe fn write_back(start: *const u8, len: usize, path: CopyPath) {
    // SAFETY: the caller's.
    unsafe { arch::write_back(start, len, path) }
}

/// Invalidates the lines of `[start, start + len)` between two fences:
/// loads made after it come from memory.
///
/// # Safety
///
/// The range lies in one live mapping, and `path.is_supported()`.
pub(crate) unsafe fn invalidate(start: *const u8, len: usize, path: CopyPath) {
    // SAFETY: the caller's.
    unsafe { arch::invalidate(start, len, path) }
}

/// One aligned store of `value`, written back and fenced.
///
/// # Safety
///
/// `dst` is 8-byte aligned in a live, writable mapping, and
/// `path.is_supported()`.
pub(crate) unsafe fn write_u64(dst: *mut u64, value: u64, path: CopyPath) {
    // SAFETY: `dst` is aligned in a live, writable mapping, and the path
    // supported (the caller's).
    unsafe {
        dst.write_volatile(value);
        write_back(dst.cast(), 8, path);
    }
}

/// One aligned load, after invalidating its line.
///
/// # Safety
///
/// `src` is 8-byte aligned in a live mapping, and `path.is_supported()`.
pub(crate) unsafe fn read_u64(src: *const u64, path: CopyPath) -> u64 {
    // SAFETY: `src` is aligned in a live mapping, and the path supported
    // (the caller's).
    unsafe {
        invalidate(src.cast(), 8, path);
        src.read_volatile()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mapping;

    const PAGE: usize = 4096;

    /// What the mapping holds in `range`, read without the copy paths.
    fn contents(map: &Mapping, range: std::ops::Range<usize>) -> Vec<u8> {
        assert!(range.end <= map.len());
        range
            // SAFETY: inside the mapping, and no other thread writes it.
            .map(|i| unsafe { map.as_ptr().add(i).read_volatile() })
            .collect()
    }

    fn pattern(seed: usize, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (seed.wrapping_mul(0x9e37_79b9) ^ i.wrapping_mul(131)) as u8 | 1)
            .collect()
    }

    #[test]
    fn detected_path_is_supported_and_clwb_never_invalidates() {
        assert!(CopyPath::detected().is_supported());
        let chosen = CopyPath::chosen();
        assert!(chosen.is_supported());
        assert_eq!(
            (chosen.write_back, chosen.invalidate),
            (
                CopyPath::detected().write_back,
                CopyPath::detected().invalidate
            )
        );
        assert!(CopyPath::FALLBACK.is_supported());
        let bad = CopyPath {
            invalidate: Flush::Clwb,
            ..CopyPath::FALLBACK
        };
        assert!(!bad.is_supported());
        let mut map = Mapping::anonymous(PAGE).unwrap();
        assert!(map.set_copy_path(bad).is_err());
        assert_eq!(map.copy_path(), CopyPath::chosen());
    }

    /// Every path, at every alignment within a line and across a page
    /// boundary, for every length 0..=300: the bytes written are those of
    /// a plain copy, the bytes around them are untouched, and a read gives
    /// them back (also from an unaligned start that spans neighbours).
    #[test]
    fn copies_match_a_plain_copy_at_every_alignment_and_length() {
        // Streaming stores and cached stores, each with the detected
        // flushes and with the clflush fallback.
        let best = CopyPath::detected();
        let paths = [
            best,
            CopyPath {
                nontemporal: !best.nontemporal,
                ..best
            },
            CopyPath {
                nontemporal: true,
                ..CopyPath::FALLBACK
            },
            CopyPath::FALLBACK,
        ];
        assert!(paths[0].nontemporal || !cfg!(target_arch = "x86_64"));
        let offsets: Vec<usize> = (0..LINE).chain(PAGE - 2 * LINE - 5..PAGE + 9).collect();
        for path in paths {
            let mut map = Mapping::anonymous(3 * PAGE).unwrap();
            map.set_copy_path(path).unwrap();
            let mut model = pattern(0, 3 * PAGE);
            map.write(0, &model).unwrap();
            assert_eq!(contents(&map, 0..3 * PAGE), model, "{}: fill", path.name());
            let mut out = vec![0u8; 300 + 2 * LINE];
            for &offset in &offsets {
                for len in 0..=300 {
                    let data = pattern(offset * 301 + len, len);
                    map.write(offset, &data).unwrap();
                    model[offset..offset + len].copy_from_slice(&data);
                    let (lo, hi) = (offset.saturating_sub(LINE), offset + len + LINE);
                    assert_eq!(
                        contents(&map, lo..hi),
                        model[lo..hi],
                        "{}: write of {len} at {offset}",
                        path.name()
                    );
                    let got = &mut out[..len];
                    map.read(offset, got).unwrap();
                    assert_eq!(got, &data[..], "{}: read of {len} at {offset}", path.name());
                    let around = &mut out[..hi - lo];
                    map.read(lo, around).unwrap();
                    assert_eq!(around, &model[lo..hi], "{}: read around", path.name());
                }
            }
            assert_eq!(contents(&map, 0..3 * PAGE), model, "{}: all", path.name());
        }
    }

    /// Words go in and out whole, on every path.
    #[test]
    fn words_on_every_path() {
        for path in CopyPath::all_supported() {
            let mut map = Mapping::anonymous(PAGE).unwrap();
            map.set_copy_path(path).unwrap();
            for (i, at) in (0..PAGE).step_by(8).enumerate() {
                map.write_u64(at, (i as u64).wrapping_mul(0x0101_0101_0101_0101))
                    .unwrap();
            }
            for (i, at) in (0..PAGE).step_by(8).enumerate() {
                let want = (i as u64).wrapping_mul(0x0101_0101_0101_0101);
                assert_eq!(map.read_u64(at).unwrap(), want, "{}", path.name());
            }
            assert!(map.read_u64(4).is_err() && map.write_u64(PAGE, 0).is_err());
        }
    }
}
