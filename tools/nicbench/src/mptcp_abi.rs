//! The layouts of MPTCP's socket options as Linux 6.12 defines them
//! (`include/uapi/linux/mptcp.h`, `include/uapi/linux/tcp.h`), and the
//! parsing of what the kernel wrote into them. The sizes and offsets were
//! checked against the 6.12 headers of the kernel tree (`cargo xtask
//! kernel --print-dir`) compiled with gcc; the tests and the assertions
//! below hold the numbers.
//!
//! The kernel copies `min(ours, its own)` bytes of each record and says
//! how many (the sizes it writes back), so an older or newer kernel's
//! records are read with its stride, missing fields left at zero.
#![deny(clippy::arithmetic_side_effects)]

use std::mem::size_of;
use std::net::{Ipv4Addr, SocketAddrV4};

/// `include/uapi/linux/in.h`.
pub const IPPROTO_MPTCP: i32 = 262;
/// `include/linux/socket.h`.
pub const SOL_MPTCP: i32 = 284;
/// Socket options at `SOL_MPTCP` (`include/uapi/linux/mptcp.h`).
pub const MPTCP_INFO: i32 = 1;
pub const MPTCP_FULL_INFO: i32 = 4;
/// `mptcpi_flags`: the connection fell back to plain TCP.
pub const MPTCP_INFO_FLAG_FALLBACK: u32 = 1 << 0;
/// `sa_family` of an IPv4 address.
const AF_INET: u16 = 2;

/// Types the kernel fills byte by byte.
///
/// # Safety
///
/// Implementors are `#[repr(C)]` structs of integers and integer arrays
/// with their padding spelled out as fields: every byte pattern, all
/// zeroes included, is a valid value, and every byte is initialised.
pub unsafe trait Plain: Copy {
    fn zeroed() -> Self {
        // SAFETY: all-zero bytes are a valid `Self` (trait contract).
        unsafe { std::mem::zeroed() }
    }
}

/// A `T` from the first bytes of `bytes`; what is missing stays zero
/// (a record shorter than ours), what is beyond is ignored.
pub fn read_prefix<T: Plain>(bytes: &[u8]) -> T {
    let mut v = T::zeroed();
    let n = bytes.len().min(size_of::<T>());
    // SAFETY: `v` is `size_of::<T>()` writable bytes and `n` is no more;
    // the source is `n` readable bytes of a different object; any bytes
    // make a valid `T` (`Plain`).
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), (&mut v as *mut T).cast::<u8>(), n) };
    v
}

/// `struct mptcp_info`, 96 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // The whole layout, as the kernel writes it.
pub struct MptcpInfo {
    pub mptcpi_subflows: u8,
    pub mptcpi_add_addr_signal: u8,
    pub mptcpi_add_addr_accepted: u8,
    pub mptcpi_subflows_max: u8,
    pub mptcpi_add_addr_signal_max: u8,
    pub mptcpi_add_addr_accepted_max: u8,
    _pad0: [u8; 2],
    pub mptcpi_flags: u32,
    pub mptcpi_token: u32,
    pub mptcpi_write_seq: u64,
    pub mptcpi_snd_una: u64,
    pub mptcpi_rcv_nxt: u64,
    pub mptcpi_local_addr_used: u8,
    pub mptcpi_local_addr_max: u8,
    pub mptcpi_csum_enabled: u8,
    _pad1: u8,
    pub mptcpi_retransmits: u32,
    pub mptcpi_bytes_retrans: u64,
    pub mptcpi_bytes_sent: u64,
    pub mptcpi_bytes_received: u64,
    pub mptcpi_bytes_acked: u64,
    pub mptcpi_subflows_total: u8,
    _reserved: [u8; 3],
    pub mptcpi_last_data_sent: u32,
    pub mptcpi_last_data_recv: u32,
    pub mptcpi_last_ack_recv: u32,
}

