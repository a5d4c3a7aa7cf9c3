//! `beluga bench ...`: the measurements behind `cargo xtask bench`. Each
//! prints `BENCH {json}` lines; the harness sets every series of a
//! benchmark against its first one (the anchor), measured in the same run.

use anyhow::{bail, Context, Result};
use beluga::rpc;
use beluga::shared::Shared;
use beluga::{kv, Pool, Sharing};
use clap::Subcommand;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

#[derive(Subcommand)]
pub enum Bench {
    /// Allocate+free of one 2 MiB object, per call (label `local` on the
    /// manager's host, `remote` elsewhere; `call_ns`, and
    /// `noclear_call_ns` without the time this host spent clearing the
    /// section, from sysfs `clear_ns`), then a no-op ioctl (`noop-ioctl`).
    AllocFree {
        #[arg(long, default_value_t = 3)]
        seconds: u64,
    },
    /// Page-fault throughput of a fresh mapping, touched once per 4 KiB:
    /// a beluga object, or a device-dax device (`--devdax`).
    Fault {
        #[arg(long)]
        devdax: Option<PathBuf>,
        #[arg(long, default_value_t = 64)]
        mib: u64,
        #[arg(long, default_value_t = 3)]
        seconds: u64,
        #[arg(long)]
        label: String,
    },
    /// KV block store: put then get throughput for each block size and
    /// checksum, set against the raw bandwidth of the same mapping. Prints
    /// the raw series first (label `raw`: 8-byte volatile stores of a
    /// constant to every word of 1 MiB, then each line written back; each
    /// line invalidated, then every word loaded: the method of
    /// `daxio bench`, i.e. of benchmark 10_pool_throughput), then `copy`
    /// (bulk `Mapping::write`/`read` in 1 MiB copies: what a copy costs over
    /// raw), then one series per block size and checksum (`kv-16k-crc32`,
    /// `kv-16k-none`, ...). Each memory's metrics carry its name
    /// (`ivshmem_put_bytes_per_s`, `cxl_get_bytes_per_s`, ...), so the
    /// harness's ratio to the anchor is over raw on the same memory. Raw is
    /// measured again before every row (the raw line gives the median);
    /// each row also carries its ratios to the raw measured just before it
    /// (`..._of_raw`), which drift in the emulator's speed does not skew.
    Kv {
        /// The memories, in order: `anon` (shared anonymous memory; runs
        /// anywhere), `ivshmem` (the BAR, from 8 MiB), `cxl` (a beluga
        /// object in the pool).
        #[arg(long = "on", value_delimiter = ',', required = true)]
        on: Vec<Memory>,
        /// Block sizes in bytes.
        #[arg(long, value_delimiter = ',', default_value = "4096,16384,262144")]
        blocks: Vec<usize>,
        /// The stores' checksums (`crc32`, `none`).
        #[arg(long, value_delimiter = ',', default_value = "crc32,none")]
        checksums: Vec<KvChecksum>,
        /// Size of the store (and of the raw copies' range) in MiB.
        #[arg(long, default_value_t = 16)]
        mib: u64,
        /// Seconds per measurement (raw write, raw read, each put and get).
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
    },
    /// Bulk copy bandwidth of shared anonymous memory, `--block` bytes
    /// per copy over `--mib` MiB: the first version's byte-at-a-time copy
    /// with a clflush per line (the anchor), then every copy path this CPU
    /// supports (the one mappings use first), then plain `memcpy` without cache
    /// maintenance (what the flushes cost). Host-runnable.
    Copy {
        #[arg(long, default_value_t = 16384)]
        block: usize,
        #[arg(long, default_value_t = 64)]
        mib: u64,
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
    },
    /// Checksum throughput on one block: the first version's bitwise
    /// CRC-32 (the anchor), crc32fast (the KV checksum now), the pool
    /// core's bitwise CRC32C, and two candidates not chosen: the `crc32c`
    /// crate (SSE4.2 `crc32`) and xxHash64. Host-runnable.
    Crc {
        #[arg(long, default_value_t = 16384)]
        block: usize,
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
    },
    /// The server side of `rpc-client`, until `--seconds` pass.
    RpcServer {
        #[arg(long)]
        transport: Transport,
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Round trips at a queue depth; prints latency percentiles.
    RpcClient {
        #[arg(long)]
        transport: Transport,
        #[arg(long)]
        depth: usize,
        #[arg(long, default_value_t = 3)]
        seconds: u64,
        /// Server address (tcp).
        #[arg(long, default_value = "10.0.0.1:7000")]
        server: String,
        #[arg(long)]
        label: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Memory {
    /// Shared anonymous memory of this process.
    Anon,
    /// The ivshmem BAR (RAM-backed memory shared between the VMs).
    Ivshmem,
    /// A beluga object in the CXL pool.
    Cxl,
}

impl Memory {
    fn name(self) -> &'static str {
        match self {
            Memory::Anon => "anon",
            Memory::Ivshmem => "ivshmem",
            Memory::Cxl => "cxl",
        }
    }
}

/// A KV store's checksum, as `bench kv --checksums` names it.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum KvChecksum {
    Crc32,
    None,
}

impl From<KvChecksum> for kv::Checksum {
    fn from(c: KvChecksum) -> kv::Checksum {
        match c {
            KvChecksum::Crc32 => kv::Checksum::Crc32,
            KvChecksum::None => kv::Checksum::None,
        }
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Transport {
    /// CXL-RPC in a shared beluga object.
    Pool,
    /// CXL-RPC in the ivshmem BAR (RAM-backed shared memory).
    Ivshmem,
    /// Request/response over TCP (the anchor).
    Tcp,
}

const MSG: usize = 64;
const SLOTS: usize = 32;
const RPC_OBJECT: &str = "bench.rpc";

fn rate(n: u64, elapsed: Duration) -> f64 {
    n as f64 / elapsed.as_secs_f64()
}

/// Bytes per second of `op` (which returns the bytes it moved), run
/// repeatedly for `seconds`, at least once.
fn throughput(seconds: f64, mut op: impl FnMut(u64) -> Result<u64>) -> Result<f64> {
    let span = Duration::from_secs_f64(seconds);
    let (mut bytes, mut i, start) = (0u64, 0u64, Instant::now());
    loop {
        bytes += op(i)?;
        i += 1;
        if start.elapsed() >= span {
            return Ok(rate(bytes, start.elapsed()));
        }
    }
}

/// A block's contents (not constant, so a stuck copy would show).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 + 7) as u8).collect()
}

fn size_label(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}m", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}k", b >> 10),
        b => format!("{b}"),
    }
}

