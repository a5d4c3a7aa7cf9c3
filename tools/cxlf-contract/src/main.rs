//! cxlf-contract: the modules' user-space contracts (ioctl numbers and
//! errnos, mmap rules, sysfs) checked from a guest process, and the
//! workloads scenarios drive. Not a self-test: that word is kept for the
//! harness checking itself (see Documentation/cxlfabric/harness.rst).
//!
//! `cxlf-contract misc`: exercises the support layer's miscdevice wrapper
//! through `/dev/cxlfabric_misc_test` (kunit/cxlfabric_support_kunit.ko):
//! per-file state through ioctl, unknown commands, and the mmap contract
//! (MAP_SHARED, one page at offset 0, content from the kernel). Prints one
//! line per check and fails on the first that does not hold.

use anyhow::{bail, ensure, Context, Result};
use clap::{Parser, Subcommand};
use nix::errno::Errno;
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::fs::{File, OpenOptions};
use std::num::NonZeroUsize;
use std::os::fd::AsRawFd;
use uapi::ioctl::io;
use uapi::selftest as abi;

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
mod beluga_fuzz;
mod beluga_gup;
mod mchannel_bench;
mod mchannel_checks;

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
    /// beluga_dax: hold a mapping until `ready` is removed, then touch it
    /// (expected to die of SIGBUS when the pool was unbound meanwhile).
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

fn pool_layout(size: u64, hosts: u32, objects: u32) -> Result<()> {
    let g = beluga_pool::layout::Geometry::new(size, hosts, objects)
        .map_err(|e| anyhow::anyhow!("no layout: {e:?}"))?;
    println!("host_table_off={}", g.host_table_off);
    println!("object_table_off={}", g.object_table_off);
    println!("slot_bytes={}", beluga_pool::leases::SLOT_BYTES);
    println!("data_off={}", g.data_off);
    Ok(())
}

fn write_superblock(
    device: &str,
    size: u64,
    max_hosts: u32,
    max_objects: u32,
    flip_bit: Option<usize>,
) -> Result<()> {
    use beluga_pool::layout::{Geometry, Superblock, SUPERBLOCK_BYTES};
    let geometry =
        Geometry::new(size, max_hosts, max_objects).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut bytes = Superblock::new(&geometry, *b"cxlf-contract-01", 1).encode();
    if let Some(bit) = flip_bit {
        ensure!(
            bit < SUPERBLOCK_BYTES * 8,
            "bit {bit} is outside the superblock"
        );
        bytes[bit / 8] ^= 1 << (bit % 8);
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
        .with_context(|| format!("opening {device}"))?;
    // device-dax maps in 2 MiB units.
    let len = 2 << 20;
    // SAFETY: a fresh shared read-write mapping of the device at an
    // address the kernel chooses.
    let p = unsafe {
        mmap(
            None,
            NonZeroUsize::new(len).unwrap(),
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_SHARED,
            &file,
            0,
        )
    }
    .context("mmap")?
    .cast::<u8>();
    for (i, byte) in bytes.iter().enumerate() {
        // SAFETY: `i < 128 < len`, inside the mapping.
        unsafe { p.as_ptr().add(i).write_volatile(*byte) };
    }
    // SAFETY: unmapping the mapping made above; nothing refers to it after.
    unsafe { munmap(p.cast(), len)? };
    println!(
        "superblock written to {device}{}",
        flip_bit
            .map(|b| format!(" with bit {b} flipped"))
            .unwrap_or_default()
    );
    Ok(())
}

fn parse_number(text: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    }
    .map_err(|e| format!("'{text}': {e}"))
}

