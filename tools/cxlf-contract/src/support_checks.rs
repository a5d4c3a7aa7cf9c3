//! The support layer's test device from user space
//! (`/dev/cxlfabric_misc_test`, kunit/cxlfabric_support_kunit.ko).
//!
//! `cxlf-contract misc`: the miscdevice wrapper's contract as a table of
//! named checks: per-file state through ioctl, task work, unknown commands,
//! bad pointers and the mmap contract (MAP_SHARED, one page at offset 0,
//! content from the kernel). Prints one line per check and fails on the
//! first that does not hold.
//!
//! `cxlf-contract dax-binding`: what the test dax driver saw at probe.

use crate::checks::{run_checks, Check};
use anyhow::{bail, ensure, Context, Result};
use nix::errno::Errno;
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::fs::{File, OpenOptions};
use std::num::NonZeroUsize;
use std::os::fd::AsRawFd;
use uapi::ioctl::io;
use uapi::selftest as abi;

/// Two files open on the device: per-file state shows as a difference.
struct Misc {
    a: File,
    b: File,
}

/// The miscdevice contract, in the order it is checked.
const MISC_CHECKS: &[Check<Misc>] = &[
    ("each open file has its own value", own_value_per_file),
    (
        "task work runs on the caller's way back to user space",
        task_work_runs,
    ),
    ("open count is shared by the device", open_count_shared),
    ("unknown ioctl is ENOTTY", unknown_ioctl),
    ("bad user pointer is EFAULT", bad_pointer),
    ("MAP_SHARED page holds the kernel's pattern", shared_page),
    ("MAP_PRIVATE is refused with EINVAL", private_refused),
    ("two pages are refused with EINVAL", two_pages_refused),
    ("a non-zero offset is refused with EINVAL", offset_refused),
];

fn open_rw(device: &str) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
        .with_context(|| format!("opening {device}"))
}

pub(crate) fn misc(device: &str) -> Result<()> {
    let a = open_rw(device)?;
    let b = open_rw(device)?;
    run_checks(&Misc { a, b }, MISC_CHECKS)
}

fn own_value_per_file(c: &Misc) -> Result<()> {
    ioctl_u64(&c.a, abi::SET_VALUE, &mut 42)?;
    let (mut va, mut vb) = (0, 7);
    ioctl_u64(&c.a, abi::GET_VALUE, &mut va)?;
    ioctl_u64(&c.b, abi::GET_VALUE, &mut vb)?;
    ensure!(va == 42 && vb == 0, "got {va} and {vb}, expected 42 and 0");
    Ok(())
}

fn task_work_state(file: &File) -> Result<abi::TaskWorkState> {
    let mut st = abi::TaskWorkState::default();
    ioctl_read(file, abi::GET_TASK_WORK, &mut st).context("GET_TASK_WORK")?;
    Ok(st)
}

fn task_work_runs(c: &Misc) -> Result<()> {
    let before = task_work_state(&c.a)?;
    ioctl_u64(&c.a, abi::QUEUE_TASK_WORK, &mut 5)?;
    let after = task_work_state(&c.a)?;
    ensure!(
        after.sum == before.sum + 5 && after.pending == 0,
        "before {before:?}, after queueing 5: {after:?}"
    );
    // From another thread: its own work, run by that thread.
    std::thread::scope(|s| {
        s.spawn(|| ioctl_u64(&c.b, abi::QUEUE_TASK_WORK, &mut 7))
            .join()
    })
    .expect("thread")?;
    let last = task_work_state(&c.a)?;
    ensure!(last.sum == after.sum + 7, "after the thread: {last:?}");
    Ok(())
}

fn open_count_shared(c: &Misc) -> Result<()> {
    let mut opens = 0;
    ioctl_u64(&c.a, abi::GET_OPENS, &mut opens)?;
    ensure!(opens >= 2, "{opens} opens counted, at least 2 expected");
    Ok(())
}

fn unknown_ioctl(c: &Misc) -> Result<()> {
    let err = ioctl_u64(&c.a, io(abi::IOC_TYPE, 99), &mut 0);
    ensure!(err == Err(Errno::ENOTTY), "got {err:?}");
    Ok(())
}

