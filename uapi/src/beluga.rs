//! ABI of `/dev/belugaN`, one device per pool bound to `beluga_dax` (`N` is
//! the `Y` of the `daxX.Y` instance).
//!
//! Objects are whole 2 MiB sections. A handle is `(index, serial)`: the
//! serial is unique per allocation, so a stale handle never names a reused
//! entry. `map_offset` is the `mmap` offset of an object (its place in the
//! pool); a mapping must lie inside one object the open file allocated or
//! opened and be `MAP_SHARED`. Each file that allocates or opens an object
//! holds one use of it; `FREE` unlinks (the name goes at once, the memory
//! when the last use on every host goes: files, mappings, pinned pages). Every structure is `#[repr(C)]` with explicit padding and
//! only integer fields, so the kernel copies it as bytes.

use super::ioctl::{io, ior, iow, iowr};

/// Device node prefix: pools appear as `/dev/belugaX.Y` (from `daxX.Y`).
pub const DEVICE_PREFIX: &str = "beluga";
/// The dax bus driver's name (`/sys/bus/dax/drivers/beluga_dax`).
pub const DAX_DRIVER_NAME: &str = "beluga_dax";
/// ioctl type byte of `/dev/beluga*`.
pub const IOC_TYPE: u8 = 0xBE;
/// Raised when a structure changes incompatibly.
pub const ABI_VERSION: u32 = 1;
/// Bytes of an object name field: up to 47 name bytes and a NUL.
pub const NAME_BYTES: usize = 48;
/// Most hosts a pool can be formatted for (the pool format's limit).
pub const MAX_HOSTS: usize = 64;
/// Bytes per section (2 MiB), the unit of allocation and of `map_offset`.
pub const SECTION_SIZE: u64 = 2 << 20;

/// `PoolInfo::state`: no formatted pool (or the device is gone); only
/// `FORMAT` works.
pub const STATE_UNFORMATTED: u32 = 0;
/// Attached, waiting for the manager to acknowledge this host.
pub const STATE_ATTACHING: u32 = 1;
/// Attached and acknowledged: the ioctls that use the pool work.
pub const STATE_READY: u32 = 2;
/// The superblock was refused (see the kernel log); only `FORMAT` works.
pub const STATE_REFUSED: u32 = 3;
/// This host's lease ran out; it is rejoining as a new incarnation.
pub const STATE_LEASE_LOST: u32 = 4;
/// The tables failed validation; the pool needs an administrator.
pub const STATE_CORRUPT: u32 = 5;

/// `PoolInfo::lease`, per host: no valid attached record in the slot.
pub const LEASE_ABSENT: u8 = 0;
/// Attached, and its heartbeat changed within the lease (plus margin).
pub const LEASE_LIVE: u8 = 1;
/// No heartbeat change for longer than the lease plus margin: the host
/// is presumed dead and its objects may be reclaimed.
pub const LEASE_EXPIRED: u8 = 2;
/// Its slot says it detached cleanly.
pub const LEASE_DETACHED: u8 = 3;

/// The name of a `STATE_*` code, as sysfs `state` and `beluga status`
/// print it; `None` for a code this ABI does not define. The one table of
/// these names: the module and the tools both use it.
pub const fn state_name(code: u32) -> Option<&'static str> {
    Some(match code {
        STATE_UNFORMATTED => "unformatted",
        STATE_ATTACHING => "attaching",
        STATE_READY => "ready",
        STATE_REFUSED => "refused",
        STATE_LEASE_LOST => "lease-lost",
        STATE_CORRUPT => "corrupt",
        _ => return None,
    })
}

/// The name of a `LEASE_*` code, as sysfs `lease_state` and `beluga
/// status` print it; `None` for a code this ABI does not define.
pub const fn lease_name(code: u8) -> Option<&'static str> {
    Some(match code {
        LEASE_ABSENT => "absent",
        LEASE_LIVE => "live",
        LEASE_EXPIRED => "expired",
        LEASE_DETACHED => "detached",
        _ => return None,
    })
}

/// Object flag: can be opened by name from other hosts.
pub const FLAG_SHARED: u32 = 1;
/// Object flag (`ObjectInfo::flags` only, never set by a caller): the
/// object was freed (unlinked: its name is gone, `OPEN` cannot find it)
/// but is still in use (an open file that allocated or opened it, a
/// mapping, a pinned page, another host). Its sections are freed when the
/// last use goes, as a file's blocks are when its last opener closes it.
pub const FLAG_UNLINKED: u32 = 2;
/// Object flag (`ObjectInfo::flags` only): just allocated; its owner host
/// is clearing its sections and has not published it yet (`OPEN` cannot
/// find it, its name is taken).
pub const FLAG_CLEARING: u32 = 4;

