//! Issue #29's key-value bench, the client and the baseline:
//!
//! - `kvs-serve`: a user-space UDP server of the offload's protocol over
//!   a `HashMap` (what a KV server on the host stack behind the same NIC
//!   costs: the stand-in for the paper's SmartNIC baseline). It takes
//!   requests through the core's own parser (`cxlnic_ring::kvs::parse`,
//!   on a frame built around the datagram) and answers with the core's
//!   own encoder (`answer_frame`, its message part), so it accepts,
//!   drops and answers exactly what the device does.
//! - `kvs-load`: one request outstanding at a time, keys `k<i>` drawn
//!   Zipf(theta) or uniform over `keys`, a share of PUTs; latency
//!   percentiles, statuses, and every answer checked.
//! - `kvs-get`, `kvs-put`: one request (the demo).
//! - `kvs-keys`: the preloaded pairs, one `KEY VALUE` a line (what the
//!   offload is loaded with, through `cxlnic kvs put`).
//!
//! The protocol (`cxlnic_drv/ring/src/kvs/wire.rs`) is defined once, in
//! the core: its constants are used here, none copied.

use anyhow::{bail, ensure, Context, Result};
use cxlnic_ring::kvs::{
    answer_frame, parse, Parsed, ANSWER_MAX, KEY_MAX, MAGIC, MSG_HEADER_BYTES, PROTO_VERSION,
    REQ_ANSWER, REQ_GET, REQ_PUT, STATUS_BUSY, STATUS_NOT_FOUND, STATUS_OK, VALUE_MAX,
};
use serde::Serialize;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Ethernet, IPv4 (no options) and UDP header bytes: what precedes the
/// message in the core's frames.
const ETH_BYTES: usize = 14;
const IP_BYTES: usize = 20;
const UDP_BYTES: usize = 8;
const HEADERS: usize = ETH_BYTES + IP_BYTES + UDP_BYTES;
// The core's answer frame is these headers, a message header and a value.
const _: () = assert!(HEADERS + MSG_HEADER_BYTES + VALUE_MAX == ANSWER_MAX);
/// The longest datagram the server wraps into a frame (an Ethernet MTU).
const DATAGRAM_MAX: usize = 1500 - IP_BYTES - UDP_BYTES;
/// MACs of the frames the server builds around datagrams (locally
/// administered; only the parser sees them).
const SERVER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x4b, 0x56];
const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x4b, 0x43];

/// The key of number `i`.
pub fn key(i: u32) -> String {
    format!("k{i}")
}

/// `base` padded with '.' to `bytes` (at least `base`).
fn padded(mut base: String, bytes: usize) -> Vec<u8> {
    while base.len() < bytes {
        base.push('.');
    }
    base.into_bytes()
}

/// The value key `i` is preloaded with: `<i>:-`, padded. Every value
/// this tool writes starts with its key's number and a colon, so a value
/// of the wrong key never passes a check.
pub fn preload_value(i: u32, bytes: usize) -> Vec<u8> {
    padded(format!("{i}:-"), bytes)
}

/// The value the `n`th request of a `kvs-load` run with `seed` writes to
/// key `i` (at most 10 + 1 + 16 + 1 + 16 = 44 bytes before the padding).
pub fn put_value(i: u32, seed: u64, n: u64, bytes: usize) -> Vec<u8> {
    padded(format!("{i}:{seed:x}.{n:x}"), bytes)
}

fn check_value_bytes(bytes: usize) -> Result<()> {
    ensure!(
        bytes <= VALUE_MAX,
        "--value-bytes must be at most {VALUE_MAX}"
    );
    Ok(())
}

/// A request message (a UDP payload): header, key, value.
pub fn request(op: u8, id: u32, key: &[u8], value: &[u8]) -> Result<Vec<u8>> {
    ensure!(
        (1..=KEY_MAX).contains(&key.len()),
        "a key is 1 to {KEY_MAX} bytes"
    );
    ensure!(
        value.len() <= VALUE_MAX,
        "a value is at most {VALUE_MAX} bytes"
    );
    let mut m = Vec::with_capacity(MSG_HEADER_BYTES + key.len() + value.len());
    m.extend_from_slice(&MAGIC);
    m.extend_from_slice(&[PROTO_VERSION, op]);
    m.extend_from_slice(&id.to_le_bytes());
    // Checked above: the lengths fit.
    m.extend_from_slice(&[key.len() as u8, 0]);
    m.extend_from_slice(&(value.len() as u16).to_le_bytes());
    m.extend_from_slice(key);
    m.extend_from_slice(value);
    Ok(m)
}

/// An answer message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<'a> {
    /// The request's opcode (without [`REQ_ANSWER`]).
    pub op: u8,
    pub id: u32,
    pub status: u8,
    pub value: &'a [u8],
}

