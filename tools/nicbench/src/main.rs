//! `nicbench`: what busybox lacks for testing a network interface, as one
//! static binary for the guest.
//!
//! - `serve` answers all of the below on one port (TCP and UDP).
//! - `tcp` sends bytes over TCP; the server hashes what it received and
//!   the client checks the hash against its own (exit 1 on mismatch).
//! - `udp-rr` measures request/response latency (p50, p99).
//! - `udp-stream` sends as fast as it can and asks the server how much
//!   arrived.
//! - `mptcp-serve` and `mptcp`: the `tcp` transfer over MPTCP, with the
//!   bytes each subflow carried (`mptcp.rs`).
//! - `kvs-serve`, `kvs-load`, `kvs-get`, `kvs-put`, `kvs-keys`: the
//!   key-value offload's bench (issue #29): a user-space server of its
//!   protocol (the baseline) and a checking load generator (`kvs.rs`).
//!
//! Results are one JSON object per line with `--json`, for the bench.

use anyhow::{bail, ensure, Context, Result};
use clap::{Parser, Subcommand};
use serde::Serialize;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

mod kvs;
mod mptcp;
mod mptcp_abi;

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Print results as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Answer TCP transfers and UDP requests on `port` until killed.
    Serve {
        #[arg(long, default_value_t = 7001)]
        port: u16,
        /// Read nothing of a TCP transfer until this file exists: what
        /// arrived stays queued in the socket (a test of the buffers the
        /// interface lent the stack).
        #[arg(long)]
        hold_until: Option<std::path::PathBuf>,
    },
    /// Send `bytes` over TCP; check the server's hash of them.
    Tcp {
        #[arg(long)]
        to: SocketAddr,
        #[arg(long, default_value_t = 1 << 20)]
        bytes: u64,
        /// Seed of the bytes sent.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How long to wait for the server's answer, seconds (longer for
        /// a server that holds transfers, `serve --hold-until`, or a slow
        /// kernel); also how long a write may wait for room, at least 30.
        #[arg(long, default_value_t = 30)]
        answer_secs: u64,
    },
    /// Print the FNV-1a hash of the `bytes` bytes `tcp --seed` sends (to
    /// check on the server's side what `serve` prints).
    Hash {
        #[arg(long)]
        bytes: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Answer `tcp` and `mptcp` transfers on an MPTCP socket on `port`
    /// until killed.
    MptcpServe {
        #[arg(long, default_value_t = 7001)]
        port: u16,
    },
    /// Send `bytes` over MPTCP like `tcp`; report each subflow's bytes
    /// (sent, acked), addresses and interface. Fails if the connection
    /// fell back to plain TCP, unless --allow-fallback.
    Mptcp {
        #[arg(long)]
        to: std::net::SocketAddrV4,
        #[arg(long, default_value_t = 1 << 20)]
        bytes: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also sample the subflows every this many milliseconds.
        #[arg(long)]
        report_ms: Option<u64>,
        #[arg(long)]
        allow_fallback: bool,
        #[arg(long, default_value_t = 30)]
        answer_secs: u64,
    },
    /// UDP request/response round trips of `size` bytes.
    UdpRr {
        #[arg(long)]
        to: SocketAddr,
        #[arg(long, default_value_t = 64)]
        size: usize,
        #[arg(long, default_value_t = 1000)]
        count: u32,
    },
    /// UDP datagrams of `size` bytes for `secs` seconds.
    UdpStream {
        #[arg(long)]
        to: SocketAddr,
        #[arg(long, default_value_t = 64)]
        size: usize,
        #[arg(long, default_value_t = 2.0)]
        secs: f64,
    },
    /// Serve the key-value offload's UDP protocol from user space (the
    /// bench's baseline) until killed.
    KvsServe {
        #[arg(long, default_value_t = cxlnic_ring::kvs::DEFAULT_PORT)]
        port: u16,
        /// Preload keys k0..k<N-1> (values as `kvs-keys` prints them).
        #[arg(long, default_value_t = 0)]
        keys: u32,
        #[arg(long, default_value_t = 32)]
        value_bytes: usize,
    },
    /// Requests to a key-value server, one at a time: GET/PUT latency,
    /// statuses, and every answer checked (exit 1 on a wrong one).
    KvsLoad {
        #[arg(long)]
        server: SocketAddr,
        /// Keys k0..k<N-1>, preloaded on the server.
        #[arg(long)]
        keys: u32,
        #[arg(long, value_enum, default_value_t = kvs::Dist::Zipf)]
        dist: kvs::Dist,
        /// Zipf's skew.
        #[arg(long, default_value_t = 0.99)]
        theta: f64,
        /// Share of PUTs, percent.
        #[arg(long, default_value_t = 0)]
        put_pct: u8,
        #[arg(long, default_value_t = 1000)]
        requests: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How long to wait for each answer.
        #[arg(long, default_value_t = 500)]
        timeout_ms: u64,
        /// Bytes of the values written (and preloaded).
        #[arg(long, default_value_t = 32)]
        value_bytes: usize,
        /// Others (earlier runs) may have written the keys: a key this run
        /// has not written may hold any value written for it, not only
        /// the preloaded one.
        #[arg(long)]
        shared: bool,
    },
    /// One GET.
    KvsGet {
        #[arg(long)]
        server: SocketAddr,
        key: String,
        #[arg(long, default_value_t = 1000)]
        timeout_ms: u64,
    },
    /// One PUT (of a key the server has).
    KvsPut {
        #[arg(long)]
        server: SocketAddr,
        key: String,
        value: String,
        #[arg(long, default_value_t = 1000)]
        timeout_ms: u64,
    },
    /// Print the preloaded pairs, `KEY VALUE` a line (to load the
    /// offload with, `cxlnic kvs put`).
    /// One malformed request (the offload must drop it): prints whether
    /// an answer came.
    KvsRaw {
        #[arg(long)]
        server: SocketAddr,
        /// What is wrong with it.
        #[arg(long, value_enum)]
        bad: kvs::Bad,
        #[arg(long, default_value_t = 500)]
        timeout_ms: u64,
    },
    KvsKeys {
        #[arg(long)]
        keys: u32,
        #[arg(long, default_value_t = 32)]
        value_bytes: usize,
    },
}