/// Cache mode of the mappings a file makes from now on (`SET_MAP_MODE`).
/// Only `MAP_WRITE_BACK` is accepted: pool pages are in the kernel's
/// direct map, write-back, and x86 PAT allows one memory type per range,
/// so the other modes fail with `EINVAL` rather than silently map
/// write-back.
pub const MAP_WRITE_BACK: u32 = 0;
/// Uncached: refused (`EINVAL`), see [`MAP_WRITE_BACK`].
pub const MAP_UNCACHED: u32 = 1;
/// Write-combining: refused (`EINVAL`), see [`MAP_WRITE_BACK`].
pub const MAP_WRITE_COMBINING: u32 = 2;

/// `GET_INFO`: this host's view of the pool. Pool fields are 0 while
/// the pool is unformatted or refused.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    /// [`ABI_VERSION`] of the module answering.
    pub abi_version: u32,
    /// `STATE_*` of this host's attachment.
    pub state: u32,
    /// This host's slot (module parameter `host_index`).
    pub host_index: u32,
    /// Index of the manager as this host sees it, or `u32::MAX`.
    pub manager: u32,
    /// Host slots the pool was formatted with.
    pub max_hosts: u32,
    /// Object table entries the pool was formatted with.
    pub max_objects: u32,
    /// This host's lease period, milliseconds (module parameter `lease_ms`).
    pub lease_ms: u32,
    /// Sections in the data area.
    pub sections: u32,
    /// Sections no object owns.
    pub free_sections: u32,
    /// Longest run of free sections, in sections (the largest object that
    /// can be allocated now).
    pub largest_free_run: u32,
    /// External fragmentation, per mille: `1000 * (1 - largest_free_run /
    /// free_sections)` (0: all free space is one run).
    pub fragmentation_permille: u32,
    /// Live objects in the object table.
    pub objects: u32,
    /// Size of the dax device, bytes.
    pub device_size: u64,
    /// Bytes per section ([`SECTION_SIZE`]).
    pub section_size: u64,
    /// Pool generation: bumped by every format.
    pub generation: u64,
    /// Identity of this format of the pool (the superblock's uuid).
    pub uuid: [u8; 16],
    /// Sections of the objects each host owns.
    pub used_by_host: [u32; MAX_HOSTS],
    /// `LEASE_*` of each host, as this host sees it.
    pub lease: [u8; MAX_HOSTS],
}

/// An object this host holds.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectHandle {
    /// Object table index.
    pub index: u32,
    /// `FLAG_*`.
    pub flags: u32,
    /// Serial, unique per allocation: with `index`, the handle.
    pub serial: u64,
    /// Size in bytes (whole sections).
    pub size: u64,
    /// The `mmap` offset of the object (its byte offset in the pool).
    pub map_offset: u64,
    /// Owner's uid (the allocating caller's euid).
    pub uid: u32,
    /// Permission bits (`0o777` at most), as a file's.
    pub mode: u32,
}

/// `ALLOC`: a new object, owned by the caller.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocArgs {
    /// In: bytes, rounded up to whole sections.
    pub size: u64,
    /// In: `FLAG_SHARED` (needs a name).
    pub flags: u32,
    /// In: permission bits (`0o777` at most); the owner is the caller.
    pub mode: u32,
    /// In: optional name, `[A-Za-z0-9._-]{1,47}`, NUL padded.
    pub name: [u8; NAME_BYTES],
    /// Out.
    pub handle: ObjectHandle,
}

/// `OPEN`: an existing object by name.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenArgs {
    /// In: the object's name, NUL padded.
    pub name: [u8; NAME_BYTES],
    /// Out.
    pub handle: ObjectHandle,
}

/// `FREE`: the handle of an object to unlink.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreeArgs {
    /// [`ObjectHandle::index`].
    pub index: u32,
    /// Padding, 0.
    pub pad: u32,
    /// [`ObjectHandle::serial`].
    pub serial: u64,
}

/// One entry of `LIST`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Object table index.
    pub index: u32,
    /// `FLAG_*` (including `FLAG_UNLINKED` and `FLAG_CLEARING`).
    pub flags: u32,
    /// Serial, unique per allocation.
    pub serial: u64,
    /// Size in bytes (whole sections).
    pub size: u64,
    /// The `mmap` offset of the object.
    pub map_offset: u64,
    /// Owner's uid.
    pub uid: u32,
    /// Permission bits.
    pub mode: u32,
    /// Index of the host that allocated the object and owns its sections.
    pub owner_host: u32,
    /// Padding, 0.
    pub pad: u32,
    /// Bit per host holding it.
    pub holders: u64,
    /// The object's name, NUL padded (empty if it has none).
    pub name: [u8; NAME_BYTES],
}

