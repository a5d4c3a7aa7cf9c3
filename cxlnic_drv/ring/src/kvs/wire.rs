//! The request protocol: a GET or PUT in one UDP datagram over IPv4 on
//! Ethernet, to the port's MAC, the configured UDP port (and address, if
//! one is configured), and its answer.
//!
//! A message (request or answer) is a 12-byte header and its data,
//! multi-byte fields little-endian:
//!
//! ```text
//! 0  magic    "KV"
//! 2  version  1
//! 3  op       1 GET, 2 PUT; an answer sets bit 0x80
//! 4  id       u32, the client's, echoed in the answer
//! 8  key_len  u8, 1..=32 (answer: the status, 0 ok, 1 not found, 2 busy)
//! 9  zero
//! 10 val_len  u16, 0..=64 (GET: 0)
//! 12 key (request only), then value (PUT; a GET's answer when ok)
//! ```
//!
//! A frame that is not a datagram to the KVS port (another protocol,
//! address or port, an IPv4 fragment, a malformed IPv4 header) is not a
//! request and takes the normal receive path. A datagram to the port is
//! the device's: one that is not a well-formed request is dropped and
//! counted by [`Reject`], never passed on.

use cxlf_common::le::{le16, le32, put};

use super::map::{
    KEY_MAX, MAGIC, MSG_HEADER_BYTES, PROTO_VERSION, REQ_ANSWER, REQ_GET, REQ_PUT, VALUE_MAX,
};

const ETH_BYTES: usize = 14;
const IP_BYTES: usize = 20;
const UDP_BYTES: usize = 8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const PROTO_UDP: u8 = 17;

/// The most bytes of an answer frame.
pub const ANSWER_MAX: usize = ETH_BYTES + IP_BYTES + UDP_BYTES + MSG_HEADER_BYTES + VALUE_MAX;

/// Why a datagram to the KVS port was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Shorter than a header, or wrong magic or version.
    Header,
    /// Unknown opcode.
    Op,
    /// Key empty or too long, value too long, or a GET with a value.
    Key,
    /// UDP length past the IPv4 datagram, or the message's lengths past
    /// the datagram or short of it.
    Length,
    /// The IPv4 header checksum, or a UDP checksum that is not 0, is wrong.
    Checksum,
}

/// Where an answer goes: the request's addresses, swapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The client's MAC.
    pub mac: [u8; 6],
    /// The client's IPv4 address.
    pub client_ip: [u8; 4],
    /// The address the request went to.
    pub server_ip: [u8; 4],
    /// The client's UDP port.
    pub client_port: u16,
    /// The KVS port.
    pub server_port: u16,
}

/// A well-formed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// [`REQ_GET`] or [`REQ_PUT`].
    pub op: u8,
    /// The client's id.
    pub id: u32,
    /// The key, 1 to [`KEY_MAX`] bytes.
    pub key: &'a [u8],
    /// The value (PUT), 0 to [`VALUE_MAX`] bytes.
    pub value: &'a [u8],
    /// Where the answer goes.
    pub reply: Reply,
}

/// What a received frame is to the offload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// Not for the offload: the normal receive path.
    NotKvs,
    /// For the offload but malformed: drop it and count why.
    Reject(Reject),
    /// A request to serve.
    Request(Request<'a>),
}

/// The 16-bit ones' complement sum of `data` added to `sum` (unfolded).
fn sum16(mut sum: u32, data: &[u8]) -> u32 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([w[0], w[1]])));
    }
    if let [last] = words.remainder() {
        sum = sum.wrapping_add(u32::from(*last) << 8);
    }
    sum
}

/// Folds a sum into the ones' complement checksum.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff).wrapping_add(sum >> 16);
    }
    // Folded above: fits.
    !(sum as u16)
}

/// The UDP checksum of `udp` (header and data) between `src` and `dst`.
fn udp_checksum(src: &[u8], dst: &[u8], udp: &[u8]) -> u16 {
    let mut s = sum16(0, src);
    s = sum16(s, dst);
    s = s.wrapping_add(u32::from(PROTO_UDP));
    // A datagram is shorter than a frame, which is shorter than 2^16.
    s = s.wrapping_add(udp.len() as u32);
    let c = fold(sum16(s, udp));
    // 0 means "no checksum" in UDP over IPv4.
    if c == 0 {
        0xffff
    } else {
        c
    }
}

/// Whether `udp` (header and data, checksum included) sums right.
fn udp_checksum_ok(src: &[u8], dst: &[u8], udp: &[u8]) -> bool {
    let mut s = sum16(sum16(0, src), dst);
    s = s.wrapping_add(u32::from(PROTO_UDP));
    // A datagram is shorter than 2^16.
    s = s.wrapping_add(udp.len() as u32);
    fold(sum16(s, udp)) == 0
}

