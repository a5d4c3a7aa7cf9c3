//! One NIC port: its device memory (BAR2), the config the driver gave it,
//! and the device side of each queue pair's rings, driven by [`Port::
//! step`]. Everything read from guest-writable memory goes through the
//! ring crate's checks before it is used; a fault is counted and the
//! entry dropped.

use crate::mem::{GuestRam, Shared};
use anyhow::{Context, Result};
use cxlnic_ring::device::{
    self, check_config, header, Checked, DeviceHeader, DriverConfig, Loc, QueueConfig, QueueStats,
    Spaces, CONFIG_BYTES, CONFIG_GEN, CONFIG_OFFSET, DATA_OFFSET, HEADER_OFFSET, LINK_UP,
    MODE_PCIE, MODE_TYPE1, MODE_TYPE2, QUEUES_MAX, SPACE_DEVICE, SPACE_HOST, STATS_OFFSET,
    VECTOR_QUEUE0,
};
use cxlnic_ring::layout::{
    DeviceLine, DriverLine, RxDesc, TxDesc, COMPLETION_BYTES, DESC_BYTES, FRAME_MAX, IRQ_RX,
    IRQ_TX, LINE_BYTES, SIGNATURE, VERSION,
};
use cxlnic_ring::queue::{self, Area, Consumer};
use std::collections::VecDeque;

/// Frames waiting for an RX buffer, per queue; more are dropped.
pub const INBOUND_MAX: usize = 256;
/// Entries a queue handles per step before the others get a turn.
pub const STEP_BUDGET: u32 = 64;

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
}

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
}

/// The config the device took.
struct Active {
    checked: Checked,
    queues: Vec<Queue>,
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
    /// Frames the driver sent that the link should carry.
    pub outbound: Vec<(usize, Vec<u8>)>,
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
            outbound: vec![],
        };
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

    fn spaces(&self) -> Spaces {
        Spaces {
            host_bytes: self.host_bytes(),
            bar_bytes: self.dev.len() as u64,
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
            _reserved: [0; 13],
        };
        // The last config counts as answered: a restarted device waits
        // for the driver to configure it again.
        self.cfg_ack = h.cfg_ack;
        self.link_up = false;
        self.active = None;
        self.dev.write(HEADER_OFFSET, &h.encode())?;
        Ok(())
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
                    self.active = Some(Active::new(checked, &cfg));
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

    /// Where `len` bytes at `off` past `loc` are (`at`, with the offset).
    fn resolve(&self, loc: &Loc, off: u64, len: u64) -> Result<(&Shared, u64)> {
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
        for (q, d) in done.iter_mut().enumerate() {
            let rang = doorbells.get(q).copied().unwrap_or(false);
            if rang {
                self.queue_mut(q).stats.doorbells += 1;
            }
            if mode != MODE_PCIE || rang {
                *d = self.step_tx(q)?;
            }
        }
        Ok(done)
    }

    /// Fills posted RX buffers with the frames waiting on every queue;
    /// then, where the driver asked for one, the queue's interrupt.
    /// `tx_done`: what [`Port::transmit`] took. Returns the work done and
    /// the vectors to raise.
    pub fn receive(&mut self, tx_done: &[u32]) -> Result<(Progress, Vec<u32>)> {
        let mut progress = Progress::default();
        let mut irqs = vec![];
        if self.mode().is_none() {
            return Ok((progress, irqs));
        }
        for q in 0..self.queues() {
            let tx = tx_done.get(q).copied().unwrap_or(0);
            let rx = self.step_rx(q)?;
            progress.work += tx + rx;
            // The heads are stored; the driver stores its interrupt word
            // and then reads the heads: a full barrier on both sides, so
            // one of them sees the other.
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            let want = self.driver_line(q)?.irq;
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

    /// Takes the TX entries posted: returns how many.
    fn step_tx(&mut self, q: usize) -> Result<u32> {
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
    /// when no config or too many wait).
    pub fn deliver(&mut self, frame: Vec<u8>) {
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

    /// Fills posted RX buffers with waiting frames: returns how many.
    fn step_rx(&mut self, q: usize) -> Result<u32> {
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
            self.write_at(&cfg.rx_area, buffer.buf, &frame[..len as usize])?;
            let mut done = queue::completion(expected, len);
            if self.take_injected(Inject::CompletionLength) {
                done.len = buffer.cap.saturating_add(1);
            }
            if self.take_injected(Inject::CompletionTag) {
                done.tag = done.tag.wrapping_add(7);
            }
            let at = (expected.slot * COMPLETION_BYTES) as u64;
            // The length first; the tag, which makes it valid, last.
            self.store_at(&cfg.rx_done, at, done.len)?;
            self.store_at(&cfg.rx_done, at + 4, done.tag)?;
            let s = &mut self.queue_mut(q).stats;
            s.completions += 1;
            s.rx_frames += 1;
            s.rx_bytes += u64::from(len);
            self.queue_mut(q).rx.advance();
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
    fn new(checked: Checked, cfg: &DriverConfig) -> Active {
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
            })
            .collect();
        Active { checked, queues }
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