/// The answer in message `m`, or what is wrong with it.
pub fn decode_answer(m: &[u8]) -> std::result::Result<Answer<'_>, String> {
    let Some(h) = m.get(..MSG_HEADER_BYTES) else {
        return Err(format!("{} bytes, shorter than a header", m.len()));
    };
    if h[..2] != MAGIC || h[2] != PROTO_VERSION {
        return Err(format!("magic/version {:02x?}", &h[..3]));
    }
    let op = h[3] & !REQ_ANSWER;
    if h[3] & REQ_ANSWER == 0 || (op != REQ_GET && op != REQ_PUT) {
        return Err(format!("opcode {:#04x} is not an answer", h[3]));
    }
    let status = h[8];
    if ![STATUS_OK, STATUS_NOT_FOUND, STATUS_BUSY].contains(&status) || h[9] != 0 {
        return Err(format!("status {status}, byte 9 {}", h[9]));
    }
    let val_len = usize::from(u16::from_le_bytes([h[10], h[11]]));
    let value = &m[MSG_HEADER_BYTES..];
    if val_len > VALUE_MAX || value.len() != val_len {
        return Err(format!(
            "value length {val_len}, {} bytes follow",
            value.len()
        ));
    }
    Ok(Answer {
        op,
        id: u32::from_le_bytes([h[4], h[5], h[6], h[7]]),
        status,
        value,
    })
}

/// The ones' complement checksum of an IPv4 header.
fn ip_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet frame carrying datagram payload `m` from `from` to
/// `port`, as the device would receive it (UDP checksum 0: none).
fn frame_of(m: &[u8], from: SocketAddr, port: u16) -> Vec<u8> {
    let src = match from.ip() {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or([0; 4], |a| a.octets()),
    };
    let udp_len = UDP_BYTES + m.len();
    let ip_len = IP_BYTES + udp_len;
    let mut f = Vec::with_capacity(ETH_BYTES + ip_len);
    f.extend_from_slice(&SERVER_MAC);
    f.extend_from_slice(&CLIENT_MAC);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    // Callers keep `m` within DATAGRAM_MAX: the lengths fit u16.
    let mut ip = [0u8; IP_BYTES];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src);
    // Destination 0.0.0.0: the server answers on any address.
    let sum = ip_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&from.port().to_be_bytes());
    f.extend_from_slice(&port.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(m);
    f
}

/// The baseline's store and what it did.
#[derive(Debug, Default)]
pub struct Store {
    map: HashMap<Vec<u8>, Vec<u8>>,
    /// Port it serves (the parser checks the datagram went there).
    port: u16,
    pub served: u64,
    /// Datagrams dropped as the device drops them (malformed requests).
    pub rejected: u64,
}

impl Store {
    /// A store serving `port` with keys `k0..k<keys-1>` and their
    /// [`preload_value`]s of `value_bytes`.
    pub fn preloaded(port: u16, keys: u32, value_bytes: usize) -> Store {
        let map = (0..keys)
            .map(|i| (key(i).into_bytes(), preload_value(i, value_bytes)))
            .collect();
        Store {
            map,
            port,
            ..Store::default()
        }
    }

    /// Sets `key` to `value` (a test's corruption).
    #[cfg(test)]
    fn set(&mut self, key: &[u8], value: &[u8]) {
        self.map.insert(key.to_vec(), value.to_vec());
    }

    /// The answer message to datagram `m` from `from`, or `None` for one
    /// the device would drop. Like the device: a GET of an unknown key
    /// and a PUT to one are "not found" (PUTs only update).
    pub fn answer(&mut self, m: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
        if m.len() > DATAGRAM_MAX {
            self.rejected += 1;
            return None;
        }
        let frame = frame_of(m, from, self.port);
        let req = match parse(&frame, SERVER_MAC, self.port, [0; 4]) {
            Parsed::Request(r) => r,
            Parsed::Reject(_) | Parsed::NotKvs => {
                self.rejected += 1;
                return None;
            }
        };
        let (status, value): (u8, &[u8]) = match (req.op, self.map.get_mut(req.key)) {
            (REQ_GET, Some(v)) => (STATUS_OK, v),
            (REQ_PUT, Some(v)) => {
                v.clear();
                v.extend_from_slice(req.value);
                (STATUS_OK, &[])
            }
            _ => (STATUS_NOT_FOUND, &[]),
        };
        let (f, len) = answer_frame(&req, SERVER_MAC, status, value);
        self.served += 1;
        Some(f[HEADERS..len].to_vec())
    }
}

/// Serves `sock` until `stop` is set (looked at every 200 ms at least).
pub fn serve_on(sock: &UdpSocket, store: &mut Store, stop: &AtomicBool) -> Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        if let Some(a) = store.answer(&buf[..n], from) {
            let _ = sock.send_to(&a, from);
        }
    }
    Ok(())
}

/// `kvs-serve`: serves `port` until killed.
pub fn serve(port: u16, keys: u32, value_bytes: usize) -> Result<()> {
    check_value_bytes(value_bytes)?;
    let sock = UdpSocket::bind(("0.0.0.0", port)).context("UDP bind")?;
    let mut store = Store::preloaded(port, keys, value_bytes);
    println!(
        "nicbench kvs-serve: UDP port {port}, {keys} keys preloaded, values of {value_bytes} bytes"
    );
    serve_on(&sock, &mut store, &AtomicBool::new(false))
}

/// splitmix64: a small, seedable generator (the key and op sequence of a
/// seed is the same on every machine).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (n > 0), multiply-shift (bias below 2^-32 for
    /// any n this tool takes).
    pub fn below(&mut self, n: u32) -> u32 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u32
    }
}

