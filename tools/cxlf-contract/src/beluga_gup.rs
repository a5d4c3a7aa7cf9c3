//! `cxlf-contract beluga-gup`: beluga_dax mappings are page-backed
//! (ZONE_DEVICE pages behind devmap entries, as device-dax's are), so
//! everything in the kernel that goes through `get_user_pages` must work
//! on pool memory, where a raw-PFN mapping made it fail (EFAULT) or crash.
//! On a 4 MiB private object filled with a known pattern, it checks:
//! `process_vm_readv`/`writev` from another process, `/proc/self/mem`,
//! `O_DIRECT` through a loop device, io_uring fixed buffers (a
//! `FOLL_LONGTERM` pin) and a `READ_FIXED` into one, a long-term pin held
//! across FREE (the sections must stay, counted by sysfs `pinned_objects`,
//! until the pin goes, then leave the pool), `vmsplice`, and `mbind` with
//! `MPOL_MF_STRICT` (and `MOVE`), whose walk once oopsed on devmap PMDs.
//! The harness checks the kernel log afterwards (no oops, BUG, WARNING).

use crate::beluga_checks::{
    find, fork_child, in_child, pattern, sysfs_u64, wait_for, wait_unlisted, RELEASE_TIMEOUT,
};
use crate::checks::check;
use anyhow::{bail, ensure, Context, Result};
use beluga::{Mapping, Pool, Sharing};
use nix::libc;
use nix::sys::wait::WaitStatus;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

const MIB: usize = 1 << 20;
/// Pattern of the object.
const SEED: u64 = 0x6b7;
/// Pattern of the files read into it.
const FILE_SEED: u64 = 0x51e;

fn os_error(what: &str) -> anyhow::Error {
    anyhow::Error::new(io::Error::last_os_error()).context(what.to_string())
}

/// Fills the whole mapping with the object's pattern.
fn fill(m: &Mapping) -> Result<()> {
    let data: Vec<u8> = (0..m.len()).map(|i| pattern(SEED, i)).collect();
    m.write(0, &data)?;
    Ok(())
}

/// Checks `len` bytes of `m` at `offset` against `want(i)` (i from 0).
fn expect_bytes(m: &Mapping, offset: usize, len: usize, want: impl Fn(usize) -> u8) -> Result<()> {
    let mut got = vec![0u8; len];
    m.read(offset, &mut got)?;
    expect_slice(&got, want).with_context(|| format!("mapping at {offset:#x}"))
}

fn expect_slice(got: &[u8], want: impl Fn(usize) -> u8) -> Result<()> {
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want(i)) {
        bail!("byte {i:#x} is {:#04x}, expected {:#04x}", got[i], want(i));
    }
    Ok(())
}

/// Writes `len` bytes of the file pattern into a new file at `path`.
fn pattern_file(path: &Path, len: usize) -> Result<File> {
    let data: Vec<u8> = (0..len).map(|i| pattern(FILE_SEED, i)).collect();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    file.write_all_at(&data, 0)?;
    Ok(file)
}

pub fn gup(dev: &Path) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready().context("wait for the manager")?;
    let obj = pool.alloc(4 * MIB as u64, None, Sharing::Private, 0o600)?;
    let m = pool.map(&obj)?;
    fill(&m)?;
    let mut passed = 0;
    let mut run = |name: &str, result: Result<()>| -> Result<()> {
        check(name, result)?;
        passed += 1;
        Ok(())
    };
    run(
        "process_vm_readv from another process returns the pattern; process_vm_writev changes the bytes",
        process_vm(&m),
    )?;
    run("/proc/self/mem reads and writes the mapping", proc_mem(&m))?;
    run(
        "O_DIRECT through a loop device writes from and reads into the mapping",
        loop_direct(&m),
    )?;
    run(
        "io_uring registers the mapping as fixed buffers (a long-term pin) and READ_FIXED fills it",
        uring_fixed(&m),
    )?;
    run(
        "a long-term pin held across FREE keeps the object (pinned_objects) until it is released",
        pin_across_free(dev, &pool),
    )?;
    run("vmsplice of the mapping into a pipe", vmsplice(&m))?;
    run(
        "mbind MPOL_BIND with MPOL_MF_STRICT (and MOVE) on a PMD-mapped range: 0 or EIO",
        mbind(&m),
    )?;
    drop(m);
    pool.free(&obj)?;
    println!(
        "beluga-gup: {passed} checks passed on {} (object {}:{} at {:#x})",
        dev.display(),
        obj.index,
        obj.serial,
        obj.map_offset
    );
    Ok(())
}