fn bad_pointer(c: &Misc) -> Result<()> {
    // SAFETY: the kernel must reject the bad pointer without touching
    // this process's memory.
    let ret = unsafe {
        nix::libc::ioctl(
            c.a.as_raw_fd(),
            abi::GET_VALUE as _,
            std::ptr::dangling_mut::<u64>(),
        )
    };
    ensure!(
        Errno::result(ret) == Err(Errno::EFAULT),
        "got {:?}",
        Errno::result(ret)
    );
    Ok(())
}

fn shared_page(c: &Misc) -> Result<()> {
    let p = map(&c.a, PAGE, 0, MapFlags::MAP_SHARED)?;
    // SAFETY: `p` maps PAGE readable bytes until the munmap below.
    let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), PAGE) };
    let bad = (0..PAGE).find(|&i| bytes[i] != abi::pattern_byte(i));
    // SAFETY: unmapping what was mapped above; `bytes` is not used after.
    unsafe { munmap(p.cast(), PAGE)? };
    ensure!(bad.is_none(), "byte {bad:?} differs");
    Ok(())
}

fn private_refused(c: &Misc) -> Result<()> {
    map_refused(&c.a, PAGE, 0, MapFlags::MAP_PRIVATE)
}

fn two_pages_refused(c: &Misc) -> Result<()> {
    map_refused(&c.a, 2 * PAGE, 0, MapFlags::MAP_SHARED)
}

fn offset_refused(c: &Misc) -> Result<()> {
    map_refused(&c.a, PAGE, PAGE as i64, MapFlags::MAP_SHARED)
}

/// A mapping the device must refuse with EINVAL.
fn map_refused(file: &File, len: usize, offset: i64, flags: MapFlags) -> Result<()> {
    match map(file, len, offset, flags) {
        Err(Errno::EINVAL) => Ok(()),
        Err(e) => bail!("got {e}"),
        Ok(p) => {
            // SAFETY: unmapping the mapping that should not exist.
            unsafe { munmap(p.cast(), len)? };
            bail!("the mapping was allowed")
        }
    }
}

pub(crate) fn dax_binding(
    device: &str,
    unbound: bool,
    start: Option<u64>,
    size: Option<u64>,
) -> Result<()> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
        .with_context(|| format!("opening {device}"))?;
    let mut binding = abi::DaxBinding::default();
    ioctl_read(&file, abi::GET_DAX_BINDING, &mut binding).context("GET_DAX_BINDING")?;
    println!("{binding:?}");
    if unbound {
        ensure!(
            binding == abi::DaxBinding::default(),
            "expected nothing bound"
        );
        return Ok(());
    }
    ensure!(
        binding.bound == 1,
        "no dax instance is bound to {}",
        abi::DAX_DRIVER_NAME
    );
    if let Some(start) = start {
        ensure!(
            binding.start == start,
            "probe saw start {:#x}, expected {start:#x}",
            binding.start
        );
    }
    if let Some(size) = size {
        ensure!(
            binding.size == size,
            "probe saw size {:#x}, expected {size:#x}",
            binding.size
        );
    }
    Ok(())
}

const PAGE: usize = 4096;

/// An ioctl of the test device that writes one `T` (an ABI structure of
/// the command's size) through its argument.
fn ioctl_read<T: Copy>(file: &File, cmd: u32, out: &mut T) -> Result<(), Errno> {
    // SAFETY: `cmd` writes one `T` through the pointer, valid and
    // exclusively borrowed for the duration of the call.
    let ret = unsafe { nix::libc::ioctl(file.as_raw_fd(), cmd as _, out as *mut T) };
    Errno::result(ret).map(drop)
}

fn ioctl_u64(file: &File, cmd: u32, value: &mut u64) -> Result<(), Errno> {
    // SAFETY: every command of the test device takes a pointer to a u64,
    // which `value` is, for the duration of the call.
    let ret = unsafe { nix::libc::ioctl(file.as_raw_fd(), cmd as _, value as *mut u64) };
    Errno::result(ret).map(drop)
}

fn map(
    file: &File,
    len: usize,
    offset: i64,
    flags: MapFlags,
) -> Result<std::ptr::NonNull<u8>, Errno> {
    // SAFETY: a fresh mapping at an address the kernel chooses.
    unsafe {
        mmap(
            None,
            NonZeroUsize::new(len).unwrap(),
            ProtFlags::PROT_READ,
            flags,
            file,
            offset,
        )
    }
    .map(|p| p.cast())
}