/// Zipf(theta) over ranks 0..n (rank r drawn with probability
/// proportional to 1 / (r + 1)^theta), by inversion of the precomputed
/// cumulative distribution (8 bytes a key).
#[derive(Debug, Clone)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: u32, theta: f64) -> Result<Zipf> {
        ensure!(n > 0, "Zipf over no keys");
        ensure!(theta.is_finite() && theta >= 0.0, "theta must be 0 or more");
        let mut cdf = Vec::with_capacity(n as usize);
        let mut sum = 0.0;
        for r in 1..=n {
            sum += f64::from(r).powf(-theta);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Ok(Zipf { cdf })
    }

    /// The rank of `u` in [0, 1).
    pub fn rank(&self, u: f64) -> u32 {
        let r = self.cdf.partition_point(|&c| c <= u);
        // u < 1 = the last entry (rounding aside): clamp to the last rank.
        r.min(self.cdf.len() - 1) as u32
    }

    pub fn sample(&self, rng: &mut Rng) -> u32 {
        self.rank(rng.unit())
    }
}

/// How `kvs-load` picks keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dist {
    Zipf,
    Uniform,
}

/// What `kvs-load` does.
#[derive(Debug, Clone)]
pub struct LoadArgs {
    pub server: SocketAddr,
    pub keys: u32,
    pub dist: Dist,
    pub theta: f64,
    pub put_pct: u8,
    pub requests: u32,
    pub seed: u64,
    pub timeout: Duration,
    pub value_bytes: usize,
    /// Others (earlier runs, other clients) may have written the keys: a
    /// key this run has not written may hold any value written for it.
    pub shared: bool,
}

#[derive(Debug, Serialize)]
pub struct LoadResult {
    pub test: &'static str,
    pub dist: Dist,
    pub theta: f64,
    pub put_pct: u8,
    pub keys: u32,
    pub requests: u32,
    pub gets: u32,
    pub puts: u32,
    pub ok: u32,
    pub not_found: u32,
    pub busy: u32,
    pub timeouts: u32,
    /// Answers to earlier requests (that had timed out), skipped.
    pub late: u32,
    /// Wrong answers: malformed, wrong opcode, a value other than the one
    /// expected. Any is a failure.
    pub mismatches: u32,
    pub get_p50_us: Option<f64>,
    pub get_p99_us: Option<f64>,
    pub put_p50_us: Option<f64>,
    pub put_p99_us: Option<f64>,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
}

impl std::fmt::Display for LoadResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.1}"));
        let dist = match self.dist {
            Dist::Zipf => format!("zipf {}", self.theta),
            Dist::Uniform => "uniform".into(),
        };
        write!(
            f,
            "kvs-load {dist}, {} % PUT, {} keys: {} requests ({} GET, {} PUT); GET p50 {} us p99 {} us; PUT p50 {} us p99 {} us; ok {}, not found {}, busy {}, timeouts {}, late {}, mismatches {}",
            self.put_pct,
            self.keys,
            self.requests,
            self.gets,
            self.puts,
            us(self.get_p50_us),
            us(self.get_p99_us),
            us(self.put_p50_us),
            us(self.put_p99_us),
            self.ok,
            self.not_found,
            self.busy,
            self.timeouts,
            self.late,
            self.mismatches
        )
    }
}

/// The `p` quantile of sorted `v` (nearest rank, as `udp-rr`).
fn pct(v: &[f64], p: f64) -> Option<f64> {
    let last = v.len().checked_sub(1)?;
    Some(v[(last as f64 * p).round() as usize])
}

/// What a key may hold, for this run's checks.
struct Expect {
    /// Per key this run touched: the values it may hold (one after an
    /// answered PUT; more after a PUT with no answer, which may or may
    /// not have been done).
    known: HashMap<u32, Vec<Vec<u8>>>,
    shared: bool,
    value_bytes: usize,
}

impl Expect {
    /// Whether key `i` may hold `v` (None: may be absent).
    fn allows(&self, i: u32, v: Option<&[u8]>) -> bool {
        match (self.known.get(&i), v) {
            (Some(vals), Some(v)) => vals.iter().any(|x| x == v),
            // A key this run wrote exists.
            (Some(_), None) => false,
            (None, None) => true,
            (None, Some(v)) if self.shared => v.starts_with(format!("{i}:").as_bytes()),
            (None, Some(v)) => v == preload_value(i, self.value_bytes),
        }
    }

    /// What key `i` may hold before this write, for a PUT with no answer.
    fn may_be(&mut self, i: u32, v: Vec<u8>) {
        if !self.known.contains_key(&i) && self.shared {
            // Any value for the key was allowed already.
            return;
        }
        let preload = preload_value(i, self.value_bytes);
        self.known.entry(i).or_insert_with(|| vec![preload]).push(v);
    }
}

/// Counts a wrong answer; says what was wrong with the first ten.
fn wrong(r: &mut LoadResult, what: String) {
    if r.mismatches < 10 {
        eprintln!("nicbench kvs-load: mismatch: {what}");
    }
    r.mismatches += 1;
}

