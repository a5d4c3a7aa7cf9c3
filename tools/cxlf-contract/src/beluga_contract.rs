//! `cxlf-contract beluga-contract`: beluga_dax's mmap and ioctl contract on
//! one host, as a table of named checks run in order against one object:
//! the mmap rules, permissions, write-back only mappings, object lifetime
//! (FREE unlinks; the memory goes with the last user), cleared sections
//! and an ALLOC undone when its result cannot be copied out.

use crate::beluga_checks::{
    errno_of, expect_errno, find, in_child, pattern, sysfs_u64, wait_for, wait_unlisted, AnonPage,
    RELEASE_TIMEOUT,
};
use crate::checks::{run_checks, Check};
use anyhow::{bail, ensure, Context, Result};
use beluga::{abi, Pool, Sharing};
use nix::errno::Errno;
use nix::sys::wait::WaitStatus;
use nix::unistd::Uid;
use std::io;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// What the checks share: the pool as this process opened it and the
/// 4 MiB object `contract` (mode 0600, filled with `pattern(7, _)` by the
/// second check), which the FREE check frees.
struct Contract {
    dev: PathBuf,
    pool: Pool,
    info: abi::PoolInfo,
    obj: abi::ObjectHandle,
}

/// The contract, in the order it is checked.
const CHECKS: &[Check<Contract>] = &[
    (
        "alloc rounds to sections and reports a 2 MiB aligned offset",
        alloc_rounds,
    ),
    (
        "write through one mapping, read back through another",
        write_then_read_elsewhere,
    ),
    (
        "a 2 MiB aligned object is mapped with PMDs (2 faults for 4 MiB)",
        mapped_with_pmds,
    ),
    (
        "a mapping inside the object at a page offset works",
        map_at_page_offset,
    ),
    ("MAP_PRIVATE is refused", map_private_refused),
    (
        "a file maps only the objects it allocated or opened",
        maps_only_own_objects,
    ),
    (
        "a mapping longer than the object is refused",
        oversized_refused,
    ),
    (
        "a mapping at an offset that is not page aligned is refused",
        misaligned_refused,
    ),
    ("a mapping of the metadata is refused", metadata_refused),
    (
        "another uid cannot map, open or free a 0600 object",
        other_uid_refused,
    ),
    (
        "only write-back mappings: uncached and write-combining are refused, and PAT records the pool write-back",
        write_back_only,
    ),
    (
        "the object is listed with its name, owner and mode",
        listed_with_owner,
    ),
    (
        "FREE unlinks: the mapping keeps its data, the name goes and can be reused, LIST shows the object unlinked until the mapping goes",
        free_unlinks,
    ),
    ("names and sizes are validated", names_and_sizes),
    (
        "a new object reads as zeros (sections are cleared before they change owner)",
        new_object_is_zero,
    ),
    (
        "ALLOC whose result cannot be copied out leaves nothing allocated",
        alloc_efault,
    ),
];

/// The mmap and ioctl contract on one host.
pub fn contract(dev: &Path) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready().context("wait for the manager")?;
    let info = pool.info()?;
    ensure!(info.state == abi::STATE_READY, "state {}", info.state);
    let obj = pool.alloc(4 * MIB, Some("contract"), Sharing::Private, 0o600)?;
    let ctx = Contract {
        dev: dev.to_path_buf(),
        pool,
        info,
        obj,
    };
    run_checks(&ctx, CHECKS)
}

fn alloc_rounds(c: &Contract) -> Result<()> {
    let obj = &c.obj;
    ensure!(
        obj.size == 4 * MIB && obj.map_offset.is_multiple_of(2 * MIB),
        "{obj:?}"
    );
    Ok(())
}

fn write_then_read_elsewhere(c: &Contract) -> Result<()> {
    let a = c.pool.map(&c.obj)?;
    let data: Vec<u8> = (0..c.obj.size as usize).map(|i| pattern(7, i)).collect();
    a.write(0, &data)?;
    let b = c.pool.map(&c.obj)?;
    let mut back = vec![0u8; data.len()];
    b.read(0, &mut back)?;
    ensure!(back == data, "data differs");
    Ok(())
}

fn mapped_with_pmds(c: &Contract) -> Result<()> {
    let m = c.pool.map(&c.obj)?;
    let before = minor_faults();
    let mut byte = [0u8; 1];
    for page in (0..m.len()).step_by(4096) {
        m.read(page, &mut byte)?;
    }
    let faults = minor_faults() - before;
    ensure!(faults <= 8, "{faults} faults for {} pages", m.len() / 4096);
    Ok(())
}

fn map_at_page_offset(c: &Contract) -> Result<()> {
    let m = c
        .pool
        .map_range(c.obj.map_offset + 4096 * 3, 4096 * 2, true)?;
    let mut b = [0u8; 16];
    m.read(0, &mut b)?;
    ensure!(
        (0..16).all(|i| b[i] == pattern(7, 4096 * 3 + i)),
        "wrong bytes"
    );
    Ok(())
}