pub fn run(dev: Option<PathBuf>, bench: Bench) -> Result<()> {
    let open_pool = || -> Result<Pool> {
        let dev = match &dev {
            Some(d) => d.clone(),
            None => Pool::devices()?
                .into_iter()
                .next()
                .context("no /dev/beluga*")?,
        };
        let pool = Pool::open(&dev)?;
        pool.wait_ready()?;
        Ok(pool)
    };
    match bench {
        Bench::AllocFree { seconds } => {
            let pool = open_pool()?;
            let span = Duration::from_secs(seconds);
            let clear_before = pool.counter("clear_ns")?;
            let (mut n, start, mut free_ns) = (0u64, Instant::now(), 0u128);
            while start.elapsed() < span {
                let h = pool.alloc(2 * MIB, None, Sharing::Private, 0o600)?;
                let t = Instant::now();
                pool.free(&h)?;
                free_ns += t.elapsed().as_nanos();
                n += 1;
            }
            let elapsed = start.elapsed();
            let clear_ns = pool.counter("clear_ns")?.saturating_sub(clear_before) as f64;
            let calls = 2.0 * n as f64;
            let alloc_ns = elapsed.as_nanos() as f64 - free_ns as f64 - clear_ns;
            let me = pool.info()?;
            let label = if me.manager == me.host_index {
                "local"
            } else {
                "remote"
            };
            println!(
                "BENCH {{\"label\":\"{label}\",\"calls_per_s\":{:.1},\"call_ns\":{:.0},\"noclear_call_ns\":{:.0},\"noclear_alloc_ns\":{:.0},\"free_ns\":{:.0}}}",
                calls / elapsed.as_secs_f64(),
                elapsed.as_nanos() as f64 / calls,
                (elapsed.as_nanos() as f64 - clear_ns) / calls,
                alloc_ns / n as f64,
                free_ns as f64 / n as f64
            );
            let (mut n, start) = (0u64, Instant::now());
            while start.elapsed() < span {
                pool.wait_ready()?;
                n += 1;
            }
            let noop = rate(n, start.elapsed());
            println!(
                "BENCH {{\"label\":\"noop-ioctl\",\"calls_per_s\":{noop:.1},\"call_ns\":{:.0}}}",
                1e9 / noop
            );
        }
        Bench::Fault {
            devdax,
            mib,
            seconds,
            label,
        } => {
            let len = (mib * MIB) as usize;
            let pool = if devdax.is_none() {
                Some(open_pool()?)
            } else {
                None
            };
            let object = match &pool {
                Some(p) => Some(p.alloc(mib * MIB, None, Sharing::Private, 0o600)?),
                None => None,
            };
            let (mut bytes, mut rounds, start) = (0u64, 0u64, Instant::now());
            while start.elapsed() < Duration::from_secs(seconds) {
                let m = match (&devdax, &pool, &object) {
                    (Some(path), _, _) => beluga::Mapping::map_file(path, 0, len)?,
                    (None, Some(p), Some(h)) => p.map(h)?,
                    _ => bail!("nothing to map"),
                };
                let mut b = [0u8; 1];
                for page in (0..len).step_by(4096) {
                    m.read(page, &mut b)?;
                }
                bytes += len as u64;
                rounds += 1;
            }
            let elapsed = start.elapsed();
            println!(
                "BENCH {{\"label\":\"{label}\",\"mapped_bytes_per_s\":{:.0},\"map_touch_unmap_ns\":{:.0}}}",
                rate(bytes, elapsed),
                elapsed.as_nanos() as f64 / rounds as f64
            );
            if let (Some(p), Some(h)) = (&pool, &object) {
                p.free(h)?;
            }
        }
        Bench::Kv {
            on,
            blocks,
            checksums,
            mib,
            seconds,
        } => {
            // Series (raw, copy, then each block size and checksum) of
            // (metric, value) pairs.
            let mut series: Vec<(String, Vec<(String, f64)>)> =
                vec![("raw".into(), Vec::new()), ("copy".into(), Vec::new())];
            let mut stores = Vec::new();
            for &b in &blocks {
                for &c in &checksums {
                    let checksum = kv::Checksum::from(c);
                    series.push((
                        format!("kv-{}-{}", size_label(b), checksum.name()),
                        Vec::new(),
                    ));
                    stores.push((b, checksum));
                }
            }
            let mut copy = String::new();
            for memory in on {
                let len = (mib * MIB) as usize;
                let (pool, object, mem) = match memory {
                    Memory::Anon => (None, None, beluga::Mapping::anonymous(len)?),
                    Memory::Ivshmem => {
                        let mem =
                            beluga::Mapping::map_file(beluga::ivshmem_pool_path()?, 8 * MIB, len)?;
                        (None, None, mem)
                    }
                    Memory::Cxl => {
                        let pool = open_pool()?;
                        let h = pool.alloc(mib * MIB, None, Sharing::Private, 0o600)?;
                        let mem = pool.map(&h)?;
                        (Some(pool), Some(h), mem)
                    }
                };
                copy = mem.copy_path().name();
                let name = memory.name();
                // Raw is measured again just before each row, and the row's
                // ratios are to that: the emulator's speed drifts over a run.
                let mut raws = Vec::new();
                for row in 0..=stores.len() {
                    let (raw_put, raw_get) = raw_bandwidth(&mem, seconds / 2.0)?;
                    raws.push((raw_put, raw_get));
                    let (put, get) = match row.checked_sub(1) {
                        None => copy_bandwidth(&mem, seconds)?,
                        Some(i) => kv_bandwidth(&mem, stores[i].0, stores[i].1, seconds)?,
                    };
                    let metrics = &mut series[row + 1].1;
                    metrics.push((format!("{name}_put_bytes_per_s"), put));
                    metrics.push((format!("{name}_get_bytes_per_s"), get));
                    metrics.push((format!("{name}_put_of_raw"), put / raw_put));
                    metrics.push((format!("{name}_get_of_raw"), get / raw_get));
                }
                let median = |pick: fn(&(f64, f64)) -> f64| {
                    let mut v: Vec<f64> = raws.iter().map(pick).collect();
                    v.sort_by(f64::total_cmp);
                    v[v.len() / 2]
                };
                series[0]
                    .1
                    .push((format!("{name}_put_bytes_per_s"), median(|r| r.0)));
                series[0]
                    .1
                    .push((format!("{name}_get_bytes_per_s"), median(|r| r.1)));
                drop(mem);
                if let (Some(p), Some(h)) = (&pool, &object) {
                    p.free(h)?;
                }
            }
            for line in kv_lines(&copy, &series) {
                println!("{line}");
            }
        }
        Bench::Copy {
            block,
            mib,
            seconds,
        } => {
            let len = (mib * MIB) as usize;
            let mut mem = beluga::Mapping::anonymous(len)?;
            if block == 0 || block > len {
                bail!("--block must be 1..={len}");
            }
            let chunks = (len / block) as u64;
            let data = pattern(block);
            let mut out = vec![0u8; block];
            let line = |label: &str, write: f64, read: f64| {
                println!(
                    "BENCH {{\"label\":\"{label}\",\"block\":{block},\"write_bytes_per_s\":{write:.0},\"read_bytes_per_s\":{read:.0}}}"
                )
            };
            let at = |i: u64| (i % chunks) as usize * block;
            let write = throughput(seconds, |i| {
                old_copy::write(&mem, at(i), &data);
                Ok(block as u64)
            })?;
            let read = throughput(seconds, |i| {
                old_copy::read(&mem, at(i), &mut out);
                Ok(block as u64)
            })?;
            line("bytewise-clflush", write, read);
            for path in beluga::CopyPath::all_supported() {
                mem.set_copy_path(path)?;
                let write = throughput(seconds, |i| {
                    mem.write(at(i), &data)?;
                    Ok(block as u64)
                })?;
                let read = throughput(seconds, |i| {
                    mem.read(at(i), &mut out)?;
                    Ok(block as u64)
                })?;
                line(&path.name(), write, read);
            }
            let write = throughput(seconds, |i| {
                old_copy::memcpy_in(&mem, at(i), &data);
                Ok(block as u64)
            })?;
            let read = throughput(seconds, |i| {
                old_copy::memcpy_out(&mem, at(i), &mut out);
                Ok(block as u64)
            })?;
            line("memcpy-no-flush", write, read);
        }
        Bench::Crc { block, seconds } => {
            let data = pattern(block);
            type Checksum = fn(&[u8]) -> u32;
            let sums: [(&str, Checksum); 5] = [
                ("bitwise-crc32", old_copy::bitwise_crc32),
                ("crc32fast", kv::crc32),
                ("pool-crc32c", beluga_pool::checksum::crc32c),
                ("crc32c-sse42", crc32c::crc32c),
                ("xxh64", |d| xxhash_rust::xxh64::xxh64(d, 0) as u32),
            ];
            for (label, sum) in sums {
                let bytes_per_s = throughput(seconds, |_| {
                    std::hint::black_box(sum(std::hint::black_box(&data)));
                    Ok(block as u64)
                })?;
                println!(
                    "BENCH {{\"label\":\"{label}\",\"block\":{block},\"bytes_per_s\":{bytes_per_s:.0},\"block_ns\":{:.0}}}",
                    block as f64 / bytes_per_s * 1e9
                );
            }
        }
        Bench::RpcServer { transport, seconds } => rpc_server(open_pool, transport, seconds)?,
        Bench::RpcClient {
            transport,
            depth,
            seconds,
            server,
            label,
        } => {
            let samples = match transport {
                Transport::Tcp => tcp_client(&server, depth, seconds)?,
                Transport::Pool => {
                    let pool = open_pool()?;
                    let h = wait_object(&pool, RPC_OBJECT)?;
                    shm_client(pool.map(&h)?, depth, seconds)?
                }
                Transport::Ivshmem => shm_client(ivshmem_channel()?, depth, seconds)?,
            };
            report(&label, samples, seconds)?;
        }
    }
    Ok(())
}

