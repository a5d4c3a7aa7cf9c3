//! The records' bytes in BAR2 (little-endian, at the offsets `repr(C)`
//! gives them), both ways. Decoding takes any bytes: what it yields is
//! checked before use (`check.rs`, `DeviceHeader::supported`).

use super::map::{header, CONFIG_BYTES, CONFIG_HEAD_BYTES, HEADER_BYTES, LOC_BYTES};
use super::map::{QUEUE_CONFIG_BYTES, QUEUE_STATS_BYTES};
use super::records::{DeviceHeader, DriverConfig, Loc, QueueConfig, QueueStats};
use crate::layout::{SIGNATURE, VERSION};
use cxlf_common::le::{bytes_at, le32, le64, put};

impl DeviceHeader {
    /// Whether this is a CXL-NIC whose layout this crate speaks (what a
    /// driver checks before it binds).
    pub fn supported(&self) -> bool {
        self.signature == SIGNATURE && self.version == VERSION
    }

    /// The header's bytes in BAR2 (reserved words zero).
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        put(&mut b, 0, &self.signature);
        put(&mut b, 8, &self.version.to_le_bytes());
        put(&mut b, 12, &self.queues_max.to_le_bytes());
        put(&mut b, 16, &self.mac);
        put(&mut b, 24, &self.bar_bytes.to_le_bytes());
        put(&mut b, 32, &self.data_offset.to_le_bytes());
        put(&mut b, 40, &self.host_bytes.to_le_bytes());
        put(&mut b, 48, &self.modes.to_le_bytes());
        put(&mut b, 52, &self.doorbell_peer.to_le_bytes());
        put(&mut b, header::LINK, &self.link.to_le_bytes());
        put(&mut b, header::HEARTBEAT, &self.heartbeat.to_le_bytes());
        put(&mut b, header::CFG_ACK, &self.cfg_ack.to_le_bytes());
        put(&mut b, header::CFG_STATUS, &self.cfg_status.to_le_bytes());
        put(&mut b, 72, &self.speed_mbps.to_le_bytes());
        put(&mut b, 76, &self.kvs_offset.to_le_bytes());
        put(&mut b, 80, &self.kvs_bytes.to_le_bytes());
        b
    }

    /// The header in `b` (reserved words read as zero), unchecked.
    pub fn decode(b: &[u8; HEADER_BYTES]) -> DeviceHeader {
        DeviceHeader {
            signature: bytes_at(b, 0),
            version: le32(b, 8),
            queues_max: le32(b, 12),
            mac: bytes_at(b, 16),
            bar_bytes: le64(b, 24),
            data_offset: le64(b, 32),
            host_bytes: le64(b, 40),
            modes: le32(b, 48),
            doorbell_peer: le32(b, 52),
            link: le32(b, header::LINK),
            heartbeat: le32(b, header::HEARTBEAT),
            cfg_ack: le32(b, header::CFG_ACK),
            cfg_status: le32(b, header::CFG_STATUS),
            speed_mbps: le32(b, 72),
            kvs_offset: le32(b, 76),
            kvs_bytes: le32(b, 80),
            _reserved: [0; 11],
        }
    }
}

impl Loc {
    fn encode_into(&self, b: &mut [u8], at: usize) {
        put(b, at, &self.space.to_le_bytes());
        put(b, at.saturating_add(4), &self._pad.to_le_bytes());
        put(b, at.saturating_add(8), &self.addr.to_le_bytes());
    }

    fn decode_from(b: &[u8], at: usize) -> Loc {
        Loc {
            space: le32(b, at),
            _pad: le32(b, at.saturating_add(4)),
            addr: le64(b, at.saturating_add(8)),
        }
    }
}

impl QueueConfig {
    fn locs(&self) -> [&Loc; 7] {
        [
            &self.tx_ring,
            &self.rx_ring,
            &self.rx_done,
            &self.driver_line,
            &self.device_line,
            &self.tx_area,
            &self.rx_area,
        ]
    }

    fn encode_into(&self, b: &mut [u8], at: usize) {
        for (i, loc) in self.locs().into_iter().enumerate() {
            loc.encode_into(b, at.saturating_add(i.saturating_mul(LOC_BYTES)));
        }
        put(b, at.saturating_add(112), &self.tx_area_len.to_le_bytes());
        put(b, at.saturating_add(116), &self.rx_area_len.to_le_bytes());
        put(b, at.saturating_add(120), &self._pad.to_le_bytes());
    }