/// A forked child reads the parent's mapping with `process_vm_readv` and
/// writes a marker into it with `process_vm_writev`.
fn process_vm(m: &Mapping) -> Result<()> {
    fill(m)?;
    const MARKER: &[u8] = b"written by process_vm_writev";
    let parent = nix::unistd::getpid().as_raw();
    let base = m.as_ptr() as usize;
    // Not page aligned, across pages and the 2 MiB boundary.
    let (off, len) = (2 * MIB - 100_000, 256 * 1024);
    let marker_at = 3 * MIB + 7;
    // Allocated before the fork: the child only makes system calls.
    let mut buf = vec![0u8; len];
    let status = in_child(|| {
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: len,
        };
        let remote = libc::iovec {
            iov_base: (base + off) as *mut libc::c_void,
            iov_len: len,
        };
        // SAFETY: `local` is our buffer; `remote` is read in the parent.
        let n = unsafe { libc::process_vm_readv(parent, &local, 1, &remote, 1, 0) };
        if n != len as isize {
            return 1;
        }
        if (0..len).any(|i| buf[i] != pattern(SEED, off + i)) {
            return 2;
        }
        let local = libc::iovec {
            iov_base: MARKER.as_ptr() as *mut libc::c_void,
            iov_len: MARKER.len(),
        };
        let remote = libc::iovec {
            iov_base: (base + marker_at) as *mut libc::c_void,
            iov_len: MARKER.len(),
        };
        // SAFETY: `local` is only read; `remote` is written in the parent.
        let n = unsafe { libc::process_vm_writev(parent, &local, 1, &remote, 1, 0) };
        if n != MARKER.len() as isize {
            return 3;
        }
        0
    })?;
    match status {
        WaitStatus::Exited(_, 0) => {}
        WaitStatus::Exited(_, 1) => bail!("process_vm_readv failed or was short"),
        WaitStatus::Exited(_, 2) => bail!("process_vm_readv returned other bytes"),
        WaitStatus::Exited(_, 3) => bail!("process_vm_writev failed or was short"),
        other => bail!("child: {other:?}"),
    }
    expect_bytes(m, marker_at, MARKER.len(), |i| MARKER[i]).context("the marker")?;
    expect_bytes(m, marker_at + MARKER.len(), 4096, |i| {
        pattern(SEED, marker_at + MARKER.len() + i)
    })
}

/// `pread`/`pwrite` of `/proc/self/mem` at the mapping's address.
fn proc_mem(m: &Mapping) -> Result<()> {
    fill(m)?;
    const MARKER: &[u8] = b"written through /proc/self/mem";
    let mem = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")?;
    let base = m.as_ptr() as u64;
    let off = MIB + 12_345;
    let mut buf = vec![0u8; 64 * 1024];
    mem.read_exact_at(&mut buf, base + off as u64)
        .context("pread")?;
    expect_slice(&buf, |i| pattern(SEED, off + i)).context("pread")?;
    let at = 2 * MIB + 5;
    mem.write_all_at(MARKER, base + at as u64)
        .context("pwrite")?;
    expect_bytes(m, at, MARKER.len(), |i| MARKER[i]).context("pwrite")
}

// <linux/loop.h>
const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_MAJOR: u32 = 7;

/// A loop device attached to a file; detached (and the node and file
/// removed, where this made them) on drop.
struct LoopDevice {
    dev: File,
    node: PathBuf,
    made_node: bool,
    backing: PathBuf,
}

