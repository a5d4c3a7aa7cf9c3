//! The transactions of one frame (or KVS request), in order, per mode and
//! request type: what the replay times. Each step has a distribution
//! built from the constants (`constants.rs`) and a side (the NIC's and
//! the link's, or the host's) for the Fig. 3 calibration.

use super::constants::*;
use super::counts::{per_frame, Checked, Milli};
use anyhow::{bail, Context, Result};
use serde::Serialize;

/// The NIC modes (`cxlnic.rst`), and type1 with CO-read TX polling (the
/// paper's Fig. 6 right, Fig. 10 Comb. 2), which takes type1's counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Pcie,
    Type1,
    Type1Co,
    Type2,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Pcie, Mode::Type1, Mode::Type1Co, Mode::Type2];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Pcie => "pcie",
            Mode::Type1 => "type1",
            Mode::Type1Co => "type1-co",
            Mode::Type2 => "type2",
        }
    }
}

/// The request types: the loopback of Fig. 10 at 64 and 1500 bytes, and
/// a KVS GET (Fig. 15) with the Zipfian and the uniform workload's hit
/// ratio, or with the counts' own (`Kvs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Request {
    Rr64,
    Rr1500,
    KvsZipf,
    KvsUniform,
    Kvs,
}

impl Request {
    pub fn name(self) -> &'static str {
        match self {
            Request::Rr64 => "rr64",
            Request::Rr1500 => "rr1500",
            Request::KvsZipf => "kvs_zipf",
            Request::KvsUniform => "kvs_uniform",
            Request::Kvs => "kvs",
        }
    }
}

/// A step's time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// `fixed` plus `dram` DRAM accesses (row hit or miss), all times
    /// (1 + an exponential of mean `cv`): a fabric transaction.
    Fabric { fixed: f64, dram: u8 },
    /// Uniform in [lo, hi): a poll phase, an interrupt.
    Uniform(f64, f64),
    /// Always this: the host's software time.
    Fixed(f64),
}

impl Dist {
    /// The expected time, for a jitter of mean `cv`.
    pub fn mean(self, cv: f64) -> f64 {
        match self {
            Dist::Fabric { fixed, dram } => {
                let d =
                    DRAM_ROW_HIT_P * DRAM_ROW_HIT_NS + (1.0 - DRAM_ROW_HIT_P) * DRAM_ROW_MISS_NS;
                (fixed + f64::from(dram) * d) * (1.0 + cv)
            }
            Dist::Uniform(lo, hi) => (lo + hi) / 2.0,
            Dist::Fixed(v) => v,
        }
    }

    /// The shortest time it can take (every DRAM access a row hit, no
    /// jitter) and the longest without jitter (every one a row miss).
    pub fn range(self) -> (f64, f64) {
        match self {
            Dist::Fabric { fixed, dram } => (
                fixed + f64::from(dram) * DRAM_ROW_HIT_NS,
                fixed + f64::from(dram) * DRAM_ROW_MISS_NS,
            ),
            Dist::Uniform(lo, hi) => (lo, hi),
            Dist::Fixed(v) => (v, v),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The NIC and the interconnect (Fig. 3's "PCIe operations").
    Nic,
    /// The host CPU between seeing a frame and posting it back.
    Host,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub what: &'static str,
    pub dist: Dist,
    pub side: Side,
}

/// Model parameters: jitter and switches between the NIC and the host.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Params {
    /// Mean of the exponential jitter, as a share of a transaction's time.
    pub cv: f64,
    /// CXL switches between the NIC and its host (0: attached directly,
    /// as the paper's NIC).
    pub hops: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            cv: JITTER_CV,
            hops: 0,
        }
    }
}

impl Params {
    pub fn check(&self) -> Result<()> {
        if !(0.0..=10.0).contains(&self.cv) {
            bail!("jitter {} must be within 0..=10", self.cv);
        }
        if self.hops > 16 {
            bail!("{} switch hops: at most 16", self.hops);
        }
        Ok(())
    }