/// The `BENCH` lines of `bench kv`: one per series, the label first,
/// byte rates rounded to integers, ratios (`_of_raw`) to three places.
fn kv_lines(copy: &str, series: &[(String, Vec<(String, f64)>)]) -> Vec<String> {
    series
        .iter()
        .map(|(label, metrics)| {
            let mut line = format!("BENCH {{\"label\":\"{label}\",\"copy\":\"{copy}\"");
            for (metric, value) in metrics {
                if metric.ends_with("_of_raw") {
                    line += &format!(",\"{metric}\":{value:.3}");
                } else {
                    line += &format!(",\"{metric}\":{value:.0}");
                }
            }
            line + "}"
        })
        .collect()
}

/// Write then read bandwidth of the mapping in 1 MiB ranges by the method
/// of `daxio bench` (benchmark 10_pool_throughput), with the mapping's
/// flush instructions (`daxio` uses `clflush`, which real CPUs run one line
/// at a time): 8-byte volatile stores of a constant, then the lines written
/// back; the lines invalidated, then 8-byte volatile loads. The anchor of
/// `bench kv`: the memory's bandwidth with nothing to copy.
fn raw_bandwidth(mem: &beluga::Mapping, seconds: f64) -> Result<(f64, f64)> {
    let chunk = mem.len().min(MIB as usize);
    let chunks = (mem.len() / chunk) as u64;
    let words = chunk / 8;
    let offset = |i: u64| (i % chunks) as usize * chunk;
    let put = throughput(seconds, |i| {
        let base = mem.as_ptr().wrapping_add(offset(i)).cast::<u64>();
        for w in 0..words {
            // SAFETY: word `w` of chunk `i % chunks` lies in the mapping,
            // 8-byte aligned (mappings are page aligned); no reference
            // covers it.
            unsafe { base.add(w).write_volatile(i) };
        }
        mem.write_back(offset(i), chunk)?;
        Ok(chunk as u64)
    })?;
    let get = throughput(seconds, |i| {
        mem.invalidate(offset(i), chunk)?;
        let base = mem.as_ptr().wrapping_add(offset(i)).cast::<u64>();
        let mut sum = 0u64;
        for w in 0..words {
            // SAFETY: as above.
            sum = sum.wrapping_add(unsafe { base.add(w).read_volatile() });
        }
        std::hint::black_box(sum);
        Ok(chunk as u64)
    })?;
    Ok((put, get))
}

