//! MPTCP: `mptcp-serve` and `mptcp`, the checksummed transfer of `serve`
//! and `tcp` over one MPTCP connection, with what each subflow carried
//! (`MPTCP_FULL_INFO`: the subflows' addresses and their `tcp_info`).
//! Which subflows exist is the path manager's business (`ip mptcp`,
//! Documentation/cxlfabric/drack.rst).

use crate::mptcp_abi::{
    self as abi, MptcpFullInfo, MptcpInfo, Plain, Subflow, SubflowInfo, TcpInfo,
};
use anyhow::{bail, Context, Result};
use nix::sys::socket::{self, sockopt, Backlog, SockaddrIn};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::mem::size_of;
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Subflows read per sample (the path manager allows at most 8 more
/// than the first).
const MAX_SUBFLOWS: usize = 16;

/// A fresh MPTCP socket; a kernel without MPTCP (or with
/// `net.mptcp.enabled=0`) says so here.
fn mptcp_socket() -> Result<OwnedFd> {
    // SAFETY: a plain syscall with constant arguments.
    let fd = unsafe {
        nix::libc::socket(
            nix::libc::AF_INET,
            nix::libc::SOCK_STREAM | nix::libc::SOCK_CLOEXEC,
            abi::IPPROTO_MPTCP,
        )
    };
    if fd < 0 {
        bail!(
            "socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP): {} (no CONFIG_MPTCP, or net.mptcp.enabled=0)",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: `fd` was just returned by socket(2) and belongs to no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// getsockopt(SOL_MPTCP, `name`) into `value`; returns the length the
/// kernel wrote.
///
/// # Safety
///
/// Where `value` carries addresses of buffers the kernel fills too
/// (`MPTCP_FULL_INFO`), each must be writable for the sizes `value`
/// states, for the duration of the call.
unsafe fn get_mptcp<T: Plain>(
    fd: BorrowedFd<'_>,
    name: i32,
    value: &mut T,
) -> std::io::Result<usize> {
    let mut len = size_of::<T>() as nix::libc::socklen_t;
    // SAFETY: `value` is `len` writable bytes that any bytes make valid
    // (`Plain`); `len` is a valid socklen_t the kernel updates; the
    // buffers `value` points to are the caller's to vouch for.
    let r = unsafe {
        nix::libc::getsockopt(
            fd.as_raw_fd(),
            abi::SOL_MPTCP,
            name,
            (value as *mut T).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(len as usize)
}

/// `MPTCP_INFO`, or `None` when the connection is plain TCP: a socket
/// that fell back passes SOL_MPTCP to TCP, which refuses it.
fn mptcp_info(fd: BorrowedFd<'_>) -> Result<Option<MptcpInfo>> {
    let mut info = MptcpInfo::zeroed();
    // SAFETY: mptcp_info carries no buffer addresses.
    match unsafe { get_mptcp(fd, abi::MPTCP_INFO, &mut info) } {
        Ok(_) if info.mptcpi_flags & abi::MPTCP_INFO_FLAG_FALLBACK != 0 => Ok(None),
        Ok(_) => Ok(Some(info)),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(nix::libc::ENOPROTOOPT | nix::libc::EOPNOTSUPP)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e).context("getsockopt(SOL_MPTCP, MPTCP_INFO)"),
    }
}

/// Every subflow now (`MPTCP_FULL_INFO`), and the kernel's count.
fn subflows(fd: BorrowedFd<'_>) -> Result<(Vec<Subflow>, u32)> {
    let mut sf = vec![0u8; MAX_SUBFLOWS * size_of::<SubflowInfo>()];
    let mut tcp = vec![0u8; MAX_SUBFLOWS * size_of::<TcpInfo>()];
    let mut mfi = MptcpFullInfo::zeroed();
    mfi.size_sfinfo_user = size_of::<SubflowInfo>() as u32;
    mfi.size_tcpinfo_user = size_of::<TcpInfo>() as u32;
    mfi.size_arrays_user = MAX_SUBFLOWS as u32;
    mfi.subflow_info = sf.as_mut_ptr() as u64;
    mfi.tcp_info = tcp.as_mut_ptr() as u64;
    // SAFETY: `sf` and `tcp` hold `size_arrays_user` records of the
    // sizes `mfi` states, and live past the call.
    unsafe { get_mptcp(fd, abi::MPTCP_FULL_INFO, &mut mfi) }
        .context("getsockopt(SOL_MPTCP, MPTCP_FULL_INFO)")?;
    abi::parse_full_info(&mfi, &sf, &tcp).map_err(anyhow::Error::msg)
}

/// The interface holding each local IPv4 address (the one a subflow
/// bound to an endpoint's device uses).
fn interfaces() -> BTreeMap<std::net::Ipv4Addr, String> {
    let mut out = BTreeMap::new();
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for a in addrs {
            if let Some(sin) = a.address.as_ref().and_then(|s| s.as_sockaddr_in()) {
                out.insert(sin.ip(), a.interface_name);
            }
        }
    }
    out
}

/// `mptcp-serve`: `serve`'s TCP transfers on an MPTCP listener (plain
/// TCP clients are answered too, as a fallback).
pub fn serve(port: u16) -> Result<()> {
    let fd = mptcp_socket()?;
    socket::setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    socket::bind(fd.as_raw_fd(), &SockaddrIn::new(0, 0, 0, 0, port)).context("MPTCP bind")?;
    socket::listen(&fd, Backlog::new(16)?).context("MPTCP listen")?;
    let listener = TcpListener::from(fd);
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        std::thread::spawn(move || {
            let peer = conn.peer_addr().map_or("?".into(), |a| a.to_string());
            if let Err(e) = crate::serve_tcp(&conn) {
                eprintln!("nicbench: mptcp: {e:#}");
            }
            match mptcp_info(conn.as_fd()) {
                Ok(Some(i)) => println!(
                    "nicbench mptcp-serve: {peer}: MPTCP, {} subflows now, {} in all",
                    i.mptcpi_subflows, i.mptcpi_subflows_total
                ),
                Ok(None) => println!("nicbench mptcp-serve: {peer}: fell back to TCP"),
                Err(e) => eprintln!("nicbench: mptcp: {e:#}"),
            }
        });
    }
    Ok(())
}

/// One subflow in the result: what it carried, where.
#[derive(Serialize, Clone, Debug)]
pub struct SubflowReport {
    pub id: u32,
    pub local: String,
    pub remote: String,
    pub interface: String,
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_retrans: u64,
    /// Of all subflows' acked bytes.
    pub share_pct: f64,
    /// Still there at the end (a closed subflow keeps its last sample).
    pub open: bool,
}

#[derive(Serialize, Clone, Debug)]
pub struct SampleSubflow {
    pub id: u32,
    pub bytes_acked: u64,
    pub bytes_sent: u64,
}

/// One periodic sample: milliseconds since the transfer began.
#[derive(Serialize, Clone, Debug)]
pub struct Sample {
    pub t_ms: u64,
    pub subflows: Vec<SampleSubflow>,
}

#[derive(Serialize)]
pub struct MptcpResult {
    pub test: &'static str,
    pub bytes: u64,
    pub secs: f64,
    pub mbit_s: f64,
    pub hash_ok: bool,
    pub fallback: bool,
    pub subflows: Vec<SubflowReport>,
    pub samples: Vec<Sample>,
}

impl std::fmt::Display for MptcpResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mptcp: {} bytes in {:.3} s, {:.1} Mbit/s, checksum {}, {}{} subflows",
            self.bytes,
            self.secs,
            self.mbit_s,
            if self.hash_ok { "matches" } else { "DIFFERS" },
            if self.fallback {
                "FELL BACK to TCP, "
            } else {
                ""
            },
            self.subflows.len()
        )?;
        for s in &self.subflows {
            write!(
                f,
                "\nsubflow {} {} ({}) -> {}: sent {} acked {} bytes ({:.1} %), retransmitted {}{}",
                s.id,
                s.local,
                s.interface,
                s.remote,
                s.bytes_sent,
                s.bytes_acked,
                s.share_pct,
                s.bytes_retrans,
                if s.open { "" } else { ", closed" }
            )?;
        }
        for sample in &self.samples {
            write!(f, "\nat {} ms:", sample.t_ms)?;
            for s in &sample.subflows {
                write!(f, " subflow {} acked {}", s.id, s.bytes_acked)?;
            }
        }
        Ok(())
    }
}

