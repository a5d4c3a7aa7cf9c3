//! One NIC port: its device memory (BAR2), the config the driver gave it,
//! and the device side of each queue pair's rings, driven by [`Port::
//! transmit`] and [`Port::receive`]. Everything read from guest-writable
//! memory goes through the ring crate's checks before it is used; a fault
//! is counted and the entry dropped.
//!
//! Before every access to a queue's memory the device checks that the
//! config it runs is still the driver's latest (its generation in BAR2):
//! a driver that wrote a new one may have freed the rings the old one
//! named, so a device that hung mid-pass and resumes writes nothing into
//! them ([`Superseded`]).

use crate::kvs::Offload;
use crate::mem::{GuestRam, Shared};
use anyhow::{Context, Result};
use cxlnic_ring::device::{
    self, check_config, header, Checked, DeviceHeader, DriverConfig, Loc, QueueConfig, QueueStats,
    Spaces, CONFIG_BYTES, CONFIG_GEN, CONFIG_OFFSET, DATA_OFFSET, HEADER_OFFSET, LINK_UP,
    MODE_PCIE, MODE_TYPE1, MODE_TYPE2, QUEUES_MAX, SPACE_DEVICE, SPACE_HOST, STATS_OFFSET,
    VECTOR_QUEUE0,
};
use cxlnic_ring::index::{distance, ready_tag};
use cxlnic_ring::layout::{
    DeviceLine, DriverLine, RxDesc, TxDesc, COMPLETION_BYTES, DESC_BYTES, FRAME_MAX, IRQ_RX,
    IRQ_TX, LINE_BYTES, SIGNATURE, VERSION,
};
use cxlnic_ring::queue::{self, Area, Buffer, Consumer, Entry};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Frames waiting for an RX buffer, per queue; more are dropped.
pub const INBOUND_MAX: usize = 256;
/// Entries a queue handles per step before the others get a turn.
pub const STEP_BUDGET: u32 = 64;
/// How long an injected hang lasts: past the driver's heartbeat timeout
/// and its wait for a config answer.
pub const HANG: Duration = Duration::from_secs(5);

/// How a port is made.
#[derive(Debug, Clone)]
pub struct PortSpec {
    pub mac: [u8; 6],
    pub queues_max: u32,
    pub speed_mbps: u32,
}

/// Faults a test asks the device to commit, once each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inject {
    /// The next RX completion claims more bytes than its buffer holds.
    CompletionLength,
    /// The next RX completion carries a wrong tag.
    CompletionTag,
    /// The next TX head store claims entries the driver never posted.
    TxHead,
    /// The next RX head store claims buffers the driver never posted.
    RxHead,
    /// A TX head inside the posted range: the device stores a head that
    /// claims every entry posted, none of which it took, then leaves the
    /// ring alone until the driver has posted over the entry it expects
    /// and goes on from where it really was (a forged head, then a device
    /// that behaves again: the two sides disagree from then on).
    TxHeadForged,
    /// The same on the RX ring: a head claiming every posted buffer.
    RxHeadForged,
    /// The device hangs for [`HANG`] right after it read an RX descriptor
    /// for a frame (no heartbeat, no config, no rings), then resumes
    /// where it stopped: the frame and its completion are its first
    /// writes.
    Hang,
}

/// Why a queue access was not made: the driver wrote a config after the
/// one the device runs (it may have freed that config's memory). Not an
/// error of the model: the access is dropped and counted, and the next
/// pass takes the new config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superseded;

impl std::fmt::Display for Superseded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the driver wrote a newer config")
    }
}

impl std::error::Error for Superseded {}

/// What one step did, for the poller's cadence and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub work: u32,
    pub interrupts: u32,
}

/// A queue pair as the device runs it.
struct Queue {
    cfg: QueueConfig,
    tx: Consumer,
    rx: Consumer,
    inbound: VecDeque<Vec<u8>>,
    stats: QueueStats,
    /// After a forged head: the ring is left alone until the driver has
    /// posted over the entry the device expects.
    tx_held: bool,
    rx_held: bool,
    /// pcie: a doorbell rang and the ring is not drained yet (a doorbell
    /// asks for everything up to the tail, not one step's budget).
    rung: bool,
}