/// `kvs-load`: `requests` requests, one outstanding at a time.
pub fn load(a: &LoadArgs) -> Result<LoadResult> {
    ensure!(a.keys > 0, "--keys must be above 0");
    ensure!(a.put_pct <= 100, "--put-pct is 0 to 100");
    check_value_bytes(a.value_bytes)?;
    let zipf = match a.dist {
        Dist::Zipf => Some(Zipf::new(a.keys, a.theta)?),
        Dist::Uniform => None,
    };
    let bind: SocketAddr = if a.server.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let sock = UdpSocket::bind(bind)?;
    sock.connect(a.server)?;
    sock.set_read_timeout(Some(a.timeout))?;
    let mut rng = Rng::new(a.seed);
    let mut expect = Expect {
        known: HashMap::new(),
        shared: a.shared,
        value_bytes: a.value_bytes,
    };
    let mut r = LoadResult {
        test: "kvs-load",
        dist: a.dist,
        theta: a.theta,
        put_pct: a.put_pct,
        keys: a.keys,
        requests: a.requests,
        gets: 0,
        puts: 0,
        ok: 0,
        not_found: 0,
        busy: 0,
        timeouts: 0,
        late: 0,
        mismatches: 0,
        get_p50_us: None,
        get_p99_us: None,
        put_p50_us: None,
        put_p99_us: None,
        p50_us: 0.0,
        p99_us: 0.0,
        mean_us: 0.0,
    };
    let (mut get_us, mut put_us) = (Vec::new(), Vec::new());
    let mut buf = [0u8; 2048];
    for n in 0..a.requests {
        let i = match &zipf {
            Some(z) => z.sample(&mut rng),
            None => rng.below(a.keys),
        };
        let is_put = rng.below(100) < u32::from(a.put_pct);
        let k = key(i);
        // Ids count from 1: an answer echoing 0 is never this run's.
        let id = n.wrapping_add(1);
        let (op, value) = if is_put {
            r.puts += 1;
            (REQ_PUT, put_value(i, a.seed, u64::from(n), a.value_bytes))
        } else {
            r.gets += 1;
            (REQ_GET, Vec::new())
        };
        let msg = request(op, id, k.as_bytes(), &value)?;
        let start = Instant::now();
        sock.send(&msg)?;
        let answer = loop {
            match sock.recv(&mut buf) {
                Ok(len) => match decode_answer(&buf[..len]) {
                    Ok(ans) if ans.id == id => {
                        break Some((start.elapsed(), ans.op, ans.status, ans.value.to_vec()))
                    }
                    Ok(ans) if ans.id < id => r.late += 1,
                    Ok(ans) => wrong(&mut r, format!("id {} answering request {id}", ans.id)),
                    Err(e) => wrong(&mut r, format!("answer to request {id}: {e}")),
                },
                // Timed out (or refused: nobody on the port yet).
                Err(_) => break None,
            }
        };
        let Some((took, aop, status, v)) = answer else {
            r.timeouts += 1;
            if is_put {
                expect.may_be(i, value);
            }
            continue;
        };
        let us = took.as_secs_f64() * 1e6;
        if is_put { &mut put_us } else { &mut get_us }.push(us);
        if aop != op {
            wrong(&mut r, format!("{k}: opcode {aop} answering {op}"));
            continue;
        }
        if status != STATUS_OK && !v.is_empty() {
            wrong(&mut r, format!("{k}: status {status} with a value"));
            continue;
        }
        match status {
            STATUS_OK => {
                r.ok += 1;
                if is_put {
                    if !v.is_empty() {
                        wrong(&mut r, format!("{k}: PUT answered with a value"));
                    }
                    expect.known.insert(i, vec![value]);
                } else if !expect.allows(i, Some(&v)) {
                    wrong(
                        &mut r,
                        format!(
                            "GET {k} = {:?}, expected {:?}",
                            String::from_utf8_lossy(&v),
                            expect.known.get(&i).map_or_else(
                                || vec![String::from_utf8_lossy(&preload_value(i, a.value_bytes))
                                    .into_owned()],
                                |vs| vs
                                    .iter()
                                    .map(|x| String::from_utf8_lossy(x).into_owned())
                                    .collect()
                            )
                        ),
                    );
                }
            }
            STATUS_NOT_FOUND => {
                r.not_found += 1;
                if !expect.allows(i, None) {
                    wrong(&mut r, format!("{k} not found after this run wrote it"));
                }
            }
            _ => r.busy += 1,
        }
    }
    ensure!(
        !get_us.is_empty() || !put_us.is_empty(),
        "no answer from {}",
        a.server
    );
    let mut all: Vec<f64> = get_us.iter().chain(&put_us).copied().collect();
    for v in [&mut get_us, &mut put_us, &mut all] {
        v.sort_by(f64::total_cmp);
    }
    r.get_p50_us = pct(&get_us, 0.50);
    r.get_p99_us = pct(&get_us, 0.99);
    r.put_p50_us = pct(&put_us, 0.50);
    r.put_p99_us = pct(&put_us, 0.99);
    r.p50_us = pct(&all, 0.50).unwrap_or(0.0);
    r.p99_us = pct(&all, 0.99).unwrap_or(0.0);
    r.mean_us = all.iter().sum::<f64>() / all.len() as f64;
    Ok(r)
}

#[derive(Debug, Serialize)]
pub struct OneResult {
    pub test: &'static str,
    pub key: String,
    /// "ok", "not found" or "busy".
    pub status: &'static str,
    pub value: Option<String>,
    pub us: f64,
}

impl std::fmt::Display for OneResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = if self.test == "kvs-get" { "GET" } else { "PUT" };
        write!(f, "{op} {}: {}", self.key, self.status)?;
        if let Some(v) = &self.value {
            write!(f, ", {v:?}")?;
        }
        write!(f, " in {:.0} us", self.us)
    }
}