/// The latest view of every subflow seen, closed ones included.
#[derive(Default)]
struct Seen {
    last: BTreeMap<u32, Subflow>,
    samples: Vec<Sample>,
}

impl Seen {
    fn take(&mut self, subs: &[Subflow], t_ms: Option<u64>) {
        for s in subs {
            self.last.insert(s.id, s.clone());
        }
        if let Some(t_ms) = t_ms {
            self.samples.push(Sample {
                t_ms,
                subflows: subs
                    .iter()
                    .map(|s| SampleSubflow {
                        id: s.id,
                        bytes_acked: s.bytes_acked,
                        bytes_sent: s.bytes_sent,
                    })
                    .collect(),
            });
        }
    }
}

pub struct Args {
    pub to: SocketAddrV4,
    pub bytes: u64,
    pub seed: u64,
    pub report_ms: Option<u64>,
    pub allow_fallback: bool,
    pub answer_secs: u64,
}

/// `mptcp`: sends `bytes` over MPTCP, checks the server's hash, reports
/// each subflow; fails if the connection fell back to TCP unless allowed.
pub fn client(a: &Args) -> Result<MptcpResult> {
    let conn = TcpStream::from(mptcp_socket()?);
    // Bounds connect(2) too.
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    socket::connect(conn.as_raw_fd(), &SockaddrIn::from(a.to))
        .with_context(|| format!("MPTCP connect to {}", a.to))?;
    conn.set_write_timeout(Some(Duration::from_secs(30)))?;
    conn.set_read_timeout(Some(Duration::from_secs(a.answer_secs.max(1))))?;
    let seen = Mutex::new(Seen::default());
    let done = AtomicBool::new(false);
    let start = Instant::now();
    let (sent, reply) = std::thread::scope(|scope| -> Result<_> {
        if let Some(ms) = a.report_ms.filter(|&ms| ms > 0) {
            let (seen, done, conn) = (&seen, &done, &conn);
            scope.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(ms));
                    if let Ok((subs, _)) = subflows(conn.as_fd()) {
                        let t = start.elapsed().as_millis() as u64;
                        seen.lock().unwrap().take(&subs, Some(t));
                    }
                }
            });
        }
        let r = (|| -> Result<_> {
            let mut w = &conn;
            w.write_all(&a.bytes.to_le_bytes())?;
            let sent = crate::stream(a.bytes, a.seed, |chunk| Ok(w.write_all(chunk)?))?;
            let mut reply = [0u8; 16];
            (&conn)
                .read_exact(&mut reply)
                .context("the server's answer")?;
            Ok((sent, reply))
        })();
        done.store(true, Ordering::Relaxed);
        r
    })?;
    let secs = start.elapsed().as_secs_f64();
    // Everything was acked once the answer came: the final numbers.
    let fallback = mptcp_info(conn.as_fd())?.is_none();
    let mut seen = seen.into_inner().unwrap();
    let mut open = Vec::new();
    if !fallback {
        let (subs, _) = subflows(conn.as_fd())?;
        open = subs.iter().map(|s| s.id).collect();
        seen.take(&subs, None);
    }
    let got = u64::from_le_bytes(reply[..8].try_into()?);
    let theirs = u64::from_le_bytes(reply[8..].try_into()?);
    let r = MptcpResult {
        test: "mptcp",
        bytes: got,
        secs,
        mbit_s: got as f64 * 8.0 / secs / 1e6,
        hash_ok: got == a.bytes && theirs == sent,
        fallback,
        subflows: report(&seen.last, &open, &interfaces()),
        samples: seen.samples,
    };
    if !r.hash_ok {
        bail!("{r}\n(sent {} bytes)", a.bytes);
    }
    if fallback && !a.allow_fallback {
        bail!(
            "{r}\nthe connection fell back to plain TCP (the server is not MPTCP, or a middlebox \
             stripped the options); --allow-fallback accepts that"
        );
    }
    Ok(r)
}