/// Bulk write then read bandwidth of the whole mapping through
/// `Mapping::write`/`read`, 1 MiB per copy: what copying adds to raw.
fn copy_bandwidth(mem: &beluga::Mapping, seconds: f64) -> Result<(f64, f64)> {
    let chunk = mem.len().min(MIB as usize);
    let chunks = (mem.len() / chunk) as u64;
    let data = pattern(chunk);
    let mut out = vec![0u8; chunk];
    let put = throughput(seconds, |i| {
        mem.write((i % chunks) as usize * chunk, &data)?;
        Ok(chunk as u64)
    })?;
    let get = throughput(seconds, |i| {
        mem.read((i % chunks) as usize * chunk, &mut out)?;
        Ok(chunk as u64)
    })?;
    Ok((put, get))
}

/// Put then get bandwidth of a KV store of `block`-byte blocks filling
/// the mapping: puts cycle through keys for half its slots (a full table
/// would measure linear probing's long chains, each probe a flag read
/// from memory, rather than the copies), gets through the keys the puts
/// reached.
fn kv_bandwidth(
    mem: &beluga::Mapping,
    block: usize,
    checksum: kv::Checksum,
    seconds: f64,
) -> Result<(f64, f64)> {
    let store = kv::KvStore::create_with(mem, block, checksum)?;
    let slots = (store.geometry().slots as u64).div_ceil(2);
    let data = pattern(block);
    let mut puts = 0;
    let put = throughput(seconds, |i| {
        store.put(i % slots, &data)?;
        puts = i + 1;
        Ok(block as u64)
    })?;
    let written = puts.min(slots);
    let mut out = vec![0u8; block];
    let get = throughput(seconds, |i| {
        let got = store.get_into(i % written, &mut out)?;
        Ok(got.context("block missing")? as u64)
    })?;
    Ok((put, get))
}