/// `kvs-get` (no value) or `kvs-put`: one request.
pub fn one(
    server: SocketAddr,
    key: &str,
    value: Option<&str>,
    timeout: Duration,
) -> Result<OneResult> {
    let sock = UdpSocket::bind(if server.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    })?;
    sock.connect(server)?;
    sock.set_read_timeout(Some(timeout))?;
    let op = if value.is_some() { REQ_PUT } else { REQ_GET };
    let id = std::process::id();
    let msg = request(op, id, key.as_bytes(), value.unwrap_or("").as_bytes())?;
    let mut buf = [0u8; 2048];
    let start = Instant::now();
    sock.send(&msg)?;
    loop {
        let len = sock
            .recv(&mut buf)
            .with_context(|| format!("no answer from {server} within {timeout:?}"))?;
        let a = decode_answer(&buf[..len]).map_err(anyhow::Error::msg)?;
        if a.id != id {
            continue;
        }
        if a.op != op {
            bail!("opcode {} answering {op}", a.op);
        }
        let status = match a.status {
            STATUS_OK => "ok",
            STATUS_NOT_FOUND => "not found",
            _ => "busy",
        };
        return Ok(OneResult {
            test: if value.is_some() {
                "kvs-put"
            } else {
                "kvs-get"
            },
            key: key.into(),
            status,
            value: (op == REQ_GET && a.status == STATUS_OK)
                .then(|| String::from_utf8_lossy(a.value).into_owned()),
            us: start.elapsed().as_secs_f64() * 1e6,
        });
    }
}

/// What `kvs-raw` gets wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Bad {
    /// A key one byte past `KEY_MAX`.
    Key,
    /// A value length past the datagram's end.
    Length,
    /// An opcode that is neither GET nor PUT.
    Op,
}

/// The malformed request `bad` names (a GET or PUT of `k0` otherwise).
pub fn malformed(bad: Bad) -> Vec<u8> {
    let mut m = request(REQ_GET, 1, b"k0", b"").expect("a valid request");
    match bad {
        Bad::Key => {
            m.truncate(MSG_HEADER_BYTES);
            // KEY_MAX is far below 255.
            m[8] = (KEY_MAX + 1) as u8;
            m.extend_from_slice(&[b'x'; KEY_MAX + 1]);
        }
        Bad::Length => {
            m = request(REQ_PUT, 1, b"k0", b"v").expect("a valid request");
            m[10..12].copy_from_slice(&16u16.to_le_bytes());
        }
        Bad::Op => m[3] = 9,
    }
    m
}

/// `kvs-raw`: sends one malformed request; prints "no answer" or what
/// came back.
pub fn raw(server: SocketAddr, bad: Bad, timeout: Duration) -> Result<()> {
    let sock = UdpSocket::bind(if server.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    })?;
    sock.connect(server)?;
    sock.set_read_timeout(Some(timeout))?;
    sock.send(&malformed(bad))?;
    let mut buf = [0u8; 2048];
    match sock.recv(&mut buf) {
        Ok(n) => println!("kvs-raw {bad:?}: an answer of {n} bytes"),
        Err(_) => println!("kvs-raw {bad:?}: no answer within {timeout:?}"),
    }
    Ok(())
}

