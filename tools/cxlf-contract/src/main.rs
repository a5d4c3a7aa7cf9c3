//! cxlf-contract: the modules' user-space contracts (ioctl numbers and
//! errnos, mmap rules, sysfs) checked from a guest process, and the
//! workloads scenarios drive. Not a self-test: that word is kept for the
//! harness checking itself (see Documentation/cxlfabric/harness.rst).
//! Each subcommand lives in the module named after what it checks; this
//! file is the command line.

use anyhow::{ensure, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cxlf-contract",
    about = "User-space contract checks of the cxlfabric modules"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

mod beluga_checks;
mod beluga_contract;
mod beluga_format;
mod beluga_fuzz;
mod beluga_gup;
mod checks;
mod drack_faults;
mod drack_forge;
mod mchannel_bench;
mod mchannel_checks;
mod support_checks;

#[derive(Subcommand)]
enum Cmd {
    /// beluga_dax: the mmap and ioctl contract on one host.
    BelugaContract {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
    },
    /// beluga_dax: what needs get_user_pages works on pool mappings
    /// (process_vm_readv, /proc/pid/mem, O_DIRECT, io_uring fixed buffers,
    /// vmsplice, mbind), and a long-term pin keeps a freed object.
    BelugaGup {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
    },
    /// beluga_dax: random ioctls (numbers, arguments, bad pointers) and
    /// random mmap/munmap/mremap/mprotect/madvise of pool mappings from
    /// racing threads, for a bounded time; fails only on broken promises.
    BelugaFuzz {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// Fuzz as this uid (setgroups, setgid and setuid to it first).
        #[arg(long)]
        uid: Option<u32>,
    },
    /// beluga_dax: unbind under an io_uring pin that its process then
    /// lets go of; the unbind must complete.
    BelugaPinUnbind {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long, default_value = "dax0.0")]
        dax: String,
        #[arg(long, value_enum)]
        by: beluga_gup::Unbinder,
    },
    /// beluga_dax: hold a mapping until `ready` is removed, then touch it
    /// (expected to die of SIGBUS when the pool was unbound meanwhile).
    BelugaHold {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long)]
        ready: std::path::PathBuf,
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// beluga_dax: allocate and free for a while, checking that nothing
    /// this host holds is ever written by someone else.
    BelugaStress {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Objects to keep at the end.
        #[arg(long, default_value_t = 0)]
        keep: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// beluga_dax: check the pattern beluga_client_test wrote into a region.
    BelugaPattern {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long)]
        name: String,
        #[arg(long, default_value_t = 65536)]
        len: usize,
    },
    /// beluga_dax: the KV block store across hosts (writer or reader).
    BelugaKv {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long)]
        name: String,
        #[arg(long)]
        writer: bool,
        #[arg(long, default_value_t = 16)]
        keys: u64,
        #[arg(long, default_value_t = 8)]
        seconds: u64,
        /// The writer's store checksums its blocks (CRC-32); `--no-checksum`
        /// leaves the sequence numbers alone to keep torn blocks out.
        #[arg(long)]
        no_checksum: bool,
    },
    /// beluga_dax: CXL-RPC across hosts (server or client).
    BelugaRpc {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long)]
        server: bool,
        #[arg(long, default_value_t = 2000)]
        calls: u64,
        #[arg(long, default_value_t = 8)]
        depth: usize,
    },
    /// beluga_dax: create (or open) a shared object with checksummed data.
    BelugaShare {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long)]
        name: String,
        #[arg(long, default_value_t = 4 << 20)]
        size: u64,
        #[arg(long)]
        open: bool,
        #[arg(long, default_value_t = 5)]
        seed: u64,
        /// Permission bits of a created object, octal (600 with uid 0
        /// is what a kernel user's region has).
        #[arg(long, default_value = "644", value_parser = parse_mode)]
        mode: u32,
        /// Keep holding the object until this file (created once the
        /// check passed) is removed.
        #[arg(long)]
        hold: Option<std::path::PathBuf>,
    },
    /// beluga_dax: ALLOC racing FREE from another file leaves nothing.
    BelugaRace {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        #[arg(long, default_value_t = 3)]
        seconds: u64,
    },
    /// mchannel_sched: every bad ioctl argument gets its errno, and the
    /// renice rule for unprivileged callers.
    MchannelErrnos {
        #[arg(long, default_value = "/dev/mchannel")]
        dev: std::path::PathBuf,
    },
    /// mchannel_sched: two weighted channels on one component run their
    /// computed shares; detached, they run at full speed.
    MchannelShare {
        #[arg(long, default_value = "/dev/mchannel")]
        dev: std::path::PathBuf,
        /// Channels of a flat share: their weights.
        #[arg(long, value_delimiter = ',', default_values_t = [1, 1])]
        weights: Vec<u32>,
        /// Groups and channels instead: `name=weight[@parent]`, a group's
        /// name ending in `/`, parents first.
        #[arg(long, value_delimiter = ',')]
        tree: Vec<mchannel_checks::ShareNode>,
        #[arg(long, default_value_t = 1000)]
        t_w_us: u64,
        #[arg(long, default_value_t = 100)]
        meter: u64,
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        #[arg(long, default_value_t = 0.1)]
        tolerance: f64,
    },
    /// mchannel_sched's congestion model: two channels on a component
    /// configured `over` times faster than the device model behind it;
    /// AIMD brings the capacity down to the device and the channels share
    /// it.
    MchannelModel {
        #[arg(long, default_value = "/dev/mchannel")]
        dev: std::path::PathBuf,
        #[arg(long, default_value_t = 100)]
        meter: u64,
        #[arg(long, default_value_t = 4)]
        over: u64,
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
    /// mchannel_sched benchmarks: overhead, accuracy, progress or scale.
    MchannelBench {
        #[arg(long, default_value = "/dev/mchannel")]
        dev: std::path::PathBuf,
        /// overhead, accuracy, progress or scale.
        which: String,
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        /// scale: the thread counts.
        #[arg(long, value_delimiter = ',', default_values_t = [1, 64, 1024])]
        counts: Vec<usize>,
    },
    MchannelStream {
        #[arg(long, default_value = "/dev/mchannel")]
        dev: std::path::PathBuf,
        #[arg(long)]
        channel: Option<u32>,
        #[arg(long, default_value_t = 1)]
        threads: usize,
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// Each thread's run fraction must be at most this.
        #[arg(long)]
        at_most: Option<f64>,
        /// Each thread's run fraction must be at least this.
        #[arg(long)]
        at_least: Option<f64>,
    },
    /// beluga pool layout for a device size and format parameters, as
    /// shell assignments (host_table_off, object_table_off, slot_bytes,
    /// data_off).
    PoolLayout {
        #[arg(long)]
        size: u64,
        #[arg(long, default_value_t = 8)]
        hosts: u32,
        #[arg(long, default_value_t = 1024)]
        objects: u32,
    },
    /// drack_netdev: for a while, break the CRC of the entries of pair
    /// (src, dst) the destination has not read yet (a torn or stray
    /// write to the pool), racing its poll.
    DrackScribble {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        /// The drack region's name in the pool.
        #[arg(long, default_value = "drack0")]
        region: String,
        #[arg(long)]
        src: u32,
        #[arg(long)]
        dst: u32,
        /// How long, milliseconds.
        #[arg(long, default_value_t = 3000)]
        for_ms: u64,
    },
    /// drack_netdev: as host `as_host` (no module may run as it), send
    /// host `dst` well-formed frames on hostile ports, one by one, each
    /// in a buffer of our own that must come back.
    DrackForge {
        #[arg(long, default_value = "/dev/beluga0.0")]
        dev: std::path::PathBuf,
        /// The drack region's name in the pool.
        #[arg(long, default_value = "drack0")]
        region: String,
        #[arg(long)]
        as_host: u32,
        #[arg(long)]
        dst: u32,
        /// A frame: `link`, `to:N`, `from:N` or `raw:BYTE` (its port),
        /// then optionally `/MAC`, its source address.
        #[arg(long = "frame", required = true, value_parser = drack_forge::parse)]
        frames: Vec<drack_forge::Forged>,
        /// How long each step may take, milliseconds.
        #[arg(long, default_value_t = 20000)]
        timeout_ms: u64,
    },
    /// Check /dev/cxlfabric_misc_test.
    Misc {
        #[arg(long, default_value = "/dev/cxlfabric_misc_test")]
        device: String,
    },
    /// Write a pool superblock (format v1) through a device-dax instance,
    /// optionally with one bit flipped, for beluga_dax's probe to judge.
    WriteSuperblock {
        #[arg(long, default_value = "/dev/dax0.0")]
        device: String,
        /// Pool size in bytes (the instance's sysfs `size`).
        #[arg(long, value_parser = parse_number)]
        size: u64,
        #[arg(long, default_value_t = 8)]
        max_hosts: u32,
        #[arg(long, default_value_t = 1024)]
        max_objects: u32,
        /// Flip this bit of the encoded superblock.
        #[arg(long)]
        flip_bit: Option<usize>,
    },
    /// Check what the test dax driver (named after its module) saw at probe.
    DaxBinding {
        #[arg(long, default_value = "/dev/cxlfabric_misc_test")]
        device: String,
        /// Expect nothing bound.
        #[arg(long, conflicts_with_all = ["start", "size"])]
        unbound: bool,
        /// Expected physical start (e.g. the instance's sysfs `resource`).
        #[arg(long, value_parser = parse_number)]
        start: Option<u64>,
        /// Expected size in bytes (the instance's sysfs `size`).
        #[arg(long, value_parser = parse_number)]
        size: Option<u64>,
    },
}