impl LoopDevice {
    fn attach(backing: &Path) -> Result<LoopDevice> {
        let file = OpenOptions::new().read(true).write(true).open(backing)?;
        let ctl = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/loop-control")?;
        // SAFETY: LOOP_CTL_GET_FREE takes no argument.
        let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE as _) };
        if n < 0 {
            return Err(os_error("LOOP_CTL_GET_FREE"));
        }
        let node = PathBuf::from(format!("/dev/loop{n}"));
        // devtmpfs creates the node from a kernel thread: give it a moment.
        let mut made_node = false;
        if wait_for(Duration::from_secs(1), || {
            Ok(if node.exists() {
                Ok(())
            } else {
                Err("absent".into())
            })
        })
        .is_err()
        {
            let path = std::ffi::CString::new(node.as_os_str().as_encoded_bytes())?;
            let devno = libc::makedev(LOOP_MAJOR, n as u32);
            // SAFETY: a NUL-terminated path; mknod reads it only.
            if unsafe { libc::mknod(path.as_ptr(), libc::S_IFBLK | 0o600, devno) } < 0 {
                return Err(os_error("mknod"));
            }
            made_node = true;
        }
        let dev = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&node)
            .with_context(|| format!("open {}", node.display()))?;
        let mut me = LoopDevice {
            dev,
            node,
            made_node,
            backing: backing.to_path_buf(),
        };
        // SAFETY: LOOP_SET_FD takes the backing file's descriptor.
        if unsafe { libc::ioctl(me.dev.as_raw_fd(), LOOP_SET_FD as _, file.as_raw_fd()) } < 0 {
            let e = os_error("LOOP_SET_FD");
            // Nothing to detach.
            me.dev = File::open("/dev/null")?;
            return Err(e);
        }
        Ok(me)
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // SAFETY: LOOP_CLR_FD takes no argument (on /dev/null it fails).
        unsafe { libc::ioctl(self.dev.as_raw_fd(), LOOP_CLR_FD as _, 0) };
        if self.made_node {
            let _ = std::fs::remove_file(&self.node);
        }
        let _ = std::fs::remove_file(&self.backing);
    }
}

/// `pread`/`pwrite` of an `O_DIRECT` file with the mapping as the buffer.
fn direct_io(fd: RawFd, write: bool, buf: *mut u8, len: usize, offset: u64) -> Result<()> {
    // SAFETY: `buf` is `len` bytes of the caller's mapping.
    let n = unsafe {
        if write {
            libc::pwrite(fd, buf.cast(), len, offset as libc::off_t)
        } else {
            libc::pread(fd, buf.cast(), len, offset as libc::off_t)
        }
    };
    if n < 0 {
        return Err(os_error(if write { "pwrite" } else { "pread" }));
    }
    ensure!(n as usize == len, "{n} of {len} bytes transferred");
    Ok(())
}

/// O_DIRECT through a loop device over a tmpfs file: the block layer pins
/// the mapping's pages for the bios.
fn loop_direct(m: &Mapping) -> Result<()> {
    fill(m)?;
    let backing = PathBuf::from("/tmp/cxlf-contract-gup.img");
    let file = pattern_file(&backing, 8 * MIB)?;
    let lo = LoopDevice::attach(&backing)?;
    let dev = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&lo.node)
        .with_context(|| format!("open {} O_DIRECT", lo.node.display()))?;
    let fd = dev.as_raw_fd();
    let base = m.as_ptr();
    // The mapping's first MiB to the device, back into its second MiB.
    direct_io(fd, true, base, MIB, 0).context("from the mapping")?;
    // SAFETY: inside the 4 MiB mapping.
    direct_io(fd, false, unsafe { base.add(MIB) }, MIB, 0).context("into the mapping")?;
    expect_bytes(m, MIB, MIB, |i| pattern(SEED, i)).context("read back")?;
    // The file behind the loop device got it too.
    let mut got = vec![0u8; MIB];
    file.read_exact_at(&mut got, 0)?;
    expect_slice(&got, |i| pattern(SEED, i)).context("the backing file")?;
    // The file's own bytes, read from the device into the mapping.
    // SAFETY: inside the 4 MiB mapping.
    direct_io(fd, false, unsafe { base.add(2 * MIB) }, MIB, 4 * MIB as u64)
        .context("the file into the mapping")?;
    expect_bytes(m, 2 * MIB, MIB, |i| pattern(FILE_SEED, 4 * MIB + i))
        .context("the file's bytes")?;
    drop(dev);
    drop(lo);
    Ok(())
}