fn map_private_refused(c: &Contract) -> Result<()> {
    use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
    // Through the file that holds the object: only the flag is wrong.
    // SAFETY: a new mapping; unmapped at once if it succeeds.
    let r = unsafe {
        mmap(
            None,
            std::num::NonZeroUsize::new(4096).unwrap(),
            ProtFlags::PROT_READ,
            MapFlags::MAP_PRIVATE,
            &c.pool,
            c.obj.map_offset as i64,
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
}

fn maps_only_own_objects(c: &Contract) -> Result<()> {
    let other = Pool::open(&c.dev)?;
    expect_errno("map from another file", other.map(&c.obj), Errno::EINVAL)?;
    let opened = other.open_object("contract")?;
    ensure!(
        opened.index == c.obj.index && opened.serial == c.obj.serial,
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
}

fn oversized_refused(c: &Contract) -> Result<()> {
    let len = (c.obj.size + 2 * MIB) as usize;
    expect_errno(
        "oversized",
        c.pool.map_range(c.obj.map_offset, len, true),
        Errno::EINVAL,
    )
}

fn misaligned_refused(c: &Contract) -> Result<()> {
    expect_errno(
        "misaligned",
        c.pool.map_range(c.obj.map_offset + 100, 4096, true),
        Errno::EINVAL,
    )
}

fn metadata_refused(c: &Contract) -> Result<()> {
    expect_errno("offset 0", c.pool.map_range(0, 4096, false), Errno::EINVAL)
}

fn other_uid_refused(c: &Contract) -> Result<()> {
    let status = in_child(|| other_uid_child(c))?;
    ensure!(
        status == WaitStatus::Exited(status_pid(&status), 0),
        "child: {status:?}"
    );
    Ok(())
}

/// In a forked child: becomes uid 1000 and tries what only the owner (or
/// root) may do; returns 0, or the number of the first step that went
/// wrong.
fn other_uid_child(c: &Contract) -> i32 {
    let (pool, obj) = (&c.pool, &c.obj);
    if nix::unistd::setuid(Uid::from_raw(1000)).is_err() {
        return 10;
    }
    if !matches!(
        pool.map(obj).map_err(|e| errno_of(&e)),
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
        pool.free(obj).map_err(|e| errno_of(&e)),
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
}

fn write_back_only(c: &Contract) -> Result<()> {
    use beluga::MapMode::{Uncached, WriteBack, WriteCombining};
    let pool = &c.pool;
    expect_errno("uncached", pool.set_map_mode(Uncached), Errno::EINVAL)?;
    expect_errno(
        "write-combining",
        pool.set_map_mode(WriteCombining),
        Errno::EINVAL,
    )?;
    pool.set_map_mode(WriteBack)?;
    expect_errno("mode 9", set_raw_map_mode(pool, 9), Errno::EINVAL)?;
    // The refusals changed nothing: mappings still work.
    let m = pool.map(&c.obj)?;
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
            let phys = object_phys(&c.dev, c.obj.map_offset)?;
            pat_write_back(&list, phys, phys + c.obj.size)?
        }
        Err(e) => println!("     (no {PAT_LIST}: {e}; PAT record not checked)"),
    }
    Ok(())
}

fn listed_with_owner(c: &Contract) -> Result<()> {
    let list = c.pool.list()?;
    let me = find(&list, &c.obj).context("not listed")?;
    ensure!(
        beluga::name_of(&me.name) == "contract"
            && me.mode == 0o600
            && me.owner_host == c.info.host_index,
        "{me:?}"
    );
    Ok(())
}

fn free_unlinks(c: &Contract) -> Result<()> {
    let (pool, obj) = (&c.pool, &c.obj);
    let m = pool.map(obj)?;
    pool.free(obj)?;
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
    let old = find(&list, obj).context("the mapped object is not listed")?;
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
    expect_errno("map after free", pool.map(obj), Errno::EINVAL)?;
    expect_errno("free twice", pool.free(obj), Errno::ENOENT)?;
    drop(m);
    wait_unlisted(pool, obj, RELEASE_TIMEOUT).context("after the last mapping went")?;
    wait_unlisted(pool, &again, RELEASE_TIMEOUT).context("the reused name")
}

fn names_and_sizes(c: &Contract) -> Result<()> {
    let pool = &c.pool;
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
    wait_unlisted(pool, &a, RELEASE_TIMEOUT)
}

fn minor_faults() -> i64 {
    // SAFETY: `usage` is a valid out-parameter.
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { nix::libc::getrusage(nix::libc::RUSAGE_SELF, &mut usage) };
    usage.ru_minflt
}

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

/// Writes an object, frees it, waits until it is gone, allocates the same
/// size again (with the pool otherwise as it was, first fit likely hands
/// out the same sections) and checks it reads as zeros. On the manager,
/// `cleared_bytes` must have grown by at least the object's size.
fn new_object_is_zero(c: &Contract) -> Result<()> {
    let (pool, dev) = (&c.pool, c.dev.as_path());
    let manager = c.info.manager == c.info.host_index;
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
fn alloc_efault(c: &Contract) -> Result<()> {
    let pool = &c.pool;
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
