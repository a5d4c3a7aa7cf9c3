//! Checks of beluga_dax from user space, through the `beluga` library: the
//! mmap contract, permissions, write-back only mappings, object lifetime
//! (FREE unlinks; the memory goes with the last user), cleared sections,
//! an ALLOC undone when its result cannot be copied out, and the
//! multi-host stress and sharing checks the two-VM scenarios run.

use crate::check;
use anyhow::{bail, ensure, Context, Result};
use beluga::{abi, Pool, Sharing};
use nix::errno::Errno;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult, Uid};
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

fn minor_faults() -> i64 {
    // SAFETY: `usage` is a valid out-parameter.
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { nix::libc::getrusage(nix::libc::RUSAGE_SELF, &mut usage) };
    usage.ru_minflt
}

/// The mmap and ioctl contract on one host.
pub fn contract(dev: &Path) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready().context("wait for the manager")?;
    let info = pool.info()?;
    ensure!(info.state == abi::STATE_READY, "state {}", info.state);

    let obj = pool.alloc(4 * MIB, Some("contract"), Sharing::Private, 0o600)?;
    check(
        "alloc rounds to sections and reports a 2 MiB aligned offset",
        {
            ensure!(
                obj.size == 4 * MIB && obj.map_offset % (2 * MIB) == 0,
                "{obj:?}"
            );
            Ok(())
        },
    )?;
    check(
        "write through one mapping, read back through another",
        (|| {
            let a = pool.map(&obj)?;
            let data: Vec<u8> = (0..obj.size as usize).map(|i| pattern(7, i)).collect();
            a.write(0, &data)?;
            let b = pool.map(&obj)?;
            let mut back = vec![0u8; data.len()];
            b.read(0, &mut back)?;
            ensure!(back == data, "data differs");
            Ok(())
        })(),
    )?;
    check(
        "a 2 MiB aligned object is mapped with PMDs (2 faults for 4 MiB)",
        (|| {
            let m = pool.map(&obj)?;
            let before = minor_faults();
            let mut byte = [0u8; 1];
            for page in (0..m.len()).step_by(4096) {
                m.read(page, &mut byte)?;
            }
            let faults = minor_faults() - before;
            ensure!(faults <= 8, "{faults} faults for {} pages", m.len() / 4096);
            Ok(())
        })(),
    )?;
    check(
        "a mapping inside the object at a page offset works",
        (|| {
            let m = pool.map_range(obj.map_offset + 4096 * 3, 4096 * 2, true)?;
            let mut b = [0u8; 16];
            m.read(0, &mut b)?;
            ensure!(
                (0..16).all(|i| b[i] == pattern(7, 4096 * 3 + i)),
                "wrong bytes"
            );
            Ok(())
        })(),
    )?;
    check("MAP_PRIVATE is refused", {
        use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
        // Through the file that holds the object: only the flag is wrong.
        // SAFETY: a new mapping; unmapped at once if it succeeds.
        let r = unsafe {
            mmap(
                None,
                std::num::NonZeroUsize::new(4096).unwrap(),
                ProtFlags::PROT_READ,
                MapFlags::MAP_PRIVATE,
                &pool,
                obj.map_offset as i64,
            )
        };
        match r {
            Err(Errno::EINVAL) => Ok(()),
            Ok(p) => {
                // SAFETY: the mapping made above, not used.
                unsafe { munmap(p, 4096)? };
                bail!("the mapping was allowed")
            }
            Err(e) => bail!("{e}"),
        }
    })?;
    check(
        "a file maps only the objects it allocated or opened",
        (|| {
            let other = Pool::open(dev)?;
            expect_errno("map from another file", other.map(&obj), Errno::EINVAL)?;
            let opened = other.open_object("contract")?;
            ensure!(
                opened.index == obj.index && opened.serial == obj.serial,
                "opened {opened:?}"
            );
            let m = other.map(&opened)?;
            let mut b = [0u8; 16];
            m.read(0, &mut b)?;
            ensure!(
                (0..16).all(|i| b[i] == pattern(7, i)),
                "wrong bytes through the opening file"
            );
            Ok(())
        })(),
    )?;
    check("a mapping longer than the object is refused", {
        expect_errno(
            "oversized",
            pool.map_range(obj.map_offset, (obj.size + 2 * MIB) as usize, true),
            Errno::EINVAL,
        )
    })?;
    check(
        "a mapping at an offset that is not page aligned is refused",
        {
            expect_errno(
                "misaligned",
                pool.map_range(obj.map_offset + 100, 4096, true),
                Errno::EINVAL,
            )
        },
    )?;
    check("a mapping of the metadata is refused", {
        expect_errno("offset 0", pool.map_range(0, 4096, false), Errno::EINVAL)
    })?;
    check(
        "another uid cannot map, open or free a 0600 object",
        (|| {
            let status = in_child(|| {
                if nix::unistd::setuid(Uid::from_raw(1000)).is_err() {
                    return 10;
                }
                if !matches!(
                    pool.map(&obj).map_err(|e| errno_of(&e)),
                    Err(Some(Errno::EACCES))
                ) {
                    return 11;
                }
                if !matches!(
                    pool.open_object("contract").map_err(|e| errno_of(&e)),
                    Err(Some(Errno::EACCES))
                ) {
                    return 12;
                }
                if !matches!(
                    pool.free(&obj).map_err(|e| errno_of(&e)),
                    Err(Some(Errno::EPERM))
                ) {
                    return 13;
                }
                if !matches!(
                    pool.format(8, 1024).map_err(|e| errno_of(&e)),
                    Err(Some(Errno::EPERM))
                ) {
                    return 14;
                }
                0
            })?;
            ensure!(
                status == WaitStatus::Exited(status_pid(&status), 0),
                "child: {status:?}"
            );
            Ok(())
        })(),
    )?;
    check(
        "only write-back mappings: uncached and write-combining are refused, and PAT records the pool write-back",
        (|| {
            use beluga::MapMode::{Uncached, WriteBack, WriteCombining};
            expect_errno("uncached", pool.set_map_mode(Uncached), Errno::EINVAL)?;
            expect_errno(
                "write-combining",
                pool.set_map_mode(WriteCombining),
                Errno::EINVAL,
            )?;
            pool.set_map_mode(WriteBack)?;
            expect_errno("mode 9", set_raw_map_mode(&pool, 9), Errno::EINVAL)?;
            // The refusals changed nothing: mappings still work.
            let m = pool.map(&obj)?;
            let mut b = [0u8; 64];
            m.read(8192, &mut b)?;
            ensure!(
                (0..64).all(|i| b[i] == pattern(7, 8192 + i)),
                "wrong bytes after the refused modes"
            );
            // x86 PAT's own record, where debugfs has it: the pagemap
            // reserved the whole pool range write-back.
            match std::fs::read_to_string(PAT_LIST) {
                Ok(list) => {
                    let phys = object_phys(dev, obj.map_offset)?;
                    pat_write_back(&list, phys, phys + obj.size)?
                }
                Err(e) => println!("     (no {PAT_LIST}: {e}; PAT record not checked)"),
            }
            Ok(())
        })(),
    )?;
    check(
        "the object is listed with its name, owner and mode",
        (|| {
            let list = pool.list()?;
            let me = list
                .iter()
                .find(|o| o.index == obj.index && o.serial == obj.serial)
                .context("not listed")?;
            ensure!(
                beluga::name_of(&me.name) == "contract"
                    && me.mode == 0o600
                    && me.owner_host == info.host_index,
                "{me:?}"
            );
            Ok(())
        })(),
    )?;
    check(
        "FREE unlinks: the mapping keeps its data, the name goes and can be reused, LIST shows the object unlinked until the mapping goes",
        (|| {
            let m = pool.map(&obj)?;
            pool.free(&obj)?;
            let mut back = vec![0u8; obj.size as usize];
            m.read(0, &mut back)?;
            ensure!(
                back.iter().enumerate().all(|(i, b)| *b == pattern(7, i)),
                "the data changed when the object was freed"
            );
            m.write(4096, b"written after free")?;
            let mut b = [0u8; 18];
            m.read(4096, &mut b)?;
            ensure!(&b == b"written after free", "a write after free was lost");
            expect_errno(
                "open by name after free",
                pool.open_object("contract"),
                Errno::ENOENT,
            )?;
            let again = pool
                .alloc(2 * MIB, Some("contract"), Sharing::Private, 0o600)
                .context("the freed name cannot be reused at once")?;
            let list = pool.list()?;
            let old = find(&list, &obj).context("the mapped object is not listed")?;
            ensure!(
                beluga::is_unlinked(old),
                "the freed object is listed without FLAG_UNLINKED: {old:?}"
            );
            let new = find(&list, &again).context("the new object is not listed")?;
            ensure!(
                !beluga::is_unlinked(new) && beluga::name_of(&new.name) == "contract",
                "the new object: {new:?}"
            );
            pool.free(&again)?;
            expect_errno("map after free", pool.map(&obj), Errno::EINVAL)?;
            expect_errno("free twice", pool.free(&obj), Errno::ENOENT)?;
            drop(m);
            wait_unlisted(&pool, &obj, RELEASE_TIMEOUT).context("after the last mapping went")?;
            wait_unlisted(&pool, &again, RELEASE_TIMEOUT).context("the reused name")
        })(),
    )?;
    check("names and sizes are validated", {
        expect_errno(
            "bad name",
            pool.alloc(MIB, Some("a/b"), Sharing::Private, 0o600),
            Errno::EINVAL,
        )?;
        expect_errno(
            "shared without a name",
            pool.alloc(MIB, None, Sharing::Shared, 0o600),
            Errno::EINVAL,
        )?;
        expect_errno(
            "zero size",
            pool.alloc(0, None, Sharing::Private, 0o600),
            Errno::EINVAL,
        )?;
        expect_errno(
            "too large",
            pool.alloc(1 << 40, None, Sharing::Private, 0o600),
            Errno::ENOSPC,
        )?;
        let a = pool.alloc(MIB, Some("dup"), Sharing::Private, 0o600)?;
        expect_errno(
            "duplicate name",
            pool.alloc(MIB, Some("dup"), Sharing::Private, 0o600),
            Errno::EEXIST,
        )?;
        pool.free(&a)?;
        // Unlinked and unused: it leaves the pool (and the next check
        // finds the pool as it was).
        wait_unlisted(&pool, &a, RELEASE_TIMEOUT)
    })?;
    check(
        "a new object reads as zeros (sections are cleared before they change owner)",
        new_object_is_zero(&pool, info.manager == info.host_index, dev),
    )?;
    check(
        "ALLOC whose result cannot be copied out leaves nothing allocated",
        alloc_efault(&pool),
    )?;
    Ok(())
}

