//! The KVS records, field by field, and their bytes (little-endian).

use cxlf_common::le::{bytes_at, le16, le32, le64, put};

use super::map::{
    CACHE_BUCKETS_MAX, HOST_BUCKETS_MAX, KEY_MAX, LINE_BYTES, OP_DEL, OP_PUT, RECORD_BYTES,
    STATS_BYTES, VALUE_MAX, WAYS,
};

/// One pair, as every table holds it: a host table slot, a cache entry, a
/// command or a log entry.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Host table and cache: the slot's seqlock version (even: stable,
    /// odd: being written). Command and log: the entry's ready tag
    /// (`index::ready_tag`), stored last.
    pub word: u32,
    /// [`OP_PUT`] or [`OP_DEL`] (commands, log); [`OP_PUT`] in a used slot,
    /// 0 in a free one.
    pub op: u8,
    /// Bytes of the key, 1 to [`KEY_MAX`].
    pub key_len: u8,
    /// Bytes of the value, 0 to [`VALUE_MAX`].
    pub val_len: u8,
    /// Zero.
    pub _pad: u8,
    /// The pair's host table slot (cache, commands, log; a host slot: 0).
    pub slot: u32,
    /// Zero.
    pub _pad2: u32,
    /// [`key_hash`](super::key_hash) of the key (cache, host table).
    pub hash: u64,
    /// Cache: when it was last used (the device's LRU clock). Log: the
    /// command it answers (`ready_tag` of its index), 0 for a network
    /// PUT. Otherwise 0.
    pub stamp: u64,
    /// The key in its first `key_len` bytes, then zeros.
    pub key: [u8; KEY_MAX],
    /// The value in its first `val_len` bytes, then zeros.
    pub value: [u8; VALUE_MAX],
}

const _: () = assert!(core::mem::size_of::<Record>() == RECORD_BYTES);

/// A command's or a log entry's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Write the pair.
    Put,
    /// Delete the key.
    Del,
}

impl Op {
    /// The op of a record's `op` byte, if it is one.
    pub fn from_u8(v: u8) -> Option<Op> {
        match v {
            OP_PUT => Some(Op::Put),
            OP_DEL => Some(Op::Del),
            _ => None,
        }
    }

    /// The record's `op` byte.
    pub fn to_u8(self) -> u8 {
        match self {
            Op::Put => OP_PUT,
            Op::Del => OP_DEL,
        }
    }
}

impl Default for Record {
    fn default() -> Record {
        Record {
            word: 0,
            op: 0,
            key_len: 0,
            val_len: 0,
            _pad: 0,
            slot: 0,
            _pad2: 0,
            hash: 0,
            stamp: 0,
            key: [0; KEY_MAX],
            value: [0; VALUE_MAX],
        }
    }
}

impl Record {
    /// A record of `key` and `value`, or `None` if either is too long (or
    /// the key empty). Fields other than the pair are zero.
    pub fn pair(key: &[u8], value: &[u8]) -> Option<Record> {
        if key.is_empty() || key.len() > KEY_MAX || value.len() > VALUE_MAX {
            return None;
        }
        let mut r = Record::default();
        put(&mut r.key, 0, key);
        put(&mut r.value, 0, value);
        // Both fit a u8: checked just above.
        r.key_len = key.len() as u8;
        r.val_len = value.len() as u8;
        Some(r)
    }

    /// The key (never past [`KEY_MAX`], whatever `key_len` says).
    pub fn key(&self) -> &[u8] {
        let n = usize::from(self.key_len).min(KEY_MAX);
        self.key.get(..n).unwrap_or(&[])
    }

    /// The value (never past [`VALUE_MAX`]).
    pub fn value(&self) -> &[u8] {
        let n = usize::from(self.val_len).min(VALUE_MAX);
        self.value.get(..n).unwrap_or(&[])
    }

    /// Whether the lengths are in range and the padding past them is zero:
    /// what a side checks before it trusts a record the other wrote.
    pub fn well_formed(&self) -> bool {
        let (k, v) = (usize::from(self.key_len), usize::from(self.val_len));
        (1..=KEY_MAX).contains(&k)
            && v <= VALUE_MAX
            && self.key.iter().skip(k).all(|b| *b == 0)
            && self.value.iter().skip(v).all(|b| *b == 0)
    }

    /// Whether this record holds `key`.
    pub fn holds(&self, key: &[u8]) -> bool {
        self.op == OP_PUT && self.key() == key
    }

