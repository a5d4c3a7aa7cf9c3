//! `cxlf-contract beluga-fuzz`: beluga_dax tried as an attacker would, for a
//! bounded time, from racing threads (optionally as an unprivileged uid):
//! ioctls with real and random command numbers, random and structured
//! arguments and bad pointers (NULL, unmapped, kernel, read-only, across a
//! guard page); `mmap` of random ranges with random flags and protections;
//! `munmap`, `mremap` (shrink, grow, move, DONTUNMAP), `mprotect` and
//! `madvise` of live pool mappings; touches through `process_vm_readv` /
//! `writev` (errors, never signals, in this process); closing and
//! reopening the device; forked children that touch mappings directly
//! (they may die of SIGBUS or SIGSEGV). The kernel must survive (the
//! harness checks its log) and keep its promises, so these are fatal:
//! FORMAT or FORCE_RECLAIM succeeding for a non-root uid, an ALLOC that
//! succeeds without being able to return its handle, a new object that
//! does not read as zeros or does not read back what was written, and a
//! FREE of the fuzzer's own object at the end failing with anything but
//! ENOENT. An errno outside the documented ones is only logged.
//!
//! As root it never issues FORMAT or FORCE_RECLAIM (they would destroy a
//! pool other scenarios use) and frees only objects it allocated itself.
//! Each thread's choices follow a xorshift generator seeded from `--seed`
//! and the thread number (timing still makes runs differ).

use anyhow::{bail, Context, Result};
use beluga::{abi, Mapping, Pool, Sharing};
use nix::errno::Errno;
use nix::libc;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
const PAGE: usize = 4096;
/// Live mappings per thread.
const MAX_MAPS: usize = 8;
/// Objects a thread allocated and has not freed.
const MAX_OBJECTS: usize = 8;
/// Mappings grow no further than this.
const MAX_MAP_BYTES: usize = 32 << 20;
/// Uses the thread's file holds before it is closed and reopened.
const MAX_HELD: usize = 16;
/// Valid names the threads share (so OPEN, EEXIST and FREE meet).
const NAMES: u64 = 8;
/// Logged unexpected results, at most.
const MAX_LOGGED: u64 = 32;
/// How long a forked child may take.
const CHILD_TIMEOUT: Duration = Duration::from_secs(10);

/// xorshift64*: small, deterministic per seed, no dependencies.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Rng {
        // splitmix64 of both, so nearby seeds give unrelated streams.
        let mut z = seed
            .wrapping_add(stream.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Rng(z | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

type Key = (u32, u64);

/// What all threads share.
struct Shared {
    dev: PathBuf,
    root: bool,
    seed: u64,
    deadline: Instant,
    device_size: u64,
    stop: AtomicBool,
    fatal: Mutex<Vec<String>>,
    /// Objects some thread allocated and nobody is known to have freed.
    registry: Mutex<BTreeSet<Key>>,
    unexpected: AtomicU64,
}

impl Shared {
    fn fatal(&self, what: String) {
        eprintln!("FATAL {what}");
        self.fatal.lock().unwrap().push(what);
        self.stop.store(true, Ordering::SeqCst);
    }

    fn unexpected(&self, what: String) {
        if self.unexpected.fetch_add(1, Ordering::Relaxed) < MAX_LOGGED {
            eprintln!("unexpected: {what}");
        }
    }
}

fn errno_label(e: i32) -> String {
    format!("{:?}", Errno::from_raw(e))
}

fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Errors `beluga_dax` documents for its ioctls (and the generic ones).
fn documented(e: i32) -> bool {
    [
        libc::EINVAL,
        libc::EFAULT,
        libc::ENOTTY,
        libc::ENOENT,
        libc::EEXIST,
        libc::ENOSPC,
        libc::EPERM,
        libc::EACCES,
        libc::ENXIO,
        libc::ESTALE,
        libc::ETIMEDOUT,
        libc::ENODEV,
        libc::ENOMEM,
        libc::EBUSY,
        libc::EINTR,
        libc::EAGAIN,
    ]
    .contains(&e)
}

fn cmd_name(cmd: u32) -> &'static str {
    match cmd {
        abi::GET_INFO => "ioctl GET_INFO",
        abi::WAIT_READY => "ioctl WAIT_READY",
        abi::ALLOC => "ioctl ALLOC",
        abi::OPEN => "ioctl OPEN",
        abi::FREE => "ioctl FREE",
        abi::LIST => "ioctl LIST",
        abi::FORMAT => "ioctl FORMAT",
        abi::FORCE_RECLAIM => "ioctl FORCE_RECLAIM",
        abi::SET_MAP_MODE => "ioctl SET_MAP_MODE",
        _ => "ioctl random",
    }
}

/// Where an ioctl's argument points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arg {
    Buffer,
    Null,
    One,
    /// Below `mmap_min_addr`: never mapped.
    LowPage,
    /// Above the user address space.
    PastUser,
    Kernel,
    /// A `PROT_NONE` page this thread keeps.
    NoAccess,
    /// A read-only page holding well-formed arguments.
    ReadOnly,
    /// 16 bytes before a guard page: the copy faults part way.
    Straddle,
}

const BAD_ARGS: &[Arg] = &[
    Arg::Null,
    Arg::One,
    Arg::LowPage,
    Arg::PastUser,
    Arg::Kernel,
    Arg::NoAccess,
    Arg::ReadOnly,
    Arg::ReadOnly,
    Arg::Straddle,
];

/// Pages for ioctl arguments: `[0, 4)` a read-write buffer (16 KiB, more
/// than any command's size field), 4 a guard (`PROT_NONE`), 5 read-only,
/// 6 `PROT_NONE`.
struct Scratch {
    base: *mut u8,
}