// <linux/io_uring.h>
const IORING_OFF_SQ_RING: libc::off_t = 0;
const IORING_OFF_CQ_RING: libc::off_t = 0x800_0000;
const IORING_OFF_SQES: libc::off_t = 0x1000_0000;
const IORING_FEAT_SINGLE_MMAP: u32 = 1;
const IORING_ENTER_GETEVENTS: libc::c_uint = 1;
const IORING_REGISTER_BUFFERS: libc::c_uint = 0;
const IORING_UNREGISTER_BUFFERS: libc::c_uint = 1;
const IORING_OP_READ_FIXED: u8 = 4;
const SQE_BYTES: usize = 64;
const CQE_BYTES: usize = 16;

#[repr(C)]
#[derive(Default, Debug)]
struct SqRingOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default, Debug)]
struct CqRingOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    overflow: u32,
    cqes: u32,
    flags: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default, Debug)]
struct UringParams {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqRingOffsets,
    cq_off: CqRingOffsets,
}

const _: () = assert!(std::mem::size_of::<UringParams>() == 120);

/// A minimal io_uring: setup, buffer registration, one `READ_FIXED` at a
/// time. Rings unmapped and the fd closed on drop.
struct Ring {
    fd: OwnedFd,
    p: UringParams,
    sq: (*mut u8, usize),
    cq: Option<(*mut u8, usize)>,
    sqes: (*mut u8, usize),
}

fn map_ring(fd: RawFd, len: usize, offset: libc::off_t) -> Result<(*mut u8, usize)> {
    // SAFETY: a new shared mapping of the ring at a kernel-chosen address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd,
            offset,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(os_error("mmap io_uring ring"));
    }
    Ok((p.cast(), len))
}