/// Permission bits, octal, at most 0o777.
fn parse_mode(text: &str) -> Result<u32, String> {
    u32::from_str_radix(text.trim(), 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| format!("bad mode {text:?}"))
}

fn parse_number(text: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    }
    .map_err(|e| format!("'{text}': {e}"))
}

fn main() -> Result<()> {
    run_beluga(Cli::parse().command)
}

/// The beluga_dax subcommands; the others go on to `run_mchannel`.
fn run_beluga(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::BelugaContract { dev } => beluga_contract::contract(&dev),
        Cmd::BelugaGup { dev } => beluga_gup::gup(&dev),
        Cmd::BelugaFuzz {
            dev,
            seconds,
            seed,
            threads,
            uid,
        } => beluga_fuzz::fuzz(&dev, seconds, seed, threads, uid),
        Cmd::BelugaPinUnbind { dev, dax, by } => beluga_gup::pin_unbind(&dev, &dax, by),
        Cmd::BelugaHold {
            dev,
            ready,
            timeout,
        } => beluga_checks::hold(&dev, &ready, std::time::Duration::from_secs(timeout)),
        Cmd::BelugaPattern { dev, name, len } => beluga_checks::pattern_check(&dev, &name, len),
        Cmd::BelugaKv {
            dev,
            name,
            writer,
            keys,
            seconds,
            no_checksum,
        } => {
            let checksum = if no_checksum {
                beluga::kv::Checksum::None
            } else {
                beluga::kv::Checksum::Crc32
            };
            beluga_checks::kv(&dev, &name, writer, keys, seconds, checksum)
        }
        Cmd::BelugaRpc {
            dev,
            server,
            calls,
            depth,
        } => beluga_checks::rpc(&dev, server, calls, depth),
        Cmd::BelugaStress {
            dev,
            seconds,
            keep,
            seed,
        } => beluga_checks::stress(&dev, seconds, keep, seed),
        Cmd::BelugaShare {
            dev,
            name,
            size,
            open,
            seed,
            mode,
            hold,
        } => beluga_checks::share(&dev, &name, size, open, seed, mode, hold.as_deref()),
        Cmd::BelugaRace { dev, seconds } => beluga_checks::alloc_free_race(&dev, seconds),
        other => run_mchannel(other),
    }
}

