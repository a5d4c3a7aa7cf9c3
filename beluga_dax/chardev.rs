// SPDX-License-Identifier: GPL-2.0

//! `/dev/belugaX.Y`: the ioctls of `uapi/src/beluga.rs`, `mmap` of held
//! objects, and the sysfs attributes of the device.

use crate::device::{PoolDevice, Status};
use crate::mapping::{HoldRef, MappingRef};
use crate::pool::leases::Liveness;
use crate::pool::objects::{Name, Slot, FLAG_SHARED};
use crate::support::cred;
use crate::support::fs::{File, InodeRef};
use crate::support::kvec::VecExt;
use crate::support::miscdevice::{AttributeBuffer, MiscDevice, MiscDeviceRegistration};
use crate::support::mm::VmaNew;
use crate::support::uapi::beluga as abi;
use crate::support::uapi::ioctl::size_of_cmd;
use crate::support::uapi::{ReadAbi, WriteAbi};
use core::fmt::Write;
use kernel::c_str;
use kernel::new_mutex;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::uaccess::UserSlice;

/// One open file of a pool device.
///
/// Lock order: the mmap lock, then `objects`; nothing else is taken
/// under `objects`.
#[pin_data]
pub(crate) struct PoolFile {
    dev: Arc<PoolDevice>,
    /// The objects this file allocated or opened (one use per ALLOC or
    /// OPEN): the file keeps them alive, and may map only them.
    #[pin]
    objects: Mutex<KVec<HoldRef>>,
    /// The inode whose address space `f_mapping` points at.
    _inode: InodeRef,
}

const ATTRIBUTES: &[&CStr] = &[
    c_str!("state"),
    c_str!("host_index"),
    c_str!("manager"),
    c_str!("size"),
    c_str!("sections"),
    c_str!("free_sections"),
    c_str!("objects"),
    c_str!("fragmentation_permille"),
    c_str!("used_by_host"),
    c_str!("lease_state"),
    c_str!("cleared_bytes"),
    c_str!("clear_ns"),
    c_str!("pinned_objects"),
    c_str!("work_ns"),
];

/// Sysfs `state`: the ABI's name of the `GET_INFO` state code, or "gone"
/// after unbind (which `GET_INFO` reports as unformatted).
fn status_name(info: &crate::device::Info) -> &'static str {
    match info.status {
        Status::Gone => "gone",
        _ => abi::state_name(state_code(info)).unwrap_or("unknown"),
    }
}

fn state_code(info: &crate::device::Info) -> u32 {
    match info.status {
        Status::Unformatted | Status::Gone => abi::STATE_UNFORMATTED,
        Status::Refused(_) => abi::STATE_REFUSED,
        Status::Corrupt(_) => abi::STATE_CORRUPT,
        Status::Attached if info.lease_lost => abi::STATE_LEASE_LOST,
        Status::Attached if info.ready => abi::STATE_READY,
        Status::Attached => abi::STATE_ATTACHING,
    }
}

fn lease_code(l: Liveness) -> u8 {
    match l {
        Liveness::Live => abi::LEASE_LIVE,
        Liveness::Expired => abi::LEASE_EXPIRED,
        Liveness::Detached => abi::LEASE_DETACHED,
        Liveness::Absent => abi::LEASE_ABSENT,
    }
}

// `Errno::to_kernel` and `errno_for_status` bound errnos by the kernel's
// `MAX_ERRNO`.
const _: () = assert!(crate::pool::engine::Errno::MAX == crate::support::error::MAX_ERRNO);

fn handle_out(h: &HoldRef) -> abi::ObjectHandle {
    abi::ObjectHandle {
        index: h.handle.object,
        // Published before the caller sees it.
        flags: h.handle.flags & !abi::FLAG_CLEARING,
        serial: h.handle.serial,
        size: h.size,
        map_offset: h.offset,
        uid: h.handle.uid,
        mode: h.handle.mode,
    }
}

fn parse_name(field: &[u8; abi::NAME_BYTES]) -> Result<Option<Name>> {
    let bytes = abi::field_name(field);
    if field[bytes.len()..].iter().any(|&c| c != 0) {
        return Err(EINVAL);
    }
    if bytes.is_empty() {
        return Ok(None);
    }
    Name::new(bytes).map(Some).map_err(|_| EINVAL)
}

