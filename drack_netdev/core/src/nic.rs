//! Pooled NICs (DRack section 4.2): a host lends a physical NIC to the
//! rack, and every other host gets a virtual NIC (vNIC) on it. Frames of
//! a vNIC travel through the same pairs as drack0's, told apart by the
//! entry's [`Port`]; the owner transmits them on its NIC, and hands the
//! frames its NIC receives for a vNIC's MAC back the same way.
//!
//! What the owner publishes about its lent NICs is a [`NicTable`] in its
//! heartbeat line (only it writes it), with a CRC of its own: a table
//! that does not check is not evidence that a NIC went away, and the
//! readers keep what they knew.

use cxlf_common::checksum::crc32c;
use cxlf_common::le::{le16, le32, put};

/// The most NICs one host lends.
pub const NICS_MAX: usize = 4;

/// Where a frame of an entry goes, besides its destination host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Port {
    /// drack0's frame, for the destination's drack0.
    #[default]
    Link,
    /// A vNIC's frame for the destination's lent NIC `n`, to transmit.
    ToNic(u8),
    /// A frame the source's lent NIC `n` received for the destination's
    /// vNIC of that NIC.
    FromNic(u8),
}

/// [`Port::encode`]'s flag of a frame for the destination's NIC.
const PORT_TO_NIC: u8 = 0x80;

impl Port {
    /// The entry's port byte: 0, `1 + n` from a NIC, `0x81 + n` to one.
    pub fn encode(self) -> u8 {
        let n = |n: u8| n.min(NICS_MAX as u8).saturating_add(1);
        match self {
            Port::Link => 0,
            Port::FromNic(k) => n(k),
            Port::ToNic(k) => PORT_TO_NIC | n(k),
        }
    }

    /// The port of an entry's byte, or `None` for one this version does
    /// not know (a NIC beyond [`NICS_MAX`]).
    pub fn decode(b: u8) -> Option<Port> {
        let n = (b & !PORT_TO_NIC).checked_sub(1);
        match (b, n) {
            (0, _) => Some(Port::Link),
            (_, Some(k)) if usize::from(k) < NICS_MAX => Some(if b & PORT_TO_NIC != 0 {
                Port::ToNic(k)
            } else {
                Port::FromNic(k)
            }),
            _ => None,
        }
    }
}

/// The first bytes of every vNIC's MAC address: locally administered,
/// unicast, "DV" (drack0's are "DRK").
pub const VNIC_MAC_PREFIX: [u8; 3] = [0x02, 0x44, 0x56];

/// The MAC address of host `host`'s vNIC on NIC `nic` of host `owner`.
/// Every host computes every vNIC's address: the owner's unicast filter
/// holds them before any vNIC exists.
pub fn vnic_mac(owner: u32, nic: u8, host: u32) -> [u8; 6] {
    let [a, b, c] = VNIC_MAC_PREFIX;
    let byte = |v: u32| u8::try_from(v).unwrap_or(u8::MAX);
    [a, b, c, byte(owner), nic, byte(host)]
}

/// (owner, nic, host) of a vNIC MAC address, if it is one.
pub fn vnic_of(mac: &[u8]) -> Option<(u32, u8, u32)> {
    match mac {
        [a, b, c, owner, nic, host, ..] if [*a, *b, *c] == VNIC_MAC_PREFIX => {
            Some((u32::from(*owner), *nic, u32::from(*host)))
        }
        _ => None,
    }
}

/// What the owner of lent NIC `nic` does with a frame its NIC received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forward {
    /// Not for a vNIC: the owner's own stack takes it.
    Pass,
    /// For host `h`'s vNIC only: the owner's stack does not see it.
    One(u32),
    /// Broadcast or multicast: a copy to every vNIC, and the owner's
    /// stack takes it too.
    All,
}