/// UDP request kinds (first byte).
const ECHO: u8 = b'E';
const STREAM: u8 = b'S';
const QUERY: u8 = b'Q';
/// Bytes of a UDP request's header: kind, then a sequence number.
const UDP_HEADER: usize = 9;

/// FNV-1a, 64 bits: enough to tell a damaged transfer from a good one.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn update(&mut self, data: &[u8]) {
        for &b in data {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The bytes `tcp` sends: xorshift64 from `seed`.
fn fill(state: &mut u64, buf: &mut [u8]) {
    for chunk in buf.chunks_mut(8) {
        let mut x = *state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *state = x;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Serve { port, hold_until } => serve(port, hold_until),
        Cmd::Tcp {
            to,
            bytes,
            seed,
            answer_secs,
        } => report(cli.json, &tcp(to, bytes, seed, answer_secs)?),
        Cmd::Hash { bytes, seed } => {
            println!("{:016x}", expected_hash(bytes, seed));
            Ok(())
        }
        Cmd::MptcpServe { port } => mptcp::serve(port),
        Cmd::Mptcp {
            to,
            bytes,
            seed,
            report_ms,
            allow_fallback,
            answer_secs,
        } => report(
            cli.json,
            &mptcp::client(&mptcp::Args {
                to,
                bytes,
                seed,
                report_ms,
                allow_fallback,
                answer_secs,
            })?,
        ),
        Cmd::UdpRr { to, size, count } => report(cli.json, &udp_rr(to, size, count)?),
        Cmd::UdpStream { to, size, secs } => report(cli.json, &udp_stream(to, size, secs)?),
        Cmd::KvsServe {
            port,
            keys,
            value_bytes,
        } => kvs::serve(port, keys, value_bytes),
        Cmd::KvsLoad {
            server,
            keys,
            dist,
            theta,
            put_pct,
            requests,
            seed,
            timeout_ms,
            value_bytes,
            shared,
        } => {
            let r = kvs::load(&kvs::LoadArgs {
                server,
                keys,
                dist,
                theta,
                put_pct,
                requests,
                seed,
                timeout: Duration::from_millis(timeout_ms),
                value_bytes,
                shared,
            })?;
            report(cli.json, &r)?;
            ensure!(r.mismatches == 0, "{} wrong answers", r.mismatches);
            Ok(())
        }
        Cmd::KvsGet {
            server,
            key,
            timeout_ms,
        } => report(
            cli.json,
            &kvs::one(server, &key, None, Duration::from_millis(timeout_ms))?,
        ),
        Cmd::KvsPut {
            server,
            key,
            value,
            timeout_ms,
        } => report(
            cli.json,
            &kvs::one(
                server,
                &key,
                Some(&value),
                Duration::from_millis(timeout_ms),
            )?,
        ),
        Cmd::KvsRaw {
            server,
            bad,
            timeout_ms,
        } => kvs::raw(server, bad, Duration::from_millis(timeout_ms)),
        Cmd::KvsKeys { keys, value_bytes } => kvs::keys(keys, value_bytes),
    }
}

fn report<T: Serialize + std::fmt::Display>(json: bool, r: &T) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(r)?);
    } else {
        println!("{r}");
    }
    Ok(())
}