fn require_admin(what: &str) -> Result {
    if cred::capable_sys_admin() {
        Ok(())
    } else {
        // Any user can ask: rate-limited, or a loop floods the log.
        crate::support::pr_info_ratelimited!("beluga: {} needs CAP_SYS_ADMIN\n", what);
        Err(EPERM)
    }
}

impl PoolFile {
    /// Keeps `hold` for this file.
    fn keep(&self, hold: HoldRef) -> Result {
        self.objects.lock().push(hold, GFP_KERNEL)?;
        Ok(())
    }

    /// Gives up one of this file's uses of an object (dropped by the
    /// caller, outside the lock).
    fn forget(&self, object: u32, serial: u64) -> Option<HoldRef> {
        let mut objects = self.objects.lock();
        let at = objects.iter().position(|h| h.same_object(object, serial))?;
        objects.swap_remove(at)
    }

    /// One of this file's objects covering `[offset, offset + len)`.
    fn covering(&self, offset: u64, len: u64) -> Option<HoldRef> {
        self.objects
            .lock()
            .iter()
            .find(|h| h.covers(offset, len) && !h.is_revoked())
            .cloned()
    }

    fn ioctl_alloc(&self, user: UserSlice) -> Result {
        let (mut reader, mut writer) = user.reader_writer();
        let mut args: abi::AllocArgs = reader.read_abi()?;
        if args.flags & !abi::FLAG_SHARED != 0 || args.mode > 0o777 {
            return Err(EINVAL);
        }
        let name = parse_name(&args.name)?;
        if args.flags & FLAG_SHARED != 0 && name.is_none() {
            return Err(EINVAL);
        }
        let uid = cred::current_euid();
        let hold = self
            .dev
            .alloc(args.size, args.flags, args.mode, name, uid)?;
        let (object, serial) = (hold.handle.object, hold.handle.serial);
        args.handle = handle_out(&hold);
        // Recorded before the caller can learn of it; undone if it cannot
        // learn of it (a failed copy): unlinked, and let go with its hold.
        let kept = self.keep(hold);
        let result = kept.and_then(|()| writer.write_abi(&args));
        if let Err(e) = result {
            drop(self.forget(object, serial));
            match self.dev.free(object, serial, uid, true) {
                Ok(()) => self.dev.release_if_idle(object, serial),
                Err(undo) => pr_warn!(
                    "{}: cannot undo object {} after a failed ALLOC: {:?}\n",
                    self.dev.name(),
                    object,
                    undo
                ),
            }
            return Err(e);
        }
        Ok(())
    }

    fn ioctl_open(&self, user: UserSlice) -> Result {
        let (mut reader, mut writer) = user.reader_writer();
        let mut args: abi::OpenArgs = reader.read_abi()?;
        let name = parse_name(&args.name)?.ok_or(EINVAL)?;
        let uid = cred::current_euid();
        let hold = match self.dev.open(name, uid, false) {
            // Root may open what its mode hides from it.
            Err(e) if e == EACCES && cred::capable_sys_admin() => self.dev.open(name, uid, true)?,
            other => other?,
        };
        let (object, serial) = (hold.handle.object, hold.handle.serial);
        args.handle = handle_out(&hold);
        self.keep(hold)?;
        if let Err(e) = writer.write_abi(&args) {
            // The use goes; the object stays as it was.
            drop(self.forget(object, serial));
            return Err(e);
        }
        Ok(())
    }

    fn ioctl_free(&self, user: UserSlice) -> Result {
        let args: abi::FreeArgs = user.reader().read_abi()?;
        let uid = cred::current_euid();
        match self.dev.free(args.index, args.serial, uid, false) {
            Err(e) if e == EPERM && cred::capable_sys_admin() => {
                self.dev.free(args.index, args.serial, uid, true)?
            }
            other => other?,
        }
        drop(self.forget(args.index, args.serial));
        self.dev.release_if_idle(args.index, args.serial);
        Ok(())
    }