/// The mchannel_sched subcommands; the others go on to `run_support`.
fn run_mchannel(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::MchannelErrnos { dev } => mchannel_checks::errnos(&dev),
        Cmd::MchannelShare {
            dev,
            weights,
            tree,
            t_w_us,
            meter,
            seconds,
            tolerance,
        } => {
            let nodes = if tree.is_empty() {
                flat_share(&weights)
            } else {
                tree
            };
            mchannel_checks::share(&dev, &nodes, t_w_us, meter, seconds, tolerance)
        }
        Cmd::MchannelModel {
            dev,
            meter,
            over,
            seconds,
        } => mchannel_checks::model(&dev, meter, over, seconds),
        Cmd::MchannelBench {
            dev,
            which,
            seconds,
            counts,
        } => match which.as_str() {
            "overhead" => mchannel_bench::overhead(&dev, seconds),
            "accuracy" => mchannel_bench::accuracy(&dev, seconds),
            "progress" => mchannel_bench::progress(&dev, seconds),
            "scale" => mchannel_bench::scale(&dev, seconds, &counts),
            _ => anyhow::bail!("overhead, accuracy, progress or scale, not {which:?}"),
        },
        Cmd::MchannelStream {
            dev,
            channel,
            threads,
            seconds,
            at_most,
            at_least,
        } => {
            let out = mchannel_checks::stream_cmd(&dev, channel, threads, seconds)?;
            run_fractions_within(&out, at_most, at_least)
        }
        other => run_support(other),
    }
}