impl Ring {
    fn new(entries: u32) -> Result<Ring> {
        let mut p = UringParams::default();
        // SAFETY: io_uring_setup fills the params structure.
        let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, entries, &mut p) };
        if fd < 0 {
            return Err(os_error("io_uring_setup"));
        }
        // SAFETY: a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let raw = fd.as_raw_fd();
        let sq_len = p.sq_off.array as usize + p.sq_entries as usize * 4;
        let cq_len = p.cq_off.cqes as usize + p.cq_entries as usize * CQE_BYTES;
        let single = p.features & IORING_FEAT_SINGLE_MMAP != 0;
        let mut ring = Ring {
            fd,
            sq: (std::ptr::null_mut(), 0),
            cq: None,
            sqes: (std::ptr::null_mut(), 0),
            p,
        };
        ring.sq = map_ring(
            raw,
            if single { sq_len.max(cq_len) } else { sq_len },
            IORING_OFF_SQ_RING,
        )?;
        if !single {
            ring.cq = Some(map_ring(raw, cq_len, IORING_OFF_CQ_RING)?);
        }
        ring.sqes = map_ring(raw, ring.p.sq_entries as usize * SQE_BYTES, IORING_OFF_SQES)?;
        Ok(ring)
    }

    fn register(&self, opcode: libc::c_uint, arg: *const libc::c_void, n: u32) -> io::Result<()> {
        // SAFETY: `arg` is what `opcode` expects (an iovec array or NULL).
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                self.fd.as_raw_fd(),
                opcode,
                arg,
                n,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Registers `[ptr, ptr + len)` as fixed buffer 0 (pins its pages
    /// long-term).
    fn register_buffer(&self, ptr: *mut u8, len: usize) -> io::Result<()> {
        let iov = libc::iovec {
            iov_base: ptr.cast(),
            iov_len: len,
        };
        self.register(
            IORING_REGISTER_BUFFERS,
            (&iov as *const libc::iovec).cast(),
            1,
        )
    }

    fn unregister_buffers(&self) -> io::Result<()> {
        self.register(IORING_UNREGISTER_BUFFERS, std::ptr::null(), 0)
    }

    fn at<T>(&self, base: *mut u8, offset: u32) -> *mut T {
        // SAFETY: the kernel's offsets lie inside the ring it mapped.
        unsafe { base.add(offset as usize).cast() }
    }

    /// Reads `len` bytes at `offset` of `fd` into fixed buffer 0 at
    /// `addr`; the completion's result.
    fn read_fixed(&self, fd: RawFd, addr: *mut u8, len: u32, offset: u64) -> Result<i32> {
        use std::sync::atomic::{AtomicU32, Ordering};
        let sqe = self.sqes.0;
        // SAFETY: the first SQE of the mapped array; nothing else uses it.
        unsafe {
            std::ptr::write_bytes(sqe, 0, SQE_BYTES);
            sqe.write(IORING_OP_READ_FIXED);
            sqe.add(4).cast::<i32>().write_unaligned(fd);
            sqe.add(8).cast::<u64>().write_unaligned(offset);
            sqe.add(16).cast::<u64>().write_unaligned(addr as u64);
            sqe.add(24).cast::<u32>().write_unaligned(len);
            sqe.add(32).cast::<u64>().write_unaligned(0xbe1a);
            sqe.add(40).cast::<u16>().write_unaligned(0);
        }
        let sq = self.sq.0;
        let o = &self.p.sq_off;
        // SAFETY: ring fields at the kernel's offsets, u32 aligned; the
        // kernel reads the tail with acquire semantics.
        unsafe {
            let tail = &*self.at::<AtomicU32>(sq, o.tail);
            let mask = *self.at::<u32>(sq, o.ring_mask);
            let t = tail.load(Ordering::Acquire);
            *self.at::<u32>(sq, o.array).add((t & mask) as usize) = 0;
            tail.store(t.wrapping_add(1), Ordering::Release);
        }
        // SAFETY: no signal mask argument.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                self.fd.as_raw_fd(),
                1u32,
                1u32,
                IORING_ENTER_GETEVENTS,
                std::ptr::null::<libc::c_void>(),
                0usize,
            )
        };
        if r < 0 {
            return Err(os_error("io_uring_enter"));
        }
        let cq = self.cq.map_or(sq, |c| c.0);
        let o = &self.p.cq_off;
        // SAFETY: as above, for the completion ring.
        unsafe {
            let head = &*self.at::<AtomicU32>(cq, o.head);
            let tail = &*self.at::<AtomicU32>(cq, o.tail);
            let mask = *self.at::<u32>(cq, o.ring_mask);
            let h = head.load(Ordering::Acquire);
            ensure!(
                tail.load(Ordering::Acquire) != h,
                "no completion after io_uring_enter"
            );
            let cqe: *mut u8 = self.at(cq, o.cqes + (h & mask) * CQE_BYTES as u32);
            let user_data = cqe.cast::<u64>().read_unaligned();
            let res = cqe.add(8).cast::<i32>().read_unaligned();
            head.store(h.wrapping_add(1), Ordering::Release);
            ensure!(user_data == 0xbe1a, "completion of {user_data:#x}");
            Ok(res)
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        for (p, len) in [Some(self.sq), self.cq, Some(self.sqes)]
            .into_iter()
            .flatten()
        {
            if !p.is_null() {
                // SAFETY: a ring mapping made in `new`, not used after.
                unsafe { libc::munmap(p.cast(), len) };
            }
        }
    }
}