    fn ioctl_list(&self, user: UserSlice) -> Result {
        let dev = &self.dev;
        let (mut reader, mut writer) = user.reader_writer();
        let mut args: abi::ListArgs = reader.read_abi()?;
        let entry = core::mem::size_of::<abi::ObjectInfo>();
        let capacity = (args.capacity as usize).min(4096);
        let (objects, next) = dev.list(args.start, capacity)?;
        let bytes = objects.len().checked_mul(entry).ok_or(EINVAL)?;
        let mut out = UserSlice::new(args.entries as usize, bytes).writer();
        let data_off = dev.info().superblock.map_or(0, |sb| sb.data_off);
        for (index, slot) in objects.iter() {
            let Slot::Live(e) = slot else { continue };
            let mut name = [0u8; abi::NAME_BYTES];
            if let Some(n) = &e.name {
                name[..n.as_bytes().len()].copy_from_slice(n.as_bytes());
            }
            let first = u64::from(e.extent.first);
            out.write_abi(&abi::ObjectInfo {
                index: *index,
                flags: e.flags,
                serial: e.serial,
                size: u64::from(e.extent.count).saturating_mul(abi::SECTION_SIZE),
                map_offset: data_off.saturating_add(first.saturating_mul(abi::SECTION_SIZE)),
                uid: e.uid,
                mode: e.mode,
                owner_host: e.owner_host,
                pad: 0,
                holders: e.holders,
                name,
            })?;
        }
        args.count = u32::try_from(objects.len()).map_err(|_| EINVAL)?;
        args.next = next;
        writer.write_abi(&args)?;
        Ok(())
    }

    fn ioctl_format(&self, user: UserSlice) -> Result {
        require_admin("format")?;
        let args: abi::FormatArgs = user.reader().read_abi()?;
        let hosts = if args.max_hosts == 0 {
            8
        } else {
            args.max_hosts
        };
        let objects = if args.max_objects == 0 {
            1024
        } else {
            args.max_objects
        };
        self.dev.format(hosts, objects)
    }

    fn ioctl_force_reclaim(&self, user: UserSlice) -> Result {
        require_admin("force-reclaim")?;
        let (mut reader, mut writer) = user.reader_writer();
        let mut args: abi::ReclaimArgs = reader.read_abi()?;
        args.reclaimed = self.dev.force_reclaim(args.host)?;
        writer.write_abi(&args)?;
        Ok(())
    }

    fn ioctl_set_map_mode(&self, user: UserSlice) -> Result {
        let mode: u32 = user.reader().read()?;
        match mode {
            abi::MAP_WRITE_BACK => Ok(()),
            abi::MAP_UNCACHED | abi::MAP_WRITE_COMBINING => {
                // The pages are in the kernel's direct map, write-back,
                // and x86 allows one memory type per range: PAT would
                // silently map write-back anyway.
                crate::support::pr_info_ratelimited!(
                    "{}: only write-back mappings: the pool's pages are mapped write-back by the kernel\n",
                    self.dev.name()
                );
                Err(EINVAL)
            }
            _ => Err(EINVAL),
        }
    }
}

#[vtable]
impl MiscDevice for PoolFile {
    type Ptr = Pin<KBox<PoolFile>>;
    type RegistrationData = Arc<PoolDevice>;

