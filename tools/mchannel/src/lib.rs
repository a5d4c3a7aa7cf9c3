//! `/dev/mchannel` from user space: register fabric components, create
//! channels, attach threads and processes, inject congestion, read
//! statistics. The ABI is `uapi/src/mchannel.rs`.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use uapi::mchannel as abi;

pub use abi::{ChannelSpec, ChannelStat, ComponentSpec};

pub const DEFAULT_DEVICE: &str = "/dev/mchannel";

/// An open `/dev/mchannel`.
pub struct Mchannel {
    file: File,
}

/// `ATTACH`/`DETACH` arguments for thread `pid` (0: the caller), or its
/// whole process.
fn attach_args(channel: u32, pid: i32, process: bool) -> abi::AttachArgs {
    abi::AttachArgs {
        channel,
        flags: if process { abi::ATTACH_PROCESS } else { 0 },
        pid,
        _pad: 0,
    }
}

fn ioctl<T>(file: &File, cmd: u32, arg: *mut T) -> io::Result<()> {
    // SAFETY: `arg` points to a live value of the type the command
    // expects (the command encodes its size; uapi asserts the layouts).
    let ret = unsafe { nix::libc::ioctl(file.as_raw_fd(), cmd as _, arg) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A name in ABI bytes, or `InvalidInput`.
pub fn name(name: &str) -> io::Result<[u8; abi::NAME_BYTES]> {
    abi::name_bytes(name).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "bad name {name:?}: 1 to {} printable bytes",
                abi::NAME_BYTES - 1
            ),
        )
    })
}

/// The fabric components between this host and CXL memory device
/// `memdev`, host side first, named after their CXL ports: the host
/// bridge (a host port), each switch and the endpoint.
pub fn cxl_components(
    topo: &cxlctl::topology::Topology,
    memdev: &str,
) -> anyhow::Result<Vec<(String, u32)>> {
    use cxlctl::topology::Kind;
    let path = topo.path_to(memdev)?;
    anyhow::ensure!(
        path.len() <= abi::PATH_MAX,
        "{memdev}: {} ports on its path, a channel crosses {} at most",
        path.len(),
        abi::PATH_MAX
    );
    Ok(path
        .iter()
        .map(|d| {
            let kind = match d.kind {
                Kind::HostBridge => abi::COMPONENT_HOST_PORT,
                Kind::Switch => abi::COMPONENT_SWITCH,
                _ => abi::COMPONENT_ENDPOINT,
            };
            (d.name.clone(), kind)
        })
        .collect())
}

/// Component kinds by name.
pub fn kind_of(name: &str) -> Option<u32> {
    match name {
        "host-port" => Some(abi::COMPONENT_HOST_PORT),
        "switch" => Some(abi::COMPONENT_SWITCH),
        "endpoint" => Some(abi::COMPONENT_ENDPOINT),
        _ => None,
    }
}

impl Mchannel {
    /// Another handle on the same open file.
    pub fn try_clone(&self) -> io::Result<Mchannel> {
        Ok(Mchannel {
            file: self.file.try_clone()?,
        })
    }

    pub fn open(path: impl AsRef<Path>) -> io::Result<Mchannel> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Mchannel { file })
    }

    /// Registers a component; returns its id.
    pub fn register_component(&self, name: &str, kind: u32, max_capacity: u64) -> io::Result<u32> {
        let mut spec = ComponentSpec {
            id: 0,
            kind,
            max_capacity,
            name: self::name(name)?,
        };
        ioctl(&self.file, abi::REGISTER_COMPONENT, &mut spec)?;
        Ok(spec.id)
    }

    /// Creates a channel; returns it as the kernel stored it (id, T_W).
    pub fn create_channel(&self, spec: &ChannelSpec) -> io::Result<ChannelSpec> {
        let mut spec = *spec;
        ioctl(&self.file, abi::CREATE_CHANNEL, &mut spec)?;
        Ok(spec)
    }

    /// Changes a channel's weight, T_W and meter.
    pub fn set_channel(&self, spec: &ChannelSpec) -> io::Result<()> {
        let mut spec = *spec;
        ioctl(&self.file, abi::SET_CHANNEL, &mut spec)
    }

    pub fn destroy_channel(&self, id: u32) -> io::Result<()> {
        let mut id = id;
        ioctl(&self.file, abi::DESTROY_CHANNEL, &mut id)
    }

    /// Attaches thread `pid` (0: the caller), or with `process` the whole
    /// process and the threads it creates later.
    pub fn attach(&self, channel: u32, pid: i32, process: bool) -> io::Result<()> {
        ioctl(
            &self.file,
            abi::ATTACH,
            &mut attach_args(channel, pid, process),
        )
    }

    pub fn detach(&self, pid: i32, process: bool) -> io::Result<()> {
        ioctl(&self.file, abi::DETACH, &mut attach_args(0, pid, process))
    }

    /// Sets a component's congestion signal (parts per million).
    pub fn inject(&self, component: u32, signal_ppm: u32) -> io::Result<()> {
        let mut args = abi::CongestionArgs {
            component,
            signal_ppm,
            model_capacity: 0,
        };
        ioctl(&self.file, abi::INJECT, &mut args)
    }

    /// Takes a component's congestion signal from the model of a device
    /// that delivers `capacity` bytes per second.
    pub fn inject_model(&self, component: u32, capacity: u64) -> io::Result<()> {
        let mut args = abi::CongestionArgs {
            component,
            signal_ppm: 0,
            model_capacity: capacity,
        };
        ioctl(&self.file, abi::INJECT, &mut args)
    }

    /// Reports bytes the calling thread moved (its channel's meter is
    /// `Meter::Reported`).
    pub fn report(&self, bytes: u64) -> io::Result<()> {
        let mut bytes = bytes;
        ioctl(&self.file, abi::REPORT, &mut bytes)
    }

    pub fn query(&self, id: u32) -> io::Result<ChannelStat> {
        let mut stat = ChannelStat {
            id,
            ..Default::default()
        };
        ioctl(&self.file, abi::QUERY_CHANNEL, &mut stat)?;
        Ok(stat)
    }

    /// Raw ioctl, for tests that send what the library would not.
    pub fn raw_ioctl<T>(&self, cmd: u32, arg: &mut T) -> io::Result<()> {
        ioctl(&self.file, cmd, arg)
    }
}

