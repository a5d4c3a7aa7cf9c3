//! `beluga`: administer and use beluga_dax pools.

use anyhow::{Context, Result};
use beluga::{abi, name_of, Pool, Sharing};
use clap::{Parser, Subcommand};
use serde::Serialize;
use std::path::PathBuf;

mod bench;

#[derive(Parser)]
#[command(about = "Administer and use beluga_dax CXL pools")]
struct Cli {
    /// Pool device (default: the first /dev/beluga*).
    #[arg(long, global = true)]
    dev: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Pool state, usage and leases.
    Status,
    /// Wait until this host is attached and acknowledged by the manager.
    Wait,
    /// Format the pool (destroys its contents; CAP_SYS_ADMIN).
    Format {
        #[arg(long, default_value_t = 8)]
        hosts: u32,
        #[arg(long, default_value_t = 1024)]
        objects: u32,
    },
    /// Allocate an object (sizes take K, M, G suffixes). A named object
    /// stays after the command exits; an unnamed one is freed with it.
    Alloc {
        #[arg(long, value_parser = parse_size)]
        size: u64,
        #[arg(long)]
        name: Option<String>,
        /// Other hosts may open it by name.
        #[arg(long)]
        shared: bool,
        /// Permission bits, octal.
        #[arg(long, default_value = "600", value_parser = parse_mode)]
        mode: u32,
    },
    /// Open a named object (holds it on this host).
    Share { name: String },
    /// Free (unlink) an object: its name goes at once, its memory when
    /// nothing uses it any more.
    Free {
        /// Object name, or index:serial.
        object: String,
    },
    /// List the objects in the pool.
    List,
    /// Reclaim a dead host's objects now (CAP_SYS_ADMIN).
    Reclaim { host: u32 },
    /// Measurements for `cargo xtask bench` (BENCH lines).
    #[command(subcommand, hide = true)]
    Bench(bench::Bench),
}

fn parse_size(s: &str) -> Result<u64, String> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = digits.parse().map_err(|_| format!("bad size {s:?}"))?;
    let shift = match unit {
        "" => 0,
        "K" | "k" => 10,
        "M" | "m" => 20,
        "G" | "g" => 30,
        _ => return Err(format!("bad size unit {unit:?}")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| "size overflows".into())
}

fn parse_mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s, 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| format!("bad mode {s:?}"))
}

#[derive(Serialize)]
struct Handle {
    index: u32,
    serial: u64,
    size: u64,
    map_offset: u64,
    shared: bool,
    uid: u32,
    mode: String,
}

impl Handle {
    fn show(&self) {
        println!(
            "object {}:{} size {} offset {:#x}",
            self.index, self.serial, self.size, self.map_offset
        )
    }
}

impl From<abi::ObjectHandle> for Handle {
    fn from(h: abi::ObjectHandle) -> Handle {
        Handle {
            index: h.index,
            serial: h.serial,
            size: h.size,
            map_offset: h.map_offset,
            shared: h.flags & abi::FLAG_SHARED != 0,
            uid: h.uid,
            mode: format!("{:o}", h.mode),
        }
    }
}

#[derive(Serialize)]
struct Object {
    index: u32,
    serial: u64,
    name: String,
    size: u64,
    map_offset: u64,
    shared: bool,
    /// Freed, name gone, still in use (its memory goes with the last use).
    unlinked: bool,
    owner_host: u32,
    holders: Vec<u32>,
    uid: u32,
    mode: String,
}

#[derive(Serialize)]
struct Status {
    device: String,
    state: &'static str,
    host_index: u32,
    manager: Option<u32>,
    generation: u64,
    uuid: String,
    device_size: u64,
    sections: u32,
    free_sections: u32,
    largest_free_run: u32,
    fragmentation_permille: u32,
    objects: u32,
    lease_ms: u32,
    hosts: Vec<HostStatus>,
}

#[derive(Serialize)]
struct HostStatus {
    index: u32,
    lease: &'static str,
    used_sections: u32,
}

/// `abi::state_name`, or "unknown" for a code this ABI does not define.
fn state_name(state: u32) -> &'static str {
    abi::state_name(state).unwrap_or("unknown")
}

/// `abi::lease_name`; a code this ABI does not define reads as "absent".
fn lease_name(lease: u8) -> &'static str {
    abi::lease_name(lease).unwrap_or("absent")
}