/// The first version's copies and checksum, for `bench copy` and `bench
/// crc` to compare against.
mod old_copy {
    use beluga::Mapping;

    fn check(mem: &Mapping, offset: usize, len: usize) {
        assert!(offset.checked_add(len).is_some_and(|end| end <= mem.len()));
    }

    /// The first version's flush: mfence, clflush every line, mfence.
    fn flush_lines(ptr: *const u8, len: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_clflush, _mm_mfence};
            let end = ptr as usize + len;
            let mut line = ptr as usize & !63;
            // SAFETY: fences have no preconditions.
            unsafe { _mm_mfence() };
            while line < end {
                // SAFETY: the line overlaps the caller's range in a live
                // mapping; clflush changes no contents.
                unsafe { _mm_clflush(line as *const u8) };
                line += 64;
            }
            // SAFETY: as above.
            unsafe { _mm_mfence() };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (ptr, len);
    }

    /// One volatile byte store at a time, then the flush.
    pub fn write(mem: &Mapping, offset: usize, data: &[u8]) {
        check(mem, offset, data.len());
        let base = mem.as_ptr().wrapping_add(offset);
        for (i, &b) in data.iter().enumerate() {
            // SAFETY: inside the mapping (checked), which no reference
            // covers.
            unsafe { base.add(i).write_volatile(b) };
        }
        flush_lines(base, data.len());
    }

    /// The flush, then one volatile byte load at a time.
    pub fn read(mem: &Mapping, offset: usize, out: &mut [u8]) {
        check(mem, offset, out.len());
        let base = mem.as_ptr().wrapping_add(offset);
        flush_lines(base, out.len());
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: as in `write`.
            *b = unsafe { base.add(i).read_volatile() };
        }
    }

    /// `memcpy` into the mapping, no cache maintenance.
    pub fn memcpy_in(mem: &Mapping, offset: usize, data: &[u8]) {
        check(mem, offset, data.len());
        // SAFETY: inside the mapping (checked), which no reference covers
        // and no other thread of this process writes.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), mem.as_ptr().add(offset), data.len())
        };
    }

    /// `memcpy` out of the mapping, no cache maintenance.
    pub fn memcpy_out(mem: &Mapping, offset: usize, out: &mut [u8]) {
        check(mem, offset, out.len());
        // SAFETY: as in `memcpy_in`.
        unsafe {
            std::ptr::copy_nonoverlapping(mem.as_ptr().add(offset), out.as_mut_ptr(), out.len())
        };
    }

    /// CRC-32 (IEEE), bitwise: the first version's KV checksum.
    pub fn bitwise_crc32(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in data {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
            }
        }
        !crc
    }
}