/// A channel's meter (`abi::METER_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meter {
    None,
    /// Bytes per microsecond of running.
    Emulated(u64),
    /// A perf event per thread, each worth `bytes_per_event`.
    Perf {
        type_: u32,
        config: u64,
        bytes_per_event: u64,
    },
    Reported,
}

impl Meter {
    /// Sets `spec`'s meter fields.
    pub fn apply(self, spec: &mut ChannelSpec) {
        (
            spec.meter,
            spec.meter_scale,
            spec.perf_type,
            spec.perf_config,
        ) = match self {
            Meter::None => (abi::METER_NONE, 0, 0, 0),
            Meter::Emulated(b) => (abi::METER_EMULATED, b, 0, 0),
            Meter::Perf {
                type_,
                config,
                bytes_per_event,
            } => (abi::METER_PERF, bytes_per_event, type_, config),
            Meter::Reported => (abi::METER_REPORTED, 0, 0, 0),
        };
    }
}

/// A perf event by name: `llc-misses`, `task-clock`, `raw:0xCONFIG`, or
/// `TYPE:CONFIG` in numbers (`perf_event_attr`'s type and config).
pub fn perf_event(name: &str) -> Option<(u32, u64)> {
    let num = |s: &str| match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    };
    match name {
        "llc-misses" => Some((abi::PERF_TYPE_HARDWARE, abi::PERF_COUNT_HW_CACHE_MISSES)),
        "task-clock" => Some((abi::PERF_TYPE_SOFTWARE, abi::PERF_COUNT_SW_TASK_CLOCK)),
        _ => {
            let (t, c) = name.split_once(':')?;
            let t = if t == "raw" {
                abi::PERF_TYPE_RAW
            } else {
                u32::try_from(num(t)?).ok()?
            };
            Some((t, num(c)?))
        }
    }
}

/// A channel spec with the given settings and the kernel's defaults for
/// the rest (`meter_bytes_per_us`: the emulated meter, 0 for none).
pub fn channel_spec(
    name: &str,
    weight: u32,
    path: &[u32],
    t_w_ns: u64,
    meter_bytes_per_us: u64,
    best_effort: bool,
) -> io::Result<ChannelSpec> {
    if path.len() > abi::PATH_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a path has {} components at most", abi::PATH_MAX),
        ));
    }
    let mut p = [0u32; abi::PATH_MAX];
    p[..path.len()].copy_from_slice(path);
    Ok(ChannelSpec {
        id: 0,
        flags: if best_effort {
            abi::CHANNEL_BEST_EFFORT
        } else {
            0
        },
        weight,
        parent: abi::NO_PARENT,
        path: p,
        path_len: path.len() as u32,
        meter: if meter_bytes_per_us == 0 {
            abi::METER_NONE
        } else {
            abi::METER_EMULATED
        },
        t_w_ns,
        meter_scale: meter_bytes_per_us,
        perf_config: 0,
        perf_type: 0,
        owner_uid: 0,
        name: self::name(name)?,
    })
}

/// One channel or component as sysfs shows it: its directory name and
/// every attribute the ABI names (`abi::CHANNEL_ATTRS`,
/// `abi::COMPONENT_ATTRS`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SysEntry {
    pub name: String,
    #[serde(flatten)]
    pub values: BTreeMap<String, u64>,
}

impl SysEntry {
    /// An attribute's value (0 if the kernel did not show it).
    pub fn get(&self, attr: &str) -> u64 {
        self.values.get(attr).copied().unwrap_or(0)
    }
}