fn report(
    last: &BTreeMap<u32, Subflow>,
    open: &[u32],
    ifs: &BTreeMap<std::net::Ipv4Addr, String>,
) -> Vec<SubflowReport> {
    let total: u64 = last.values().map(|s| s.bytes_acked).sum();
    let addr = |a: Option<SocketAddrV4>| a.map_or("(not IPv4)".into(), |a| a.to_string());
    last.values()
        .map(|s| SubflowReport {
            id: s.id,
            local: addr(s.local),
            remote: addr(s.remote),
            interface: s
                .local
                .and_then(|l| ifs.get(l.ip()).cloned())
                .unwrap_or_else(|| "?".into()),
            bytes_sent: s.bytes_sent,
            bytes_acked: s.bytes_acked,
            bytes_retrans: s.bytes_retrans,
            share_pct: if total == 0 {
                0.0
            } else {
                s.bytes_acked as f64 * 100.0 / total as f64
            },
            open: open.contains(&s.id),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(id: u32, local: &str, acked: u64) -> Subflow {
        Subflow {
            id,
            local: Some(local.parse().unwrap()),
            remote: Some("10.0.0.2:7030".parse().unwrap()),
            state: 1,
            bytes_sent: acked + 10,
            bytes_acked: acked,
            bytes_received: 0,
            bytes_retrans: 0,
            rtt_us: 0,
        }
    }

    /// Shares over every subflow seen; one that closed keeps its last
    /// numbers and says it closed.
    #[test]
    fn shares_and_closed_subflows() {
        let mut seen = Seen::default();
        seen.take(
            &[sub(1, "10.0.0.1:1", 100), sub(2, "10.0.8.1:2", 100)],
            Some(10),
        );
        seen.take(&[sub(1, "10.0.0.1:1", 300)], None);
        let ifs = BTreeMap::from([("10.0.0.1".parse().unwrap(), "eth0".to_string())]);
        let r = report(&seen.last, &[1], &ifs);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].share_pct, r[1].share_pct), (75.0, 25.0));
        assert_eq!(r[0].interface, "eth0");
        assert_eq!(r[1].interface, "?");
        assert!(r[0].open && !r[1].open);
        assert_eq!(seen.samples.len(), 1);
        assert_eq!(seen.samples[0].subflows[1].bytes_acked, 100);
    }
}