/// The channel lives in the second MiB of the ivshmem BAR (the first is
/// the scenarios' handshake area).
fn ivshmem_channel() -> Result<beluga::Mapping> {
    let path = beluga::ivshmem_pool_path()?;
    Ok(beluga::Mapping::map_file(
        &path,
        MIB,
        rpc::channel_bytes(SLOTS, MSG),
    )?)
}

fn wait_object(pool: &Pool, name: &str) -> Result<beluga::abi::ObjectHandle> {
    let start = Instant::now();
    loop {
        match pool.open_object(name) {
            Ok(h) => return Ok(h),
            Err(_) if start.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => return Err(e).context(format!("open {name}")),
        }
    }
}

fn echo(req: &[u8], resp: &mut [u8]) -> usize {
    resp[..req.len()].copy_from_slice(req);
    req.len()
}

fn rpc_server(
    open_pool: impl Fn() -> Result<Pool>,
    transport: Transport,
    seconds: u64,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    match transport {
        Transport::Tcp => {
            let listener = TcpListener::bind("0.0.0.0:7000")?;
            listener.set_nonblocking(true)?;
            while Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        conn.set_nonblocking(false)?;
                        conn.set_nodelay(true)?;
                        conn.set_read_timeout(Some(Duration::from_secs(1)))?;
                        let mut buf = [0u8; MSG];
                        // The client hangs up when it is done: any error
                        // ends this connection, not the server.
                        while Instant::now() < deadline {
                            if conn.read_exact(&mut buf).is_err() || conn.write_all(&buf).is_err() {
                                break;
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
        Transport::Pool => {
            let pool = open_pool()?;
            let bytes = rpc::channel_bytes(SLOTS, MSG) as u64;
            let h = pool.alloc(bytes, Some(RPC_OBJECT), Sharing::Shared, 0o666)?;
            let mem = pool.map(&h)?;
            rpc::create(&mem, SLOTS, MSG)?;
            serve(&mem, deadline)?;
            drop(mem);
            pool.free(&h)?;
        }
        Transport::Ivshmem => {
            let mem = ivshmem_channel()?;
            rpc::create(&mem, SLOTS, MSG)?;
            serve(&mem, deadline)?;
        }
    }
    Ok(())
}

fn serve(mem: &beluga::Mapping, deadline: Instant) -> Result<()> {
    let mut server = rpc::Server::open(mem)?;
    while Instant::now() < deadline {
        if server.poll(&mut echo)? == 0 {
            std::hint::spin_loop();
        }
    }
    Ok(())
}

fn shm_client<M: Shared>(mem: M, depth: usize, seconds: u64) -> Result<Vec<u64>> {
    // The server creates the channel: wait for it.
    let start = Instant::now();
    let mut client = loop {
        match rpc::Client::open(&mem) {
            Ok(c) => break c,
            Err(_) if start.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(e.into()),
        }
    };
    let depth = depth.min(client.slots()).max(1);
    let mut samples = Vec::new();
    let mut out = [0u8; MSG];
    let payload = [0xa5u8; MSG];
    let mut inflight: Vec<(u64, Instant)> = (0..depth)
        .map(|s| Ok((client.submit(s, &payload)?, Instant::now())))
        .collect::<std::io::Result<_>>()?;
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        for (slot, (seq, sent)) in inflight.iter_mut().enumerate() {
            if client.poll(slot, *seq, &mut out)?.is_some() {
                samples.push(sent.elapsed().as_nanos() as u64);
                *seq = client.submit(slot, &payload)?;
                *sent = Instant::now();
            }
        }
    }
    Ok(samples)
}

fn tcp_client(server: &str, depth: usize, seconds: u64) -> Result<Vec<u64>> {
    let start = Instant::now();
    let mut conn = loop {
        match TcpStream::connect(server) {
            Ok(c) => break c,
            Err(_) if start.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) => return Err(e.into()),
        }
    };
    conn.set_nodelay(true)?;
    let payload = [0xa5u8; MSG];
    let mut sent = std::collections::VecDeque::new();
    for _ in 0..depth.max(1) {
        conn.write_all(&payload)?;
        sent.push_back(Instant::now());
    }
    let mut samples = Vec::new();
    let mut buf = [0u8; MSG];
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        conn.read_exact(&mut buf)?;
        let t = sent.pop_front().context("response without a request")?;
        samples.push(t.elapsed().as_nanos() as u64);
        conn.write_all(&payload)?;
        sent.push_back(Instant::now());
    }
    Ok(samples)
}