/// How long the reaper may take to let go of an object nobody uses.
pub(crate) const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

const PAT_LIST: &str = "/sys/kernel/debug/x86/pat_memtype_list";

/// Checks that `pat_memtype_list` has a `write-back` range holding
/// `[start, end)`. Its lines read `PAT: [mem 0x<start>-0x<end>] <type>`,
/// `end` exclusive.
fn pat_write_back(list: &str, start: u64, end: u64) -> Result<()> {
    let parse = |line: &str| -> Option<(u64, u64, String)> {
        let rest = &line[line.find("[mem ")? + 5..];
        let (range, kind) = rest.split_once(']')?;
        let (a, b) = range.split_once('-')?;
        let hex = |t: &str| u64::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok();
        Some((hex(a)?, hex(b)?, kind.trim().to_string()))
    };
    let covering: Vec<(u64, u64, String)> = list
        .lines()
        .filter_map(parse)
        .filter(|(a, b, _)| *a <= start && end <= *b)
        .collect();
    ensure!(
        covering.iter().any(|(_, _, kind)| kind == "write-back"),
        "no write-back range holds [{start:#x}-{end:#x}) in {PAT_LIST} (covering: {covering:?})"
    );
    Ok(())
}

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

/// Writes an object, frees it, waits until it is gone, allocates the same
/// size again (with the pool otherwise as it was, first fit likely hands
/// out the same sections) and checks it reads as zeros. On the manager,
/// `cleared_bytes` must have grown by at least the object's size.
fn new_object_is_zero(pool: &Pool, manager: bool, dev: &Path) -> Result<()> {
    let others = pool.list()?.len();
    if others > 0 {
        println!("     ({others} other objects in the pool: the sections may not be reused)");
    }
    let size = 4 * MIB;
    let a = pool.alloc(size, None, Sharing::Private, 0o600)?;
    let m = pool.map(&a)?;
    let data: Vec<u8> = (0..size as usize).map(|i| pattern(11, i) | 1).collect();
    m.write(0, &data)?;
    let cleared_before = sysfs_u64(dev, "cleared_bytes");
    pool.free(&a)?;
    drop(m);
    wait_unlisted(pool, &a, RELEASE_TIMEOUT).context("the written object")?;
    let b = pool.alloc(size, None, Sharing::Private, 0o600)?;
    let m = pool.map(&b)?;
    let mut back = vec![0xffu8; size as usize];
    m.read(0, &mut back)?;
    drop(m);
    pool.free(&b)?;
    if let Some(at) = back.iter().position(|b| *b != 0) {
        bail!(
            "byte {at:#x} of the new object is {:#04x}{}",
            back[at],
            if a.map_offset == b.map_offset {
                " (same sections as the freed object)"
            } else {
                ""
            }
        );
    }
    if a.map_offset != b.map_offset {
        println!("     (the new object got other sections than the freed one)");
    }
    if manager {
        let before = cleared_before?;
        let after = sysfs_u64(dev, "cleared_bytes")?;
        ensure!(
            after >= before + size,
            "cleared_bytes went from {before} to {after} over a {size}-byte allocation"
        );
    }
    wait_unlisted(pool, &b, RELEASE_TIMEOUT)
}

