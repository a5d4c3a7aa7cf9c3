//! `cxlsim nic-latency`: the latency the emulator cannot show (issue
//! #29). The device model (`tools/cxlnic-model`) counts what each NIC
//! mode does per frame (descriptor reads, empty polls, head stores,
//! interrupts, doorbells); on the testbed every one of them is a host
//! memory access, so the modes' latencies are lost in the emulation's
//! floor. This experiment gives each transaction its time on real
//! hardware (ESF Table III for CXL, the CXL-NIC paper's PCIe figures),
//! replays each frame's sequence on the event engine and reports p50 and
//! p99 per mode and request type against the PCIe NIC. Modelled, not
//! measured: see `Documentation/cxlfabric/cxlnic.rst`, "Modelled latency".

pub mod constants;
pub mod counts;
pub mod report;
pub mod steps;

use crate::event::{EventQueue, Kind, Ps};
use crate::rng::Rng;
use anyhow::{bail, Context, Result};
use constants::*;
use counts::{Checked, Milli, ModeCounts};
use serde::Serialize;
use std::collections::HashMap;
use steps::{build, Dist, FrameCounts, Side, Step};
pub use steps::{Mode, Params, Request};

/// Most frames a replay takes (an event's argument holds up to 2^29).
pub const MAX_FRAMES: u32 = 1_000_000;

/// One mode and request type's result.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct NicPoint {
    pub mode: Mode,
    pub request: Request,
    pub frames: u32,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub mean_ns: f64,
    /// p50 and p99 over the PCIe NIC's for the same request type.
    pub p50_vs_pcie: f64,
    pub p99_vs_pcie: f64,
    /// Lines the TX polling puts on the NIC's link per frame (Fig. 6).
    pub poll_lines_per_frame: f64,
}

/// The host's software time per frame size, sized so that the PCIe mode
/// has Fig. 3's PCIe share (`FIG3_PCIE_SHARE`) with one descriptor read,
/// head store and doorbell and no interrupt (the paper's polling
/// loopback). It does not depend on the counts replayed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HostTime {
    pub at_64_ns: f64,
    pub at_1500_ns: f64,
}

impl HostTime {
    pub fn calibrate(p: &Params) -> Result<HostTime> {
        let n = FrameCounts {
            desc_reads: 1,
            head_writes: 1,
            doorbells: 1,
            ..FrameCounts::default()
        };
        let mut at = [0.0; 2];
        for (slot, &(size, share)) in at.iter_mut().zip(FIG3_PCIE_SHARE.iter()) {
            let req = if size == 64 {
                Request::Rr64
            } else {
                Request::Rr1500
            };
            let mut s = Vec::new();
            build(&mut s, p, Mode::Pcie, req, &n, &|_| 0.0);
            let sum = |side| -> f64 {
                s.iter()
                    .filter(|x| x.side == side)
                    .map(|x| x.dist.mean(p.cv))
                    .sum()
            };
            let (nic, host) = (sum(Side::Nic), sum(Side::Host));
            *slot = nic * (1.0 - share) / share - host;
            if *slot <= 0.0 {
                bail!("Fig. 3 calibration at {size} B leaves no host time ({slot} ns)");
            }
        }
        Ok(HostTime {
            at_64_ns: at[0],
            at_1500_ns: at[1],
        })
    }

    /// Linear in the frame size between the two calibrated sizes.
    pub fn at(&self, size: u32) -> f64 {
        let f = (f64::from(size.clamp(64, 1500)) - 64.0) / (1500.0 - 64.0);
        self.at_64_ns + f * (self.at_1500_ns - self.at_64_ns)
    }
}

/// Share of GETs the NIC's memory answers: the most popular
/// `KVS_NIC_SHARE` of the keys under Zipf(theta), or that share under a
/// uniform choice. In thousandths (hits, misses) per request.
pub fn kvs_hits(zipf: bool) -> (Milli, Milli) {
    let hot = (f64::from(KVS_KEYS) * KVS_NIC_SHARE) as u32;
    let ratio = if zipf {
        let w = |r: u32| f64::from(r).powf(-KVS_ZIPF_THETA);
        let top: f64 = (1..=hot).map(w).sum();
        let all: f64 = top + (hot + 1..=KVS_KEYS).map(w).sum::<f64>();
        top / all
    } else {
        KVS_NIC_SHARE
    };
    let h = (ratio * 1000.0).round() as Milli;
    (h, 1000 - h.min(1000))
}