    const ATTRIBUTES: &'static [&'static CStr] = ATTRIBUTES;

    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Pin<KBox<PoolFile>>> {
        let dev = misc.data().clone();
        let inode = dev.adopt_file(file);
        KBox::pin_init(
            pin_init!(PoolFile {
                dev,
                objects <- new_mutex!(KVec::new(), "beluga:file_objects"),
                _inode: inode,
            }),
            GFP_KERNEL,
        )
    }

    fn ioctl(this: Pin<&PoolFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let user = UserSlice::new(arg, size_of_cmd(cmd));
        match cmd {
            abi::GET_INFO => user.writer().write_abi(&pool_info(&this.dev))?,
            abi::WAIT_READY => this.dev.wait_ready()?,
            abi::ALLOC => this.ioctl_alloc(user)?,
            abi::OPEN => this.ioctl_open(user)?,
            abi::FREE => this.ioctl_free(user)?,
            abi::LIST => this.ioctl_list(user)?,
            abi::FORMAT => this.ioctl_format(user)?,
            abi::FORCE_RECLAIM => this.ioctl_force_reclaim(user)?,
            abi::SET_MAP_MODE => this.ioctl_set_map_mode(user)?,
            _ => return Err(ENOTTY),
        }
        Ok(0)
    }

    fn mmap(this: Pin<&PoolFile>, _file: &File, vma: &VmaNew) -> Result {
        // Private copies of shared pool memory make no sense, and would
        // outlive a revocation.
        if !vma.is_shared() {
            return Err(EINVAL);
        }
        let offset = (vma.pgoff() as u64)
            .checked_mul(PAGE_SIZE as u64)
            .ok_or(EINVAL)?;
        let len = vma.len() as u64;
        let Some(hold) = this.covering(offset, len) else {
            return Err(EINVAL);
        };
        let uid = cred::current_euid();
        let entry_mode = hold.handle.mode;
        let bits = if uid == hold.handle.uid {
            (entry_mode >> 6) & 0o7
        } else {
            entry_mode & 0o7
        };
        let readable = bits & 0o4 != 0 || cred::capable_sys_admin();
        let writable = bits & 0o2 != 0 || cred::capable_sys_admin();
        if !readable {
            return Err(EACCES);
        }
        vma.set_devmap_mapping(writable, MappingRef::new(hold)?)
    }

    fn show_attribute(
        dev: &Arc<PoolDevice>,
        index: usize,
        out: &mut AttributeBuffer<'_>,
    ) -> Result {
        let info = dev.info();
        let stats = info.stats;
        let hosts = info.superblock.map_or(0, |sb| sb.max_hosts as usize);
        let r = match index {
            0 => writeln!(out, "{}", status_name(&info)),
            1 => writeln!(out, "{}", dev.config.host_index),
            2 => match info.manager {
                Some(m) => writeln!(out, "{}", m),
                None => writeln!(out, "none"),
            },
            3 => writeln!(out, "{}", dev.size),
            4 => writeln!(out, "{}", stats.map_or(0, |s| s.sections)),
            5 => writeln!(out, "{}", stats.map_or(0, |s| s.free_sections)),
            6 => writeln!(out, "{}", stats.map_or(0, |s| s.objects)),
            7 => writeln!(out, "{}", stats.map_or(0, |s| s.fragmentation_permille)),
            8 => {
                let mut r = Ok(());
                if let Some(s) = stats {
                    for (host, used) in s.used_by_host.iter().enumerate().take(hosts) {
                        r = r.and(writeln!(out, "{} {}", host, used));
                    }
                }
                r
            }
            9 => {
                let mut r = Ok(());
                for (host, l) in info.lease.iter().enumerate().take(hosts) {
                    let name = abi::lease_name(lease_code(*l)).unwrap_or("unknown");
                    r = r.and(writeln!(out, "{} {}", host, name));
                }
                r
            }
            10 => writeln!(out, "{}", dev.clear_stats().0),
            11 => writeln!(out, "{}", dev.clear_stats().1),
            12 => writeln!(out, "{}", dev.pinned_holdings()),
            13 => writeln!(out, "{}", dev.work_ns()),
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }
}

fn pool_info(dev: &PoolDevice) -> abi::PoolInfo {
    let info = dev.info();
    let mut out = abi::PoolInfo {
        abi_version: abi::ABI_VERSION,
        state: state_code(&info),
        host_index: dev.config.host_index,
        manager: info.manager.unwrap_or(u32::MAX),
        max_hosts: 0,
        max_objects: 0,
        lease_ms: dev.config.lease_ms,
        sections: 0,
        free_sections: 0,
        largest_free_run: 0,
        fragmentation_permille: 0,
        objects: 0,
        device_size: dev.size,
        section_size: abi::SECTION_SIZE,
        generation: 0,
        uuid: [0; 16],
        used_by_host: [0; abi::MAX_HOSTS],
        lease: [abi::LEASE_ABSENT; abi::MAX_HOSTS],
    };
    if let Some(sb) = info.superblock {
        out.max_hosts = sb.max_hosts;
        out.max_objects = sb.max_objects;
        out.generation = sb.generation;
        out.uuid = sb.uuid;
        out.sections = sb.section_count;
    }
    if let Some(s) = info.stats {
        out.free_sections = s.free_sections;
        out.largest_free_run = s.largest_free_run;
        out.fragmentation_permille = s.fragmentation_permille;
        out.objects = s.objects;
        out.used_by_host = s.used_by_host;
    }
    for (o, l) in out.lease.iter_mut().zip(info.lease.iter()) {
        *o = lease_code(*l);
    }
    out
}