const SCRATCH_PAGES: usize = 7;
const BUFFER_BYTES: usize = 4 * PAGE;
/// Bytes of the buffer refilled with random data before each call.
const ARG_BYTES: usize = 512;

impl Scratch {
    fn new() -> Result<Scratch> {
        // SAFETY: a new private anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SCRATCH_PAGES * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error()).context("mmap scratch");
        }
        let s = Scratch { base: p.cast() };
        for (page, prot) in [
            (4, libc::PROT_NONE),
            (5, libc::PROT_READ),
            (6, libc::PROT_NONE),
        ] {
            s.protect(page, prot)?;
        }
        Ok(s)
    }

    fn protect(&self, page: usize, prot: libc::c_int) -> Result<()> {
        // SAFETY: a page of our own mapping.
        if unsafe { libc::mprotect(self.base.add(page * PAGE).cast(), PAGE, prot) } < 0 {
            return Err(io::Error::last_os_error()).context("mprotect scratch");
        }
        Ok(())
    }

    fn buffer(&mut self) -> &mut [u8] {
        // SAFETY: the first pages are ours and read-write; `&mut self`
        // keeps this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.base, BUFFER_BYTES) }
    }

    /// Writes `bytes` at the start of the read-only page.
    fn fill_read_only(&self, bytes: &[u8]) -> Result<()> {
        self.protect(5, libc::PROT_READ | libc::PROT_WRITE)?;
        // SAFETY: the page is writable for the copy and holds `bytes`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(5 * PAGE), bytes.len())
        };
        self.protect(5, libc::PROT_READ)
    }

    fn ptr(&self, arg: Arg) -> usize {
        let base = self.base as usize;
        match arg {
            Arg::Buffer => base,
            Arg::Null => 0,
            Arg::One => 1,
            Arg::LowPage => 0x1000,
            Arg::PastUser => 0x7fff_ffff_f000,
            Arg::Kernel => 0xffff_8880_0000_0000,
            Arg::NoAccess => base + 6 * PAGE,
            Arg::ReadOnly => base + 5 * PAGE,
            Arg::Straddle => base + 4 * PAGE - 16,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: our mapping, not used after this.
        unsafe { libc::munmap(self.base.cast(), SCRATCH_PAGES * PAGE) };
    }
}

/// What an ioctl's well-formed part said, to judge its result.
#[derive(Default)]
struct Prepared {
    unnamed_alloc: bool,
    alloc_size: u64,
    free: Option<Key>,
    map_mode: Option<u32>,
}

/// A mapping this thread made and alone may unmap. Ranges are only ever
/// replaced atomically (`MAP_FIXED` over our own range) or given up
/// whole, so no other thread's mapping can appear inside one.
#[derive(Clone, Copy, Debug)]
struct Live {
    addr: usize,
    len: usize,
    prot: libc::c_int,
}

type Counts = BTreeMap<&'static str, BTreeMap<String, u64>>;

struct Worker<'a> {
    sh: &'a Shared,
    id: usize,
    rng: Rng,
    pool: Pool,
    /// This file's uses (what it may map).
    held: Vec<abi::ObjectHandle>,
    /// Objects this thread allocated and has not freed.
    owned: Vec<Key>,
    maps: Vec<Live>,
    /// Objects of the last LIST, as FREE targets.
    listed: Vec<Key>,
    scratch: Scratch,
    io: Vec<u8>,
    counts: Counts,
    ops: u64,
}

fn key(h: &abi::ObjectHandle) -> Key {
    (h.index, h.serial)
}

