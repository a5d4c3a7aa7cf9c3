//! Checks of beluga_dax from user space, through the `beluga` library,
//! beyond the one-host contract (`beluga_contract`): the multi-host
//! stress, sharing, KV and RPC checks the two-VM scenarios run, a mapping
//! held across an unbind, ALLOC racing FREE, a pattern a kernel client
//! wrote; and the helpers all beluga checks share.

use anyhow::{bail, ensure, Context, Result};
use beluga::{abi, Pool, Sharing};
use nix::errno::Errno;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

pub(crate) fn errno_of(err: &io::Error) -> Option<Errno> {
    err.raw_os_error().map(Errno::from_raw)
}

pub(crate) fn expect_errno<T>(what: &str, result: io::Result<T>, want: Errno) -> Result<()> {
    match result {
        Ok(_) => bail!("{what}: succeeded, expected {want}"),
        Err(e) if errno_of(&e) == Some(want) => Ok(()),
        Err(e) => bail!("{what}: {e}, expected {want}"),
    }
}

/// Byte `i` of the pattern `seed` writes.
pub fn pattern(seed: u64, i: usize) -> u8 {
    let x =
        (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed.wrapping_mul(0xff51_afd7_ed55_8ccd);
    (x >> 29) as u8
}

/// Runs `child` in a forked process and returns how it ended.
pub(crate) fn in_child(child: impl FnOnce() -> i32) -> Result<WaitStatus> {
    let pid = fork_child(child)?;
    Ok(waitpid(pid, None)?)
}

/// Starts `child` in a forked process (which leaves with its result,
/// without returning into the caller's code) and returns its pid.
pub(crate) fn fork_child(child: impl FnOnce() -> i32) -> Result<nix::unistd::Pid> {
    // SAFETY: the child only runs `child` and exits without returning
    // into the parent's code (callers keep `child` to what is safe after
    // a fork of their process).
    match unsafe { fork() }.context("fork")? {
        ForkResult::Child => {
            let code = child();
            // SAFETY: leave the child at once, without running the parent's
            // destructors or flushing its buffers twice.
            unsafe { nix::libc::_exit(code) }
        }
        ForkResult::Parent { child } => Ok(child),
    }
}

/// How long the reaper may take to let go of an object nobody uses.
pub(crate) const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// The listed entry of `h`, if any.
pub(crate) fn find<'a>(
    list: &'a [abi::ObjectInfo],
    h: &abi::ObjectHandle,
) -> Option<&'a abi::ObjectInfo> {
    list.iter()
        .find(|o| o.index == h.index && o.serial == h.serial)
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes; the error
/// names the last state `cond` reported.
pub(crate) fn wait_for(
    timeout: Duration,
    mut cond: impl FnMut() -> Result<std::result::Result<(), String>>,
) -> Result<()> {
    let start = Instant::now();
    loop {
        match cond()? {
            Ok(()) => return Ok(()),
            Err(state) if start.elapsed() >= timeout => {
                bail!("still {state} after {timeout:?}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Waits until `h` is no longer listed (its last user let go and the
/// reaper released it).
pub(crate) fn wait_unlisted(pool: &Pool, h: &abi::ObjectHandle, timeout: Duration) -> Result<()> {
    wait_for(timeout, || {
        Ok(match find(&pool.list()?, h) {
            Some(o) => Err(format!(
                "listed: object {}:{} flags {:#x}",
                o.index, o.serial, o.flags
            )),
            None => Ok(()),
        })
    })
}

/// A sysfs attribute of the pool device `dev` (`/sys/class/misc/<name>/`).
pub(crate) fn sysfs_u64(dev: &Path, attr: &str) -> Result<u64> {
    let name = dev
        .file_name()
        .and_then(|n| n.to_str())
        .context("device name")?;
    let path = format!("/sys/class/misc/{name}/{attr}");
    let text = std::fs::read_to_string(&path).with_context(|| path.clone())?;
    text.trim()
        .parse()
        .with_context(|| format!("{path}: {text:?}"))
}

/// One anonymous private page, unmapped on drop.
pub(crate) struct AnonPage {
    pub(crate) ptr: *mut nix::libc::c_void,
}

impl AnonPage {
    pub(crate) fn new() -> Result<AnonPage> {
        use nix::libc;
        // SAFETY: a new anonymous mapping at an address the kernel picks.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error()).context("mmap");
        }
        Ok(AnonPage { ptr })
    }

    pub(crate) fn protect(&self, prot: nix::libc::c_int) -> Result<()> {
        // SAFETY: the page is ours.
        if unsafe { nix::libc::mprotect(self.ptr, 4096, prot) } < 0 {
            return Err(io::Error::last_os_error()).context("mprotect");
        }
        Ok(())
    }
}

impl Drop for AnonPage {
    fn drop(&mut self) {
        // SAFETY: the page is ours and not used after this.
        unsafe { nix::libc::munmap(self.ptr, 4096) };
    }
}

/// Maps a new object, writes it, tells the caller through `ready` (a file
/// it creates), waits for `ready` to be removed, then reads the mapping
/// again: the process is expected to die of SIGBUS (the pool went away).
pub fn hold(dev: &Path, ready: &Path, timeout: Duration) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready()?;
    let obj = pool.alloc(2 * MIB, None, Sharing::Private, 0o600)?;
    let m = pool.map(&obj)?;
    m.write(0, b"held")?;
    std::fs::write(ready, b"ready")?;
    let start = Instant::now();
    while ready.exists() {
        ensure!(
            start.elapsed() < timeout,
            "nobody removed {}",
            ready.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut b = [0u8; 4];
    m.read(0, &mut b)?;
    bail!("read {b:?} from a mapping of a pool that is gone")
}

/// Allocates and frees objects for `seconds`, each filled with this
/// host's id and its serial, checking that no object this host holds
/// ever changes under it (another host writing it would mean a section
/// given to two owners). Ends by freeing everything except `--keep`.
/// The objects are named (`st.<host>.<pid>.<n>`, private) so the kept ones
/// outlive the process: an unnamed object goes with its last user.
pub fn stress(dev: &Path, seconds: u64, keep: usize, seed: u64) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready()?;
    let me = pool.info()?.host_index;
    let mut held: Vec<(abi::ObjectHandle, u64)> = Vec::new();
    let mut rng = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(me as u64 + 1);
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let stamp = |h: &abi::ObjectHandle| -> Vec<u8> {
        let mut s = Vec::with_capacity(64);
        s.extend_from_slice(b"BELUGA-STRESS");
        s.extend_from_slice(&me.to_le_bytes());
        s.extend_from_slice(&h.index.to_le_bytes());
        s.extend_from_slice(&h.serial.to_le_bytes());
        s
    };
    let verify = |pool: &Pool, h: &abi::ObjectHandle| -> Result<()> {
        let m = pool.map(h)?;
        let want = stamp(h);
        // Start and end of every section.
        for section in 0..(h.size / (2 * MIB)) as usize {
            for at in [
                section * 2 * MIB as usize,
                (section + 1) * 2 * MIB as usize - want.len(),
            ] {
                let mut got = vec![0u8; want.len()];
                m.read(at, &mut got)?;
                ensure!(
                    got == want,
                    "object {}:{} overwritten at {at:#x}: {got:?}",
                    h.index,
                    h.serial
                );
            }
        }
        Ok(())
    };
    let (mut allocs, mut frees, mut full) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(seconds) {
        if held.len() < 4 || next() % 3 != 0 {
            let sections = 1 + next() % 3;
            let name = format!("st.{me}.{}.{allocs}", std::process::id());
            match pool.alloc(sections * 2 * MIB, Some(&name), Sharing::Private, 0o600) {
                Ok(h) => {
                    let m = pool.map(&h)?;
                    let s = stamp(&h);
                    for section in 0..sections as usize {
                        m.write(section * 2 * MIB as usize, &s)?;
                        m.write((section + 1) * 2 * MIB as usize - s.len(), &s)?;
                    }
                    held.push((h, sections));
                    allocs += 1;
                }
                Err(e) if errno_of(&e) == Some(Errno::ENOSPC) => full += 1,
                Err(e) => return Err(e).context("alloc"),
            }
        }
        if !held.is_empty() && (held.len() > 8 || next() % 2 == 0) {
            let (h, _) = held.swap_remove((next() % held.len() as u64) as usize);
            verify(&pool, &h)?;
            pool.free(&h).context("free")?;
            frees += 1;
        }
        for (h, _) in &held {
            verify(&pool, h)?;
        }
    }
    while held.len() > keep {
        let (h, _) = held.pop().unwrap();
        verify(&pool, &h)?;
        pool.free(&h)?;
        frees += 1;
    }
    for (h, _) in &held {
        verify(&pool, h)?;
    }
    println!(
        "host {me}: {allocs} allocations, {frees} frees, {full} times full, {} kept, no overlap",
        held.len()
    );
    Ok(())
}

/// Creates (or, with `--open`, opens) a shared object named `name` of
/// `size` bytes filled with a checksummed pattern, and checks its content.
/// With `hold`, keeps the object (open and mapped) after the check until
/// that file disappears: objects live as long as someone uses them, and
/// the multi-host scenarios need a host that holds one when it dies.
pub fn share(
    dev: &Path,
    name: &str,
    size: u64,
    open: bool,
    seed: u64,
    mode: u32,
    hold: Option<&Path>,
) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready()?;
    let h = if open {
        pool.open_object(name)
            .with_context(|| format!("open {name}"))?
    } else {
        pool.alloc(size, Some(name), Sharing::Shared, mode)?
    };
    let m = pool.map(&h)?;
    // The whole object: an opener does not know the creator's size.
    let payload = m.len() - 8;
    if !open {
        let data: Vec<u8> = (0..payload).map(|i| pattern(seed, i)).collect();
        m.write(8, &data)?;
        m.write_u64(0, fnv1a(&data))?;
    }
    let mut data = vec![0u8; payload];
    m.read(8, &mut data)?;
    let sum = m.read_u64(0)?;
    ensure!(sum == fnv1a(&data), "checksum mismatch");
    ensure!(
        data.iter().enumerate().all(|(i, b)| *b == pattern(seed, i)),
        "content mismatch"
    );
    println!(
        "shared object {name} ({}:{}) verified, checksum {sum:#018x}",
        h.index, h.serial
    );
    if let Some(hold) = hold {
        std::fs::write(hold, b"held")?;
        while hold.exists() {
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(m);
    }
    Ok(())
}

fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Opens the shared object `name` and checks that its first `len` bytes
/// and its last page hold `uapi::selftest::pattern_byte` (as written by
/// `beluga_client_test` through the in-kernel region API).
pub fn pattern_check(dev: &Path, name: &str, len: usize) -> Result<()> {
    let pool = Pool::open(dev)?;
    let h = pool
        .open_object(name)
        .with_context(|| format!("open {name}"))?;
    let m = pool.map(&h)?;
    let end = m.len() - 4096;
    for (start, n) in [(0, len), (end, 4096)] {
        let mut got = vec![0u8; n];
        m.read(start, &mut got)?;
        if let Some(i) = (0..n).find(|&i| got[i] != uapi::selftest::pattern_byte(start + i)) {
            bail!("{name}: byte {:#x} is {:#x}", start + i, got[i]);
        }
    }
    println!(
        "{name}: {} bytes at {:#x} hold the kernel's pattern",
        m.len(),
        h.map_offset
    );
    Ok(())
}

/// KV block store across hosts: the writer creates a store in the shared
/// object `name` (with `checksum`) and keeps publishing new versions of
/// `keys` blocks; a reader on another host checks every block it gets is
/// whole (its content is a function of key and version).
pub fn kv(
    dev: &Path,
    name: &str,
    writer: bool,
    keys: u64,
    seconds: u64,
    checksum: beluga::kv::Checksum,
) -> Result<()> {
    use beluga::kv::KvStore;
    const BLOCK: usize = 4096;
    let pool = Pool::open(dev)?;
    pool.wait_ready()?;
    let content = |key: u64, version: u64| -> Vec<u8> {
        let mut b: Vec<u8> = (0..BLOCK - 16)
            .map(|i| pattern(key * 1_000_003 + version, i))
            .collect();
        b.extend_from_slice(&key.to_le_bytes());
        b.extend_from_slice(&version.to_le_bytes());
        b
    };
    let end = Instant::now() + Duration::from_secs(seconds);
    if writer {
        let h = pool.alloc(8 * MIB, Some(name), Sharing::Shared, 0o644)?;
        let store = KvStore::create_with(pool.map(&h)?, BLOCK, checksum)?;
        let mut version = 0;
        while Instant::now() < end {
            for key in 0..keys {
                store.put(key, &content(key, version))?;
            }
            version += 1;
        }
        println!("writer: {version} versions of {keys} blocks published");
    } else {
        // The writer creates the store: wait for it.
        let start = Instant::now();
        let store = loop {
            let opened = pool
                .open_object(name)
                .and_then(|h| pool.map(&h))
                .and_then(KvStore::open);
            match opened {
                Ok(store) => break store,
                Err(_) if start.elapsed() < Duration::from_secs(60) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => return Err(e).with_context(|| format!("open the store {name}")),
            }
        };
        let end = Instant::now() + Duration::from_secs(seconds);
        let (mut reads, mut versions) = (0u64, std::collections::BTreeSet::new());
        while Instant::now() < end {
            for key in 0..keys {
                let Some(block) = store.get(key)? else {
                    continue;
                };
                ensure!(block.len() == BLOCK, "key {key}: {} bytes", block.len());
                let version = u64::from_le_bytes(block[BLOCK - 8..].try_into().unwrap());
                ensure!(
                    block == content(key, version),
                    "key {key}: block is not whole (version {version})"
                );
                versions.insert(version);
                reads += 1;
            }
        }
        ensure!(reads > 0, "no block read");
        println!(
            "reader: {reads} whole blocks read, {} distinct versions seen (checksum {})",
            versions.len(),
            store.checksum().name()
        );
    }
    Ok(())
}

/// CXL-RPC across hosts: the server answers every request with its bytes
/// reversed; the client checks `calls` answers at queue depth `depth`.
pub fn rpc(dev: &Path, server: bool, calls: u64, depth: usize) -> Result<()> {
    use beluga::rpc;
    const NAME: &str = "check.rpc";
    const MSG: usize = 64;
    let pool = Pool::open(dev)?;
    pool.wait_ready()?;
    if server {
        let h = pool.alloc(
            rpc::channel_bytes(32, MSG) as u64,
            Some(NAME),
            Sharing::Shared,
            0o666,
        )?;
        let mem = pool.map(&h)?;
        rpc::create(&mem, 32, MSG)?;
        // The client stops the server by a request of length 0.
        let mut server = rpc::Server::open(&mem)?;
        let mut served = 0u64;
        let mut stop = false;
        let start = Instant::now();
        while !stop {
            ensure!(
                start.elapsed() < Duration::from_secs(120),
                "client never finished"
            );
            served += server.poll(&mut |req, resp| {
                if req.is_empty() {
                    stop = true;
                }
                for (o, i) in resp.iter_mut().zip(req.iter().rev()) {
                    *o = *i;
                }
                req.len()
            })? as u64;
        }
        println!("server: {served} calls answered");
    } else {
        let start = Instant::now();
        let h = loop {
            match pool.open_object(NAME) {
                Ok(h) => break h,
                Err(_) if start.elapsed() < Duration::from_secs(60) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => return Err(e).context("open the channel"),
            }
        };
        let mem = pool.map(&h)?;
        let mut client = loop {
            match rpc::Client::open(&mem) {
                Ok(c) => break c,
                Err(_) if start.elapsed() < Duration::from_secs(60) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => return Err(e).context("channel header"),
            }
        };
        let depth = depth.clamp(1, client.slots());
        let request =
            |n: u64| -> Vec<u8> { (0..1 + (n % 63) as usize).map(|i| pattern(n, i)).collect() };
        let mut inflight: Vec<(u64, u64)> = Vec::new();
        let mut next = 0u64;
        let mut done = 0u64;
        let mut out = [0u8; MSG];
        for slot in 0..depth {
            inflight.push((client.submit(slot, &request(next))?, next));
            next += 1;
        }
        while done < calls {
            for (slot, (seq, n)) in inflight.iter_mut().enumerate() {
                if let Some(len) = client.poll(slot, *seq, &mut out)? {
                    let want: Vec<u8> = request(*n).into_iter().rev().collect();
                    ensure!(out[..len] == want[..], "call {n}: wrong answer");
                    done += 1;
                    *n = next;
                    next += 1;
                    *seq = client.submit(slot, &request(*n))?;
                }
            }
        }
        // Drain, then stop the server.
        for (slot, (seq, _)) in inflight.iter().enumerate() {
            while client.poll(slot, *seq, &mut out)?.is_none() {}
        }
        let seq = client.submit(0, &[])?;
        while client.poll(0, seq, &mut out)?.is_none() {}
        println!("client: {done} calls at depth {depth} answered correctly");
    }
    Ok(())
}

/// ALLOC racing FREE: one thread allocates, another lists and frees each
/// new object (through its own file) as soon as it appears. A FREE that
/// ran between ALLOC's answer and its bookkeeping used to leave a holding
/// for a freed object behind (FORMAT refused with LIST empty, later
/// mappings judged by the stale holding). Afterwards nothing may be left:
/// LIST empties once the files close, and FORMAT succeeds.
pub fn alloc_free_race(dev: &Path, seconds: u64) -> Result<()> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let stop = AtomicBool::new(false);
    let (allocs, frees) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| -> Result<()> {
        let allocator = s.spawn(|| -> Result<()> {
            let pool = Pool::open(dev)?;
            while !stop.load(Ordering::Relaxed) {
                match pool.alloc(2 * MIB, None, Sharing::Private, 0o600) {
                    Ok(_) => allocs.fetch_add(1, Ordering::Relaxed),
                    Err(e) if errno_of(&e) == Some(Errno::ENOSPC) => break,
                    Err(e) => return Err(e).context("alloc"),
                };
            }
            Ok(())
        });
        let freer = s.spawn(|| -> Result<()> {
            let pool = Pool::open(dev)?;
            while !stop.load(Ordering::Relaxed) {
                for o in pool.list()?.iter().filter(|o| !beluga::is_unlinked(o)) {
                    let h = abi::ObjectHandle {
                        index: o.index,
                        flags: o.flags,
                        serial: o.serial,
                        size: o.size,
                        map_offset: o.map_offset,
                        uid: o.uid,
                        mode: o.mode,
                    };
                    match pool.free(&h) {
                        Ok(()) => {
                            frees.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) if errno_of(&e) == Some(Errno::ENOENT) => {}
                        Err(e) => return Err(e).context("free"),
                    }
                }
            }
            Ok(())
        });
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
        allocator.join().expect("allocator thread")?;
        freer.join().expect("freer thread")?;
        Ok(())
    })?;
    let pool = Pool::open(dev)?;
    let start = Instant::now();
    while !pool.list()?.is_empty() {
        ensure!(
            start.elapsed() < Duration::from_secs(5),
            "objects left after the race: {:?}",
            pool.list()?
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    pool.format(8, 1024)
        .context("FORMAT after the race (a stale holding refuses it)")?;
    pool.wait_ready()?;
    println!(
        "alloc/free race: {} allocations, {} frees by another file, nothing left",
        allocs.load(Ordering::Relaxed),
        frees.load(Ordering::Relaxed)
    );
    Ok(())
}