/// io_uring fixed buffers over the mapping (`FOLL_LONGTERM` pins), and one
/// `READ_FIXED` from a tmpfs file into them.
fn uring_fixed(m: &Mapping) -> Result<()> {
    fill(m)?;
    let ring = Ring::new(8)?;
    ring.register_buffer(m.as_ptr(), 2 * MIB)
        .context("IORING_REGISTER_BUFFERS over 2 MiB of the mapping")?;
    let path = PathBuf::from("/tmp/cxlf-contract-uring");
    let file = pattern_file(&path, 2 * MIB);
    let read = file.and_then(|file| {
        // SAFETY: inside the registered 2 MiB of the mapping.
        let dst = unsafe { m.as_ptr().add(MIB) };
        let res = ring.read_fixed(file.as_raw_fd(), dst, MIB as u32, 512 * 1024)?;
        ensure!(res == MIB as i32, "READ_FIXED: result {res}");
        expect_bytes(m, MIB, MIB, |i| pattern(FILE_SEED, 512 * 1024 + i)).context("READ_FIXED")?;
        // The registration did not disturb the rest.
        expect_bytes(m, 0, MIB, |i| pattern(SEED, i))
    });
    let _ = std::fs::remove_file(&path);
    let unregistered = ring.unregister_buffers();
    read?;
    unregistered.context("IORING_UNREGISTER_BUFFERS")?;
    drop(ring);
    Ok(())
}

/// An io_uring registration of an unnamed object outlives FREE, the
/// mapping and the file that allocated it: the object stays (unlinked,
/// counted in `pinned_objects`) until the buffers are unregistered, then
/// leaves the pool.
fn pin_across_free(dev: &Path, pool: &Pool) -> Result<()> {
    let baseline = sysfs_u64(dev, "pinned_objects")?;
    let owner = Pool::open(dev)?;
    let obj = owner.alloc(2 * MIB as u64, None, Sharing::Private, 0o600)?;
    let m = owner.map(&obj)?;
    fill(&m)?;
    let ring = Ring::new(8)?;
    ring.register_buffer(m.as_ptr(), 2 * MIB)
        .context("IORING_REGISTER_BUFFERS")?;
    owner.free(&obj).context("FREE")?;
    drop(m);
    drop(owner);
    let pinned = |want: u64| -> Result<std::result::Result<(), String>> {
        let now = sysfs_u64(dev, "pinned_objects")?;
        Ok(if now == want {
            Ok(())
        } else {
            Err(format!("pinned_objects {now} (expected {want})"))
        })
    };
    let held = wait_for(RELEASE_TIMEOUT, || {
        if let Err(state) = pinned(baseline + 1)? {
            return Ok(Err(state));
        }
        Ok(match find(&pool.list()?, &obj) {
            Some(o) if beluga::is_unlinked(o) => Ok(()),
            Some(o) => Err(format!("listed with flags {:#x}, not unlinked", o.flags)),
            None => Err("not listed: the pool let go of a pinned object".into()),
        })
    });
    let unregistered = ring.unregister_buffers();
    drop(ring);
    held.context("while pinned")?;
    unregistered.context("IORING_UNREGISTER_BUFFERS")?;
    wait_unlisted(pool, &obj, RELEASE_TIMEOUT).context("after the pin went")?;
    wait_for(RELEASE_TIMEOUT, || pinned(baseline)).context("after the pin went")
}

/// `vmsplice` of the mapping's first 64 KiB into a pipe (the pipe holds
/// references to the pages), read out of the other end.
fn vmsplice(m: &Mapping) -> Result<()> {
    fill(m)?;
    const LEN: usize = 64 * 1024;
    let (r, w) = nix::unistd::pipe()?;
    let mut out = vec![0u8; LEN];
    let mut done = 0;
    while done < LEN {
        let iov = libc::iovec {
            // SAFETY: inside the mapping.
            iov_base: unsafe { m.as_ptr().add(done) }.cast(),
            iov_len: LEN - done,
        };
        // SAFETY: one iovec over the mapping, only read.
        let n = unsafe { libc::vmsplice(w.as_raw_fd(), &iov, 1, 0) };
        if n <= 0 {
            return Err(os_error("vmsplice"));
        }
        let mut got = 0;
        while got < n as usize {
            let k = nix::unistd::read(r.as_raw_fd(), &mut out[done + got..done + n as usize])?;
            ensure!(k > 0, "the pipe ended early");
            got += k;
        }
        done += n as usize;
    }
    expect_slice(&out, |i| pattern(SEED, i))
}

