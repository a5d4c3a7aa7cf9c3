//! A safe interface to `beluga_dax` pools (`/dev/belugaX.Y`): open a pool,
//! allocate objects, map them, share them by name with other hosts.
//!
//! ```no_run
//! let pool = beluga::Pool::open("/dev/beluga0.0")?;
//! pool.wait_ready()?;
//! let object = pool.alloc(4 << 20, Some("kv.0"), beluga::Sharing::Shared, 0o600)?;
//! let map = pool.map(&object)?;
//! map.write(0, b"hello")?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Pool memory is shared with other processes and other hosts, which may
//! write it at any time: [`Mapping`] therefore offers volatile copies in
//! and out (`read`, `write`) rather than Rust references to its bytes,
//! with the cache maintenance that memory shared without coherence needs
//! (see [`copy`]).

pub mod copy;
pub mod kv;
pub mod rpc;
pub mod shared;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

pub use copy::{CopyPath, Flush};

pub use uapi::beluga as abi;
use uapi::beluga::{AllocArgs, FormatArgs, FreeArgs, ListArgs, ObjectHandle, ObjectInfo};
use uapi::beluga::{OpenArgs, PoolInfo, ReclaimArgs};

/// Whether other hosts can open the object by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    Private,
    Shared,
}

/// Cache mode of the mappings made after [`Pool::set_map_mode`]. Only
/// `WriteBack` is accepted; the others fail with `EINVAL` (the pool's
/// pages are mapped write-back by the kernel, and PAT allows one type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapMode {
    WriteBack,
    Uncached,
    WriteCombining,
}

/// An open pool device.
pub struct Pool {
    file: File,
    path: PathBuf,
}

/// The device file, for callers that issue raw ioctls or `mmap`s of their
/// own (tests); the file's uses of objects are those of this `Pool`.
impl AsFd for Pool {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl AsRawFd for Pool {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

fn ioctl<T>(file: &File, cmd: u32, arg: *mut T) -> io::Result<()> {
    // SAFETY: `arg` points to a live value of the type the command
    // expects (the ABI sizes are encoded in `cmd` and checked by uapi).
    let ret = unsafe { nix::libc::ioctl(file.as_raw_fd(), cmd as _, arg) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn name_field(name: &str) -> io::Result<[u8; abi::NAME_BYTES]> {
    abi::name_field(name)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "name too long"))
}

impl Pool {
    pub fn open(path: impl AsRef<Path>) -> io::Result<Pool> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        Ok(Pool { file, path })
    }