fn dax_binding(device: &str, unbound: bool, start: Option<u64>, size: Option<u64>) -> Result<()> {
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

fn check(name: &str, result: Result<()>) -> Result<()> {
    match result {
        Ok(()) => {
            println!("ok   {name}");
            Ok(())
        }
        Err(err) => bail!("FAIL {name}: {err:#}"),
    }
}

fn misc(device: &str) -> Result<()> {
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(device)
            .with_context(|| format!("opening {device}"))
    };
    let a = open()?;
    let b = open()?;

    check(
        "each open file has its own value",
        (|| {
            ioctl_u64(&a, abi::SET_VALUE, &mut 42)?;
            let (mut va, mut vb) = (0, 7);
            ioctl_u64(&a, abi::GET_VALUE, &mut va)?;
            ioctl_u64(&b, abi::GET_VALUE, &mut vb)?;
            ensure!(va == 42 && vb == 0, "got {va} and {vb}, expected 42 and 0");
            Ok(())
        })(),
    )?;

    check(
        "task work runs on the caller's way back to user space",
        (|| {
            let state = |file: &File| -> Result<abi::TaskWorkState> {
                let mut st = abi::TaskWorkState::default();
                ioctl_read(file, abi::GET_TASK_WORK, &mut st).context("GET_TASK_WORK")?;
                Ok(st)
            };
            let before = state(&a)?;
            ioctl_u64(&a, abi::QUEUE_TASK_WORK, &mut 5)?;
            let after = state(&a)?;
            ensure!(
                after.sum == before.sum + 5 && after.pending == 0,
                "before {before:?}, after queueing 5: {after:?}"
            );
            // From another thread: its own work, run by that thread.
            std::thread::scope(|s| {
                s.spawn(|| ioctl_u64(&b, abi::QUEUE_TASK_WORK, &mut 7))
                    .join()
            })
            .expect("thread")?;
            let last = state(&a)?;
            ensure!(last.sum == after.sum + 7, "after the thread: {last:?}");
            Ok(())
        })(),
    )?;

    check(
        "open count is shared by the device",
        (|| {
            let mut opens = 0;
            ioctl_u64(&a, abi::GET_OPENS, &mut opens)?;
            ensure!(opens >= 2, "{opens} opens counted, at least 2 expected");
            Ok(())
        })(),
    )?;

    check(
        "unknown ioctl is ENOTTY",
        (|| {
            let err = ioctl_u64(&a, io(abi::IOC_TYPE, 99), &mut 0);
            ensure!(err == Err(Errno::ENOTTY), "got {err:?}");
            Ok(())
        })(),
    )?;

    check(
        "bad user pointer is EFAULT",
        (|| {
            // SAFETY: the kernel must reject the bad pointer without touching
            // this process's memory.
            let ret = unsafe {
                nix::libc::ioctl(
                    a.as_raw_fd(),
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
        })(),
    )?;

    check(
        "MAP_SHARED page holds the kernel's pattern",
        (|| {
            let p = map(&a, PAGE, 0, MapFlags::MAP_SHARED)?;
            // SAFETY: `p` maps PAGE readable bytes until the munmap below.
            let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), PAGE) };
            let bad = (0..PAGE).find(|&i| bytes[i] != abi::pattern_byte(i));
            // SAFETY: unmapping what was mapped above; `bytes` is not used after.
            unsafe { munmap(p.cast(), PAGE)? };
            ensure!(bad.is_none(), "byte {bad:?} differs");
            Ok(())
        })(),
    )?;

    for (name, len, offset, flags) in [
        (
            "MAP_PRIVATE is refused with EINVAL",
            PAGE,
            0,
            MapFlags::MAP_PRIVATE,
        ),
        (
            "two pages are refused with EINVAL",
            2 * PAGE,
            0,
            MapFlags::MAP_SHARED,
        ),
        (
            "a non-zero offset is refused with EINVAL",
            PAGE,
            PAGE as i64,
            MapFlags::MAP_SHARED,
        ),
    ] {
        check(
            name,
            (|| {
                match map(&a, len, offset, flags) {
                    Err(Errno::EINVAL) => Ok(()),
                    Err(e) => bail!("got {e}"),
                    Ok(p) => {
                        // SAFETY: unmapping the mapping that should not exist.
                        unsafe { munmap(p.cast(), len)? };
                        bail!("the mapping was allowed")
                    }
                }
            })(),
        )?;
    }
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::BelugaContract { dev } => beluga_checks::contract(&dev),
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
            hold,
        } => beluga_checks::share(&dev, &name, size, open, seed, hold.as_deref()),
        Cmd::BelugaRace { dev, seconds } => beluga_checks::alloc_free_race(&dev, seconds),
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
            for p in &out {
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
        Cmd::PoolLayout {
            size,
            hosts,
            objects,
        } => pool_layout(size, hosts, objects),
        Cmd::Misc { device } => misc(&device),
        Cmd::WriteSuperblock {
            device,
            size,
            max_hosts,
            max_objects,
            flip_bit,
        } => write_superblock(&device, size, max_hosts, max_objects, flip_bit),
        Cmd::DaxBinding {
            device,
            unbound,
            start,
            size,
        } => dax_binding(&device, unbound, start, size),
    }
}