/// ALLOC with its argument on a read-only page: the kernel reads the
/// arguments, allocates, cannot copy the handle out (EFAULT) and must undo
/// the allocation, so the caller never leaks an object it cannot name.
fn alloc_efault(pool: &Pool) -> Result<()> {
    use nix::libc;
    use std::os::fd::AsRawFd;
    const NAME: &str = "contract.efault";
    let before = pool.list()?;
    let args = abi::AllocArgs {
        size: 2 * MIB,
        flags: 0,
        mode: 0o600,
        name: abi::name_field(NAME).context("name")?,
        handle: abi::ObjectHandle::default(),
    };
    let page = AnonPage::new()?;
    // SAFETY: the page is ours, writable and larger than `AllocArgs`.
    unsafe { page.ptr.cast::<abi::AllocArgs>().write(args) };
    page.protect(libc::PROT_READ)?;
    // SAFETY: ALLOC reads and writes one `AllocArgs` at the pointer; the
    // page is mapped (read-only: the write must fail, not the process).
    let r = unsafe { libc::ioctl(pool.as_raw_fd(), abi::ALLOC as _, page.ptr) };
    let err = io::Error::last_os_error();
    ensure!(
        r < 0 && errno_of(&err) == Some(Errno::EFAULT),
        "ALLOC into a read-only page: {}",
        if r < 0 {
            err.to_string()
        } else {
            "succeeded".into()
        }
    );
    wait_for(RELEASE_TIMEOUT, || {
        let new: Vec<String> = pool
            .list()?
            .iter()
            .filter(|o| {
                !before
                    .iter()
                    .any(|b| b.index == o.index && b.serial == o.serial)
            })
            .map(|o| format!("{}:{} flags {:#x}", o.index, o.serial, o.flags))
            .collect();
        Ok(if new.is_empty() {
            Ok(())
        } else {
            Err(format!("listed: {}", new.join(", ")))
        })
    })?;
    expect_errno("open the name", pool.open_object(NAME), Errno::ENOENT)?;
    let h = pool
        .alloc(2 * MIB, Some(NAME), Sharing::Private, 0o600)
        .context("the name is still taken")?;
    pool.free(&h)?;
    Ok(())
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

/// Physical address of pool offset `offset`: the dax instance's start
/// (`/dev/belugaX.Y` is `daxX.Y`) plus the offset.
fn object_phys(dev: &Path, offset: u64) -> Result<u64> {
    let name = dev
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("beluga"))
        .context("device name")?;
    let text = std::fs::read_to_string(format!("/sys/bus/dax/devices/dax{name}/resource"))?;
    let start = u64::from_str_radix(text.trim().trim_start_matches("0x"), 16)?;
    Ok(start + offset)
}