/// Channels of a flat share (`--weights`): one per weight, named by index.
fn flat_share(weights: &[u32]) -> Vec<mchannel_checks::ShareNode> {
    weights
        .iter()
        .enumerate()
        .map(|(i, &weight)| mchannel_checks::ShareNode {
            name: i.to_string(),
            weight,
            parent: None,
            group: false,
            meter: Default::default(),
        })
        .collect()
}

/// `mchannel-stream --at-most/--at-least`: every thread's run fraction.
fn run_fractions_within(
    out: &[mchannel_checks::Progress],
    at_most: Option<f64>,
    at_least: Option<f64>,
) -> Result<()> {
    for p in out {
        let f = p.run_fraction;
        ensure!(
            !matches!(at_most, Some(max) if f > max),
            "ran {f:.3} > {at_most:?}"
        );
        ensure!(
            !matches!(at_least, Some(min) if f < min),
            "ran {f:.3} < {at_least:?}"
        );
    }
    Ok(())
}

/// The support layer's test device, beluga's pool format and drack's
/// faults.
fn run_support(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::PoolLayout {
            size,
            hosts,
            objects,
        } => beluga_format::pool_layout(size, hosts, objects),
        Cmd::DrackScribble {
            dev,
            region,
            src,
            dst,
            for_ms,
        } => drack_faults::scribble(&dev, &region, src, dst, for_ms),
        Cmd::DrackForge {
            dev,
            region,
            as_host,
            dst,
            frames,
            timeout_ms,
        } => drack_forge::forge(&dev, &region, as_host, dst, &frames, timeout_ms),
        Cmd::Misc { device } => support_checks::misc(&device),
        Cmd::WriteSuperblock {
            device,
            size,
            max_hosts,
            max_objects,
            flip_bit,
        } => beluga_format::write_superblock(&device, size, max_hosts, max_objects, flip_bit),
        Cmd::DaxBinding {
            device,
            unbound,
            start,
            size,
        } => support_checks::dax_binding(&device, unbound, start, size),
        _ => unreachable!("beluga and mchannel subcommands are run before"),
    }
}
