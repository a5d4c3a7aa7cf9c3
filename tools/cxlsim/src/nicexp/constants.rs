//! Every constant of the NIC latency model, with its source. Times in
//! nanoseconds. "ESF" is `esf-cxl-simulator` (Table III), "CXL-NIC" is
//! `cxl-nic-micro25` (section, figure); "ours" marks a value no source
//! gives, chosen and said so.

use crate::config::{
    TABLE3_BUS_NS, TABLE3_CACHE_NS, TABLE3_CONTROLLER_NS, TABLE3_PORT_NS, TABLE3_REQUESTER_NS,
    TABLE3_SWITCHING_NS,
};

/// ESF Table III: requester process time (a core or a device engine
/// issuing a request).
pub const REQUESTER_NS: f64 = TABLE3_REQUESTER_NS;
/// ESF Table III: cache access (host LLC, the device's DCOH cache).
pub const CACHE_NS: f64 = TABLE3_CACHE_NS;
/// ESF Table III: device controller (the host's home agent, the NIC's
/// memory controller).
pub const CONTROLLER_NS: f64 = TABLE3_CONTROLLER_NS;
/// ESF Table III: PCIe port delay, paid entering a port.
pub const PORT_NS: f64 = TABLE3_PORT_NS;
/// ESF Table III: bus time per hop.
pub const BUS_NS: f64 = TABLE3_BUS_NS;
/// ESF Table III: switching time, per switch crossed.
pub const SWITCHING_NS: f64 = TABLE3_SWITCHING_NS;

/// DRAM access to an open row and to another row: cxlsim's memory model
/// defaults (DDR5-4800 timings, ours; ESF gives none).
pub const DRAM_ROW_HIT_NS: f64 = 18.0;
pub const DRAM_ROW_MISS_NS: f64 = 50.0;
/// Share of DRAM accesses that hit an open row (ours).
pub const DRAM_ROW_HIT_P: f64 = 0.5;

/// CXL-NIC §3.2: "we estimate the standard DMA latency in Figure 3 to be
/// around 1 us, consistent with prior findings [37, 48]": a DMA read of
/// 64 bytes, request to data back in the NIC.
pub const DMA_READ_NS: f64 = 1000.0;
/// A posted DMA write until it is visible in host memory: one crossing,
/// half the read's round trip (ours, from the read's structure).
pub const DMA_WRITE_NS: f64 = DMA_READ_NS / 2.0;
/// An MMIO doorbell (posted write of the tail register) until the NIC
/// sees it: one crossing as a DMA write (ours). CXL-NIC §3.2 footnote 3:
/// CXL.io writes perform as PCIe MMIO, so a doorbell costs this in every
/// mode.
pub const MMIO_WRITE_NS: f64 = DMA_WRITE_NS;
/// The NIC issuing one more posted write behind another (PCIe orders
/// posted writes, so the second does not wait for the first): the
/// requester's process time (ESF Table III).
pub const POSTED_ISSUE_NS: f64 = REQUESTER_NS;

/// CXL-NIC §3.2: interrupt overheads of "5-10 us [30]": an interrupt
/// costs a time uniform in this range.
pub const INTERRUPT_MIN_NS: f64 = 5000.0;
pub const INTERRUPT_MAX_NS: f64 = 10000.0;

/// CXL-NIC §3.2: from 64 B to 9000 B, latency grows ~1.3x for DOCA-DMA
/// reads and writes, 1.1x for CXL NC-write, 1.2x for CXL NC-read. The
/// model interpolates linearly in bytes between the two sizes.
pub const SIZE_GROWTH_FROM: u32 = 64;
pub const SIZE_GROWTH_TO: u32 = 9000;
pub const DMA_SIZE_GROWTH: f64 = 1.3;
pub const CXL_WRITE_SIZE_GROWTH: f64 = 1.1;
pub const CXL_READ_SIZE_GROWTH: f64 = 1.2;

/// CXL-NIC §3.1, Fig. 3: PCIe operations are 52 % of the loopback latency
/// of 64-byte packets and 45 % of 1500-byte ones. The model sizes the
/// host's software time (poll loop, copy, descriptor handling) so that
/// its PCIe mode has exactly these shares (`calibrate`), and takes that
/// time as the same in every mode. Sizes in between interpolate.
pub const FIG3_PCIE_SHARE: [(u32, f64); 2] = [(64, 0.52), (1500, 0.45)];

/// Jitter (ours: no source gives per-transaction spreads): each fabric
/// transaction takes its base time plus an exponential tail of mean
/// `JITTER_CV` x base. Poll phases (uniform over a poll) and interrupts
/// (uniform over CXL-NIC's 5-10 us) are the structural spread.
pub const JITTER_CV: f64 = 0.1;

/// KVS (CXL-NIC §5.4, Fig. 15): keys in the store and the share of them
/// the NIC memory holds (ours); the Zipfian workload's skew (the usual
/// YCSB 0.99, ours: the paper does not give it).
pub const KVS_KEYS: u32 = 1_000_000;
pub const KVS_NIC_SHARE: f64 = 0.3;
pub const KVS_ZIPF_THETA: f64 = 0.99;

/// Frames replayed per mode and request type, the seed, and the spacing
/// of frames (one at a time, the paper's unloaded loopback).
pub const FRAMES: u32 = 20_000;
pub const SEED: u64 = 29;
pub const FRAME_SPACING_NS: f64 = 100_000.0;

/// What the paper reports, for the comparison (ratios to its PCIe NIC,
/// BF-3): Fig. 10 Comb. 0 (type1, all NC requests): median -46 % (64 B)
/// and -32 % (1500 B), p99 -49 % and -38 % (§7.1).
pub const PAPER_TYPE1_RR64: (f64, f64) = (0.54, 0.51);
pub const PAPER_TYPE1_RR1500: (f64, f64) = (0.68, 0.62);
/// Fig. 15 (§7.2): the type2 KVS against the SNIC, Zipfian read-only:
/// median -18 %, p99 -39 %.
pub const PAPER_KVS_ZIPF: (f64, f64) = (0.82, 0.61);
/// Fig. 15: from Zipfian to uniform the CXL-NIC's median rises 20 % on
/// average, its p99 hardly moves.
pub const PAPER_KVS_UNIFORM_MEDIAN_RISE: f64 = 0.20;
/// Fig. 10, Comb. 2 against Comb. 1: CO-read TxD polling adds 19 % (64 B)
/// and 13 % (1500 B) to the median loopback.
pub const PAPER_CO_POLL_PENALTY: (f64, f64) = (0.19, 0.13);