fn status_pid(status: &WaitStatus) -> nix::unistd::Pid {
    status.pid().unwrap_or(nix::unistd::Pid::from_raw(0))
}

fn set_raw_map_mode(pool: &Pool, mode: u32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut value = mode;
    // SAFETY: SET_MAP_MODE reads one u32.
    let r = unsafe { nix::libc::ioctl(pool.as_raw_fd(), abi::SET_MAP_MODE as _, &mut value) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
    hold: Option<&Path>,
) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready()?;
    let h = if open {
        pool.open_object(name)
            .with_context(|| format!("open {name}"))?
    } else {
        pool.alloc(size, Some(name), Sharing::Shared, 0o644)?
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

#[cfg(test)]
mod tests {
    use super::pat_write_back;

    const LIST: &str = "PAT: [mem 0x00000000fd000000-0x00000000fe000000] write-combining\n\
                        PAT: [mem 0x0000000240000000-0x0000000260000000] write-back\n\
                        PAT: [mem 0x0000000250000000-0x0000000250400000] uncached-minus\n";

    #[test]
    fn a_write_back_range_must_hold_the_object() {
        let wb = 0x2_4000_0000u64;
        // Inside the write-back range (also where an uncached one overlaps).
        assert!(pat_write_back(LIST, wb + 0x20_0000, wb + 0x60_0000).is_ok());
        assert!(pat_write_back(LIST, 0x2_5000_0000, 0x2_5040_0000).is_ok());
        // Across its end; in a range of another type; nothing listed.
        assert!(pat_write_back(LIST, 0x2_5fe0_0000, 0x2_6020_0000).is_err());
        assert!(pat_write_back(LIST, 0xfd00_0000, 0xfd20_0000).is_err());
        assert!(pat_write_back("", 0, 4096).is_err());
    }
}