fn serve(port: u16, hold_until: Option<std::path::PathBuf>) -> Result<()> {
    let tcp = TcpListener::bind(("0.0.0.0", port)).context("TCP bind")?;
    let udp = UdpSocket::bind(("0.0.0.0", port)).context("UDP bind")?;
    std::thread::spawn(move || serve_udp(udp));
    for conn in tcp.incoming() {
        let Ok(conn) = conn else { continue };
        let hold = hold_until.clone();
        std::thread::spawn(move || {
            while hold.as_ref().is_some_and(|f| !f.exists()) {
                std::thread::sleep(Duration::from_millis(50));
            }
            if let Err(e) = serve_tcp(&conn) {
                eprintln!("nicbench: tcp: {e:#}");
            }
        });
    }
    Ok(())
}

/// One transfer: an 8-byte length, that many bytes; answered with the
/// count received and their hash.
fn serve_tcp(mut conn: &TcpStream) -> Result<()> {
    let mut len = [0u8; 8];
    conn.read_exact(&mut len)?;
    let mut left = u64::from_le_bytes(len);
    let mut hash = Fnv::new();
    let mut got = 0u64;
    let mut buf = vec![0u8; 64 << 10];
    let mut stall = Stall::default();
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = conn.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        stall.arrived(Instant::now());
        hash.update(&buf[..n]);
        got += n as u64;
        left -= n as u64;
    }
    // Said here too: the answer may have no way back (a test that takes
    // the interface away after the data arrived).
    println!(
        "nicbench serve: tcp {got} bytes, hash {:016x}, longest stall {} ms, from {} ms after the first byte; gaps of {} ms or more (start+length, ms after the first byte):{}",
        hash.0,
        stall.longest.as_millis(),
        stall.longest_from.as_millis(),
        LONG_GAP.as_millis(),
        stall.gaps_text()
    );
    let mut reply = [0u8; 16];
    reply[..8].copy_from_slice(&got.to_le_bytes());
    reply[8..].copy_from_slice(&hash.0.to_le_bytes());
    conn.write_all(&reply)?;
    Ok(())
}

/// Gaps between reads this long or longer are listed (a TBF-shaped
/// transfer's own gaps are a few ms; a lost path's are an RTO or more).
const LONG_GAP: Duration = Duration::from_millis(100);
/// At most this many are listed (the first ones).
const GAPS_MAX: usize = 16;

/// The longest time between two reads that brought data: what a failover
/// costs the application (a path lost mid-transfer stops in-order
/// delivery until its data is sent again on another); when it began,
/// after the first read; and every gap of [`LONG_GAP`] or more, to tell
/// a failover's stall from one when the path came back.
#[derive(Default)]
struct Stall {
    first: Option<Instant>,
    last: Option<Instant>,
    longest: Duration,
    longest_from: Duration,
    /// (start after the first read, length).
    gaps: Vec<(Duration, Duration)>,
}

impl Stall {
    fn arrived(&mut self, now: Instant) {
        let first = *self.first.get_or_insert(now);
        if let Some(last) = self.last {
            let gap = now.saturating_duration_since(last);
            let from = last.saturating_duration_since(first);
            if gap > self.longest {
                self.longest = gap;
                self.longest_from = from;
            }
            if gap >= LONG_GAP && self.gaps.len() < GAPS_MAX {
                self.gaps.push((from, gap));
            }
        }
        self.last = Some(now);
    }

    /// The long gaps as ` start+length` in ms each, or ` none`.
    fn gaps_text(&self) -> String {
        if self.gaps.is_empty() {
            return " none".into();
        }
        self.gaps
            .iter()
            .map(|(from, len)| format!(" {}+{}", from.as_millis(), len.as_millis()))
            .collect()
    }
}

/// The `bytes` bytes `tcp` sends from `seed`, in chunks of up to 64 KiB
/// handed to `each`; returns their hash.
fn stream(bytes: u64, seed: u64, mut each: impl FnMut(&[u8]) -> Result<()>) -> Result<u64> {
    let mut state = seed.max(1);
    let mut hash = Fnv::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut left = bytes;
    while left > 0 {
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        fill(&mut state, &mut buf[..n]);
        hash.update(&buf[..n]);
        each(&buf[..n])?;
        left -= n as u64;
    }
    Ok(hash.0)
}