    /// The pool devices present (`/dev/beluga*`), sorted.
    pub fn devices() -> io::Result<Vec<PathBuf>> {
        let mut found: Vec<PathBuf> = std::fs::read_dir("/dev")?
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(abi::DEVICE_PREFIX)
            })
            .map(|e| e.path())
            .collect();
        found.sort();
        Ok(found)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A counter of the pool's sysfs directory (`/sys/class/misc/<device
    /// name>/<name>`), e.g. `clear_ns` or `work_ns`.
    pub fn counter(&self, name: &str) -> io::Result<u64> {
        let device = self
            .path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no device name"))?;
        let path = Path::new("/sys/class/misc").join(device).join(name);
        let text = std::fs::read_to_string(&path)?;
        text.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a counter", path.display()),
            )
        })
    }

    pub fn info(&self) -> io::Result<PoolInfo> {
        // SAFETY: all-integer structure; zero is a valid value.
        let mut info: PoolInfo = unsafe { std::mem::zeroed() };
        ioctl(&self.file, abi::GET_INFO, &mut info)?;
        Ok(info)
    }

    /// Waits until the pool manager has acknowledged this host.
    pub fn wait_ready(&self) -> io::Result<()> {
        ioctl::<u8>(&self.file, abi::WAIT_READY, std::ptr::null_mut())
    }

    pub fn alloc(
        &self,
        size: u64,
        name: Option<&str>,
        sharing: Sharing,
        mode: u32,
    ) -> io::Result<ObjectHandle> {
        let mut args = AllocArgs {
            size,
            flags: if sharing == Sharing::Shared {
                abi::FLAG_SHARED
            } else {
                0
            },
            mode,
            name: name_field(name.unwrap_or(""))?,
            handle: ObjectHandle::default(),
        };
        ioctl(&self.file, abi::ALLOC, &mut args)?;
        Ok(args.handle)
    }

    /// Opens an existing object by name (shared objects of any host, or
    /// this host's private ones).
    pub fn open_object(&self, name: &str) -> io::Result<ObjectHandle> {
        let mut args = OpenArgs {
            name: name_field(name)?,
            handle: ObjectHandle::default(),
        };
        ioctl(&self.file, abi::OPEN, &mut args)?;
        Ok(args.handle)
    }

    /// Unlinks an object (owner uid or root): its name goes at once, and
    /// this `Pool` gives up its use of it (it may not map it again). The
    /// memory is freed when the last use on every host goes (open files
    /// that allocated or opened it, mappings, pinned pages); until then
    /// existing mappings keep working and [`Pool::list`] shows it with
    /// [`abi::FLAG_UNLINKED`].
    pub fn free(&self, handle: &ObjectHandle) -> io::Result<()> {
        let mut args = FreeArgs {
            index: handle.index,
            pad: 0,
            serial: handle.serial,
        };
        ioctl(&self.file, abi::FREE, &mut args)
    }

    /// The objects in the pool, including unlinked ones still in use
    /// (see [`is_unlinked`]).
    pub fn list(&self) -> io::Result<Vec<ObjectInfo>> {
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            // SAFETY: all-integer structure; zero is a valid value.
            let mut batch: Vec<ObjectInfo> = vec![unsafe { std::mem::zeroed() }; 64];
            let mut args = ListArgs {
                start,
                capacity: batch.len() as u32,
                entries: batch.as_mut_ptr() as u64,
                count: 0,
                next: 0,
            };
            ioctl(&self.file, abi::LIST, &mut args)?;
            batch.truncate(args.count as usize);
            out.extend(batch);
            if args.next <= start || args.count == 0 {
                return Ok(out);
            }
            start = args.next;
        }
    }

    /// Formats the pool (CAP_SYS_ADMIN; no other host may be attached).
    pub fn format(&self, max_hosts: u32, max_objects: u32) -> io::Result<()> {
        let mut args = FormatArgs {
            max_hosts,
            max_objects,
        };
        ioctl(&self.file, abi::FORMAT, &mut args)
    }

    /// Reclaims the objects of a host that is not live (CAP_SYS_ADMIN).
    pub fn force_reclaim(&self, host: u32) -> io::Result<u32> {
        let mut args = ReclaimArgs { host, reclaimed: 0 };
        ioctl(&self.file, abi::FORCE_RECLAIM, &mut args)?;
        Ok(args.reclaimed)
    }

    pub fn set_map_mode(&self, mode: MapMode) -> io::Result<()> {
        let mut value = match mode {
            MapMode::WriteBack => abi::MAP_WRITE_BACK,
            MapMode::Uncached => abi::MAP_UNCACHED,
            MapMode::WriteCombining => abi::MAP_WRITE_COMBINING,
        };
        ioctl(&self.file, abi::SET_MAP_MODE, &mut value)
    }

    /// Maps a whole object read-write (one this `Pool` allocated or
    /// opened and has not freed).
    pub fn map(&self, handle: &ObjectHandle) -> io::Result<Mapping> {
        self.map_range(handle.map_offset, handle.size as usize, true)
    }

    /// Maps `len` bytes at pool offset `offset` (`MAP_SHARED`).
    pub fn map_range(&self, offset: u64, len: usize, writable: bool) -> io::Result<Mapping> {
        use nix::sys::mman::{mmap, MapFlags, ProtFlags};
        let len_nz = std::num::NonZeroUsize::new(len)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"))?;
        let mut prot = ProtFlags::PROT_READ;
        if writable {
            prot |= ProtFlags::PROT_WRITE;
        }
        let offset =
            i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(nix::libc::EINVAL))?;
        // SAFETY: a new shared mapping of the device; no existing memory is
        // affected.
        let ptr = unsafe { mmap(None, len_nz, prot, MapFlags::MAP_SHARED, &self.file, offset) }
            .map_err(io::Error::from)?;
        Ok(Mapping::new(ptr.cast(), len))
    }
}

impl Mapping {
    fn new(ptr: NonNull<u8>, len: usize) -> Mapping {
        Mapping {
            ptr,
            len,
            path: CopyPath::chosen(),
        }
    }

    /// Anonymous shared memory (`MAP_SHARED | MAP_ANONYMOUS`), zeroed:
    /// a stand-in for pool memory in tests and host benchmarks.
    pub fn anonymous(len: usize) -> io::Result<Mapping> {
        use nix::sys::mman::{mmap_anonymous, MapFlags, ProtFlags};
        let len_nz = std::num::NonZeroUsize::new(len)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"))?;
        // SAFETY: a new mapping; no existing memory is affected.
        let ptr = unsafe {
            mmap_anonymous(
                None,
                len_nz,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
            )
        }
        .map_err(io::Error::from)?;
        Ok(Mapping::new(ptr.cast(), len))
    }

    /// Maps `len` bytes at `offset` of any shared file (a device-dax
    /// device, the ivshmem BAR's `resource2`), read-write, `MAP_SHARED`.
    pub fn map_file(path: impl AsRef<Path>, offset: u64, len: usize) -> io::Result<Mapping> {
        use nix::sys::mman::{mmap, MapFlags, ProtFlags};
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let len_nz = std::num::NonZeroUsize::new(len)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"))?;
        let offset =
            i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(nix::libc::EINVAL))?;
        // SAFETY: a new shared mapping; no existing memory is affected.
        let ptr = unsafe {
            mmap(
                None,
                len_nz,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &file,
                offset,
            )
        }
        .map_err(io::Error::from)?;
        Ok(Mapping::new(ptr.cast(), len))
    }
}

/// A mapping of pool memory; unmapped on drop.
///
/// # Invariants
///
/// `ptr` is a live mapping of `len` bytes owned by this value, and `path`
/// is supported by this CPU.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    path: CopyPath,
}