/// `struct tcp_info`, 248 bytes in 6.12 (the two bitfield bytes as
/// plain bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // The whole layout, as the kernel writes it.
pub struct TcpInfo {
    pub tcpi_state: u8,
    pub tcpi_ca_state: u8,
    pub tcpi_retransmits: u8,
    pub tcpi_probes: u8,
    pub tcpi_backoff: u8,
    pub tcpi_options: u8,
    pub tcpi_wscale: u8,
    pub tcpi_flags: u8,
    pub tcpi_rto: u32,
    pub tcpi_ato: u32,
    pub tcpi_snd_mss: u32,
    pub tcpi_rcv_mss: u32,
    pub tcpi_unacked: u32,
    pub tcpi_sacked: u32,
    pub tcpi_lost: u32,
    pub tcpi_retrans: u32,
    pub tcpi_fackets: u32,
    pub tcpi_last_data_sent: u32,
    pub tcpi_last_ack_sent: u32,
    pub tcpi_last_data_recv: u32,
    pub tcpi_last_ack_recv: u32,
    pub tcpi_pmtu: u32,
    pub tcpi_rcv_ssthresh: u32,
    pub tcpi_rtt: u32,
    pub tcpi_rttvar: u32,
    pub tcpi_snd_ssthresh: u32,
    pub tcpi_snd_cwnd: u32,
    pub tcpi_advmss: u32,
    pub tcpi_reordering: u32,
    pub tcpi_rcv_rtt: u32,
    pub tcpi_rcv_space: u32,
    pub tcpi_total_retrans: u32,
    pub tcpi_pacing_rate: u64,
    pub tcpi_max_pacing_rate: u64,
    pub tcpi_bytes_acked: u64,
    pub tcpi_bytes_received: u64,
    pub tcpi_segs_out: u32,
    pub tcpi_segs_in: u32,
    pub tcpi_notsent_bytes: u32,
    pub tcpi_min_rtt: u32,
    pub tcpi_data_segs_in: u32,
    pub tcpi_data_segs_out: u32,
    pub tcpi_delivery_rate: u64,
    pub tcpi_busy_time: u64,
    pub tcpi_rwnd_limited: u64,
    pub tcpi_sndbuf_limited: u64,
    pub tcpi_delivered: u32,
    pub tcpi_delivered_ce: u32,
    pub tcpi_bytes_sent: u64,
    pub tcpi_bytes_retrans: u64,
    pub tcpi_dsack_dups: u32,
    pub tcpi_reord_seen: u32,
    pub tcpi_rcv_ooopack: u32,
    pub tcpi_snd_wnd: u32,
    pub tcpi_rcv_wnd: u32,
    pub tcpi_rehash: u32,
    pub tcpi_total_rto: u16,
    pub tcpi_total_rto_recoveries: u16,
    pub tcpi_total_rto_time: u32,
}

/// `struct mptcp_subflow_addrs`: two `__kernel_sockaddr_storage` unions
/// (128 bytes, 8-aligned), local then remote.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct SubflowAddrs {
    pub local: [u8; 128],
    pub remote: [u8; 128],
}

/// `struct mptcp_subflow_info`, 264 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SubflowInfo {
    pub id: u32,
    _pad: u32,
    pub addrs: SubflowAddrs,
}

/// `struct mptcp_full_info`, 136 bytes: the caller's buffer sizes and
/// addresses in, the kernel's sizes and the real subflow count out.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MptcpFullInfo {
    pub size_tcpinfo_kernel: u32,
    pub size_tcpinfo_user: u32,
    pub size_sfinfo_kernel: u32,
    pub size_sfinfo_user: u32,
    pub num_subflows: u32,
    pub size_arrays_user: u32,
    pub subflow_info: u64,
    pub tcp_info: u64,
    pub mptcp_info: MptcpInfo,
}