/// The channels (`"channels"`, with `abi::CHANNEL_ATTRS`) or components
/// under a sysfs root, by id. An entry removed while it is read is
/// skipped.
pub fn sys_list(root: &Path, dir: &str, attrs: &[&str]) -> io::Result<Vec<SysEntry>> {
    let mut out = vec![];
    for e in std::fs::read_dir(root.join(dir))? {
        let e = e?;
        let mut values = BTreeMap::new();
        let mut gone = false;
        for &a in attrs {
            match std::fs::read_to_string(e.path().join(a)) {
                Ok(s) => {
                    let v = s.trim().parse().map_err(|err| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{}/{a}: {err}", e.path().display()),
                        )
                    })?;
                    values.insert(a.to_string(), v);
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => gone = true,
                Err(err) => return Err(err),
            }
        }
        if !gone {
            out.push(SysEntry {
                name: e.file_name().to_string_lossy().into_owned(),
                values,
            });
        }
    }
    out.sort_by_key(|e| e.get("id"));
    Ok(out)
}

pub fn sys_channels(root: &Path) -> io::Result<Vec<SysEntry>> {
    sys_list(root, "channels", &abi::CHANNEL_ATTRS)
}

pub fn sys_components(root: &Path) -> io::Result<Vec<SysEntry>> {
    sys_list(root, "components", &abi::COMPONENT_ATTRS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(root: &Path, dir: &str, name: &str, attrs: &[&str], base: u64) {
        let d = root.join(dir).join(name);
        std::fs::create_dir_all(&d).unwrap();
        for (i, a) in attrs.iter().enumerate() {
            let v = if *a == "id" {
                base
            } else {
                base * 100 + i as u64
            };
            std::fs::write(d.join(a), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn a_memdev_path_maps_ports_to_component_kinds() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cxlctl/tests/data/qemu-switch-2x256M-before.json");
        let snap: cxlctl::snapshot::Snapshot =
            serde_json::from_str(&std::fs::read_to_string(data).unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        cxlctl::snapshot::materialize(&snap, dir.path()).unwrap();
        let topo =
            cxlctl::topology::Topology::read(&cxlctl::sysfs::Sysfs::new(dir.path())).unwrap();
        let path = cxl_components(&topo, "mem0").unwrap();
        assert_eq!(
            path,
            [
                ("port1".to_string(), abi::COMPONENT_HOST_PORT),
                ("port2".to_string(), abi::COMPONENT_SWITCH),
                ("endpoint4".to_string(), abi::COMPONENT_ENDPOINT),
            ]
        );
        assert!(cxl_components(&topo, "nosuch").is_err());
    }

    #[test]
    fn perf_events_by_name_and_number() {
        assert_eq!(perf_event("llc-misses"), Some((0, 3)));
        assert_eq!(perf_event("task-clock"), Some((1, 1)));
        assert_eq!(perf_event("raw:0x1b7"), Some((4, 0x1b7)));
        assert_eq!(perf_event("3:0x10002"), Some((3, 0x10002)));
        assert_eq!(perf_event("cycles"), None);
        assert_eq!(perf_event("4294967296:1"), None);
        assert_eq!(perf_event("raw:0xzz"), None);
    }

    #[test]
    fn meters_fill_their_fields_and_clear_the_others() {
        let mut s = channel_spec("x", 1, &[], 0, 100, false).unwrap();
        assert_eq!((s.meter, s.meter_scale), (abi::METER_EMULATED, 100));
        Meter::Perf {
            type_: 4,
            config: 0x1b7,
            bytes_per_event: 64,
        }
        .apply(&mut s);
        assert_eq!(
            (s.meter, s.meter_scale, s.perf_type, s.perf_config),
            (abi::METER_PERF, 64, 4, 0x1b7)
        );
        Meter::Reported.apply(&mut s);
        assert_eq!(
            (s.meter, s.meter_scale, s.perf_type, s.perf_config),
            (abi::METER_REPORTED, 0, 0, 0)
        );
    }

    #[test]
    fn sysfs_entries_are_read_by_id_and_half_removed_ones_skipped() {
        let t = tempfile::tempdir().unwrap();
        entry(t.path(), "channels", "b", &abi::CHANNEL_ATTRS, 1);
        entry(t.path(), "channels", "a", &abi::CHANNEL_ATTRS, 0);
        entry(t.path(), "channels", "gone", &abi::CHANNEL_ATTRS[..3], 2);
        entry(t.path(), "components", "port", &abi::COMPONENT_ATTRS, 0);
        let ch = sys_channels(t.path()).unwrap();
        assert_eq!(ch.len(), 2);
        assert_eq!((ch[0].name.as_str(), ch[1].name.as_str()), ("a", "b"));
        assert_eq!(ch[1].get("rate"), 105);
        let c = sys_components(t.path()).unwrap();
        assert_eq!(c[0].get("capacity"), 3);
        std::fs::write(t.path().join("channels/a/rate"), "x\n").unwrap();
        assert!(sys_channels(t.path()).is_err(), "garbage is an error");
    }
}