/// `LIST`: a batch of [`ObjectInfo`] entries.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListArgs {
    /// In: first object index to report.
    pub start: u32,
    /// In: entries `entries` has room for.
    pub capacity: u32,
    /// In: user address of `capacity` `ObjectInfo`s.
    pub entries: u64,
    /// Out: entries written.
    pub count: u32,
    /// Out: where to continue (`max_objects` when done).
    pub next: u32,
}

/// `FORMAT`: the pool's geometry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FormatArgs {
    /// Host slots, `1..=MAX_HOSTS`.
    pub max_hosts: u32,
    /// Object table entries, `1..=65536`.
    pub max_objects: u32,
}

/// `FORCE_RECLAIM`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimArgs {
    /// In: the host whose objects to reclaim (must not be live).
    pub host: u32,
    /// Out: objects freed or released.
    pub reclaimed: u32,
}

/// This host's view of the pool ([`PoolInfo`]).
pub const GET_INFO: u32 = ior::<PoolInfo>(IOC_TYPE, 1);
/// Allocates an object ([`AllocArgs`]); the calling file holds it.
pub const ALLOC: u32 = iowr::<AllocArgs>(IOC_TYPE, 2);
/// Opens an object by name ([`OpenArgs`]): shared ones from any host,
/// private ones of this host; needs read permission.
pub const OPEN: u32 = iowr::<OpenArgs>(IOC_TYPE, 3);
/// Unlinks an object ([`FreeArgs`]; owner or root): the name goes at
/// once, the memory when the last use on every host goes.
pub const FREE: u32 = iow::<FreeArgs>(IOC_TYPE, 4);
/// Lists objects from an index ([`ListArgs`]).
pub const LIST: u32 = iowr::<ListArgs>(IOC_TYPE, 5);
/// CAP_SYS_ADMIN: formats the pool (destroys its contents).
pub const FORMAT: u32 = iow::<FormatArgs>(IOC_TYPE, 6);
/// CAP_SYS_ADMIN: reclaims a dead host's objects now.
pub const FORCE_RECLAIM: u32 = iowr::<ReclaimArgs>(IOC_TYPE, 7);
/// Sets the cache mode (`MAP_*`, a `u32`) of the file's later mappings;
/// only `MAP_WRITE_BACK` is accepted.
pub const SET_MAP_MODE: u32 = iow::<u32>(IOC_TYPE, 8);
/// Waits until this host is attached and acknowledged (or fails).
pub const WAIT_READY: u32 = io(IOC_TYPE, 9);

/// `name` as the NUL-padded field of the ABI; `None` if too long.
pub fn name_field(name: &str) -> Option<[u8; NAME_BYTES]> {
    let bytes = name.as_bytes();
    if bytes.len() >= NAME_BYTES {
        return None;
    }
    let mut field = [0u8; NAME_BYTES];
    field[..bytes.len()].copy_from_slice(bytes);
    Some(field)
}

/// The name in a NUL-padded field (up to the first NUL).
pub fn field_name(field: &[u8; NAME_BYTES]) -> &[u8] {
    let len = field.iter().position(|&c| c == 0).unwrap_or(NAME_BYTES);
    &field[..len]
}

// The kernel copies these as bytes: no implicit padding anywhere.
const _: () = {
    assert!(core::mem::size_of::<PoolInfo>() == 12 * 4 + 3 * 8 + 16 + 64 * 4 + 64);
    assert!(core::mem::size_of::<ObjectHandle>() == 40);
    assert!(core::mem::size_of::<AllocArgs>() == 16 + NAME_BYTES + 40);
    assert!(core::mem::size_of::<OpenArgs>() == NAME_BYTES + 40);
    assert!(core::mem::size_of::<FreeArgs>() == 16);
    assert!(core::mem::size_of::<ObjectInfo>() == 56 + NAME_BYTES);
    assert!(core::mem::size_of::<ListArgs>() == 24);
    assert!(core::mem::size_of::<FormatArgs>() == 8);
    assert!(core::mem::size_of::<ReclaimArgs>() == 8);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_and_lease_code_has_its_own_name() {
        let states = [
            STATE_UNFORMATTED,
            STATE_ATTACHING,
            STATE_READY,
            STATE_REFUSED,
            STATE_LEASE_LOST,
            STATE_CORRUPT,
        ];
        let names: [&str; 6] = states.map(|c| state_name(c).unwrap());
        assert_eq!(
            names,
            [
                "unformatted",
                "attaching",
                "ready",
                "refused",
                "lease-lost",
                "corrupt"
            ]
        );
        assert_eq!(state_name(6), None);
        let leases = [LEASE_ABSENT, LEASE_LIVE, LEASE_EXPIRED, LEASE_DETACHED];
        let names: [&str; 4] = leases.map(|c| lease_name(c).unwrap());
        assert_eq!(names, ["absent", "live", "expired", "detached"]);
        assert_eq!(lease_name(4), None);
    }
}