// SAFETY: each is #[repr(C)], integers and integer arrays only, padding
// spelled out (the sizes below equal the fields' sum).
unsafe impl Plain for MptcpInfo {}
// SAFETY: as above.
unsafe impl Plain for TcpInfo {}
// SAFETY: as above.
unsafe impl Plain for SubflowAddrs {}
// SAFETY: as above.
unsafe impl Plain for SubflowInfo {}
// SAFETY: as above.
unsafe impl Plain for MptcpFullInfo {}

// The 6.12 sizes (gcc on the kernel tree's uapi headers).
const _: () = assert!(size_of::<MptcpInfo>() == 96);
const _: () = assert!(size_of::<TcpInfo>() == 248);
const _: () = assert!(size_of::<SubflowAddrs>() == 256);
const _: () = assert!(size_of::<SubflowInfo>() == 264);
const _: () = assert!(size_of::<MptcpFullInfo>() == 136);

/// One subflow as `MPTCP_FULL_INFO` showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subflow {
    /// The kernel's id of the subflow, unique within its connection.
    pub id: u32,
    /// IPv4 addresses (`None` for another family: the guest kernel has
    /// no IPv6).
    pub local: Option<SocketAddrV4>,
    pub remote: Option<SocketAddrV4>,
    /// `TCP_ESTABLISHED` is 1.
    pub state: u8,
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub bytes_retrans: u64,
    pub rtt_us: u32,
}

/// An IPv4 `sockaddr` from a `sockaddr_storage`'s bytes.
fn ipv4(ss: &[u8; 128]) -> Option<SocketAddrV4> {
    if u16::from_ne_bytes([ss[0], ss[1]]) != AF_INET {
        return None;
    }
    let port = u16::from_be_bytes([ss[2], ss[3]]);
    Some(SocketAddrV4::new(
        Ipv4Addr::new(ss[4], ss[5], ss[6], ss[7]),
        port,
    ))
}