// SAFETY: the mapping is process-wide memory; all access is by volatile
// copies, and `path` is plain data fixed while the mapping is shared.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

fn range_error() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "outside the mapping")
}

impl Mapping {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn check(&self, offset: usize, len: usize) -> io::Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(range_error()),
        }
    }

    /// How this mapping copies ([`CopyPath::chosen`] unless set).
    pub fn copy_path(&self) -> CopyPath {
        self.path
    }

    /// Forces a copy path (tests, benchmarks); `Unsupported` if this CPU
    /// lacks one of its instructions.
    pub fn set_copy_path(&mut self, path: CopyPath) -> io::Result<()> {
        if !path.is_supported() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("copy path {} not supported here", path.name()),
            ));
        }
        self.path = path;
        Ok(())
    }

    /// The address of `offset` (meaningful once `check` accepted it).
    fn at(&self, offset: usize) -> *mut u8 {
        self.ptr.as_ptr().wrapping_add(offset)
    }

    /// Copies `out.len()` bytes at `offset` out of the mapping, after
    /// invalidating those lines (another host may have written them).
    pub fn read(&self, offset: usize, out: &mut [u8]) -> io::Result<()> {
        self.check(offset, out.len())?;
        // SAFETY: inside the mapping (checked), which no Rust reference
        // covers; the path is supported (invariant).
        unsafe { copy::read(self.at(offset), out, self.path) };
        Ok(())
    }

    /// Copies `data` into the mapping at `offset`, then writes it back to
    /// memory: when this returns, other hosts can read it.
    pub fn write(&self, offset: usize, data: &[u8]) -> io::Result<()> {
        self.check(offset, data.len())?;
        // SAFETY: as in `read`.
        unsafe { copy::write(self.at(offset), data, self.path) };
        Ok(())
    }

    /// Writes back `len` bytes at `offset` and fences, for stores made
    /// through [`Mapping::as_ptr`]: when this returns, other hosts can
    /// read them.
    pub fn write_back(&self, offset: usize, len: usize) -> io::Result<()> {
        self.check(offset, len)?;
        // SAFETY: inside the mapping (checked); the path is supported
        // (invariant). Flushing changes no contents.
        unsafe { copy::write_back(self.at(offset), len, self.path) };
        Ok(())
    }

    /// Invalidates `len` bytes at `offset` in this CPU's caches, for loads
    /// made through [`Mapping::as_ptr`] afterwards: they see what other
    /// hosts wrote back.
    pub fn invalidate(&self, offset: usize, len: usize) -> io::Result<()> {
        self.check(offset, len)?;
        // SAFETY: as in `write_back`.
        unsafe { copy::invalidate(self.at(offset), len, self.path) };
        Ok(())
    }

    fn check_word(&self, offset: usize) -> io::Result<()> {
        self.check(offset, 8)?;
        if !offset.is_multiple_of(8) {
            return Err(range_error());
        }
        Ok(())
    }

    /// Reads the little-endian u64 at `offset` (8-byte aligned) in one access.
    pub fn read_u64(&self, offset: usize) -> io::Result<u64> {
        self.check_word(offset)?;
        // SAFETY: aligned and inside the mapping (checked; the mapping is
        // page-aligned); the path is supported (invariant).
        let v = unsafe { copy::read_u64(self.at(offset).cast(), self.path) };
        Ok(u64::from_le(v))
    }

    /// Writes the little-endian u64 at `offset` (8-byte aligned) in one access,
    /// after everything written before it.
    pub fn write_u64(&self, offset: usize, value: u64) -> io::Result<()> {
        self.check_word(offset)?;
        // SAFETY: as in `read_u64`.
        unsafe { copy::write_u64(self.at(offset).cast(), value.to_le(), self.path) };
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours (invariant) and not used after this.
        let _ = unsafe { nix::sys::mman::munmap(self.ptr.cast(), self.len) };
    }
}

/// The name in an ABI name field, as text.
pub fn name_of(field: &[u8; abi::NAME_BYTES]) -> String {
    String::from_utf8_lossy(abi::field_name(field)).into_owned()
}

/// Whether a listed object is unlinked: freed, its name gone, but still in
/// use somewhere (its memory goes with the last use).
pub fn is_unlinked(info: &ObjectInfo) -> bool {
    info.flags & abi::FLAG_UNLINKED != 0
}

/// The shared-memory BAR (`resource2`) of the testbed's `ivshmem-plain`
/// device, the RAM-backed pool. The CXL-NIC's `ivshmem-doorbell` devices
/// carry the same PCI ids; they have an MSI-X BAR1, the plain one has not.
pub fn ivshmem_pool_path() -> anyhow::Result<std::path::PathBuf> {
    for entry in std::fs::read_dir("/sys/bus/pci/devices")? {
        let dir = entry?.path();
        let id = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let ivshmem = id("vendor").trim() == "0x1af4" && id("device").trim() == "0x1110";
        if ivshmem && !dir.join("resource1").exists() {
            return Ok(dir.join("resource2"));
        }
    }
    anyhow::bail!("no ivshmem-plain device (PCI 1af4:1110 without MSI-X)")
}