/// `mbind` over a PMD-mapped 2 MiB of the mapping: the mempolicy walk
/// meets devmap PMDs; strict binding may report EIO (pages it cannot
/// move), which is fine; the data must stay.
fn mbind(m: &Mapping) -> Result<()> {
    const MPOL_BIND: libc::c_long = 2;
    const MPOL_MF_STRICT: libc::c_ulong = 1;
    const MPOL_MF_MOVE: libc::c_ulong = 2;
    fill(m)?;
    let nodes: [libc::c_ulong; 1] = [1];
    for (flags, what) in [
        (MPOL_MF_STRICT, "MPOL_MF_STRICT"),
        (MPOL_MF_STRICT | MPOL_MF_MOVE, "MPOL_MF_STRICT|MPOL_MF_MOVE"),
    ] {
        // SAFETY: mbind reads the node mask (64 bits) and changes only the
        // policy of our own range.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                m.as_ptr(),
                2 * MIB,
                MPOL_BIND,
                nodes.as_ptr(),
                64 as libc::c_ulong,
                flags,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            ensure!(e.raw_os_error() == Some(libc::EIO), "{what}: {e}");
            println!("     {what}: EIO");
        } else {
            println!("     {what}: 0");
        }
        expect_bytes(m, 0, 4 * MIB, |i| pattern(SEED, i)).with_context(|| what.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The GUP users on ordinary shared memory (a shmem file), where they
    //! are known to work: these check the test's own plumbing (raw
    //! io_uring, iovecs, offsets), not beluga_dax.
    use super::*;

    fn shmem(name: &str) -> Option<Mapping> {
        let path = PathBuf::from(format!("/dev/shm/cxlf-contract-{name}"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .ok()?;
        file.set_len(4 * MIB as u64).ok()?;
        let m = Mapping::map_file(&path, 0, 4 * MIB).ok();
        let _ = std::fs::remove_file(&path);
        m
    }

    #[test]
    fn plumbing_on_shmem() {
        let Some(m) = shmem("plumbing") else {
            eprintln!("no /dev/shm: skipped");
            return;
        };
        proc_mem(&m).unwrap();
        vmsplice(&m).unwrap();
        process_vm(&m).unwrap();
        match Ring::new(8) {
            Ok(_) => uring_fixed(&m).unwrap(),
            Err(e) => eprintln!("io_uring unavailable ({e:#}): skipped"),
        }
    }
}

/// Who writes the unbind in [`pin_unbind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Unbinder {
    /// A shell started with fork and exec (the ring's descriptor closes on
    /// exec).
    Exec,
    /// A thread of the process that holds the pin.
    Thread,
    /// A forked child that does not exec (it inherits the ring).
    Fork,
}

/// Kernel log lines so far that contain `needle`.
fn kmsg_count(needle: &str) -> Result<usize> {
    use std::io::Read;
    let mut kmsg = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .context("open /dev/kmsg")?;
    let mut buf = vec![0u8; 8192];
    let mut n = 0;
    loop {
        // One record per read; EAGAIN at the end, EPIPE where the ring
        // overwrote what this reader had not read yet.
        match kmsg.read(&mut buf) {
            Ok(0) => break,
            Ok(len) => n += usize::from(String::from_utf8_lossy(&buf[..len]).contains(needle)),
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e).context("read /dev/kmsg"),
        }
    }
    Ok(n)
}

/// How long [`pin_unbind`] waits for the pinning process to exit, and
/// then for the unbind to complete (the ring's teardown is deferred work).
const UNBIND_TIMEOUT: Duration = Duration::from_secs(10);

/// A process maps 2 MiB, registers it as an io_uring fixed buffer, has
/// `by` unbind the pool under the pin; the unbind returns (the pin may be
/// the unbinder's own), the mapping is revoked (SIGBUS), and the memory
/// stays claimed while pinned (no "released"); then the process closes
/// the ring and exits: it must be able to exit, and the pool must then
/// release its memory (it logs "released") within `UNBIND_TIMEOUT`.
pub fn pin_unbind(dev: &Path, dax: &str, by: Unbinder) -> Result<()> {
    let name = dev.file_name().and_then(|n| n.to_str()).unwrap_or("beluga");
    let released = format!("{name}: released");
    let before = kmsg_count(&released)?;
    let unbind = "/sys/bus/dax/drivers/beluga_dax/unbind";
    let child = fork_child(|| match pin_then_exit(dev, dax, unbind, by, &released) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pin-unbind ({by:?}): {e:#}");
            1
        }
    })?;
    let mut status = WaitStatus::StillAlive;
    wait_for(UNBIND_TIMEOUT, || {
        status = nix::sys::wait::waitpid(child, Some(nix::sys::wait::WaitPidFlag::WNOHANG))?;
        Ok(match status {
            WaitStatus::StillAlive => Err("running: the pinning process cannot exit".into()),
            _ => Ok(()),
        })
    })
    .with_context(|| format!("unbind by {by:?}"))?;
    ensure!(
        matches!(status, WaitStatus::Exited(_, 0)),
        "the pinning process: {status:?}"
    );
    wait_for(UNBIND_TIMEOUT, || {
        Ok(if kmsg_count(&released)? > before {
            Ok(())
        } else {
            Err(format!("no \"{released}\": the unbind did not complete"))
        })
    })
    .with_context(|| format!("after the pin went (unbind by {by:?})"))
}