/// The subflows of an `MPTCP_FULL_INFO` answer: `header` as the kernel
/// wrote it back, `sf` and `tcp` the buffers it had the addresses of.
/// Records are `size_sfinfo_user` and `size_tcpinfo_user` bytes apart
/// (what the kernel used); at most `size_arrays_user` records, and no
/// more than the buffers hold. Returns them and the kernel's count
/// (more than returned when the arrays were too small).
pub fn parse_full_info(
    header: &MptcpFullInfo,
    sf: &[u8],
    tcp: &[u8],
) -> Result<(Vec<Subflow>, u32), String> {
    let sf_stride = header.size_sfinfo_user as usize;
    let tcp_stride = header.size_tcpinfo_user as usize;
    if sf_stride < size_of::<u32>() {
        return Err(format!(
            "subflow records of {sf_stride} bytes hold no id (MPTCP_FULL_INFO)"
        ));
    }
    let fits = |buf: &[u8], stride: usize| buf.len().checked_div(stride).unwrap_or(usize::MAX);
    let count = (header.num_subflows as usize)
        .min(header.size_arrays_user as usize)
        .min(fits(sf, sf_stride))
        .min(fits(tcp, tcp_stride));
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let record = |buf: &[u8], stride: usize| -> Result<Vec<u8>, String> {
            let start = i.checked_mul(stride).ok_or("record offset overflows")?;
            let end = start.checked_add(stride).ok_or("record end overflows")?;
            buf.get(start..end)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| format!("record {i} lies outside the buffer"))
        };
        let info: SubflowInfo = read_prefix(&record(sf, sf_stride)?);
        let t: TcpInfo = read_prefix(&record(tcp, tcp_stride)?);
        out.push(Subflow {
            id: info.id,
            local: ipv4(&info.addrs.local),
            remote: ipv4(&info.addrs.remote),
            state: t.tcpi_state,
            bytes_sent: t.tcpi_bytes_sent,
            bytes_acked: t.tcpi_bytes_acked,
            bytes_received: t.tcpi_bytes_received,
            bytes_retrans: t.tcpi_bytes_retrans,
            rtt_us: t.tcpi_rtt,
        });
    }
    Ok((out, header.num_subflows))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::arithmetic_side_effects)]
    use super::*;
    use std::mem::offset_of;

    /// Offsets from the 6.12 headers (gcc's offsetof), independent of
    /// the Rust declarations.
    #[test]
    fn offsets_are_the_kernels() {
        assert_eq!(offset_of!(MptcpInfo, mptcpi_flags), 8);
        assert_eq!(offset_of!(MptcpInfo, mptcpi_bytes_sent), 56);
        assert_eq!(offset_of!(MptcpInfo, mptcpi_bytes_acked), 72);
        assert_eq!(offset_of!(MptcpInfo, mptcpi_subflows_total), 80);
        assert_eq!(offset_of!(MptcpInfo, mptcpi_last_ack_recv), 92);
        assert_eq!(offset_of!(SubflowInfo, addrs), 8);
        assert_eq!(offset_of!(MptcpFullInfo, subflow_info), 24);
        assert_eq!(offset_of!(MptcpFullInfo, mptcp_info), 40);
        assert_eq!(offset_of!(TcpInfo, tcpi_rto), 8);
        assert_eq!(offset_of!(TcpInfo, tcpi_rtt), 68);
        assert_eq!(offset_of!(TcpInfo, tcpi_snd_cwnd), 80);
        assert_eq!(offset_of!(TcpInfo, tcpi_total_retrans), 100);
        assert_eq!(offset_of!(TcpInfo, tcpi_pacing_rate), 104);
        assert_eq!(offset_of!(TcpInfo, tcpi_bytes_acked), 120);
        assert_eq!(offset_of!(TcpInfo, tcpi_bytes_received), 128);
        assert_eq!(offset_of!(TcpInfo, tcpi_bytes_sent), 200);
        assert_eq!(offset_of!(TcpInfo, tcpi_bytes_retrans), 208);
        assert_eq!(offset_of!(TcpInfo, tcpi_total_rto_time), 244);
    }

    fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
        buf[at..at + bytes.len()].copy_from_slice(bytes);
    }

    /// A subflow record and a tcp_info record as the kernel lays them out
    /// (by the C offsets).
    fn records(id: u32, local: [u8; 4], lport: u16, sent: u64, acked: u64) -> (Vec<u8>, Vec<u8>) {
        let mut sf = vec![0u8; 264];
        put(&mut sf, 0, &id.to_ne_bytes());
        put(&mut sf, 8, &AF_INET.to_ne_bytes());
        put(&mut sf, 10, &lport.to_be_bytes());
        put(&mut sf, 12, &local);
        put(&mut sf, 8 + 128, &AF_INET.to_ne_bytes());
        put(&mut sf, 8 + 130, &7030u16.to_be_bytes());
        put(&mut sf, 8 + 132, &[10, 0, 0, 2]);
        let mut tcp = vec![0u8; 248];
        tcp[0] = 1;
        put(&mut tcp, 68, &1500u32.to_ne_bytes());
        put(&mut tcp, 120, &acked.to_ne_bytes());
        put(&mut tcp, 200, &sent.to_ne_bytes());
        (sf, tcp)
    }

    fn header(num: u32, arrays: u32, sf: usize, tcp: usize) -> MptcpFullInfo {
        let mut h = MptcpFullInfo::zeroed();
        h.num_subflows = num;
        h.size_arrays_user = arrays;
        h.size_sfinfo_user = sf as u32;
        h.size_tcpinfo_user = tcp as u32;
        h
    }

    #[test]
    fn two_subflows() {
        let (mut sf, mut tcp) = records(1, [10, 0, 0, 1], 40000, 5000, 4000);
        let (sf2, tcp2) = records(2, [10, 0, 8, 1], 40001, 7000, 6500);
        sf.extend(sf2);
        tcp.extend(tcp2);
        let (subs, total) = parse_full_info(&header(2, 2, 264, 248), &sf, &tcp).unwrap();
        assert_eq!(total, 2);
        assert_eq!(subs.len(), 2);
        assert_eq!(subs[0].id, 1);
        assert_eq!(subs[0].local, Some("10.0.0.1:40000".parse().unwrap()));
        assert_eq!(subs[0].remote, Some("10.0.0.2:7030".parse().unwrap()));
        assert_eq!((subs[0].bytes_sent, subs[0].bytes_acked), (5000, 4000));
        assert_eq!(subs[0].state, 1);
        assert_eq!(subs[0].rtt_us, 1500);
        assert_eq!(subs[1].local, Some("10.0.8.1:40001".parse().unwrap()));
        assert_eq!((subs[1].bytes_sent, subs[1].bytes_acked), (7000, 6500));
    }

    /// An older kernel's shorter tcp_info: records at its stride, the
    /// fields it lacks zero.
    #[test]
    fn shorter_records_use_the_kernels_stride() {
        let (mut sf, t1) = records(1, [10, 0, 0, 1], 1, 10, 9);
        let (sf2, t2) = records(2, [10, 0, 8, 1], 2, 20, 19);
        sf.extend(sf2);
        let mut tcp = t1[..192].to_vec();
        tcp.extend(&t2[..192]);
        let (subs, _) = parse_full_info(&header(2, 2, 264, 192), &sf, &tcp).unwrap();
        assert_eq!(subs[1].bytes_acked, 19);
        assert_eq!(subs[1].bytes_sent, 0, "beyond the kernel's record");
    }

    /// More subflows than room: what fits, and the real count.
    #[test]
    fn more_subflows_than_the_arrays_hold() {
        let (sf, tcp) = records(3, [10, 0, 0, 1], 1, 1, 1);
        let (subs, total) = parse_full_info(&header(5, 1, 264, 248), &sf, &tcp).unwrap();
        assert_eq!((subs.len(), total), (1, 5));
        // A count beyond the buffers is bounded by them.
        let (subs, _) = parse_full_info(&header(5, 9, 264, 248), &sf, &tcp).unwrap();
        assert_eq!(subs.len(), 1);
    }

    #[test]
    fn hostile_headers_are_refused_or_bounded() {
        let (sf, tcp) = records(1, [10, 0, 0, 1], 1, 1, 1);
        assert!(parse_full_info(&header(1, 1, 0, 248), &sf, &tcp).is_err());
        assert!(parse_full_info(&header(1, 1, 2, 248), &sf, &tcp).is_err());
        // A zero tcp stride: every record is empty, nothing overflows.
        let (subs, _) = parse_full_info(&header(1, 1, 264, 0), &sf, &tcp).unwrap();
        assert_eq!(subs[0].bytes_acked, 0);
        let (subs, _) = parse_full_info(
            &header(u32::MAX, u32::MAX, 264, u32::MAX as usize),
            &sf,
            &tcp,
        )
        .unwrap();
        assert!(subs.is_empty());
    }

    #[test]
    fn another_family_has_no_address() {
        let (mut sf, tcp) = records(1, [10, 0, 0, 1], 1, 1, 1);
        put(&mut sf, 8, &10u16.to_ne_bytes()); // AF_INET6
        let (subs, _) = parse_full_info(&header(1, 1, 264, 248), &sf, &tcp).unwrap();
        assert_eq!(subs[0].local, None);
        assert!(subs[0].remote.is_some());
    }

    #[test]
    fn mptcp_info_fallback_flag() {
        let mut b = vec![0u8; 96];
        put(&mut b, 8, &MPTCP_INFO_FLAG_FALLBACK.to_ne_bytes());
        b[0] = 2;
        let i: MptcpInfo = read_prefix(&b);
        assert_eq!(i.mptcpi_flags & MPTCP_INFO_FLAG_FALLBACK, 1);
        assert_eq!(i.mptcpi_subflows, 2);
        // A short answer leaves the rest zero.
        let i: MptcpInfo = read_prefix(&b[..4]);
        assert_eq!(i.mptcpi_flags, 0);
    }
}