/// What `frame` is, for a port with MAC `mac` serving UDP `port` at
/// `ipv4` (all zero: any address).
pub fn parse(frame: &[u8], mac: [u8; 6], port: u16, ipv4: [u8; 4]) -> Parsed<'_> {
    let Some(eth) = frame.get(..ETH_BYTES) else {
        return Parsed::NotKvs;
    };
    if eth[..6] != mac || u16::from_be_bytes([eth[12], eth[13]]) != ETHERTYPE_IPV4 {
        return Parsed::NotKvs;
    }
    let ip_all = frame.get(ETH_BYTES..).unwrap_or(&[]);
    let Some(ip) = ip_all.get(..IP_BYTES) else {
        return Parsed::NotKvs;
    };
    let ihl = usize::from(ip[0] & 0xf).saturating_mul(4);
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
    if ip[0] >> 4 != 4 || ihl < IP_BYTES || total < ihl || total > ip_all.len() || frag != 0 {
        return Parsed::NotKvs;
    }
    let dst_ip = [ip[16], ip[17], ip[18], ip[19]];
    if ip[9] != PROTO_UDP || (ipv4 != [0; 4] && dst_ip != ipv4) {
        return Parsed::NotKvs;
    }
    let (Some(header), Some(datagram)) = (ip_all.get(..ihl), ip_all.get(ihl..total)) else {
        return Parsed::NotKvs;
    };
    let Some(udp) = datagram.get(..UDP_BYTES) else {
        return Parsed::NotKvs;
    };
    if u16::from_be_bytes([udp[2], udp[3]]) != port {
        return Parsed::NotKvs;
    }
    // From here on the datagram is the offload's.
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    let Some(udp_all) = datagram.get(..udp_len).filter(|_| udp_len >= UDP_BYTES) else {
        return Parsed::Reject(Reject::Length);
    };
    let src_ip = [ip[12], ip[13], ip[14], ip[15]];
    let udp_sum = u16::from_be_bytes([udp[6], udp[7]]);
    if fold(sum16(0, header)) != 0 || (udp_sum != 0 && !udp_checksum_ok(&src_ip, &dst_ip, udp_all))
    {
        return Parsed::Reject(Reject::Checksum);
    }
    let reply = Reply {
        mac: [eth[6], eth[7], eth[8], eth[9], eth[10], eth[11]],
        client_ip: src_ip,
        server_ip: dst_ip,
        client_port: u16::from_be_bytes([udp[0], udp[1]]),
        server_port: port,
    };
    message(udp_all.get(UDP_BYTES..).unwrap_or(&[]), reply)
}

/// The request in a datagram's payload `m`.
fn message(m: &[u8], reply: Reply) -> Parsed<'_> {
    let Some(h) = m.get(..MSG_HEADER_BYTES) else {
        return Parsed::Reject(Reject::Header);
    };
    if h[..2] != MAGIC || h[2] != PROTO_VERSION {
        return Parsed::Reject(Reject::Header);
    }
    let op = h[3];
    if op != REQ_GET && op != REQ_PUT {
        return Parsed::Reject(Reject::Op);
    }
    let key_len = usize::from(h[8]);
    let val_len = usize::from(le16(h, 10));
    if key_len == 0 || key_len > KEY_MAX || val_len > VALUE_MAX || (op == REQ_GET && val_len != 0) {
        return Parsed::Reject(Reject::Key);
    }
    let body = m.get(MSG_HEADER_BYTES..).unwrap_or(&[]);
    // Both at most 32 + 64: no overflow.
    if body.len() != key_len.saturating_add(val_len) {
        return Parsed::Reject(Reject::Length);
    }
    let (key, value) = body.split_at(key_len);
    Parsed::Request(Request {
        op,
        id: le32(h, 4),
        key,
        value,
        reply,
    })
}

/// The answer to `req` from a port with MAC `mac`: its frame in the first
/// `len` bytes of the array. `value` is sent with [`STATUS_OK`](super::STATUS_OK)
/// to a GET (anything past [`VALUE_MAX`] is left out).
pub fn answer_frame(
    req: &Request<'_>,
    mac: [u8; 6],
    status: u8,
    value: &[u8],
) -> ([u8; ANSWER_MAX], usize) {
    let value = value.get(..value.len().min(VALUE_MAX)).unwrap_or(&[]);
    let r = &req.reply;
    let mut f = [0u8; ANSWER_MAX];
    let msg_len = MSG_HEADER_BYTES.saturating_add(value.len());
    let udp_len = UDP_BYTES.saturating_add(msg_len);
    let ip_len = IP_BYTES.saturating_add(udp_len);
    let len = ETH_BYTES.saturating_add(ip_len);
    const IP: usize = ETH_BYTES;
    const UDP: usize = IP + IP_BYTES;
    const MSG: usize = UDP + UDP_BYTES;
    // Ethernet.
    put(&mut f, 0, &r.mac);
    put(&mut f, 6, &mac);
    put(&mut f, 12, &ETHERTYPE_IPV4.to_be_bytes());
    // IPv4: no options, don't fragment, TTL 64.
    // At most ANSWER_MAX: the lengths fit u16.
    put(&mut f, IP, &[0x45, 0]);
    put(&mut f, IP + 2, &(ip_len as u16).to_be_bytes());
    put(&mut f, IP + 6, &[0x40, 0, 64, PROTO_UDP]);
    put(&mut f, IP + 12, &r.server_ip);
    put(&mut f, IP + 16, &r.client_ip);
    let ip_sum = fold(sum16(0, f.get(IP..UDP).unwrap_or(&[])));
    put(&mut f, IP + 10, &ip_sum.to_be_bytes());
    // UDP.
    put(&mut f, UDP, &r.server_port.to_be_bytes());
    put(&mut f, UDP + 2, &r.client_port.to_be_bytes());
    put(&mut f, UDP + 4, &(udp_len as u16).to_be_bytes());
    // The message.
    put(&mut f, MSG, &MAGIC);
    put(&mut f, MSG + 2, &[PROTO_VERSION, req.op | REQ_ANSWER]);
    put(&mut f, MSG + 4, &req.id.to_le_bytes());
    put(&mut f, MSG + 8, &[status, 0]);
    put(&mut f, MSG + 10, &(value.len() as u16).to_le_bytes());
    put(&mut f, MSG + MSG_HEADER_BYTES, value);
    let sum = udp_checksum(&r.server_ip, &r.client_ip, f.get(UDP..len).unwrap_or(&[]));
    put(&mut f, UDP + 6, &sum.to_be_bytes());
    (f, len)
}