    /// One way between the NIC and the host: the bus and the receiving
    /// port, and per switch its port, switching and one more bus.
    fn crossing(&self) -> f64 {
        BUS_NS + PORT_NS + f64::from(self.hops) * (BUS_NS + PORT_NS + SWITCHING_NS)
    }
}

/// Size factor of a transfer of `bytes` (CXL-NIC §3.2's growth from 64 to
/// 9000 bytes, linear in between).
pub fn growth(bytes: u32, at_9000: f64) -> f64 {
    let b = bytes.clamp(SIZE_GROWTH_FROM, SIZE_GROWTH_TO);
    1.0 + (at_9000 - 1.0) * f64::from(b - SIZE_GROWTH_FROM)
        / f64::from(SIZE_GROWTH_TO - SIZE_GROWTH_FROM)
}

const fn fabric(fixed: f64, dram: u8) -> Dist {
    Dist::Fabric { fixed, dram }
}

/// The transactions, composed of ESF Table III's parts.
struct Tx {
    p: Params,
}

impl Tx {
    fn x(&self) -> f64 {
        self.p.crossing()
    }
    /// A host core reads a line from its DRAM (cache miss).
    fn host_local_read(&self) -> Dist {
        fabric(REQUESTER_NS + CACHE_NS + CONTROLLER_NS, 1)
    }
    /// A host core reads a line in its LLC (DDIO or NC-P put it there).
    fn host_llc_read(&self) -> Dist {
        fabric(REQUESTER_NS + CACHE_NS, 0)
    }
    /// A host core stores a line (write-back cache).
    fn host_store(&self) -> Dist {
        fabric(REQUESTER_NS + CACHE_NS, 0)
    }
    /// D2H NC-read of a line the host holds in its cache.
    fn d2h_read_cached(&self) -> Dist {
        fabric(REQUESTER_NS + 2.0 * self.x() + CONTROLLER_NS + CACHE_NS, 0)
    }
    /// D2H read of a line in host DRAM.
    fn d2h_read_dram(&self) -> Dist {
        fabric(REQUESTER_NS + 2.0 * self.x() + CONTROLLER_NS, 1)
    }
    /// D2H CO-read: as a read, plus the home agent taking the line from
    /// the host's cache (a snoop: controller and cache).
    fn d2h_read_co(&self, dram: u8) -> Dist {
        let base = if dram > 0 { 0.0 } else { CACHE_NS };
        fabric(
            REQUESTER_NS + 2.0 * self.x() + CONTROLLER_NS + base + CONTROLLER_NS + CACHE_NS,
            dram,
        )
    }
    /// D2H NC-write or NC-P until its GO: the next write may go (CXL.cache
    /// does not order a device's writes).
    fn d2h_write(&self) -> Dist {
        fabric(REQUESTER_NS + 2.0 * self.x() + CONTROLLER_NS, 0)
    }
    /// The NIC reads its own memory in device bias (no host check).
    fn d2d_read_devbias(&self) -> Dist {
        fabric(REQUESTER_NS + CONTROLLER_NS, 1)
    }
    /// A hit in the NIC's DCOH cache (RxD prefetched by CS-read).
    fn dcoh_hit(&self) -> Dist {
        fabric(REQUESTER_NS + CACHE_NS, 0)
    }
    /// A host nt-store into NIC memory over CXL.mem, waited for (sfence)
    /// before the descriptor is written.
    fn h2d_write(&self) -> Dist {
        fabric(REQUESTER_NS + 2.0 * self.x() + CONTROLLER_NS, 0)
    }
    /// The host's store to a line the NIC owns (CO-read polling): a snoop
    /// to the NIC's cache and back.
    fn co_invalidate(&self) -> Dist {
        fabric(2.0 * self.x() + CACHE_NS, 0)
    }
}