    /// The record's bytes (`word` at 0).
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        put(&mut b, 0, &self.word.to_le_bytes());
        put(&mut b, 4, &[self.op, self.key_len, self.val_len, 0]);
        put(&mut b, 8, &self.slot.to_le_bytes());
        put(&mut b, 16, &self.hash.to_le_bytes());
        put(&mut b, 24, &self.stamp.to_le_bytes());
        put(&mut b, 32, &self.key);
        put(&mut b, 32 + KEY_MAX, &self.value);
        b
    }

    /// The record in `b`, unchecked (see [`Record::well_formed`]).
    pub fn decode(b: &[u8; RECORD_BYTES]) -> Record {
        Record {
            word: le32(b, 0),
            op: b[4],
            key_len: b[5],
            val_len: b[6],
            _pad: 0,
            slot: le32(b, 8),
            _pad2: 0,
            hash: le64(b, 16),
            stamp: le64(b, 24),
            key: bytes_at(b, 32),
            value: bytes_at(b, 32 + KEY_MAX),
        }
    }
}

/// The driver's KVS config (KVS area offset 0), `gen` stored last.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KvsConfig {
    /// A new value for each config; the device answers it in
    /// [`DeviceLine::cfg_ack`].
    pub gen: u32,
    /// 1: serve requests; 0: stop (the device drops its cache).
    pub enable: u32,
    /// The UDP port requests come to.
    pub udp_port: u16,
    /// Zero.
    pub _pad: u16,
    /// The IPv4 address requests come to, network order; all zero: any.
    pub ipv4: [u8; 4],
    /// Cache buckets, a power of two up to [`CACHE_BUCKETS_MAX`].
    pub cache_buckets: u32,
    /// Host table buckets, a power of two up to [`HOST_BUCKETS_MAX`].
    pub host_buckets: u32,
    /// The host table's DMA address (64-byte aligned).
    pub host_table: u64,
    /// The hash's key ([`key_hash`](super::key_hash)).
    pub hash_seed: u64,
}

/// Why the device refused a KVS config ([`DeviceLine::cfg_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// `enable` is neither 0 nor 1, or the port is 0.
    Enable = 1,
    /// A bucket count is not a power of two in range.
    Buckets = 2,
    /// The host table is not aligned or not inside host memory.
    HostTable = 3,
}

/// The device's check of `cfg`, given the bytes of host memory it
/// reaches. A config that disables needs nothing else.
pub fn check_config(cfg: &KvsConfig, host_bytes: u64) -> Result<(), ConfigError> {
    match cfg.enable {
        0 => return Ok(()),
        1 if cfg.udp_port != 0 => {}
        _ => return Err(ConfigError::Enable),
    }
    let pow2 = |n: u32, max: u32| n.is_power_of_two() && n <= max;
    if !pow2(cfg.cache_buckets, CACHE_BUCKETS_MAX) || !pow2(cfg.host_buckets, HOST_BUCKETS_MAX) {
        return Err(ConfigError::Buckets);
    }
    let bytes = u64::from(cfg.host_buckets)
        .saturating_mul(u64::from(WAYS))
        .saturating_mul(RECORD_BYTES as u64);
    match cfg.host_table.checked_add(bytes) {
        Some(end) if cfg.host_table % 64 == 0 && end <= host_bytes => Ok(()),
        _ => Err(ConfigError::HostTable),
    }
}

impl KvsConfig {
    /// The config's bytes (`gen` at 0).
    pub fn encode(&self) -> [u8; LINE_BYTES] {
        let mut b = [0u8; LINE_BYTES];
        put(&mut b, 0, &self.gen.to_le_bytes());
        put(&mut b, 4, &self.enable.to_le_bytes());
        put(&mut b, 8, &self.udp_port.to_le_bytes());
        put(&mut b, 12, &self.ipv4);
        put(&mut b, 16, &self.cache_buckets.to_le_bytes());
        put(&mut b, 20, &self.host_buckets.to_le_bytes());
        put(&mut b, 24, &self.host_table.to_le_bytes());
        put(&mut b, 32, &self.hash_seed.to_le_bytes());
        b
    }

    /// The config in `b`, unchecked (see [`check_config`]).
    pub fn decode(b: &[u8; LINE_BYTES]) -> KvsConfig {
        KvsConfig {
            gen: le32(b, 0),
            enable: le32(b, 4),
            udp_port: le16(b, 8),
            _pad: 0,
            ipv4: bytes_at(b, 12),
            cache_buckets: le32(b, 16),
            host_buckets: le32(b, 20),
            host_table: le64(b, 24),
            hash_seed: le64(b, 32),
        }
    }
}

/// The driver's KVS control line.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverLine {
    /// Commands posted (the device polls the next one's tag; this is for
    /// the reader of a dump).
    pub cmd_tail: u32,
    /// Log entries the driver has applied to the host table.
    pub log_head: u32,
    /// Odd while the driver moves a pair between its two host buckets
    /// (and bumped again after): a lookup that found nothing while it
    /// changed may have missed the pair, and is retried.
    pub moves: u32,
}