/// The hash of the `bytes` bytes `tcp` sends from `seed`.
fn expected_hash(bytes: u64, seed: u64) -> u64 {
    stream(bytes, seed, |_| Ok(())).unwrap_or(0)
}

fn serve_udp(sock: UdpSocket) {
    let mut buf = vec![0u8; 65536];
    let (mut packets, mut bytes) = (0u64, 0u64);
    loop {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        match buf.first() {
            Some(&ECHO) => {
                let _ = sock.send_to(&buf[..n], from);
            }
            Some(&STREAM) => {
                packets += 1;
                bytes += n as u64;
            }
            Some(&QUERY) => {
                let mut reply = [0u8; 16];
                reply[..8].copy_from_slice(&packets.to_le_bytes());
                reply[8..].copy_from_slice(&bytes.to_le_bytes());
                let _ = sock.send_to(&reply, from);
                (packets, bytes) = (0, 0);
            }
            _ => {}
        }
    }
}

#[derive(Serialize)]
struct TcpResult {
    test: &'static str,
    bytes: u64,
    secs: f64,
    mbit_s: f64,
    hash_ok: bool,
}

impl std::fmt::Display for TcpResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tcp: {} bytes in {:.3} s, {:.1} Mbit/s, checksum {}",
            self.bytes,
            self.secs,
            self.mbit_s,
            if self.hash_ok { "matches" } else { "DIFFERS" }
        )
    }
}

fn tcp(to: SocketAddr, bytes: u64, seed: u64, answer_secs: u64) -> Result<TcpResult> {
    let mut conn = TcpStream::connect_timeout(&to, Duration::from_secs(5))
        .with_context(|| format!("connect to {to}"))?;
    conn.set_read_timeout(Some(Duration::from_secs(answer_secs.max(1))))?;
    // A sender blocked this long on a full socket is stuck: as long as
    // the answer may take, and at least 30 s.
    conn.set_write_timeout(Some(Duration::from_secs(answer_secs.max(30))))?;
    let start = Instant::now();
    conn.write_all(&bytes.to_le_bytes())?;
    let sent = stream(bytes, seed, |chunk| Ok(conn.write_all(chunk)?))?;
    let mut reply = [0u8; 16];
    conn.read_exact(&mut reply).context("the server's answer")?;
    let secs = start.elapsed().as_secs_f64();
    let got = u64::from_le_bytes(reply[..8].try_into()?);
    let theirs = u64::from_le_bytes(reply[8..].try_into()?);
    let r = TcpResult {
        test: "tcp",
        bytes: got,
        secs,
        mbit_s: got as f64 * 8.0 / secs / 1e6,
        hash_ok: got == bytes && theirs == sent,
    };
    if !r.hash_ok {
        bail!("{r} (sent {bytes} bytes)");
    }
    Ok(r)
}

#[derive(Serialize)]
struct RrResult {
    test: &'static str,
    size: usize,
    count: u32,
    lost: u32,
    p50_us: f64,
    p99_us: f64,
    mean_us: f64,
}

impl std::fmt::Display for RrResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "udp-rr {} B: {} round trips, p50 {:.1} us, p99 {:.1} us, mean {:.1} us, {} lost",
            self.size, self.count, self.p50_us, self.p99_us, self.mean_us, self.lost
        )
    }
}

fn udp_socket(to: SocketAddr, timeout: Duration) -> Result<UdpSocket> {
    let sock = UdpSocket::bind(("0.0.0.0", 0))?;
    sock.connect(to)?;
    sock.set_read_timeout(Some(timeout))?;
    Ok(sock)
}

fn udp_rr(to: SocketAddr, size: usize, count: u32) -> Result<RrResult> {
    ensure!(
        (UDP_HEADER..=65000).contains(&size),
        "size must be {UDP_HEADER}..=65000"
    );
    let sock = udp_socket(to, Duration::from_millis(500))?;
    let mut req = vec![0u8; size];
    let mut resp = vec![0u8; size + 1];
    req[0] = ECHO;
    let mut times = Vec::with_capacity(count as usize);
    let mut lost = 0;
    for seq in 0..u64::from(count) {
        req[1..UDP_HEADER].copy_from_slice(&seq.to_le_bytes());
        let start = Instant::now();
        sock.send(&req)?;
        // Skip late answers to earlier requests.
        loop {
            match sock.recv(&mut resp) {
                Ok(n) if n == size && resp[1..UDP_HEADER] == req[1..UDP_HEADER] => {
                    times.push(start.elapsed().as_secs_f64() * 1e6);
                    break;
                }
                Ok(_) => continue,
                Err(_) => {
                    lost += 1;
                    break;
                }
            }
        }
    }
    ensure!(!times.is_empty(), "no answer from {to}");
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    Ok(RrResult {
        test: "udp-rr",
        size,
        count,
        lost,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        mean_us: times.iter().sum::<f64>() / times.len() as f64,
    })
}