fn status(pool: &Pool) -> Result<Status> {
    let i = pool.info()?;
    let hosts = (0..i.max_hosts)
        .map(|h| HostStatus {
            index: h,
            lease: lease_name(i.lease[h as usize]),
            used_sections: i.used_by_host[h as usize],
        })
        .collect();
    Ok(Status {
        device: pool.path().display().to_string(),
        state: state_name(i.state),
        host_index: i.host_index,
        manager: (i.manager != u32::MAX).then_some(i.manager),
        generation: i.generation,
        uuid: i.uuid.iter().map(|b| format!("{b:02x}")).collect(),
        device_size: i.device_size,
        sections: i.sections,
        free_sections: i.free_sections,
        largest_free_run: i.largest_free_run,
        fragmentation_permille: i.fragmentation_permille,
        objects: i.objects,
        lease_ms: i.lease_ms,
        hosts,
    })
}

fn objects(pool: &Pool) -> Result<Vec<Object>> {
    Ok(pool
        .list()?
        .into_iter()
        .map(|o| Object {
            index: o.index,
            serial: o.serial,
            name: name_of(&o.name),
            size: o.size,
            map_offset: o.map_offset,
            shared: o.flags & abi::FLAG_SHARED != 0,
            unlinked: beluga::is_unlinked(&o),
            owner_host: o.owner_host,
            holders: (0..64).filter(|h| o.holders & (1 << h) != 0).collect(),
            uid: o.uid,
            mode: format!("{:o}", o.mode),
        })
        .collect())
}

fn print<T: Serialize>(json: bool, value: &T, text: impl FnOnce(&T)) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        text(value);
    }
    Ok(())
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Cmd::Bench(b) = cli.cmd {
        return bench::run(cli.dev, b);
    }
    let dev = match cli.dev {
        Some(d) => d,
        None => Pool::devices()?
            .into_iter()
            .next()
            .context("no /dev/beluga* device: bind a dax instance to beluga_dax")?,
    };
    let pool = Pool::open(&dev).with_context(|| format!("opening {}", dev.display()))?;
    match cli.cmd {
        Cmd::Status => {
            let s = status(&pool)?;
            print(cli.json, &s, |s| {
                println!(
                    "{}: {} (host {}, manager {})",
                    s.device,
                    s.state,
                    s.host_index,
                    s.manager.map_or("none".into(), |m| m.to_string())
                );
                println!(
                    "generation {}  sections {} free {} largest run {}  fragmentation {}.{}%  objects {}",
                    s.generation,
                    s.sections,
                    s.free_sections,
                    s.largest_free_run,
                    s.fragmentation_permille / 10,
                    s.fragmentation_permille % 10,
                    s.objects
                );
                for h in &s.hosts {
                    println!(
                        "host {:2}  {:8}  {} sections",
                        h.index, h.lease, h.used_sections
                    );
                }
            })?;
        }
        Cmd::Wait => pool.wait_ready().context("waiting for the pool manager")?,
        Cmd::Format { hosts, objects } => pool
            .format(hosts, objects)
            .context("format (needs CAP_SYS_ADMIN, no objects held, no other host attached)")?,
        Cmd::Alloc {
            size,
            name,
            shared,
            mode,
        } => {
            let sharing = if shared {
                Sharing::Shared
            } else {
                Sharing::Private
            };
            let h: Handle = pool
                .alloc(size, name.as_deref(), sharing, mode)
                .context("alloc")?
                .into();
            print(cli.json, &h, Handle::show)?;
        }
        Cmd::Share { name } => {
            let h: Handle = pool
                .open_object(&name)
                .with_context(|| format!("open {name}"))?
                .into();
            print(cli.json, &h, Handle::show)?;
        }
        Cmd::Free { object } => {
            let handle = match object.split_once(':') {
                Some((i, s)) => abi::ObjectHandle {
                    index: i.parse().context("index")?,
                    serial: s.parse().context("serial")?,
                    ..Default::default()
                },
                None => pool
                    .open_object(&object)
                    .with_context(|| format!("open {object}"))?,
            };
            pool.free(&handle).context("free")?;
        }
        Cmd::List => {
            let list = objects(&pool)?;
            print(cli.json, &list, |list| {
                println!(
                    "{:>5} {:>8} {:>10} {:>6} {:>5} {:>4}  name",
                    "index", "serial", "size", "owner", "uid", "mode"
                );
                for o in list {
                    println!(
                        "{:>5} {:>8} {:>10} {:>6} {:>5} {:>4}  {}{}{}",
                        o.index,
                        o.serial,
                        o.size,
                        o.owner_host,
                        o.uid,
                        o.mode,
                        o.name,
                        if o.shared { " (shared)" } else { "" },
                        if o.unlinked { " (unlinked)" } else { "" }
                    );
                }
            })?;
        }
        Cmd::Bench(_) => unreachable!("handled above"),
        Cmd::Reclaim { host } => {
            let n = pool
                .force_reclaim(host)
                .context("reclaim (needs CAP_SYS_ADMIN; the host must not be live)")?;
            if cli.json {
                println!("{{\"reclaimed\": {n}}}");
            } else {
                println!("reclaimed {n} objects of host {host}");
            }
        }
    }
    Ok(())
}