/// The config the device took.
struct Active {
    /// Its generation: queue accesses stop when BAR2 holds another.
    gen: u32,
    checked: Checked,
    queues: Vec<Queue>,
}

/// What a device that hung mid-pass was about to do: fill `buffer` of
/// RX entry `entry` of queue `q` with `frame`.
struct Paused {
    q: usize,
    entry: Entry,
    buffer: Buffer,
    frame: Vec<u8>,
}

pub struct Port {
    dev: Shared,
    ram: Option<GuestRam>,
    spec: PortSpec,
    active: Option<Active>,
    link_up: bool,
    heartbeat: u32,
    cfg_ack: u32,
    injected: Vec<Inject>,
    /// An injected hang: until when, and the work it interrupted.
    hung_until: Option<Instant>,
    paused: Option<Paused>,
    /// Queue accesses not made because the config was superseded.
    superseded: u64,
    /// Frames the driver sent that the link should carry.
    pub outbound: Vec<(usize, Vec<u8>)>,
    /// The key-value offload, if BAR2 has room for its area.
    kvs: Option<Offload>,
}

impl Port {
    /// A port over device memory `dev` (and guest RAM, for type1 and
    /// pcie), with a fresh header and no config.
    pub fn new(dev: Shared, ram: Option<GuestRam>, spec: PortSpec) -> Result<Port> {
        anyhow::ensure!(
            dev.len() as u64 > DATA_OFFSET,
            "device memory of {} bytes has no data part",
            dev.len()
        );
        let mut port = Port {
            dev,
            ram,
            spec,
            active: None,
            link_up: false,
            heartbeat: 0,
            cfg_ack: 0,
            injected: vec![],
            hung_until: None,
            paused: None,
            superseded: 0,
            outbound: vec![],
            kvs: None,
        };
        port.kvs = Offload::new(port.dev.len() as u64);
        port.reset()?;
        Ok(port)
    }

    /// Every mode places something in host memory (type2 its TX ring
    /// and driver line): none without guest RAM.
    fn modes(&self) -> u32 {
        if self.ram.is_some() {
            device::mode_bit(MODE_TYPE1)
                | device::mode_bit(MODE_TYPE2)
                | device::mode_bit(MODE_PCIE)
        } else {
            0
        }
    }

    /// What the driver may place rings in: host memory, and BAR2 from
    /// its data part up to the KVS area, if there is one.
    fn spaces(&self) -> Spaces {
        Spaces {
            host_bytes: self.host_bytes(),
            bar_bytes: self
                .kvs
                .as_ref()
                .map_or(self.dev.len() as u64, Offload::offset),
        }
    }

    /// Host memory the device reaches from address 0 (RAM below the
    /// q35 hole; the rest is not offered).
    fn host_bytes(&self) -> u64 {
        self.ram
            .as_ref()
            .map_or(0, |r| r.bytes().min(crate::mem::q35_lowmem(r.bytes())))
    }

    /// Writes a fresh header (what a device reset does): signature,
    /// limits, link down, no config taken. The driver's config page is
    /// left as it is; the device answers it again.
    pub fn reset(&mut self) -> Result<()> {
        let h = DeviceHeader {
            signature: SIGNATURE,
            version: VERSION,
            queues_max: self.spec.queues_max.min(QUEUES_MAX),
            mac: {
                let mut m = [0u8; 8];
                m[..6].copy_from_slice(&self.spec.mac);
                m
            },
            bar_bytes: self.dev.len() as u64,
            data_offset: DATA_OFFSET,
            host_bytes: self.host_bytes(),
            modes: self.modes(),
            doorbell_peer: u32::from(crate::ivshmem::MODEL_PEER),
            link: 0,
            heartbeat: self.heartbeat,
            cfg_ack: self.dev.load(CONFIG_OFFSET + CONFIG_GEN as u64)?,
            cfg_status: 0,
            speed_mbps: self.spec.speed_mbps,
            kvs_offset: self.kvs.as_ref().map_or(0, |k| k.offset() as u32),
            kvs_bytes: if self.kvs.is_some() {
                cxlnic_ring::kvs::AREA_BYTES
            } else {
                0
            },
            _reserved: [0; 11],
        };
        // The last config counts as answered: a restarted device waits
        // for the driver to configure it again.
        self.cfg_ack = h.cfg_ack;
        self.link_up = false;
        self.active = None;
        // A reset ends a hang and forgets what it interrupted.
        self.hung_until = None;
        self.paused = None;
        if let Some(k) = &mut self.kvs {
            k.reset(&self.dev, self.ram.as_ref());
        }
        self.dev.write(HEADER_OFFSET, &h.encode())?;
        Ok(())
    }