/// The pinning process of [`pin_unbind`]: returns once the ring is closed,
/// leaving the unbinder running.
fn pin_then_exit(dev: &Path, dax: &str, unbind: &str, by: Unbinder, released: &str) -> Result<()> {
    let before = kmsg_count(released)?;
    let pool = Pool::open(dev)?;
    let obj = pool.alloc(2 * MIB as u64, None, Sharing::Private, 0o600)?;
    let m = pool.map(&obj)?;
    fill(&m)?;
    let ring = Ring::new(8)?;
    ring.register_buffer(m.as_ptr(), 2 * MIB)
        .context("IORING_REGISTER_BUFFERS")?;
    let dax_name = dax.to_string();
    let (unbind, dax) = (unbind.to_string(), dax.to_string());
    let command = format!("echo {dax} > {unbind}");
    let write_unbind = move || std::fs::write(unbind, dax);
    let mut finished: Box<dyn FnMut() -> bool> = match by {
        Unbinder::Exec => {
            let mut child = std::process::Command::new("sh")
                .arg("-c")
                .arg(command)
                .spawn()?;
            Box::new(move || matches!(child.try_wait(), Ok(Some(_))))
        }
        Unbinder::Thread => {
            let t = std::thread::spawn(write_unbind);
            Box::new(move || t.is_finished())
        }
        Unbinder::Fork => {
            let child = fork_child(|| i32::from(write_unbind().is_err()))?;
            Box::new(move || {
                !matches!(
                    nix::sys::wait::waitpid(child, Some(nix::sys::wait::WaitPidFlag::WNOHANG)),
                    Ok(WaitStatus::StillAlive)
                )
            })
        }
    };
    wait_for(UNBIND_TIMEOUT, || {
        Ok(if finished() {
            Ok(())
        } else {
            Err("writing unbind has not returned".into())
        })
    })
    .context("unbind under a pin")?;
    std::thread::sleep(Duration::from_millis(300));
    ensure!(
        kmsg_count(released)? == before,
        "the pool released its memory while a page was pinned"
    );
    // Its range stays claimed: beluga_dax cannot bind the instance again
    // meanwhile. (Not tried with device_dax: 6.12's dev_dax_probe keeps
    // a stale pgmap pointer after a failed probe, and refuses every later
    // bind with EINVAL.)
    let bind = "/sys/bus/dax/drivers/beluga_dax/bind";
    ensure!(
        std::fs::write(bind, &dax_name).is_err(),
        "beluga_dax bound {dax_name} again while its pages were pinned"
    );
    let touched = in_child(|| {
        let mut b = [0u8; 1];
        let _ = m.read(0, &mut b);
        0
    })?;
    ensure!(
        matches!(
            touched,
            WaitStatus::Signaled(_, nix::sys::signal::Signal::SIGBUS, _)
        ),
        "touching the revoked mapping: {touched:?}"
    );
    drop(ring);
    drop(m);
    drop(pool);
    Ok(())
}