/// A KVS lookup's two reads (bucket, value).
type Lookup = [(&'static str, Dist); 2];

/// A GET's reads on a hit and on a miss (CXL-NIC §5.4): type2 probes
/// its own memory in device bias and fetches a miss from the host with a
/// CO-read; type1 has no memory of its own and reads the host's table;
/// the SNIC's ARM cores read their DRAM and fetch a miss by RDMA (the
/// paper's DMA figure).
fn kvs_lookups(mode: Mode, t: &Tx) -> (Lookup, Lookup) {
    match mode {
        Mode::Type2 => (
            [
                ("bucket D2D CS-read", t.d2d_read_devbias()),
                ("value D2D NC-read", t.d2d_read_devbias()),
            ],
            [
                ("bucket D2D CS-read", t.d2d_read_devbias()),
                ("pair D2H CO-read", t.d2h_read_co(1)),
            ],
        ),
        Mode::Type1 | Mode::Type1Co => {
            let l = [
                ("bucket D2H read", t.d2h_read_dram()),
                ("value D2H read", t.d2h_read_dram()),
            ];
            (l, l)
        }
        Mode::Pcie => (
            [
                ("bucket SNIC DRAM read", t.host_local_read()),
                ("value SNIC DRAM read", t.host_local_read()),
            ],
            [
                ("bucket SNIC DRAM read", t.host_local_read()),
                ("pair RDMA read", fabric(DMA_READ_NS, 0)),
            ],
        ),
    }
}

fn scaled(d: Dist, f: f64) -> Dist {
    match d {
        Dist::Fabric { fixed, dram } => Dist::Fabric {
            fixed: fixed * f,
            dram,
        },
        Dist::Uniform(lo, hi) => Dist::Uniform(lo * f, hi * f),
        Dist::Fixed(v) => Dist::Fixed(v * f),
    }
}

/// Base (jitter-free, DRAM at its mean) time of a fabric transaction: the
/// length of one poll.
fn base(d: Dist) -> f64 {
    d.mean(0.0)
}

/// The counts a frame carries, from its mode's thousandths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameCounts {
    pub desc_reads: u64,
    pub head_writes: u64,
    pub interrupts: u64,
    pub doorbells: u64,
    pub kvs_hits: u64,
    pub kvs_misses: u64,
}

impl FrameCounts {
    /// Frame `i`'s share: descriptor reads and doorbells per frame sent
    /// (one per loopback), head stores on the RX side (one of the two
    /// per-frame stores of a loopback: the host waits for it, not for the
    /// TX one), interrupts per frame sent or received (two frames per
    /// loopback), KVS lookups per request.
    pub fn of(c: &Checked, kvs: (Milli, Milli), i: u64) -> Result<FrameCounts> {
        let f = |m: Milli| per_frame(m, i).context("count overflow");
        let (hits, misses) = match (c.kvs_hits, c.kvs_misses) {
            (Some(h), Some(m)) => (h, m),
            _ => kvs,
        };
        Ok(FrameCounts {
            desc_reads: f(c.desc_reads)?,
            head_writes: f(c.head_writes)?,
            interrupts: f(c.interrupts.checked_mul(2).context("count overflow")?)?,
            doorbells: f(c.doorbells)?,
            kvs_hits: f(hits)?,
            kvs_misses: f(misses)?,
        })
    }
}

/// Builds a frame's steps into `out` (cleared first). `host_ns` is the
/// host's software time for the frame's size (`calibrate`).
pub fn build(
    out: &mut Vec<Step>,
    p: &Params,
    mode: Mode,
    req: Request,
    n: &FrameCounts,
    host_ns: &dyn Fn(u32) -> f64,
) {
    out.clear();
    let t = Tx { p: *p };
    let mut push = |what, dist, side| out.push(Step { what, dist, side });
    let rep = |push: &mut dyn FnMut(&'static str, Dist, Side), k: u64, what, d, side| {
        for _ in 0..k {
            push(what, d, side);
        }
    };
    let size = match req {
        Request::Rr64 => 64,
        Request::Rr1500 => 1500,
        Request::KvsZipf | Request::KvsUniform | Request::Kvs => {
            // The request and response through the NIC: the same in every
            // mode (the paper gives no absolute KVS time).
            push("request processing", Dist::Fixed(host_ns(64)), Side::Host);
            let (hit, miss) = kvs_lookups(mode, &t);
            for _ in 0..n.kvs_hits {
                for &(w, d) in &hit {
                    push(w, d, Side::Nic);
                }
            }
            for _ in 0..n.kvs_misses {
                for &(w, d) in &miss {
                    push(w, d, Side::Nic);
                }
            }
            return;
        }
    };
    let dma = growth(size, DMA_SIZE_GROWTH);
    let cw = growth(size, CXL_WRITE_SIZE_GROWTH);
    let cr = growth(size, CXL_READ_SIZE_GROWTH);
    let mmio = fabric(MMIO_WRITE_NS, 0);
    // RX: the frame into host memory and its completion signalled.
    match mode {
        Mode::Pcie => {
            // Posted writes are ordered by PCIe: each head store behind
            // the packet costs the NIC an issue, the packet's crossing
            // covers them all.
            rep(
                &mut push,
                n.head_writes,
                "RxD write-back (posted)",
                fabric(POSTED_ISSUE_NS, 0),
                Side::Nic,
            );
            push(
                "RX packet DMA write",
                fabric(DMA_WRITE_NS * dma, 0),
                Side::Nic,
            );
        }
        Mode::Type1 | Mode::Type1Co => {
            push("RxD CO-read (HMC hit)", t.dcoh_hit(), Side::Nic);
            push("RX packet NC-write", scaled(t.d2h_write(), cw), Side::Nic);
            push("completion NC-write", t.d2h_write(), Side::Nic);
            rep(
                &mut push,
                n.head_writes,
                "RX head NC-write",
                t.d2h_write(),
                Side::Nic,
            );
        }
        Mode::Type2 => {
            push(
                "RxD read (DCOH hit, CS-read prefetch)",
                t.dcoh_hit(),
                Side::Nic,
            );
            push("RX packet NC-P", scaled(t.d2h_write(), cw), Side::Nic);
            push("completion NC-P", t.d2h_write(), Side::Nic);
            rep(
                &mut push,
                n.head_writes,
                "RX head NC-P",
                t.d2h_write(),
                Side::Nic,
            );
        }
    }
    rep(
        &mut push,
        n.interrupts,
        "interrupt",
        Dist::Uniform(INTERRUPT_MIN_NS, INTERRUPT_MAX_NS),
        Side::Host,
    );
    // Host: sees the completion, reads the frame, relays it.
    let host_read = match mode {
        // DDIO puts DMA writes in the LLC; NC-P pushes there.
        Mode::Pcie | Mode::Type2 => t.host_llc_read(),
        // NC-write goes to DRAM (CXL-NIC §7.1).
        Mode::Type1 | Mode::Type1Co => t.host_local_read(),
    };
    push(
        "host poll phase",
        Dist::Uniform(0.0, base(host_read)),
        Side::Host,
    );
    push("host reads completion", host_read, Side::Host);
    push("host reads packet", host_read, Side::Host);
    push("host software", Dist::Fixed(host_ns(size)), Side::Host);
    if mode == Mode::Type2 {
        push(
            "TX packet nt-st to NIC memory",
            scaled(t.h2d_write(), cw),
            Side::Host,
        );
    }
    push("host writes TxD and tag", t.host_store(), Side::Host);
    // TX: the NIC learns of the frame and reads it.
    rep(&mut push, n.doorbells, "MMIO doorbell", mmio, Side::Nic);
    match mode {
        Mode::Pcie => {
            rep(
                &mut push,
                n.desc_reads,
                "TxD DMA read",
                fabric(DMA_READ_NS, 0),
                Side::Nic,
            );
            push(
                "TX packet DMA read",
                fabric(DMA_READ_NS * dma, 0),
                Side::Nic,
            );
        }
        Mode::Type1 | Mode::Type2 => {
            // Polls back to back: the store waits out the one in flight;
            // the next poll is the counted descriptor read (inline tag).
            push(
                "TxD poll phase",
                Dist::Uniform(0.0, base(t.d2h_read_cached())),
                Side::Nic,
            );
            rep(
                &mut push,
                n.desc_reads,
                "TxD NC-read",
                t.d2h_read_cached(),
                Side::Nic,
            );
            if mode == Mode::Type1 {
                push(
                    "TX packet NC-read",
                    scaled(t.d2h_read_cached(), cr),
                    Side::Nic,
                );
            } else {
                push(
                    "TX packet D2D read",
                    scaled(t.d2d_read_devbias(), cr),
                    Side::Nic,
                );
            }
        }
        Mode::Type1Co => {
            // Fig. 6 right: polls hit the NIC's cache until the host's
            // store takes the line back; the next poll misses.
            push("TxD line invalidated", t.co_invalidate(), Side::Nic);
            push("TxD poll phase", Dist::Uniform(0.0, CACHE_NS), Side::Nic);
            rep(
                &mut push,
                n.desc_reads,
                "TxD CO-read",
                t.d2h_read_co(0),
                Side::Nic,
            );
            push(
                "TX packet NC-read",
                scaled(t.d2h_read_cached(), cr),
                Side::Nic,
            );
        }
    }
}

/// Lines on the NIC's link per frame for TX polling: NC-read polls cross
/// every time (Fig. 6 left), CO-read polls hit the NIC's cache and only
/// the descriptor reads cross (right); PCIe does not poll.
pub fn poll_lines_milli(mode: Mode, c: &Checked) -> Option<Milli> {
    match mode {
        Mode::Type1 | Mode::Type2 => c.empty_polls.checked_add(c.desc_reads),
        Mode::Type1Co => Some(c.desc_reads),
        Mode::Pcie => Some(0),
    }
}

/// One of Fig. 4's (and §4.3's) single-operation comparisons: the
/// model's CXL and PCIe times (jitter-free means) and the paper's
/// reduction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Micro {
    pub what: &'static str,
    pub cxl_ns: f64,
    pub pcie_ns: f64,
    /// The paper's latency reduction of the CXL operation (0.69: -69 %).
    pub paper_reduction: f64,
}