    /// The key-value offload's pass: a new KVS config, the host's
    /// commands. Returns the work done.
    pub fn poll_kvs(&mut self) -> u32 {
        let host_bytes = self.host_bytes();
        match &mut self.kvs {
            Some(k) => k.poll(&self.dev, self.ram.as_ref(), host_bytes),
            None => 0,
        }
    }

    /// Writes the offload's counters into BAR2 if they changed.
    pub fn publish_kvs(&mut self) {
        if let Some(k) = &mut self.kvs {
            k.publish(&self.dev);
        }
    }

    /// The offload's answers for the backend; report them with
    /// [`Port::kvs_sent`].
    pub fn take_kvs_answers(&mut self) -> Vec<Vec<u8>> {
        self.kvs
            .as_mut()
            .map_or_else(Vec::new, Offload::take_answers)
    }

    /// Counts the answers the backend took and did not.
    pub fn kvs_sent(&mut self, sent: usize, dropped: usize) {
        if let Some(k) = &mut self.kvs {
            k.answered(sent, dropped);
        }
    }

    /// Whether the offload serves, and its counters (`None`: no offload).
    pub fn kvs_stats(&self) -> Option<(bool, cxlnic_ring::kvs::KvsStats)> {
        self.kvs.as_ref().map(|k| (k.enabled(), *k.stats()))
    }

    pub fn set_link(&mut self, up: bool) -> Result<()> {
        self.link_up = up;
        self.dev.store(
            HEADER_OFFSET + header::LINK as u64,
            if up { LINK_UP } else { 0 },
        )
    }

    pub fn link_up(&self) -> bool {
        self.link_up
    }

    /// Bumps the heartbeat and publishes the counters.
    pub fn beat(&mut self) -> Result<()> {
        self.heartbeat = self.heartbeat.wrapping_add(1);
        self.dev
            .store(HEADER_OFFSET + header::HEARTBEAT as u64, self.heartbeat)?;
        if let Some(a) = &self.active {
            for (q, queue) in a.queues.iter().enumerate() {
                let at = STATS_OFFSET + (q * device::QUEUE_STATS_BYTES) as u64;
                self.dev.write(at, &queue.stats.encode())?;
            }
        }
        Ok(())
    }

    pub fn inject(&mut self, fault: Inject) {
        self.injected.push(fault);
    }

    fn take_injected(&mut self, fault: Inject) -> bool {
        match self.injected.iter().position(|&f| f == fault) {
            Some(i) => {
                self.injected.remove(i);
                true
            }
            None => false,
        }
    }

    /// The mode the device runs, if configured.
    pub fn mode(&self) -> Option<u32> {
        self.active.as_ref().map(|a| a.checked.mode)
    }

    pub fn queues(&self) -> usize {
        self.active.as_ref().map_or(0, |a| a.queues.len())
    }

    /// Queue `q`'s counters.
    pub fn stats(&self, q: usize) -> Option<QueueStats> {
        self.active.as_ref()?.queues.get(q).map(|q| q.stats)
    }

    /// Queue accesses dropped because the driver had written a newer
    /// config than the one the device ran.
    pub fn superseded(&self) -> u64 {
        self.superseded
    }

    /// Whether the device is hung (an injected [`Inject::Hang`]): it does
    /// nothing at all until [`Port::resume`] finds the hang over.
    pub fn hung(&self) -> bool {
        self.hung_until.is_some()
    }

    /// Ends a hang now (the next [`Port::resume`] resumes).
    pub fn wake(&mut self) {
        if self.hung_until.is_some() {
            self.hung_until = Some(Instant::now());
        }
    }