    fn decode_from(b: &[u8], at: usize) -> QueueConfig {
        let loc = |i: usize| Loc::decode_from(b, at.saturating_add(i.saturating_mul(LOC_BYTES)));
        QueueConfig {
            tx_ring: loc(0),
            rx_ring: loc(1),
            rx_done: loc(2),
            driver_line: loc(3),
            device_line: loc(4),
            tx_area: loc(5),
            rx_area: loc(6),
            tx_area_len: le32(b, at.saturating_add(112)),
            rx_area_len: le32(b, at.saturating_add(116)),
            _pad: le64(b, at.saturating_add(120)),
        }
    }
}

impl DriverConfig {
    /// The config's bytes in BAR2, every queue pair's included.
    pub fn encode(&self) -> [u8; CONFIG_BYTES] {
        let mut b = [0u8; CONFIG_BYTES];
        let head = [
            self.gen,
            self.mode,
            self.queues,
            self.tx_size,
            self.rx_size,
            self.batch,
            self.flags,
        ];
        for (i, v) in head.iter().enumerate() {
            put(&mut b, i.saturating_mul(4), &v.to_le_bytes());
        }
        for (i, v) in self._reserved.iter().enumerate() {
            put(
                &mut b,
                28usize.saturating_add(i.saturating_mul(4)),
                &v.to_le_bytes(),
            );
        }
        for (i, q) in self.queue.iter().enumerate() {
            let at = CONFIG_HEAD_BYTES.saturating_add(i.saturating_mul(QUEUE_CONFIG_BYTES));
            q.encode_into(&mut b, at);
        }
        b
    }

    /// The config in `b`, reserved words and padding included (so that
    /// [`check_config`](crate::device::check_config) can refuse them), unchecked.
    pub fn decode(b: &[u8; CONFIG_BYTES]) -> DriverConfig {
        let mut c = DriverConfig {
            gen: le32(b, 0),
            mode: le32(b, 4),
            queues: le32(b, 8),
            tx_size: le32(b, 12),
            rx_size: le32(b, 16),
            batch: le32(b, 20),
            flags: le32(b, 24),
            ..DriverConfig::default()
        };
        for (i, r) in c._reserved.iter_mut().enumerate() {
            *r = le32(b, 28usize.saturating_add(i.saturating_mul(4)));
        }
        for (i, q) in c.queue.iter_mut().enumerate() {
            let at = CONFIG_HEAD_BYTES.saturating_add(i.saturating_mul(QUEUE_CONFIG_BYTES));
            *q = QueueConfig::decode_from(b, at);
        }
        c
    }
}

impl QueueStats {
    /// The counters in [`QUEUE_STATS_NAMES`](crate::device::QUEUE_STATS_NAMES)
    /// order.
    pub fn values(&self) -> [u64; 15] {
        [
            self.tx_empty_polls,
            self.tx_desc_reads,
            self.tx_frames,
            self.tx_bytes,
            self.tx_faults,
            self.rx_empty_polls,
            self.rx_desc_reads,
            self.rx_frames,
            self.rx_bytes,
            self.rx_faults,
            self.rx_no_buffer,
            self.completions,
            self.head_writes,
            self.interrupts,
            self.doorbells,
        ]
    }

    /// The counters' bytes in BAR2, 8 each in name order.
    pub fn encode(&self) -> [u8; QUEUE_STATS_BYTES] {
        let mut b = [0u8; QUEUE_STATS_BYTES];
        for (i, v) in self.values().iter().enumerate() {
            put(&mut b, i.saturating_mul(8), &v.to_le_bytes());
        }
        b
    }

    /// The counters in `b`, in name order (`ethtool -S`).
    pub fn decode(b: &[u8; QUEUE_STATS_BYTES]) -> [u64; 15] {
        core::array::from_fn(|i| le64(b, i.saturating_mul(8)))
    }

    /// The counters by name (`decode` gives them in name order).
    pub fn from_bytes(b: &[u8; QUEUE_STATS_BYTES]) -> QueueStats {
        let v = Self::decode(b);
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        QueueStats {
            tx_empty_polls: at(0),
            tx_desc_reads: at(1),
            tx_frames: at(2),
            tx_bytes: at(3),
            tx_faults: at(4),
            rx_empty_polls: at(5),
            rx_desc_reads: at(6),
            rx_frames: at(7),
            rx_bytes: at(8),
            rx_faults: at(9),
            rx_no_buffer: at(10),
            completions: at(11),
            head_writes: at(12),
            interrupts: at(13),
            doorbells: at(14),
            _reserved: 0,
        }
    }
}