fn uniform01(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn sample(d: Dist, cv: f64, rng: &mut Rng) -> Ps {
    let ns = match d {
        Dist::Fabric { fixed, dram } => {
            let mut t = fixed;
            for _ in 0..dram {
                t += if rng.chance_ppm((DRAM_ROW_HIT_P * 1e6) as u32) {
                    DRAM_ROW_HIT_NS
                } else {
                    DRAM_ROW_MISS_NS
                };
            }
            // Exponential tail of mean cv: -ln(1 - u) * cv.
            t * (1.0 - cv * (1.0 - uniform01(rng)).ln())
        }
        Dist::Uniform(lo, hi) => lo + (hi - lo) * uniform01(rng),
        Dist::Fixed(v) => v,
    };
    (ns * 1000.0).round() as Ps
}

/// Replays `frames` frames of one mode and request type on the event
/// engine: frame `i` starts at `i` x the spacing, each step is an event
/// at its end, and a frame's latency is its last step's end less its
/// start. Latencies in picoseconds, in frame order.
pub fn replay(
    p: &Params,
    mode: Mode,
    req: Request,
    c: &Checked,
    host: &HostTime,
    frames: u32,
    seed: u64,
) -> Result<Vec<Ps>> {
    if frames == 0 || frames > MAX_FRAMES {
        bail!("frames {frames}: 1 to {MAX_FRAMES}");
    }
    let kvs = kvs_hits(req != Request::KvsUniform);
    // The workloads' own hit ratios; only `kvs` takes the counts'.
    let c = match req {
        Request::KvsZipf | Request::KvsUniform => Checked {
            kvs_hits: None,
            kvs_misses: None,
            ..*c
        },
        _ => *c,
    };
    let stream = (Mode::ALL.iter().position(|&m| m == mode).unwrap_or(0) as u64) << 8 | req as u64;
    let mut rng = Rng::new(seed, stream);
    let spacing = (FRAME_SPACING_NS * 1000.0) as Ps;
    let mut q = EventQueue::new();
    for i in 0..frames {
        q.schedule(u64::from(i).saturating_mul(spacing), Kind::Issue, i);
    }
    // In flight: start, steps, next step.
    let mut live: HashMap<u32, (Ps, Vec<Step>, usize)> = HashMap::new();
    let mut out = vec![0; frames as usize];
    let host_ns = |size| host.at(size);
    while let Some(e) = q.pop() {
        let i = e.arg;
        if e.kind == Kind::Issue {
            let n = FrameCounts::of(&c, kvs, u64::from(i))?;
            let mut s = Vec::new();
            build(&mut s, p, mode, req, &n, &host_ns);
            live.insert(i, (e.time, s, 0));
        }
        let (start, s, next) = live.get_mut(&i).context("event for no frame")?;
        match s.get(*next) {
            Some(step) => {
                let t = sample(step.dist, p.cv, &mut rng);
                *next += 1;
                q.schedule(e.time.saturating_add(t), Kind::Ready, i);
            }
            None => {
                out[i as usize] = e.time.saturating_sub(*start);
                live.remove(&i);
            }
        }
    }
    Ok(out)
}

/// The `q`-quantile (nearest rank) of sorted samples, in ns.
fn quantile_ns(sorted: &[Ps], q: f64) -> f64 {
    let n = sorted.len();
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1] as f64 / 1000.0
}

/// The settings of a run.
#[derive(Clone, Debug)]
pub struct NicRun {
    pub counts: ModeCounts,
    pub params: Params,
    pub frames: u32,
    pub seed: u64,
    /// The host polls instead of taking interrupts (the paper's DPDK
    /// loopback): the counts' interrupts are dropped.
    pub polled: bool,
}

impl Default for NicRun {
    fn default() -> Self {
        NicRun {
            counts: ModeCounts::default(),
            params: Params::default(),
            frames: FRAMES,
            seed: SEED,
            polled: false,
        }
    }
}

/// Every mode and request type, PCIe first.
pub fn run(r: &NicRun) -> Result<(HostTime, Vec<NicPoint>)> {
    r.params.check()?;
    let [t1, t2, pcie] = r.counts.check()?;
    let host = HostTime::calibrate(&r.params)?;
    let mut reqs = vec![
        Request::Rr64,
        Request::Rr1500,
        Request::KvsZipf,
        Request::KvsUniform,
    ];
    if t2.kvs_hits.is_some() {
        reqs.push(Request::Kvs);
    }
    let mut out: Vec<NicPoint> = Vec::new();
    for &mode in &Mode::ALL {
        let mut c = match mode {
            Mode::Pcie => pcie,
            Mode::Type1 | Mode::Type1Co => t1,
            Mode::Type2 => t2,
        };
        if r.polled {
            c.interrupts = 0;
        }
        let poll = steps::poll_lines_milli(mode, &c).context("count overflow")? as f64 / 1000.0;
        for &req in &reqs {
            let mut lat = replay(&r.params, mode, req, &c, &host, r.frames, r.seed)?;
            lat.sort_unstable();
            let mean = lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1000.0;
            let (p50, p99) = (quantile_ns(&lat, 0.5), quantile_ns(&lat, 0.99));
            let base = out
                .iter()
                .find(|x| x.mode == Mode::Pcie && x.request == req)
                .map_or((p50, p99), |x| (x.p50_ns, x.p99_ns));
            out.push(NicPoint {
                mode,
                request: req,
                frames: r.frames,
                p50_ns: p50,
                p99_ns: p99,
                mean_ns: mean,
                p50_vs_pcie: p50 / base.0,
                p99_vs_pcie: p99 / base.1,
                poll_lines_per_frame: poll,
            });
        }
    }
    Ok((host, out))
}