    /// Resumes a hang that is over, where it stopped: the frame it was
    /// about to write, its completion and head, if the config is still
    /// the driver's latest. Returns the vector to raise, if the driver
    /// asked for one.
    pub fn resume(&mut self) -> Result<Option<u32>> {
        match self.hung_until {
            Some(t) if Instant::now() >= t => self.hung_until = None,
            _ => return Ok(None),
        }
        let Some(p) = self.paused.take() else {
            return Ok(None);
        };
        match self.finish_paused(&p) {
            Ok(want) => Ok(want.then_some(VECTOR_QUEUE0 + p.q as u32)),
            Err(e) if e.is::<Superseded>() => {
                self.superseded += 1;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn finish_paused(&mut self, p: &Paused) -> Result<bool> {
        if self.active.as_ref().is_none_or(|a| p.q >= a.queues.len()) {
            return Ok(false);
        }
        self.fill(p.q, p.entry, p.buffer, &p.frame)?;
        let head = self.queue(p.q).rx.head();
        self.store_head(p.q, 4, head)?;
        Ok(self.driver_line(p.q)?.irq & IRQ_RX != 0)
    }

    /// Takes a new config if the driver wrote one: returns whether it
    /// answered (the driver wants vector 0 then).
    pub fn poll_config(&mut self) -> Result<bool> {
        let gen = self.dev.load(CONFIG_OFFSET + CONFIG_GEN as u64)?;
        if gen == self.cfg_ack {
            return Ok(false);
        }
        let mut raw = [0u8; CONFIG_BYTES];
        self.dev.read(CONFIG_OFFSET, &mut raw)?;
        let cfg = DriverConfig::decode(&raw);
        let status = if cfg.mode == device::MODE_OFF {
            self.active = None;
            0
        } else {
            match check_config(&cfg, self.spec.queues_max, self.modes(), &self.spaces()) {
                Ok(checked) => {
                    self.active = Some(Active::new(gen, checked, &cfg));
                    0
                }
                Err(e) => {
                    self.active = None;
                    e.code()
                }
            }
        };
        self.dev
            .store(HEADER_OFFSET + header::CFG_STATUS as u64, status)?;
        self.cfg_ack = gen;
        self.dev
            .store(HEADER_OFFSET + header::CFG_ACK as u64, gen)?;
        Ok(true)
    }

    /// Where `len` bytes at `loc` are: the mapping and the offset in it.
    fn at(&self, loc: &Loc, len: u64) -> Option<(&Shared, u64)> {
        match loc.space {
            SPACE_DEVICE => Some((&self.dev, loc.addr)),
            SPACE_HOST => {
                let ram = self.ram.as_ref()?;
                Some((ram.shared(), ram.offset(loc.addr, len)?))
            }
            _ => None,
        }
    }

    /// Fails with [`Superseded`] unless the config the device runs is
    /// still the driver's latest.
    fn live(&self) -> Result<()> {
        let gen = self.dev.load(CONFIG_OFFSET + CONFIG_GEN as u64)?;
        match &self.active {
            Some(a) if a.gen == gen => Ok(()),
            _ => Err(Superseded.into()),
        }
    }

    /// Where `len` bytes at `off` past `loc` are (`at`, with the offset);
    /// every queue access comes here, so each is checked [`Port::live`]
    /// first.
    fn resolve(&self, loc: &Loc, off: u64, len: u64) -> Result<(&Shared, u64)> {
        self.live()?;
        let addr = Loc {
            addr: loc.addr.checked_add(off).context("address overflow")?,
            ..*loc
        };
        self.at(&addr, len).context("unreachable")
    }

    fn read_at(&self, loc: &Loc, off: u64, out: &mut [u8]) -> Result<()> {
        let (mem, at) = self.resolve(loc, off, out.len() as u64)?;
        mem.read(at, out)
    }

    fn write_at(&self, loc: &Loc, off: u64, data: &[u8]) -> Result<()> {
        let (mem, at) = self.resolve(loc, off, data.len() as u64)?;
        mem.write(at, data)
    }

    fn load_at(&self, loc: &Loc, off: u64) -> Result<u32> {
        let (mem, at) = self.resolve(loc, off, 4)?;
        mem.load(at)
    }

    fn store_at(&self, loc: &Loc, off: u64, v: u32) -> Result<()> {
        let (mem, at) = self.resolve(loc, off, 4)?;
        mem.store(at, v)
    }

    /// Takes the TX entries the driver posted on every queue into
    /// `outbound`. `doorbells[q]`: whether queue `q`'s doorbell rang (pcie
    /// mode polls nothing without one). Returns the entries taken per
    /// queue.
    pub fn transmit(&mut self, doorbells: &[bool]) -> Result<Vec<u32>> {
        let Some(mode) = self.mode() else {
            return Ok(vec![]);
        };
        let mut done = vec![0; self.queues()];
        if self.hung() {
            return Ok(done);
        }
        for (q, d) in done.iter_mut().enumerate() {
            if doorbells.get(q).copied().unwrap_or(false) {
                let queue = self.queue_mut(q);
                queue.stats.doorbells += 1;
                queue.rung = true;
            }
            if mode != MODE_PCIE || self.queue(q).rung {
                let step = self.step_tx(q);
                let Some(taken) = self.unless_superseded(step)? else {
                    break;
                };
                *d = taken;
                // Short of the budget: drained up to the tail.
                if taken < STEP_BUDGET {
                    self.queue_mut(q).rung = false;
                }
            }
        }
        Ok(done)
    }

    /// `r`, or `None` (counted) if it failed for a superseded config.
    fn unless_superseded<T>(&mut self, r: Result<T>) -> Result<Option<T>> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is::<Superseded>() => {
                self.superseded += 1;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Fills posted RX buffers with the frames waiting on every queue;
    /// then, where the driver asked for one, the queue's interrupt.
    /// `tx_done`: what [`Port::transmit`] took. Returns the work done and
    /// the vectors to raise.
    pub fn receive(&mut self, tx_done: &[u32]) -> Result<(Progress, Vec<u32>)> {
        let mut progress = Progress::default();
        let mut irqs = vec![];
        if self.mode().is_none() || self.hung() {
            return Ok((progress, irqs));
        }
        for q in 0..self.queues() {
            let tx = tx_done.get(q).copied().unwrap_or(0);
            let step = self.step_rx(q);
            let Some(rx) = self.unless_superseded(step)? else {
                break;
            };
            progress.work += tx + rx;
            if self.hung() {
                // Hung mid-pass: nothing more until it resumes.
                break;
            }
            // The heads are stored; the driver stores its interrupt word
            // and then reads the heads: a full barrier on both sides, so
            // one of them sees the other.
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            let line = self.driver_line(q);
            let Some(line) = self.unless_superseded(line)? else {
                break;
            };
            let want = line.irq;
            if (tx > 0 && want & IRQ_TX != 0) || (rx > 0 && want & IRQ_RX != 0) {
                self.queue_mut(q).stats.interrupts += 1;
                irqs.push(VECTOR_QUEUE0 + q as u32);
                progress.interrupts += 1;
            }
        }
        Ok((progress, irqs))
    }

    fn queue_mut(&mut self, q: usize) -> &mut Queue {
        &mut self.active.as_mut().expect("configured").queues[q]
    }

    fn queue(&self, q: usize) -> &Queue {
        &self.active.as_ref().expect("configured").queues[q]
    }

    fn driver_line(&self, q: usize) -> Result<DriverLine> {
        let mut raw = [0u8; LINE_BYTES];
        let loc = self.queue(q).cfg.driver_line;
        // The words one at a time, each with acquire.
        for (i, w) in raw.chunks_exact_mut(4).take(3).enumerate() {
            w.copy_from_slice(&self.load_at(&loc, (i * 4) as u64)?.to_le_bytes());
        }
        Ok(DriverLine::decode(&raw))
    }

    /// Stores one head word of queue `q`'s device line (`off`: 0 TX, 4
    /// RX): each side's progress is its own store, so a head stays as
    /// written until that side moves on.
    fn store_head(&mut self, q: usize, off: u64, head: u32) -> Result<()> {
        let loc = self.queue(q).cfg.device_line;
        self.store_at(&loc, off, head)?;
        self.queue_mut(q).stats.head_writes += 1;
        Ok(())
    }

    fn heads(&self, q: usize) -> DeviceLine {
        let queue = self.queue(q);
        DeviceLine {
            tx_head: queue.tx.head(),
            rx_head: queue.rx.head(),
        }
    }

    /// TX entries posted that the device has not taken (up to a ring).
    fn tx_posted(&self, q: usize) -> Result<u32> {
        let a = self.active.as_ref().expect("configured");
        let (inline, size) = (a.checked.inline, a.checked.tx_size);
        let c = self.queue(q).tx;
        if !inline {
            let tail = self.driver_line(q)?.tx_tail;
            return Ok(match c.posted(tail) {
                Ok(true) => distance(c.head(), tail),
                _ => 0,
            });
        }
        let ring = self.queue(q).cfg.tx_ring;
        let mut n = 0;
        while n < size.get() {
            let index = c.head().wrapping_add(n);
            let tag_at = (size.slot(index) * DESC_BYTES) as u64 + 12;
            if self.load_at(&ring, tag_at)? != ready_tag(index) {
                break;
            }
            n += 1;
        }
        Ok(n)
    }

    /// Whether the driver has posted over the TX entry the device
    /// expects (it took a forged head as progress and reused the slot).
    fn tx_posted_over(&self, q: usize) -> Result<bool> {
        let a = self.active.as_ref().expect("configured");
        let c = self.queue(q).tx;
        if a.checked.inline {
            let e = c.expected();
            let ring = self.queue(q).cfg.tx_ring;
            let tag = self.load_at(&ring, (e.slot * DESC_BYTES) as u64 + 12)?;
            return Ok(tag != e.tag);
        }
        let tail = self.driver_line(q)?.tx_tail;
        Ok(distance(c.head(), tail) > a.checked.tx_size.get())
    }

    /// An injected forged TX head: claims the `n` entries posted (none
    /// taken) and holds the ring. `None` if nothing is posted yet.
    fn forge_tx_head(&mut self, q: usize) -> Result<Option<u32>> {
        if !self.injected.contains(&Inject::TxHeadForged) {
            return Ok(None);
        }
        let n = self.tx_posted(q)?;
        if n == 0 {
            return Ok(None);
        }
        self.take_injected(Inject::TxHeadForged);
        let head = self.queue(q).tx.head().wrapping_add(n);
        self.store_head(q, 0, head)?;
        self.queue_mut(q).tx_held = true;
        Ok(Some(n))
    }

    /// Takes the TX entries posted: returns how many (or how many a
    /// forged head claimed).
    fn step_tx(&mut self, q: usize) -> Result<u32> {
        if self.queue(q).tx_held {
            if !self.tx_posted_over(q)? {
                return Ok(0);
            }
            self.queue_mut(q).tx_held = false;
        }
        if let Some(claimed) = self.forge_tx_head(q)? {
            return Ok(claimed);
        }
        let (inline, batch) = {
            let a = self.active.as_ref().expect("configured");
            (a.checked.inline, a.checked.batch)
        };
        let mut taken = 0u32;
        let mut since_head = 0u32;
        while taken < STEP_BUDGET {
            let expected = self.queue(q).tx.expected();
            if !inline {
                let tail = self.driver_line(q)?.tx_tail;
                match self.queue(q).tx.posted(tail) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(_) => {
                        // A tail beyond a ring: nothing is taken on it.
                        self.queue_mut(q).stats.tx_faults += 1;
                        break;
                    }
                }
            }
            let cfg = self.queue(q).cfg;
            let mut raw = [0u8; DESC_BYTES];
            self.read_at(&cfg.tx_ring, (expected.slot * DESC_BYTES) as u64, &mut raw)?;
            let desc = TxDesc::decode(&raw);
            if inline && !self.queue(q).tx.ready(desc.tag) {
                break;
            }
            self.queue_mut(q).stats.tx_desc_reads += 1;
            let area = Area {
                len: u64::from(cfg.tx_area_len),
            };
            match queue::check_tx(&desc, expected, area) {
                Ok(frame) => {
                    let mut bytes = vec![0u8; frame.len as usize];
                    self.read_at(&cfg.tx_area, frame.buf, &mut bytes)?;
                    let s = &mut self.queue_mut(q).stats;
                    s.tx_frames += 1;
                    s.tx_bytes += u64::from(frame.len);
                    self.outbound.push((q, bytes));
                }
                Err(_) => self.queue_mut(q).stats.tx_faults += 1,
            }
            self.queue_mut(q).tx.advance();
            taken += 1;
            since_head += 1;
            if since_head >= batch {
                self.publish_tx_head(q)?;
                since_head = 0;
            }
        }
        if since_head > 0 {
            self.publish_tx_head(q)?;
        }
        if taken == 0 {
            self.queue_mut(q).stats.tx_empty_polls += 1;
        }
        Ok(taken)
    }

    fn publish_tx_head(&mut self, q: usize) -> Result<()> {
        let mut head = self.heads(q).tx_head;
        if self.take_injected(Inject::TxHead) {
            head = head.wrapping_add(1 << 20);
        }
        self.store_head(q, 0, head)
    }

    /// Queues a frame the link carried to this port (dropped, and counted,
    /// when no config or too many wait), unless the key-value offload
    /// takes it.
    pub fn deliver(&mut self, frame: Vec<u8>) {
        if self.active.is_none() {
            return;
        }
        // The offload sees every frame first: a datagram to its port
        // never reaches the host's RX ring.
        let serving = !self.hung();
        if let Some(k) = &mut self.kvs {
            let mac = self.spec.mac;
            if k.intercept(&self.dev, self.ram.as_ref(), mac, &frame, serving) {
                return;
            }
        }
        let Some(a) = self.active.as_mut() else {
            return;
        };
        let n = a.queues.len().max(1);
        let q = flow_hash(&frame) % n;
        let queue = &mut a.queues[q];
        if queue.inbound.len() >= INBOUND_MAX {
            queue.stats.rx_no_buffer += 1;
            return;
        }
        queue.inbound.push_back(frame);
    }

    /// An injected forged RX head: claims every buffer posted (none
    /// filled) and holds the ring. `None` if none is posted.
    fn forge_rx_head(&mut self, q: usize) -> Result<Option<u32>> {
        if !self.injected.contains(&Inject::RxHeadForged) {
            return Ok(None);
        }
        let c = self.queue(q).rx;
        let tail = self.driver_line(q)?.rx_tail;
        if c.posted(tail) != Ok(true) {
            return Ok(None);
        }
        self.take_injected(Inject::RxHeadForged);
        let n = distance(c.head(), tail);
        self.store_head(q, 4, tail)?;
        self.queue_mut(q).rx_held = true;
        Ok(Some(n))
    }

    /// Writes `frame` into `buffer` of RX entry `entry` and its
    /// completion, and moves past the entry.
    fn fill(&mut self, q: usize, entry: Entry, buffer: Buffer, frame: &[u8]) -> Result<()> {
        let cfg = self.queue(q).cfg;
        let len = frame.len() as u32;
        self.write_at(&cfg.rx_area, buffer.buf, frame)?;
        let mut done = queue::completion(entry, len);
        if self.take_injected(Inject::CompletionLength) {
            done.len = buffer.cap.saturating_add(1);
        }
        if self.take_injected(Inject::CompletionTag) {
            done.tag = done.tag.wrapping_add(7);
        }
        let at = (entry.slot * COMPLETION_BYTES) as u64;
        // The length first; the tag, which makes it valid, last.
        self.store_at(&cfg.rx_done, at, done.len)?;
        self.store_at(&cfg.rx_done, at + 4, done.tag)?;
        let s = &mut self.queue_mut(q).stats;
        s.completions += 1;
        s.rx_frames += 1;
        s.rx_bytes += u64::from(len);
        self.queue_mut(q).rx.advance();
        Ok(())
    }

    /// Fills posted RX buffers with waiting frames: returns how many (or
    /// how many a forged head claimed).
    fn step_rx(&mut self, q: usize) -> Result<u32> {
        if self.queue(q).rx_held {
            let tail = self.driver_line(q)?.rx_tail;
            let size = self.active.as_ref().expect("configured").checked.rx_size;
            if distance(self.queue(q).rx.head(), tail) <= size.get() {
                return Ok(0);
            }
            self.queue_mut(q).rx_held = false;
        }
        if let Some(claimed) = self.forge_rx_head(q)? {
            return Ok(claimed);
        }
        let batch = self.active.as_ref().expect("configured").checked.batch;
        let mut filled = 0u32;
        let mut since_head = 0u32;
        let mut looked = false;
        while filled < STEP_BUDGET && !self.queue(q).inbound.is_empty() {
            looked = true;
            let tail = self.driver_line(q)?.rx_tail;
            match self.queue(q).rx.posted(tail) {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => {
                    self.queue_mut(q).stats.rx_faults += 1;
                    break;
                }
            }
            let expected = self.queue(q).rx.expected();
            let cfg = self.queue(q).cfg;
            let mut raw = [0u8; DESC_BYTES];
            self.read_at(&cfg.rx_ring, (expected.slot * DESC_BYTES) as u64, &mut raw)?;
            let desc = RxDesc::decode(&raw);
            self.queue_mut(q).stats.rx_desc_reads += 1;
            let area = Area {
                len: u64::from(cfg.rx_area_len),
            };
            let buffer = match queue::check_rx(&desc, expected, area) {
                Ok(b) => b,
                Err(_) => {
                    // A bad buffer is skipped; the frame waits for the next.
                    self.queue_mut(q).stats.rx_faults += 1;
                    self.queue_mut(q).rx.advance();
                    since_head += 1;
                    continue;
                }
            };
            let frame = self.queue_mut(q).inbound.pop_front().expect("not empty");
            let len = frame.len().min(FRAME_MAX as usize) as u32;
            if len > buffer.cap {
                // Too big for what the driver posts (an MTU mismatch): the
                // buffer stays for the next frame.
                self.queue_mut(q).stats.rx_no_buffer += 1;
                continue;
            }
            let mut frame = frame;
            frame.truncate(len as usize);
            if self.take_injected(Inject::Hang) {
                // Between the descriptor read and the frame's write; the
                // head for what it filled before is not stored either.
                self.paused = Some(Paused {
                    q,
                    entry: expected,
                    buffer,
                    frame,
                });
                self.hung_until = Some(Instant::now() + HANG);
                return Ok(filled);
            }
            self.fill(q, expected, buffer, &frame)?;
            filled += 1;
            since_head += 1;
            if since_head >= batch {
                self.publish_rx_head(q)?;
                since_head = 0;
            }
        }
        if since_head > 0 {
            self.publish_rx_head(q)?;
        }
        if looked && filled == 0 {
            self.queue_mut(q).stats.rx_empty_polls += 1;
        }
        Ok(filled)
    }

    fn publish_rx_head(&mut self, q: usize) -> Result<()> {
        let mut head = self.heads(q).rx_head;
        if self.take_injected(Inject::RxHead) {
            head = head.wrapping_add(1 << 20);
        }
        self.store_head(q, 4, head)
    }
}

impl Active {
    fn new(gen: u32, checked: Checked, cfg: &DriverConfig) -> Active {
        let queues = cfg
            .queue
            .iter()
            .take(checked.queues as usize)
            .map(|qc| Queue {
                cfg: *qc,
                tx: Consumer::new(checked.tx_size, 0),
                rx: Consumer::new(checked.rx_size, 0),
                inbound: VecDeque::new(),
                stats: QueueStats::default(),
                tx_held: false,
                rx_held: false,
                rung: false,
            })
            .collect();
        Active {
            gen,
            checked,
            queues,
        }
    }
}

/// Spreads IPv4 flows over queues (addresses and ports; other frames go
/// to queue 0), as RSS does.
pub fn flow_hash(frame: &[u8]) -> usize {
    let ipv4 = frame.get(12..14) == Some(&[0x08, 0x00]);
    let Some(tuple) = frame.get(26..38).filter(|_| ipv4) else {
        return 0;
    };
    let h = tuple.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    // FNV-1a's low bits depend on the input's low bits only: mix them
    // (MurmurHash3's finalizer) before the caller takes a remainder.
    let h = (h ^ (h >> 16)).wrapping_mul(0x85eb_ca6b);
    let h = (h ^ (h >> 13)).wrapping_mul(0xc2b2_ae35);
    (h ^ (h >> 16)) as usize
}