#[derive(Serialize)]
struct StreamResult {
    test: &'static str,
    size: usize,
    secs: f64,
    sent: u64,
    received: u64,
    received_pps: f64,
    received_mbit_s: f64,
}

impl std::fmt::Display for StreamResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "udp-stream {} B: sent {}, received {} in {:.2} s: {:.0} packets/s, {:.1} Mbit/s",
            self.size, self.sent, self.received, self.secs, self.received_pps, self.received_mbit_s
        )
    }
}

fn udp_stream(to: SocketAddr, size: usize, secs: f64) -> Result<StreamResult> {
    ensure!(
        (UDP_HEADER..=65000).contains(&size),
        "size must be {UDP_HEADER}..=65000"
    );
    let sock = udp_socket(to, Duration::from_secs(2))?;
    // Clear the server's counts (an earlier run's stragglers).
    query(&sock)?;
    let mut pkt = vec![0u8; size];
    pkt[0] = STREAM;
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        // A full socket buffer (ENOBUFS) is the sender outrunning the
        // interface: not counted as sent.
        if sock.send(&pkt).is_ok() {
            sent += 1;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    // Let the last datagrams arrive.
    std::thread::sleep(Duration::from_millis(200));
    let (received, bytes) = query(&sock)?;
    Ok(StreamResult {
        test: "udp-stream",
        size,
        secs: elapsed,
        sent,
        received,
        received_pps: received as f64 / elapsed,
        received_mbit_s: bytes as f64 * 8.0 / elapsed / 1e6,
    })
}

/// The server's counts since the last query.
fn query(sock: &UdpSocket) -> Result<(u64, u64)> {
    let mut reply = [0u8; 16];
    for _ in 0..5 {
        sock.send(&[QUERY])?;
        if let Ok(16) = sock.recv(&mut reply) {
            return Ok((
                u64::from_le_bytes(reply[..8].try_into()?),
                u64::from_le_bytes(reply[8..].try_into()?),
            ));
        }
    }
    bail!("the server did not answer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_stall_is_the_widest_gap_between_arrivals() {
        let t0 = Instant::now();
        let mut s = Stall::default();
        s.arrived(t0);
        assert_eq!(s.longest, Duration::ZERO);
        for ms in [5, 10, 250, 260, 270] {
            s.arrived(t0 + Duration::from_millis(ms));
        }
        assert_eq!(s.longest, Duration::from_millis(240));
        assert_eq!(s.longest_from, Duration::from_millis(10));
        // A shorter gap later leaves the longest and its start alone.
        s.arrived(t0 + Duration::from_millis(400));
        assert_eq!(s.longest_from, Duration::from_millis(10));
        s.arrived(t0 + Duration::from_millis(700));
        assert_eq!(
            (s.longest, s.longest_from),
            (Duration::from_millis(300), Duration::from_millis(400))
        );
        // Every gap of 100 ms or more, in order, with where it began.
        assert_eq!(s.gaps_text(), " 10+240 270+130 400+300");
        assert_eq!(Stall::default().gaps_text(), " none");
        let mut many = Stall::default();
        for i in 0..40u64 {
            many.arrived(t0 + Duration::from_millis(i * 100));
        }
        assert_eq!(many.gaps.len(), GAPS_MAX, "the list is bounded");
    }

    /// `hash` agrees with what `serve` computes over whatever pieces the
    /// socket hands it.
    #[test]
    fn the_expected_hash_is_the_served_hash() {
        let (bytes, seed) = (100_003u64, 5);
        let mut state = seed;
        let mut data = Vec::new();
        let mut left = bytes as usize;
        while left > 0 {
            let mut chunk = vec![0u8; left.min(64 << 10)];
            fill(&mut state, &mut chunk);
            left -= chunk.len();
            data.extend(chunk);
        }
        let mut served = Fnv::new();
        for piece in data.chunks(1001) {
            served.update(piece);
        }
        assert_eq!(served.0, expected_hash(bytes, seed));
        assert_ne!(expected_hash(bytes, seed), expected_hash(bytes, seed + 1));
    }
}