/// `kvs-keys`: the preloaded pairs, `KEY VALUE` a line.
pub fn keys(keys: u32, value_bytes: usize) -> Result<()> {
    check_value_bytes(value_bytes)?;
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for i in 0..keys {
        writeln!(
            out,
            "{} {}",
            key(i),
            String::from_utf8_lossy(&preload_value(i, value_bytes))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn zipf_ranks_are_skewed_and_uniform_ones_are_not() {
        let n = 1000;
        let z = Zipf::new(n, 0.99).unwrap();
        let mut rng = Rng::new(7);
        let mut counts = vec![0u32; n as usize];
        for _ in 0..200_000 {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        // P(rank 1) = 1 / H(n, 0.99), about 0.13 for n = 1000.
        let p0 = f64::from(counts[0]) / 200_000.0;
        assert!((0.11..0.15).contains(&p0), "rank 1 drawn {p0}");
        assert!(counts[0] > 50 * counts[n as usize - 1].max(1));
        assert!(counts[0] > counts[1] && counts[1] > counts[9]);
        // The top 10 % of keys take most requests.
        let top: u32 = counts[..100].iter().sum();
        assert!(top > 120_000, "top 10 % drew {top}");

        let mut uni = vec![0u32; n as usize];
        for _ in 0..200_000 {
            uni[rng.below(n) as usize] += 1;
        }
        let (lo, hi) = (uni.iter().min().unwrap(), uni.iter().max().unwrap());
        assert!(*lo > 120 && *hi < 290, "uniform counts {lo}..{hi}");
        // theta 0 is uniform.
        let flat = Zipf::new(4, 0.0).unwrap();
        assert_eq!([0.1, 0.3, 0.6, 0.9].map(|u| flat.rank(u)), [0, 1, 2, 3]);
        assert_eq!(flat.rank(0.999_999_999_999), 3);
    }

    #[test]
    fn a_seed_fixes_the_sequence() {
        let z = Zipf::new(500, 0.99).unwrap();
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..100).map(|_| z.sample(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        assert!(Zipf::new(0, 0.99).is_err());
        assert!(Zipf::new(5, -1.0).is_err());
    }

    fn frame_from_client(m: &[u8]) -> Vec<u8> {
        frame_of(m, "10.11.0.2:40000".parse().unwrap(), 7878)
    }

    /// Each malformed request `kvs-raw` sends is one the core refuses,
    /// for the reason it names.
    #[test]
    fn raw_requests_are_refused_for_their_reason() {
        use cxlnic_ring::kvs::Reject;
        for (bad, why) in [
            (Bad::Key, Reject::Key),
            (Bad::Length, Reject::Length),
            (Bad::Op, Reject::Op),
        ] {
            let f = frame_from_client(&malformed(bad));
            assert_eq!(
                parse(&f, SERVER_MAC, 7878, [0; 4]),
                Parsed::Reject(why),
                "{bad:?}"
            );
        }
    }

    /// What the client sends the core's parser accepts, field for field;
    /// what the core's encoder answers the client decodes.
    #[test]
    fn messages_round_trip_through_the_core() {
        let m = request(REQ_PUT, 0xdead_beef, b"k42", b"42:-....").unwrap();
        let f = frame_from_client(&m);
        let Parsed::Request(req) = parse(&f, SERVER_MAC, 7878, [0; 4]) else {
            panic!("not a request: {:?}", parse(&f, SERVER_MAC, 7878, [0; 4]));
        };
        assert_eq!(
            (req.op, req.id, req.key, req.value),
            (REQ_PUT, 0xdead_beef, &b"k42"[..], &b"42:-...."[..])
        );
        assert_eq!(req.reply.client_ip, [10, 11, 0, 2]);
        assert_eq!(req.reply.client_port, 40000);
        // Another port's datagram is not the offload's.
        assert_eq!(parse(&f, SERVER_MAC, 7879, [0; 4]), Parsed::NotKvs);

        let (a, len) = answer_frame(&req, SERVER_MAC, STATUS_NOT_FOUND, &[]);
        let ans = decode_answer(&a[HEADERS..len]).unwrap();
        assert_eq!(
            ans,
            Answer {
                op: REQ_PUT,
                id: 0xdead_beef,
                status: STATUS_NOT_FOUND,
                value: &[]
            }
        );
        let g = request(REQ_GET, 9, b"k1", b"").unwrap();
        let f = frame_from_client(&g);
        let Parsed::Request(req) = parse(&f, SERVER_MAC, 7878, [0; 4]) else {
            panic!("GET not accepted");
        };
        let v = [b'x'; VALUE_MAX];
        let (a, len) = answer_frame(&req, SERVER_MAC, STATUS_OK, &v);
        let ans = decode_answer(&a[HEADERS..len]).unwrap();
        assert_eq!((ans.op, ans.id, ans.value), (REQ_GET, 9, &v[..]));

        // Malformed answers are refused, not misread.
        let good = a[HEADERS..len].to_vec();
        assert!(decode_answer(&good[..len - HEADERS - 1]).is_err(), "short");
        let mut bad = good.clone();
        bad[3] = REQ_GET;
        assert!(decode_answer(&bad).is_err(), "a request, not an answer");
        let mut bad = good.clone();
        bad[8] = 3;
        assert!(decode_answer(&bad).is_err(), "unknown status");
        let mut bad = good;
        bad[0] = b'X';
        assert!(decode_answer(&bad).is_err(), "magic");
        // What the client refuses to send.
        assert!(request(REQ_GET, 1, b"", b"").is_err());
        assert!(request(REQ_GET, 1, &[b'k'; KEY_MAX + 1], b"").is_err());
        assert!(request(REQ_PUT, 1, b"k", &[0; VALUE_MAX + 1]).is_err());
    }

    #[test]
    fn the_server_answers_and_drops_like_the_device() {
        let from: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        let mut s = Store::preloaded(7878, 3, 8);
        let get = |s: &mut Store, k: &[u8]| {
            let a = s.answer(&request(REQ_GET, 1, k, b"").unwrap(), from)?;
            let d = decode_answer(&a).unwrap();
            Some((d.status, d.value.to_vec()))
        };
        assert_eq!(get(&mut s, b"k2"), Some((STATUS_OK, b"2:-.....".to_vec())));
        assert_eq!(get(&mut s, b"k3"), Some((STATUS_NOT_FOUND, vec![])));
        // A PUT updates a key that exists, and only such a key.
        let put = |s: &mut Store, k: &[u8], v: &[u8]| {
            let a = s.answer(&request(REQ_PUT, 2, k, v).unwrap(), from)?;
            Some(decode_answer(&a).unwrap().status)
        };
        assert_eq!(put(&mut s, b"k1", b"new"), Some(STATUS_OK));
        assert_eq!(get(&mut s, b"k1"), Some((STATUS_OK, b"new".to_vec())));
        assert_eq!(put(&mut s, b"k9", b"new"), Some(STATUS_NOT_FOUND));
        assert_eq!(get(&mut s, b"k9"), Some((STATUS_NOT_FOUND, vec![])));
        assert_eq!(s.served, 6);
        // A GET with a value, a bad version, a short header: dropped.
        let mut m = request(REQ_PUT, 3, b"k1", b"v").unwrap();
        m[3] = REQ_GET;
        assert_eq!(s.answer(&m, from), None);
        let mut m = request(REQ_GET, 3, b"k1", b"").unwrap();
        m[2] = PROTO_VERSION + 1;
        assert_eq!(s.answer(&m, from), None);
        assert_eq!(s.answer(b"KV", from), None);
        assert_eq!(s.answer(&vec![0; DATAGRAM_MAX + 1], from), None);
        assert_eq!(s.rejected, 4);
    }

    /// A `kvs-serve` on 127.0.0.1 (a port the system picks) and its store.
    fn server(store: Store) -> (SocketAddr, Arc<AtomicBool>, std::thread::JoinHandle<Store>) {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        let mut store = Store {
            port: addr.port(),
            ..store
        };
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let t = std::thread::spawn(move || {
            serve_on(&sock, &mut store, &s).unwrap();
            store
        });
        (addr, stop, t)
    }

    fn args(server: SocketAddr, dist: Dist, put_pct: u8) -> LoadArgs {
        LoadArgs {
            server,
            keys: 200,
            dist,
            theta: 0.99,
            put_pct,
            requests: 3000,
            seed: 11,
            timeout: Duration::from_secs(2),
            value_bytes: 24,
            shared: false,
        }
    }

    #[test]
    fn load_against_serve_on_loopback_checks_every_answer() {
        let (addr, stop, t) = server(Store::preloaded(0, 200, 24));
        for dist in [Dist::Zipf, Dist::Uniform] {
            for put in [0, 50] {
                let mut a = args(addr, dist, put);
                // After the first PUT run, earlier runs' values are there.
                a.shared = true;
                let r = load(&a).unwrap();
                assert_eq!(r.mismatches, 0, "{r}");
                assert_eq!((r.ok, r.timeouts, r.not_found), (3000, 0, 0), "{r}");
                assert_eq!(r.gets + r.puts, 3000);
                if put == 0 {
                    assert_eq!(r.puts, 0);
                    assert!(r.put_p50_us.is_none());
                } else {
                    assert!((1200..1800).contains(&r.puts), "{r}");
                    assert!(r.put_p99_us.unwrap() >= r.put_p50_us.unwrap());
                }
                assert!(r.get_p99_us.unwrap() >= r.get_p50_us.unwrap());
            }
        }
        // Strict: a value another run wrote is a mismatch.
        let r = load(&args(addr, Dist::Zipf, 0)).unwrap();
        assert!(r.mismatches > 0, "{r}");
        stop.store(true, Ordering::Relaxed);
        let store = t.join().unwrap();
        assert_eq!(store.served, 5 * 3000);
    }

    #[test]
    fn load_finds_a_wrong_value_and_a_missing_key() {
        let mut store = Store::preloaded(0, 200, 24);
        // Key 0 (Zipf's rank 1) holds key 1's value: a wrong answer.
        store.set(b"k0", &preload_value(1, 24));
        let (addr, stop, t) = server(store);
        let r = load(&args(addr, Dist::Zipf, 0)).unwrap();
        assert!(r.mismatches > 100, "{r}");
        // Keys past the store's: not found, counted (not a mismatch).
        let r = load(&LoadArgs {
            keys: 400,
            ..args(addr, Dist::Uniform, 0)
        })
        .unwrap();
        assert!(r.not_found > 1000 && r.ok > 1000, "{r}");
        // A strict run over a store of other values fails every GET.
        let r = load(&LoadArgs {
            value_bytes: 30,
            ..args(addr, Dist::Uniform, 0)
        })
        .unwrap();
        assert_eq!(r.mismatches, 3000, "{r}");
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
    }

    use cxlnic_ring::index::ready_tag;
    use cxlnic_ring::kvs::sim::SimMemory;
    use cxlnic_ring::kvs::{
        Engine, HostTable, KvsConfig, KvsStats, LOG_ENTRIES, RECORD_BYTES, WAYS,
    };

    /// `kvs-load` against the offload's own logic: the core's engine
    /// (cache of 4 buckets, so pairs are evicted and fetched again) over
    /// a host table the core's driver side filled, answering on
    /// loopback, the log applied to the table every 37 requests (so some
    /// answers come from the log). Every answer checks out, and the
    /// engine served from all three places.
    #[test]
    fn load_against_the_device_engine_checks_out() {
        let (keys, vbytes, seed) = (200u32, 24, 0x5eed);
        let table = HostTable::new(128, seed).unwrap();
        let mut mem = SimMemory::new(4, 128);
        for i in 0..keys {
            table
                .insert(&mut mem.host, key(i).as_bytes(), &preload_value(i, vbytes))
                .unwrap();
        }
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        let mut engine = Engine::new();
        let cfg = KvsConfig {
            gen: 1,
            enable: 1,
            udp_port: addr.port(),
            cache_buckets: 4,
            host_buckets: 128,
            hash_seed: seed,
            ..KvsConfig::default()
        };
        let host_bytes = (128 * WAYS) as u64 * RECORD_BYTES as u64;
        assert!(engine.take_config(&mut mem, &cfg, host_bytes));
        assert_eq!((mem.device.cfg_ack, mem.device.cfg_status), (1, 0));
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let t = std::thread::spawn(move || -> KvsStats {
            sock.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let mut buf = [0u8; 2048];
            let mut served = 0u32;
            while !s.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let frame = frame_of(&buf[..n], from, addr.port());
                let Parsed::Request(req) = parse(&frame, SERVER_MAC, addr.port(), [0; 4]) else {
                    panic!("the device would drop what kvs-load sent");
                };
                let a = engine.serve(&mut mem, &req);
                let (f, len) = answer_frame(&req, SERVER_MAC, a.status, &a.value[..a.len]);
                sock.send_to(&f[HEADERS..len], from).unwrap();
                served += 1;
                if served.is_multiple_of(37) {
                    // The driver: apply the log, then say how far. Up to
                    // the first entry not written yet (its tag), not the
                    // device line's log_tail: at 477ca23 the engine
                    // published that only for commands.
                    let mut head = mem.driver.log_head;
                    loop {
                        let r = mem.log[(head % LOG_ENTRIES) as usize];
                        if r.word != ready_tag(head) {
                            break;
                        }
                        table.apply(&mut mem.host, &r).unwrap();
                        head = head.wrapping_add(1);
                    }
                    mem.driver.log_head = head;
                }
            }
            *engine.stats()
        });
        for (dist, put) in [(Dist::Zipf, 50), (Dist::Uniform, 50), (Dist::Zipf, 0)] {
            let r = load(&LoadArgs {
                keys,
                value_bytes: vbytes,
                shared: true,
                ..args(addr, dist, put)
            })
            .unwrap();
            assert_eq!(r.mismatches, 0, "{r}");
            assert_eq!(
                (r.ok, r.not_found, r.busy, r.timeouts),
                (3000, 0, 0, 0),
                "{r}"
            );
        }
        stop.store(true, Ordering::Relaxed);
        let st = t.join().unwrap();
        assert_eq!(st.requests, 9000);
        assert!(st.hits > 0 && st.misses > 0 && st.evictions > 0, "{st:?}");
        assert!(st.log_hits > 0, "{st:?}");
    }

    /// The bench's geometry (44_cxlnic_kvs: 2000 keys, a cache of 64
    /// buckets of 4 ways) through the core's engine, GETs only: Zipf's
    /// hot keys mostly hit, uniform keys mostly miss.
    #[test]
    fn the_benchs_cache_tells_zipf_from_uniform() {
        // A host table of 4096 buckets: at 2048 the core's insert (first
        // free slot, first bucket first) finds both buckets full for
        // some seeds, this one among them.
        let (keys, buckets) = (2000u32, 64u32);
        let table = HostTable::new(4096, 9).unwrap();
        let mut mem = SimMemory::new(buckets, 4096);
        for i in 0..keys {
            table
                .insert(&mut mem.host, key(i).as_bytes(), &preload_value(i, 32))
                .unwrap_or_else(|e| panic!("insert k{i}: {e:?}"));
        }
        let mut hit_pct = |dist: Dist| {
            let mut engine = Engine::new();
            let cfg = KvsConfig {
                gen: 1,
                enable: 1,
                udp_port: 7878,
                cache_buckets: buckets,
                host_buckets: 4096,
                hash_seed: 9,
                ..KvsConfig::default()
            };
            assert!(engine.take_config(&mut mem, &cfg, 4096 * 4 * 128));
            let zipf = Zipf::new(keys, 0.99).unwrap();
            let mut rng = Rng::new(1);
            for n in 0..20_000u32 {
                let i = match dist {
                    Dist::Zipf => zipf.sample(&mut rng),
                    Dist::Uniform => rng.below(keys),
                };
                let m = request(REQ_GET, n, key(i).as_bytes(), b"").unwrap();
                let f = frame_from_client(&m);
                let Parsed::Request(req) = parse(&f, SERVER_MAC, 7878, [0; 4]) else {
                    panic!("not a request");
                };
                assert_eq!(engine.serve(&mut mem, &req).status, STATUS_OK);
            }
            let st = engine.stats();
            100.0 * st.hits as f64 / st.requests as f64
        };
        let (z, u) = (hit_pct(Dist::Zipf), hit_pct(Dist::Uniform));
        eprintln!("hit rates, 2000 keys, 256 cache entries: Zipf(0.99) {z:.1} %, uniform {u:.1} %");
        assert!(z > 50.0 && u < 20.0, "Zipf {z} %, uniform {u} %");
    }

    #[test]
    fn a_put_with_no_answer_allows_both_values() {
        let mut e = Expect {
            known: HashMap::new(),
            shared: false,
            value_bytes: 8,
        };
        assert!(e.allows(3, Some(&preload_value(3, 8))));
        assert!(!e.allows(3, Some(&put_value(3, 1, 1, 8))));
        e.may_be(3, put_value(3, 1, 1, 8));
        assert!(e.allows(3, Some(&preload_value(3, 8))));
        assert!(e.allows(3, Some(&put_value(3, 1, 1, 8))));
        assert!(!e.allows(3, None));
        e.shared = true;
        assert!(e.allows(4, Some(&put_value(4, 9, 9, 8))));
        assert!(!e.allows(4, Some(&put_value(5, 9, 9, 8))), "another key's");
    }

    #[test]
    fn no_server_is_an_error_not_a_pass() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        drop(sock);
        let a = LoadArgs {
            requests: 3,
            timeout: Duration::from_millis(50),
            ..args(addr, Dist::Uniform, 0)
        };
        assert!(load(&a).is_err());
    }
}
