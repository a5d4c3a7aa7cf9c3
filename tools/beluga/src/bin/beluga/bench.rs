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
    /// Calls per second of a no-op ioctl (the anchor) and of allocate+free.
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
    /// KV block store: put then get throughput, in a beluga object or
    /// (`--ivshmem`) in RAM-backed shared memory.
    Kv {
        #[arg(long, default_value_t = 16384)]
        block: usize,
        #[arg(long, default_value_t = 3)]
        seconds: u64,
        #[arg(long)]
        ivshmem: bool,
        #[arg(long)]
        label: String,
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
            let (mut n, start) = (0u64, Instant::now());
            while start.elapsed() < span {
                let h = pool.alloc(2 * MIB, None, Sharing::Private, 0o600)?;
                pool.free(&h)?;
                n += 1;
            }
            let pairs = rate(n, start.elapsed());
            let me = pool.info()?;
            let label = if me.manager == me.host_index {
                "alloc+free"
            } else {
                "alloc+free-remote"
            };
            println!(
                "BENCH {{\"label\":\"{label}\",\"calls_per_s\":{:.1},\"call_ns\":{:.0}}}",
                pairs * 2.0,
                1e9 / (pairs * 2.0)
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
            block,
            seconds,
            ivshmem,
            label,
        } => {
            const STORE: u64 = 16 * MIB;
            let (pool, object, mem) = if ivshmem {
                let mem = beluga::Mapping::map_file(ivshmem_path()?, 8 * MIB, STORE as usize)?;
                (None, None, mem)
            } else {
                let pool = open_pool()?;
                let h = pool.alloc(STORE, None, Sharing::Private, 0o600)?;
                let mem = pool.map(&h)?;
                (Some(pool), Some(h), mem)
            };
            let store = kv::KvStore::create(mem, block)?;
            let slots = store.geometry().slots as u64;
            let data = vec![0x5au8; block];
            let span = Duration::from_secs(seconds);
            let (mut puts, start) = (0u64, Instant::now());
            while start.elapsed() < span {
                store.put(puts % slots, &data)?;
                puts += 1;
            }
            let put_rate = rate(puts, start.elapsed());
            let (mut gets, start) = (0u64, Instant::now());
            // Only the keys the put phase reached.
            let written = puts.min(slots);
            while start.elapsed() < span {
                store.get(gets % written)?.context("block missing")?;
                gets += 1;
            }
            let get_rate = rate(gets, start.elapsed());
            println!(
                "BENCH {{\"label\":\"{label}\",\"put_blocks_per_s\":{put_rate:.1},\"get_blocks_per_s\":{get_rate:.1},\"put_bytes_per_s\":{:.0},\"get_bytes_per_s\":{:.0}}}",
                put_rate * block as f64,
                get_rate * block as f64
            );
            drop(store);
            if let (Some(p), Some(h)) = (&pool, &object) {
                p.free(h)?;
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

/// The channel lives in the second MiB of the ivshmem BAR (the first is
/// the scenarios' handshake area).
fn ivshmem_channel() -> Result<beluga::Mapping> {
    let path = ivshmem_path()?;
    Ok(beluga::Mapping::map_file(
        &path,
        MIB,
        rpc::channel_bytes(SLOTS, MSG),
    )?)
}

fn ivshmem_path() -> Result<PathBuf> {
    for entry in std::fs::read_dir("/sys/bus/pci/devices")? {
        let dir = entry?.path();
        let id = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        if id("vendor").trim() == "0x1af4" && id("device").trim() == "0x1110" {
            return Ok(dir.join("resource2"));
        }
    }
    bail!("no ivshmem device")
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