fn report(label: &str, mut samples: Vec<u64>, seconds: u64) -> Result<()> {
    if samples.is_empty() {
        bail!("{label}: no call completed");
    }
    samples.sort_unstable();
    let pct = |p: f64| samples[((samples.len() - 1) as f64 * p) as usize];
    println!(
        "BENCH {{\"label\":\"{label}\",\"calls_per_s\":{:.1},\"p50_ns\":{},\"p99_ns\":{}}}",
        samples.len() as f64 / seconds as f64,
        pct(0.50),
        pct(0.99)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines parse as the harness parses them (xtask/src/bench.rs):
    /// JSON after `BENCH `, the rates metrics (`_per_s`), the ratios not.
    #[test]
    fn kv_lines_are_bench_json() {
        let series = vec![
            (
                "raw".to_string(),
                vec![("cxl_put_bytes_per_s".to_string(), 2e9)],
            ),
            (
                "kv-16k".to_string(),
                vec![
                    ("cxl_put_bytes_per_s".to_string(), 1.5e9),
                    ("cxl_put_of_raw".to_string(), 0.75),
                ],
            ),
        ];
        let lines = kv_lines("nt+clwb/clflushopt", &series);
        assert_eq!(lines.len(), 2);
        let kv: serde_json::Value =
            serde_json::from_str(lines[1].strip_prefix("BENCH ").unwrap()).unwrap();
        assert_eq!(kv["label"], "kv-16k");
        assert_eq!(kv["cxl_put_bytes_per_s"].as_f64(), Some(1.5e9));
        assert_eq!(kv["cxl_put_of_raw"].as_f64(), Some(0.75));
        assert!(lines[0].starts_with("BENCH {\"label\":\"raw\""));
        assert_eq!(size_label(4096), "4k");
        assert_eq!(size_label(262144), "256k");
        assert_eq!(size_label(1 << 20), "1m");
        assert_eq!(size_label(1000), "1000");
    }
}