/// The device's KVS control line.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceLine {
    /// The KVS config generation it answered last.
    pub cfg_ack: u32,
    /// 0 (taken) or a [`ConfigError`] code.
    pub cfg_status: u32,
    /// Commands it has carried out.
    pub cmd_head: u32,
    /// Log entries it has written.
    pub log_tail: u32,
}

impl DriverLine {
    /// The line's bytes.
    pub fn encode(&self) -> [u8; LINE_BYTES] {
        let mut b = [0u8; LINE_BYTES];
        put(&mut b, 0, &self.cmd_tail.to_le_bytes());
        put(&mut b, 4, &self.log_head.to_le_bytes());
        put(&mut b, 8, &self.moves.to_le_bytes());
        b
    }

    /// The line in `b`, unchecked.
    pub fn decode(b: &[u8; LINE_BYTES]) -> DriverLine {
        DriverLine {
            cmd_tail: le32(b, 0),
            log_head: le32(b, 4),
            moves: le32(b, 8),
        }
    }
}

impl DeviceLine {
    /// The line's bytes.
    pub fn encode(&self) -> [u8; LINE_BYTES] {
        let mut b = [0u8; LINE_BYTES];
        put(&mut b, 0, &self.cfg_ack.to_le_bytes());
        put(&mut b, 4, &self.cfg_status.to_le_bytes());
        put(&mut b, 8, &self.cmd_head.to_le_bytes());
        put(&mut b, 12, &self.log_tail.to_le_bytes());
        b
    }

    /// The line in `b`, unchecked (the driver takes the log tail only
    /// within what the ring holds).
    pub fn decode(b: &[u8; LINE_BYTES]) -> DeviceLine {
        DeviceLine {
            cfg_ack: le32(b, 0),
            cfg_status: le32(b, 4),
            cmd_head: le32(b, 8),
            log_tail: le32(b, 12),
        }
    }
}

/// Defines [`KvsStats`] and its names from one list.
macro_rules! kvs_stats {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// The device's KVS counters (KVS area [`STATS_OFFSET`](super::STATS_OFFSET)),
        /// what Fig. 9 of the paper counts and what it refused.
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct KvsStats {
            $($(#[$doc])* pub $name: u64,)*
        }

        /// The names of [`KvsStats`]' counters, in order (`ethtool -S`
        /// prefixes them with `kvs_`).
        pub const KVS_STATS_NAMES: &[&str] = &[$(stringify!($name),)*];

        impl KvsStats {
            /// The counters, in order.
            pub fn values(&self) -> [u64; KVS_STATS_NAMES.len()] {
                [$(self.$name,)*]
            }

            /// The counters' bytes.
            pub fn encode(&self) -> [u8; STATS_BYTES] {
                let mut b = [0u8; STATS_BYTES];
                for (i, v) in self.values().iter().enumerate() {
                    put(&mut b, i.saturating_mul(8), &v.to_le_bytes());
                }
                b
            }

            /// The counters in `b`.
            pub fn decode(b: &[u8; STATS_BYTES]) -> KvsStats {
                let mut at = 0usize;
                let mut next = || {
                    let v = le64(b, at);
                    at = at.saturating_add(8);
                    v
                };
                KvsStats { $($name: next(),)* }
            }
        }
    };
}

kvs_stats! {
    /// Frames to the KVS port taken as requests.
    requests,
    /// GET requests served.
    gets,
    /// PUT requests served.
    puts,
    /// Requests answered from the cache (device bias, no host access).
    hits,
    /// Requests answered from a log entry the driver has not applied yet
    /// (device memory, no host access).
    log_hits,
    /// Requests that went to the host table (host bias).
    misses,
    /// Host table slots read (host-bias reads, each try counted).
    host_reads,
    /// Slot reads that met the driver mid-write and were retried.
    torn_reads,
    /// Requests answered "not found".
    not_found,
    /// Requests answered "busy" (log full, or the slot kept changing).
    busy,
    /// Pairs brought into the cache.
    installs,
    /// Pairs the cache let go to make room (LRU in their bucket).
    evictions,
    /// Host commands carried out.
    commands,
    /// Log entries written.
    log_records,
    /// Answers sent.
    answers,
    /// Requests dropped: bad magic or version, or shorter than a header.
    bad_header,
    /// Requests dropped: unknown opcode.
    bad_op,
    /// Requests dropped: key empty or longer than `KEY_MAX`, or a value
    /// longer than `VALUE_MAX` (or any with a GET).
    bad_key,
    /// Requests dropped: lengths past the datagram, or bytes after them.
    bad_length,
    /// Requests dropped: IPv4 or UDP checksum wrong.
    bad_checksum,
    /// Host commands refused (malformed; the device skips them).
    bad_commands,
    /// The driver's log head outside what the device wrote (ignored).
    bad_log_head,
    /// Answers that could not be sent.
    answers_dropped,
}

const _: () = assert!(KVS_STATS_NAMES.len() * 8 <= STATS_BYTES);