impl<'a> Worker<'a> {
    fn new(sh: &'a Shared, id: usize) -> Result<Worker<'a>> {
        Ok(Worker {
            sh,
            id,
            rng: Rng::new(sh.seed, id as u64),
            pool: Pool::open(&sh.dev)?,
            held: Vec::new(),
            owned: Vec::new(),
            maps: Vec::new(),
            listed: Vec::new(),
            scratch: Scratch::new()?,
            io: vec![0u8; 64 * 1024],
            counts: Counts::new(),
            ops: 0,
        })
    }

    fn count(&mut self, op: &'static str, result: String) {
        *self
            .counts
            .entry(op)
            .or_default()
            .entry(result)
            .or_default() += 1;
    }

    fn count_result(&mut self, op: &'static str, failed: bool) -> i32 {
        let e = if failed { last_errno() } else { 0 };
        self.count(op, if failed { errno_label(e) } else { "ok".into() });
        e
    }

    fn run(&mut self) {
        while !self.sh.stop.load(Ordering::Relaxed) && Instant::now() < self.sh.deadline {
            self.ops += 1;
            match self.rng.below(100) {
                0..=39 => self.op_ioctl(),
                40..=54 => self.op_mmap(),
                55..=74 => self.op_vma(),
                75..=88 => self.op_touch(),
                89..=94 => self.op_alloc_checked(),
                95..=97 => self.op_reopen(),
                _ => self.op_fork(),
            }
        }
        self.finish();
    }

    // ---- objects --------------------------------------------------------

    /// Records an object this thread's file just allocated (`size`
    /// bytes asked for).
    fn adopt(&mut self, h: abi::ObjectHandle, unnamed: bool, size: u64) {
        self.sh.registry.lock().unwrap().insert(key(&h));
        self.owned.push(key(&h));
        self.held.push(h);
        let sections = size.div_ceil(abi::SECTION_SIZE);
        let euid = nix::unistd::geteuid().as_raw();
        if h.size != sections.saturating_mul(abi::SECTION_SIZE) || h.uid != euid {
            self.sh.unexpected(format!(
                "thread {}: ALLOC of {size} bytes as uid {euid} returned {h:?}",
                self.id
            ));
        } else if unnamed {
            self.verify_new(&h);
        }
        while self.owned.len() > MAX_OBJECTS {
            let k = self.owned[0];
            self.free_own(k);
        }
        if self.held.len() > MAX_HELD {
            self.op_reopen();
        }
    }

    /// Forgets an object that FREE unlinked or found gone.
    fn forget(&mut self, k: Key) {
        self.sh.registry.lock().unwrap().remove(&k);
        self.owned.retain(|o| *o != k);
        self.held.retain(|h| key(h) != k);
    }

    fn free_key(&self, k: Key) -> io::Result<()> {
        self.pool.free(&abi::ObjectHandle {
            index: k.0,
            serial: k.1,
            ..Default::default()
        })
    }

    /// Frees an object this thread allocated: it must work (or find the
    /// object already gone).
    fn free_own(&mut self, k: Key) {
        let r = self.free_key(k);
        let e = r.as_ref().err().and_then(|e| e.raw_os_error()).unwrap_or(0);
        self.count(
            "free own",
            if e == 0 { "ok".into() } else { errno_label(e) },
        );
        if e == 0 || e == libc::ENOENT {
            self.forget(k);
        } else {
            self.sh.fatal(format!(
                "thread {}: FREE of its own object {}:{}: {}",
                self.id,
                k.0,
                k.1,
                errno_label(e)
            ));
            self.owned.retain(|o| *o != k);
        }
    }

    /// A new unnamed object (nobody else can open it, and this thread is
    /// the only one that can map it): it must read as zeros, then read
    /// back what is written.
    fn verify_new(&mut self, h: &abi::ObjectHandle) {
        if h.size == 0 || h.size > 64 * MIB {
            self.count("verify new object", "skipped (size)".into());
            return;
        }
        // The owner's permission bits (root may map regardless).
        let owner = (h.mode >> 6) & 0o7;
        let (readable, writable) = if self.sh.root {
            (true, true)
        } else {
            (owner & 0o4 != 0, owner & 0o2 != 0)
        };
        if !readable {
            self.count("verify new object", "unreadable mode".into());
            return;
        }
        let m: Mapping = match self.pool.map_range(h.map_offset, h.size as usize, writable) {
            Ok(m) => m,
            Err(e) => {
                // Another thread may have freed it already (a FREE target
                // from LIST or, as root, from the registry): EINVAL.
                let label = errno_label(e.raw_os_error().unwrap_or(0));
                self.count("verify new object", format!("map {label}"));
                return;
            }
        };
        let size = m.len();
        let span = size.min(64 * 1024) / 2;
        let spots = [
            (0, span),
            (size - span, span),
            ((size / 2) & !(PAGE - 1), PAGE),
        ];
        let stamp = self.rng.next();
        let mut got = std::mem::take(&mut self.io);
        let mut fail = None;
        for (off, len) in spots {
            if m.read(off, &mut got[..len]).is_err() {
                fail = Some(format!("read at {off:#x} refused"));
            } else if let Some(i) = got[..len].iter().position(|b| *b != 0) {
                fail = Some(format!("not zero: byte {:#x} is {:#04x}", off + i, got[i]));
            }
            if fail.is_some() {
                break;
            }
        }
        if fail.is_none() && writable {
            for (off, len) in spots {
                let data: Vec<u8> = (0..len)
                    .map(|i| crate::beluga_checks::pattern(stamp, off + i))
                    .collect();
                let _ = m.write(off, &data);
            }
            for (off, len) in spots {
                let _ = m.read(off, &mut got[..len]);
                if let Some(i) =
                    (0..len).find(|&i| got[i] != crate::beluga_checks::pattern(stamp, off + i))
                {
                    fail = Some(format!(
                        "byte {:#x} reads {:#04x}, {:#04x} was written",
                        off + i,
                        got[i],
                        crate::beluga_checks::pattern(stamp, off + i)
                    ));
                    break;
                }
            }
        }
        self.io = got;
        match fail {
            None => self.count("verify new object", "ok".into()),
            Some(what) => self.sh.fatal(format!(
                "thread {}: new object {}:{} at {:#x}: {what}",
                self.id, h.index, h.serial, h.map_offset
            )),
        }
    }

    /// A well-formed ALLOC through the library (so the integrity check
    /// runs often), freeing first when at the cap.
    fn op_alloc_checked(&mut self) {
        if self.owned.len() >= MAX_OBJECTS {
            let k = self.owned[self.rng.below(self.owned.len() as u64) as usize];
            self.free_own(k);
        }
        let size = self.rng.pick(&[2 * MIB, 2 * MIB, 4 * MIB, 1, 6 * MIB]);
        let named = self.rng.percent(25);
        let name = format!("fz.{}", self.rng.below(NAMES));
        let sharing = if named && self.rng.percent(50) {
            Sharing::Shared
        } else {
            Sharing::Private
        };
        let mode = self.rng.pick(&[0o600, 0o644, 0o666, 0o400]);
        match self
            .pool
            .alloc(size, named.then_some(name.as_str()), sharing, mode)
        {
            Ok(h) => {
                self.count("alloc", "ok".into());
                self.adopt(h, !named, size);
            }
            Err(e) => {
                let e = e.raw_os_error().unwrap_or(0);
                self.count("alloc", errno_label(e));
                if ![libc::ENOSPC, libc::EEXIST, libc::ENOMEM, libc::EINTR].contains(&e) {
                    self.sh.unexpected(format!(
                        "thread {}: ALLOC of {size} bytes: {}",
                        self.id,
                        errno_label(e)
                    ));
                }
            }
        }
    }

    // ---- ioctls ---------------------------------------------------------

    fn random_name(&mut self) -> [u8; abi::NAME_BYTES] {
        let mut field = [0u8; abi::NAME_BYTES];
        match self.rng.below(10) {
            0..=4 => {
                let n = format!("fz.{}", self.rng.below(NAMES));
                field[..n.len()].copy_from_slice(n.as_bytes());
            }
            5..=6 => {
                const CHARS: &[u8] =
                    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
                let len = 1 + self.rng.below(abi::NAME_BYTES as u64 - 1) as usize;
                for c in &mut field[..len] {
                    *c = self.rng.pick(CHARS);
                }
            }
            7 => {}
            _ => self.rng.fill(&mut field),
        }
        field
    }

    /// A FREE target: mostly real handles.
    fn free_target(&mut self) -> Key {
        match self.rng.below(10) {
            0..=3 if !self.owned.is_empty() => self.rng.pick(&self.owned),
            4..=5 if !self.held.is_empty() => key(&self.rng.pick(&self.held)),
            6 if !self.listed.is_empty() => {
                let (index, serial) = self.rng.pick(&self.listed);
                if self.sh.root {
                    // Never another process's object: a random serial.
                    (index, serial ^ (1 + self.rng.below(u64::MAX - 1)))
                } else {
                    // The kernel must refuse what is not ours.
                    (index, serial)
                }
            }
            7 if self.sh.root => {
                let all: Vec<Key> = self.sh.registry.lock().unwrap().iter().copied().collect();
                if all.is_empty() {
                    (0, 0)
                } else {
                    self.rng.pick(&all)
                }
            }
            _ => (
                if self.rng.percent(50) {
                    self.rng.below(1100) as u32
                } else {
                    self.rng.next() as u32
                },
                if self.rng.percent(30) {
                    self.rng.below(1000)
                } else {
                    self.rng.next()
                },
            ),
        }
    }

    /// ALLOC's argument: sizes, flags and modes around the valid ones, a
    /// random name and sometimes a stale handle; `p` learns what the
    /// outcome depends on.
    fn alloc_args(&mut self, p: &mut Prepared) -> abi::AllocArgs {
        let size = match self.rng.below(8) {
            0 => 0,
            1 => 1,
            2 | 3 => 2 * MIB,
            4 => 4 * MIB,
            5 => self.rng.below(16 * MIB),
            6 => self.rng.next(),
            _ => u64::MAX,
        };
        let flags = match self.rng.below(4) {
            0 | 1 => 0,
            2 => abi::FLAG_SHARED,
            _ => self.rng.next() as u32,
        };
        let mode = if self.rng.percent(70) {
            self.rng.below(0o1000) as u32
        } else {
            self.rng.next() as u32
        };
        let name = self.random_name();
        p.unnamed_alloc = name == [0u8; abi::NAME_BYTES];
        p.alloc_size = size;
        let mut handle = abi::ObjectHandle::default();
        if self.rng.percent(50) {
            handle.index = self.rng.next() as u32;
            handle.serial = self.rng.next();
        }
        abi::AllocArgs {
            size,
            flags,
            mode,
            name,
            handle,
        }
    }

    /// LIST's argument: any start and capacity, entries in the scratch
    /// buffer or at a bad address.
    fn list_args(&mut self) -> abi::ListArgs {
        let start = if self.rng.percent(70) {
            self.rng.below(1100) as u32
        } else {
            self.rng.next() as u32
        };
        let capacity = match self.rng.below(4) {
            0 => 0,
            1 => 1 + self.rng.below(8) as u32,
            2 => self.rng.below(5000) as u32,
            _ => self.rng.next() as u32,
        };
        // Entries in the buffer after the arguments (a big count
        // runs into the guard page), or a bad pointer.
        let entries = if self.rng.percent(70) {
            self.scratch.ptr(Arg::Buffer) as u64 + 1024
        } else {
            let bad = self.rng.pick(BAD_ARGS);
            self.scratch.ptr(bad) as u64
        };
        abi::ListArgs {
            start,
            capacity,
            entries,
            count: self.rng.next() as u32,
            next: self.rng.next() as u32,
        }
    }

    /// Writes well-formed parts of `cmd`'s argument over random bytes.
    fn structure(&mut self, cmd: u32, buf: &mut [u8]) -> Prepared {
        let mut p = Prepared::default();
        match cmd {
            abi::ALLOC => {
                let args = self.alloc_args(&mut p);
                put(buf, &args);
            }
            abi::OPEN => {
                let args = abi::OpenArgs {
                    name: self.random_name(),
                    handle: abi::ObjectHandle::default(),
                };
                put(buf, &args);
            }
            abi::FREE => {
                let k = self.free_target();
                let args = abi::FreeArgs {
                    index: k.0,
                    pad: if self.rng.percent(90) {
                        0
                    } else {
                        self.rng.next() as u32
                    },
                    serial: k.1,
                };
                p.free = Some(k);
                put(buf, &args);
            }
            abi::LIST => {
                let args = self.list_args();
                put(buf, &args);
            }
            abi::SET_MAP_MODE => {
                let mode = if self.rng.percent(60) {
                    self.rng.below(3) as u32
                } else {
                    self.rng.next() as u32
                };
                p.map_mode = Some(mode);
                put(buf, &mode);
            }
            abi::FORMAT => {
                let args = abi::FormatArgs {
                    max_hosts: self.rng.below(80) as u32,
                    max_objects: self.rng.next() as u32,
                };
                put(buf, &args);
            }
            abi::FORCE_RECLAIM => {
                let args = abi::ReclaimArgs {
                    host: self.rng.below(70) as u32,
                    reclaimed: 0,
                };
                put(buf, &args);
            }
            _ => {}
        }
        p
    }

    /// A command number: mostly beluga's own, otherwise random (never
    /// FORMAT or FORCE_RECLAIM as root, never the VFS's `X` and `f`
    /// families, which act on the file system under `/dev`).
    fn pick_cmd(&mut self) -> u32 {
        if self.rng.percent(70) {
            let mut cmds = vec![
                abi::GET_INFO,
                abi::WAIT_READY,
                abi::ALLOC,
                abi::OPEN,
                abi::FREE,
                abi::LIST,
                abi::SET_MAP_MODE,
            ];
            if !self.sh.root {
                cmds.extend([abi::FORMAT, abi::FORCE_RECLAIM]);
            }
            return self.rng.pick(&cmds);
        }
        loop {
            let cmd = self.rng.next() as u32;
            let kind = (cmd >> 8) as u8;
            if kind == b'X' || kind == b'f' {
                continue;
            }
            if self.sh.root && (cmd == abi::FORMAT || cmd == abi::FORCE_RECLAIM) {
                continue;
            }
            return cmd;
        }
    }

    fn op_ioctl(&mut self) {
        let cmd = self.pick_cmd();
        let arg = if self.rng.percent(75) {
            Arg::Buffer
        } else {
            self.rng.pick(BAD_ARGS)
        };
        let mut bytes = [0u8; ARG_BYTES];
        self.rng.fill(&mut bytes);
        let prepared = self.structure(cmd, &mut bytes);
        match arg {
            Arg::Buffer => self.scratch.buffer()[..ARG_BYTES].copy_from_slice(&bytes),
            Arg::ReadOnly => {
                if let Err(e) = self.scratch.fill_read_only(&bytes) {
                    self.sh.unexpected(format!("{e:#}"));
                }
            }
            _ => {}
        }
        if cmd == abi::LIST && self.rng.percent(10) {
            self.refresh_listed();
        }
        let ptr = self.scratch.ptr(arg);
        // SAFETY: the argument is our buffer (16 KiB, more than any size a
        // command encodes, followed by a guard page), or memory the kernel
        // cannot write without faulting (NULL, unmapped, kernel, read-only
        // or PROT_NONE pages).
        let r = unsafe { libc::ioctl(self.pool.as_raw_fd(), cmd as _, ptr) };
        let name = cmd_name(cmd);
        let e = self.count_result(name, r < 0);
        if e != 0 && !documented(e) {
            self.sh.unexpected(format!(
                "thread {}: {name} ({cmd:#010x}) with {arg:?}: {}",
                self.id,
                errno_label(e)
            ));
        }
        self.judge(cmd, arg, e, prepared);
    }

    fn judge(&mut self, cmd: u32, arg: Arg, e: i32, prepared: Prepared) {
        let id = self.id;
        match cmd {
            abi::FORMAT | abi::FORCE_RECLAIM if !self.sh.root && e != libc::EPERM => {
                self.sh.fatal(format!(
                    "thread {id}: {} as uid {} ({arg:?}): {}, expected EPERM",
                    cmd_name(cmd),
                    nix::unistd::geteuid(),
                    if e == 0 { "ok".into() } else { errno_label(e) }
                ));
            }
            abi::ALLOC if e == 0 => {
                if arg != Arg::Buffer {
                    self.sh.fatal(format!(
                        "thread {id}: ALLOC with its argument at {arg:?} succeeded (it cannot have returned the handle)"
                    ));
                    return;
                }
                let args: abi::AllocArgs = get(self.scratch.buffer());
                self.adopt(args.handle, prepared.unnamed_alloc, prepared.alloc_size);
            }
            abi::OPEN if e == 0 && arg == Arg::Buffer => {
                let args: abi::OpenArgs = get(self.scratch.buffer());
                self.held.push(args.handle);
                if self.held.len() > MAX_HELD {
                    self.op_reopen();
                }
            }
            abi::FREE if arg == Arg::Buffer && (e == 0 || e == libc::ENOENT) => {
                if let Some(k) = prepared.free {
                    if e == 0 {
                        self.forget(k);
                    } else {
                        // Gone already: only forget what was tracked.
                        self.owned.retain(|o| *o != k);
                        self.held.retain(|h| key(h) != k);
                        self.sh.registry.lock().unwrap().remove(&k);
                    }
                }
            }
            abi::SET_MAP_MODE if arg == Arg::Buffer => match prepared.map_mode {
                Some(abi::MAP_WRITE_BACK) if e != 0 => self.sh.unexpected(format!(
                    "thread {id}: SET_MAP_MODE write-back: {}",
                    errno_label(e)
                )),
                Some(mode) if mode != abi::MAP_WRITE_BACK && e == 0 => self
                    .sh
                    .unexpected(format!("thread {id}: SET_MAP_MODE {mode} accepted")),
                _ => {}
            },
            _ => {}
        }
    }

    fn refresh_listed(&mut self) {
        if let Ok(list) = self.pool.list() {
            self.listed = list.iter().map(|o| (o.index, o.serial)).collect();
        }
    }

    // ---- mappings -------------------------------------------------------

    fn unmap(&mut self, at: usize) {
        let l = self.maps.swap_remove(at);
        // SAFETY: a range this thread mapped and alone uses.
        let r = unsafe { libc::munmap(l.addr as *mut libc::c_void, l.len) };
        self.count_result("munmap", r < 0);
    }

    fn op_mmap(&mut self) {
        while self.maps.len() >= MAX_MAPS {
            let at = self.rng.below(self.maps.len() as u64) as usize;
            self.unmap(at);
        }
        let mut natural = 2 * MIB as usize;
        let offset: u64 = match self.rng.below(10) {
            0..=5 if !self.held.is_empty() => {
                let h = self.rng.pick(&self.held);
                let pages = (h.size / PAGE as u64).max(1);
                let page = self.rng.below(pages);
                natural = (h.size - page * PAGE as u64) as usize;
                let skew = if self.rng.percent(10) {
                    1 + self.rng.below(PAGE as u64 - 1)
                } else {
                    0
                };
                h.map_offset.wrapping_add(page * PAGE as u64 + skew)
            }
            0..=7 => self.rng.below(self.sh.device_size.max(1) / PAGE as u64) * PAGE as u64,
            _ if self.rng.percent(50) => self.rng.next() & !(PAGE as u64 - 1),
            _ => self.rng.next(),
        };
        let len = match self.rng.below(5) {
            0 | 1 => natural,
            2 => PAGE,
            3 => (1 + self.rng.below(2048) as usize) * PAGE,
            _ => 2 * MIB as usize,
        }
        .clamp(1, 16 * MIB as usize);
        let mut flags = if self.rng.percent(85) {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
        for (p, f) in [
            (20, libc::MAP_POPULATE),
            (5, libc::MAP_LOCKED),
            (5, libc::MAP_NORESERVE),
        ] {
            if self.rng.percent(p) {
                flags |= f;
            }
        }
        let prot = if self.rng.percent(70) {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            self.rng.below(8) as libc::c_int
        };
        // SAFETY: a new mapping at an address the kernel picks.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                flags,
                self.pool.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        self.count_result("mmap", p == libc::MAP_FAILED);
        if p != libc::MAP_FAILED {
            self.maps.push(Live {
                addr: p as usize,
                len,
                prot,
            });
        }
    }

    /// A page-granular part of a live mapping (sometimes misaligned).
    fn subrange(&mut self, l: Live) -> (usize, usize) {
        let pages = (l.len / PAGE).max(1);
        let first = self.rng.below(pages as u64) as usize;
        let n = 1 + self.rng.below((pages - first) as u64) as usize;
        let skew = if self.rng.percent(5) { 1 } else { 0 };
        (l.addr + first * PAGE + skew, (n * PAGE).min(l.len))
    }

    fn op_vma(&mut self) {
        if self.maps.is_empty() {
            return self.op_mmap();
        }
        let at = self.rng.below(self.maps.len() as u64) as usize;
        let l = self.maps[at];
        let pages = l.len.div_ceil(PAGE);
        match self.rng.below(100) {
            0..=14 => self.unmap(at),
            15..=24 => {
                // Punch a hole: an anonymous PROT_NONE mapping replaces
                // part of ours atomically (no gap another thread could
                // map into).
                let first = self.rng.below(pages as u64) as usize;
                let n = 1 + self.rng.below((pages - first).min(64) as u64) as usize;
                let n = n.min((l.len - first * PAGE).div_ceil(PAGE));
                // SAFETY: MAP_FIXED over a range of our own mapping.
                let p = unsafe {
                    libc::mmap(
                        (l.addr + first * PAGE) as *mut libc::c_void,
                        n * PAGE,
                        libc::PROT_NONE,
                        libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    )
                };
                self.count_result("punch", p == libc::MAP_FAILED);
            }
            25..=34 if pages >= 2 => {
                let new = (1 + self.rng.below(pages as u64 - 1) as usize) * PAGE;
                // SAFETY: shrinking our own mapping in place.
                let p = unsafe { libc::mremap(l.addr as *mut libc::c_void, l.len, new, 0) };
                if self.count_result("mremap shrink", p == libc::MAP_FAILED) == 0 {
                    self.maps[at].len = new;
                }
            }
            25..=44 if l.len < MAX_MAP_BYTES => {
                let new = l.len.next_multiple_of(PAGE) + (1 + self.rng.below(512) as usize) * PAGE;
                let flags = if self.rng.percent(70) {
                    libc::MREMAP_MAYMOVE
                } else {
                    0
                };
                // SAFETY: growing our own mapping; where it moves, the
                // old range is given up by the kernel and not used again.
                let p = unsafe { libc::mremap(l.addr as *mut libc::c_void, l.len, new, flags) };
                if self.count_result("mremap grow", p == libc::MAP_FAILED) == 0 {
                    self.maps[at].addr = p as usize;
                    self.maps[at].len = new;
                }
            }
            25..=49 => self.move_fixed(at),
            50..=54 => {
                // SAFETY: moving our own mapping; the old range stays ours.
                let p = unsafe {
                    libc::mremap(
                        l.addr as *mut libc::c_void,
                        l.len,
                        l.len,
                        libc::MREMAP_MAYMOVE | libc::MREMAP_DONTUNMAP,
                    )
                };
                if self.count_result("mremap dontunmap", p == libc::MAP_FAILED) == 0 {
                    self.maps.push(Live {
                        addr: p as usize,
                        ..l
                    });
                    while self.maps.len() > MAX_MAPS {
                        self.unmap(0);
                    }
                }
            }
            55..=69 => {
                let (addr, len) = self.subrange(l);
                let prot = self.rng.below(8) as libc::c_int;
                // SAFETY: part of our own mapping.
                let r = unsafe { libc::mprotect(addr as *mut libc::c_void, len, prot) };
                self.count_result("mprotect", r < 0);
            }
            _ => {
                let (addr, len) = self.subrange(l);
                let advice = self.pick_advice();
                // SAFETY: part of our own mapping.
                let r = unsafe { libc::madvise(addr as *mut libc::c_void, len, advice) };
                self.count_result("madvise", r < 0);
            }
        }
    }

    fn pick_advice(&mut self) -> libc::c_int {
        const MADV_HWPOISON: libc::c_int = 100;
        const MADV_SOFT_OFFLINE: libc::c_int = 101;
        if self.rng.percent(80) {
            return self.rng.pick(&[
                libc::MADV_DONTNEED,
                libc::MADV_WILLNEED,
                libc::MADV_HUGEPAGE,
                libc::MADV_NOHUGEPAGE,
                libc::MADV_COLD,
                libc::MADV_PAGEOUT,
                libc::MADV_REMOVE,
                libc::MADV_DONTFORK,
                libc::MADV_DOFORK,
                libc::MADV_FREE,
                libc::MADV_POPULATE_READ,
                libc::MADV_POPULATE_WRITE,
                libc::MADV_COLLAPSE,
                libc::MADV_WIPEONFORK,
                libc::MADV_KEEPONFORK,
                libc::MADV_SEQUENTIAL,
                libc::MADV_RANDOM,
                libc::MADV_NORMAL,
                libc::MADV_MERGEABLE,
                libc::MADV_DONTDUMP,
            ]);
        }
        loop {
            // Memory failure injection (root only) would poison the pool.
            let a = if self.rng.percent(70) {
                self.rng.below(128) as libc::c_int
            } else {
                self.rng.next() as libc::c_int
            };
            if a != MADV_HWPOISON && a != MADV_SOFT_OFFLINE {
                return a;
            }
        }
    }

    /// Moves a mapping to an address of our choosing (`MREMAP_FIXED` onto
    /// a reservation). The kernel unmaps the destination before checking
    /// the source, so after a failure the reservation may be gone: it is
    /// retaken with `MAP_FIXED_NOREPLACE` (and then given up) only where
    /// nobody else mapped in the meantime.
    fn move_fixed(&mut self, at: usize) {
        let l = self.maps[at];
        // SAFETY: a new reservation at an address the kernel picks.
        let dst = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                l.len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if dst == libc::MAP_FAILED {
            self.count_result("mremap move", true);
            return;
        }
        // SAFETY: moving our own mapping onto our own reservation.
        let p = unsafe {
            libc::mremap(
                l.addr as *mut libc::c_void,
                l.len,
                l.len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                dst,
            )
        };
        if self.count_result("mremap move", p == libc::MAP_FAILED) == 0 {
            self.maps[at].addr = p as usize;
            return;
        }
        // SAFETY: takes the range only if it is entirely free.
        let again = unsafe {
            libc::mmap(
                dst,
                l.len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if again != libc::MAP_FAILED {
            // Ours again (wherever the kernel put it): give it up.
            // SAFETY: the mapping just made.
            unsafe { libc::munmap(again, l.len) };
        }
        // Otherwise the reservation is still there (a failure before the
        // kernel unmapped it) or someone else's mapping is: left alone.
    }

    /// Reads or writes part of a live mapping through the kernel
    /// (`process_vm_readv`/`writev` on this process): faults become
    /// errors, never signals.
    fn op_touch(&mut self) {
        if self.maps.is_empty() {
            return self.op_mmap();
        }
        let l = self.rng.pick(&self.maps);
        let off = self.rng.below(l.len as u64) as usize;
        let n = 1 + self.rng.below((l.len - off).min(self.io.len()) as u64) as usize;
        let write = self.rng.percent(50);
        if write {
            let mut io = std::mem::take(&mut self.io);
            self.rng.fill(&mut io[..n]);
            self.io = io;
        }
        let local = libc::iovec {
            iov_base: self.io.as_mut_ptr().cast(),
            iov_len: n,
        };
        let remote = libc::iovec {
            iov_base: (l.addr + off) as *mut libc::c_void,
            iov_len: n,
        };
        let me = nix::unistd::getpid().as_raw();
        // SAFETY: `local` is our buffer; `remote` lies in our own mapping,
        // and the kernel reports faults there as errors.
        let r = unsafe {
            if write {
                libc::process_vm_writev(me, &local, 1, &remote, 1, 0)
            } else {
                libc::process_vm_readv(me, &local, 1, &remote, 1, 0)
            }
        };
        let op = if write { "vm_writev" } else { "vm_readv" };
        if r >= 0 && (r as usize) < n {
            self.count(op, "short".into());
        } else {
            self.count_result(op, r < 0);
        }
    }

    /// Closes the file (dropping its uses) and opens the device again.
    fn op_reopen(&mut self) {
        match Pool::open(&self.sh.dev) {
            Ok(p) => {
                self.pool = p;
                self.held.clear();
                self.count("reopen", "ok".into());
            }
            Err(e) => self.count("reopen", errno_label(e.raw_os_error().unwrap_or(0))),
        }
    }

    /// A child touches a live mapping directly and exits; it may die of
    /// SIGBUS or SIGSEGV (revoked, unmapped in it, PROT_NONE, ...).
    fn op_fork(&mut self) {
        if self.maps.is_empty() {
            return self.op_mmap();
        }
        let l = self.rng.pick(&self.maps);
        let mut addrs = [0usize; 4];
        for a in &mut addrs {
            *a = l.addr + self.rng.below(l.len as u64) as usize;
        }
        let write = l.prot & libc::PROT_WRITE != 0 && self.rng.percent(50);
        let value = self.rng.next() as u8;
        // SAFETY: the child only touches memory and exits (no locks, no
        // allocation: other threads may hold the allocator's).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            for a in addrs {
                // SAFETY: a fault kills the child only, as intended.
                unsafe {
                    let p = a as *mut u8;
                    let v = p.read_volatile();
                    if write {
                        p.write_volatile(v ^ value);
                        p.write_volatile(v);
                    }
                }
            }
            // SAFETY: leave without running anything of the parent's.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            self.count_result("fork", true);
            return;
        }
        let start = Instant::now();
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if r < 0 {
                self.count_result("fork", true);
                return;
            }
            if start.elapsed() > CHILD_TIMEOUT {
                self.sh.unexpected(format!(
                    "thread {}: a child touching {:#x}.. hangs",
                    self.id, l.addr
                ));
                // SAFETY: our own child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                self.count("fork", "hung".into());
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let label = if libc::WIFEXITED(status) {
            format!("exit {}", libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            nix::sys::signal::Signal::try_from(sig)
                .map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_string())
        } else {
            format!("status {status:#x}")
        };
        self.count("fork", label);
    }

    /// Unmaps everything and frees what this thread allocated.
    fn finish(&mut self) {
        while !self.maps.is_empty() {
            self.unmap(self.maps.len() - 1);
        }
        for k in std::mem::take(&mut self.owned) {
            self.free_own(k);
        }
    }
}

/// Writes `value`'s bytes at the start of `buf`.
fn put<T: Copy>(buf: &mut [u8], value: &T) {
    assert!(buf.len() >= std::mem::size_of::<T>());
    // SAFETY: in bounds (checked); the ABI types are plain integers.
    unsafe { buf.as_mut_ptr().cast::<T>().write_unaligned(*value) };
}

/// Reads a `T` from the start of `buf`.
fn get<T: Copy>(buf: &[u8]) -> T {
    assert!(buf.len() >= std::mem::size_of::<T>());
    // SAFETY: in bounds (checked); every byte pattern is a valid ABI value
    // (integers only).
    unsafe { buf.as_ptr().cast::<T>().read_unaligned() }
}

fn drop_privileges(uid: u32) -> Result<()> {
    use nix::unistd::{setgid, setgroups, setuid, Gid, Uid};
    setgroups(&[]).context("setgroups")?;
    setgid(Gid::from_raw(uid)).context("setgid")?;
    setuid(Uid::from_raw(uid)).context("setuid")?;
    anyhow::ensure!(
        nix::unistd::geteuid().as_raw() == uid,
        "still uid {}",
        nix::unistd::geteuid()
    );
    Ok(())
}

pub fn fuzz(dev: &Path, seconds: u64, seed: u64, threads: usize, uid: Option<u32>) -> Result<()> {
    if let Some(uid) = uid {
        drop_privileges(uid)?;
    }
    let root = nix::unistd::geteuid().is_root();
    let pool = Pool::open(dev).with_context(|| format!("open {}", dev.display()))?;
    pool.wait_ready().context("wait for the manager")?;
    let info = pool.info()?;
    let threads = threads.max(1);
    let sh = Shared {
        dev: dev.to_path_buf(),
        root,
        seed,
        deadline: Instant::now() + Duration::from_secs(seconds),
        device_size: info.device_size,
        stop: AtomicBool::new(false),
        fatal: Mutex::new(Vec::new()),
        registry: Mutex::new(BTreeSet::new()),
        unexpected: AtomicU64::new(0),
    };
    let results: Vec<(Counts, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|id| {
                let sh = &sh;
                s.spawn(move || match Worker::new(sh, id) {
                    Ok(mut w) => {
                        w.run();
                        (std::mem::take(&mut w.counts), w.ops)
                    }
                    Err(e) => {
                        sh.fatal(format!("thread {id}: {e:#}"));
                        (Counts::new(), 0)
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(id, h)| {
                h.join().unwrap_or_else(|_| {
                    sh.fatal(format!("thread {id} panicked"));
                    (Counts::new(), 0)
                })
            })
            .collect()
    });

    // Whatever is still recorded (threads free their own; this is a net).
    let left: Vec<Key> = sh.registry.lock().unwrap().iter().copied().collect();
    for k in &left {
        let r = pool.free(&abi::ObjectHandle {
            index: k.0,
            serial: k.1,
            ..Default::default()
        });
        if let Err(e) = r {
            if e.raw_os_error() != Some(libc::ENOENT) {
                sh.fatal(format!("final FREE of {}:{}: {e}", k.0, k.1));
            }
        }
    }

    let mut total: Counts = Counts::new();
    let mut ops = 0;
    for (counts, n) in results {
        ops += n;
        for (op, by) in counts {
            for (result, n) in by {
                *total.entry(op).or_default().entry(result).or_default() += n;
            }
        }
    }
    for (op, by) in &total {
        let parts: Vec<String> = by.iter().map(|(r, n)| format!("{r} {n}")).collect();
        println!("  {op:<20} {}", parts.join(", "));
    }
    let unexpected = sh.unexpected.load(Ordering::Relaxed);
    println!(
        "beluga-fuzz: seed {seed}, {threads} threads, {seconds} s, uid {}: {ops} operations, {unexpected} unexpected results",
        nix::unistd::geteuid()
    );
    let fatal = sh.fatal.lock().unwrap();
    if !fatal.is_empty() {
        bail!("{} fatal: {}", fatal.len(), fatal.join("; "));
    }
    Ok(())
}