impl Micro {
    pub fn reduction(&self) -> f64 {
        1.0 - self.cxl_ns / self.pcie_ns
    }
}

/// The operations CXL-NIC §3.2 (Fig. 4) and §4.3 compare, in the model.
pub fn micro(p: &Params) -> Vec<Micro> {
    let t = Tx { p: *p };
    let m = |what, cxl: f64, pcie: f64, paper| Micro {
        what,
        cxl_ns: cxl,
        pcie_ns: pcie,
        paper_reduction: paper,
    };
    let read = base(t.d2h_read_cached());
    vec![
        m(
            "RX data: NC-write / DMA write",
            base(t.d2h_write()),
            DMA_WRITE_NS,
            0.69,
        ),
        m("TX data: NC-read / DMA read", read, DMA_READ_NS, 0.81),
        m(
            "descriptor read: NC-read / DMA read",
            read,
            DMA_READ_NS,
            0.85,
        ),
        m(
            "completion: NC-write / DMA write",
            base(t.d2h_write()),
            DMA_WRITE_NS,
            0.82,
        ),
        // The poll in flight (half a poll on average), then the poll.
        m(
            "TX signal: NC-read poll / MMIO",
            read * 1.5,
            MMIO_WRITE_NS,
            0.29,
        ),
        // §4.3: "3.3x" lower than reading host memory.
        m(
            "RxD: HMC hit / host memory read",
            base(t.dcoh_hit()),
            base(t.d2h_read_dram()),
            1.0 - 1.0 / 3.3,
        ),
    ]
}