/// Classifies a frame received on the owner's NIC `nic` by its
/// destination MAC address (`frame` from its first byte).
pub fn forward(frame: &[u8], owner: u32, nic: u8, hosts: u32) -> Forward {
    let Some(dst) = frame.get(..6) else {
        return Forward::Pass;
    };
    if dst[0] & 1 != 0 {
        return Forward::All;
    }
    match vnic_of(dst) {
        Some((o, n, h)) if o == owner && n == nic && h != owner && h < hosts => Forward::One(h),
        _ => Forward::Pass,
    }
}

/// Whether a vNIC frame from host `src` for the owner's NIC `nic` is
/// sent as that vNIC (its source MAC address): the owner transmits no
/// frame under another host's or the NIC's own address.
pub fn sent_by_vnic(frame: &[u8], owner: u32, nic: u8, src: u32) -> bool {
    frame.get(6..12) == Some(&vnic_mac(owner, nic, src)[..])
}

/// A lent NIC as its owner publishes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NicRecord {
    /// One more at each lending of this slot (0: not lent): a vNIC made
    /// for an earlier lending is remade.
    pub generation: u32,
    /// The NIC's MTU.
    pub mtu: u16,
    /// Whether the NIC has carrier (and is up).
    pub carrier: bool,
}

impl NicRecord {
    /// Whether a NIC is lent in this slot.
    pub fn lent(&self) -> bool {
        self.generation != 0
    }
}

/// A host's lent NICs, by slot (the `n` of [`Port`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NicTable {
    /// The slots.
    pub nics: [NicRecord; NICS_MAX],
}

/// Where the table sits in the heartbeat line, its bytes, and its CRC.
pub const NIC_TABLE_AT: usize = 24;
const NIC_RECORD_BYTES: usize = 8;
const NIC_TABLE_BYTES: usize = NICS_MAX * NIC_RECORD_BYTES;
/// Where the table's CRC32C sits.
pub const NIC_TABLE_CRC_AT: usize = NIC_TABLE_AT + NIC_TABLE_BYTES;
const _: () = assert!(NIC_TABLE_CRC_AT + 4 <= 64);

impl NicTable {
    /// Writes the table into a heartbeat line: per slot generation, MTU,
    /// flags (bit 0 carrier), a zero byte; then the CRC32C of the slots.
    pub fn encode_into(&self, line: &mut [u8; 64]) {
        for (i, r) in self.nics.iter().enumerate() {
            let at = NIC_TABLE_AT.saturating_add(i.saturating_mul(NIC_RECORD_BYTES));
            put(line, at, &r.generation.to_le_bytes());
            put(line, at.saturating_add(4), &r.mtu.to_le_bytes());
            put(line, at.saturating_add(6), &[u8::from(r.carrier), 0]);
        }
        let crc = crc32c(line.get(NIC_TABLE_AT..NIC_TABLE_CRC_AT).unwrap_or(&[]));
        put(line, NIC_TABLE_CRC_AT, &crc.to_le_bytes());
    }

    /// The table of a heartbeat line, or `None` if it does not check
    /// (its CRC, or a flag or reserved byte this version does not know).
    pub fn decode(line: &[u8; 64]) -> Option<NicTable> {
        let crc = crc32c(line.get(NIC_TABLE_AT..NIC_TABLE_CRC_AT).unwrap_or(&[]));
        if le32(line, NIC_TABLE_CRC_AT) != crc {
            return None;
        }
        let mut t = NicTable::default();
        for (i, r) in t.nics.iter_mut().enumerate() {
            let at = NIC_TABLE_AT.saturating_add(i.saturating_mul(NIC_RECORD_BYTES));
            let flags = line.get(at.saturating_add(6)).copied().unwrap_or(0xff);
            let zero = line.get(at.saturating_add(7)).copied().unwrap_or(0xff);
            if flags > 1 || zero != 0 {
                return None;
            }
            *r = NicRecord {
                generation: le32(line, at),
                mtu: le16(line, at.saturating_add(4)),
                carrier: flags == 1,
            };
        }
        Some(t)
    }
}
