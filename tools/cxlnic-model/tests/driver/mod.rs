//! A driver in user space for the model's tests: it configures a port
//! and runs the driver side of its rings (the ring crate's `Producer`s)
//! through the same memory the model serves, as `cxlnic_drv` does in a
//! guest.

use cxlnic_model::mem::Shared;
use cxlnic_ring::device::{
    header, DeviceHeader, DriverConfig, Loc, QueueConfig, CONFIG_BYTES, CONFIG_GEN, CONFIG_OFFSET,
    DATA_OFFSET, HEADER_BYTES, MODE_TYPE2, SPACE_DEVICE, SPACE_HOST,
};
use cxlnic_ring::index::RingSize;
use cxlnic_ring::layout::{RxCompletion, RxDesc, TxDesc, COMPLETION_BYTES, DESC_BYTES};
use cxlnic_ring::queue::{check_completion, Producer};

/// Where the driver puts its host-memory parts in guest RAM.
pub const HOST_BASE: u64 = 0x10000;
pub const BUF: u32 = 2048;

pub struct Queue {
    pub cfg: QueueConfig,
    pub tx: Producer,
    pub rx: Producer,
    /// TX entries written but not yet published by a tail store.
    pub tx_pending: u32,
}

pub struct Driver {
    pub dev: Shared,
    pub ram: Shared,
    pub mode: u32,
    pub size: RingSize,
    pub queues: Vec<Queue>,
    pub gen: u32,
    pub inline: bool,
}

/// Allocates `len` bytes, 64-aligned, from a cursor.
fn take(cursor: &mut u64, len: u64) -> u64 {
    let at = *cursor;
    *cursor = (at + len).next_multiple_of(64);
    at
}

impl Driver {
    pub fn new(dev: Shared, ram: Shared, mode: u32, size: u32, queues: u32) -> Driver {
        let size = RingSize::new(size).expect("ring size");
        let mut host = HOST_BASE;
        let mut devm = DATA_OFFSET;
        let n = u64::from(size.get());
        let mut place = |space_dev: bool, len: u64| -> Loc {
            let (space, cursor) = if space_dev {
                (SPACE_DEVICE, &mut devm)
            } else {
                (SPACE_HOST, &mut host)
            };
            Loc {
                space,
                _pad: 0,
                addr: take(cursor, len),
            }
        };
        let t2 = mode == MODE_TYPE2;
        let area = n * u64::from(BUF);
        let queues = (0..queues)
            .map(|_| {
                let cfg = QueueConfig {
                    tx_ring: place(false, n * DESC_BYTES as u64),
                    rx_ring: place(t2, n * DESC_BYTES as u64),
                    rx_done: place(t2, n * COMPLETION_BYTES as u64),
                    driver_line: place(false, 64),
                    device_line: place(t2, 64),
                    tx_area: place(t2, area),
                    rx_area: place(t2, area),
                    tx_area_len: area as u32,
                    rx_area_len: area as u32,
                    _pad: 0,
                };
                Queue {
                    cfg,
                    tx: Producer::new(size, 0),
                    rx: Producer::new(size, 0),
                    tx_pending: 0,
                }
            })
            .collect();
        Driver {
            dev,
            ram,
            mode,
            size,
            queues,
            gen: 0,
            inline: false,
        }
    }

    fn mem(&self, loc: &Loc) -> (&Shared, u64) {
        match loc.space {
            SPACE_DEVICE => (&self.dev, loc.addr),
            _ => (&self.ram, loc.addr),
        }
    }

    pub fn write(&self, loc: &Loc, off: u64, data: &[u8]) {
        let (m, at) = self.mem(loc);
        m.write(at + off, data).expect("write");
    }

    pub fn read(&self, loc: &Loc, off: u64, out: &mut [u8]) {
        let (m, at) = self.mem(loc);
        m.read(at + off, out).expect("read");
    }

    pub fn store(&self, loc: &Loc, off: u64, v: u32) {
        let (m, at) = self.mem(loc);
        m.store(at + off, v).expect("store");
    }

    pub fn load(&self, loc: &Loc, off: u64) -> u32 {
        let (m, at) = self.mem(loc);
        m.load(at + off).expect("load")
    }

    pub fn header(&self) -> DeviceHeader {
        let mut raw = [0u8; HEADER_BYTES];
        self.dev.read(0, &mut raw).expect("header");
        DeviceHeader::decode(&raw)
    }

    /// The config this driver would write, with `edit` applied.
    pub fn config(&self) -> DriverConfig {
        let mut c = DriverConfig {
            mode: self.mode,
            queues: self.queues.len() as u32,
            tx_size: self.size.get(),
            rx_size: self.size.get(),
            batch: 4,
            flags: if self.inline {
                cxlnic_ring::device::FLAG_TX_INLINE
            } else {
                0
            },
            ..DriverConfig::default()
        };
        for (i, q) in self.queues.iter().enumerate() {
            c.queue[i] = q.cfg;
        }
        c
    }

    /// Writes `c` with a new generation, last.
    pub fn configure_with(&mut self, c: &DriverConfig) {
        self.gen = self.gen.wrapping_add(1);
        let raw: [u8; CONFIG_BYTES] = c.encode();
        self.dev
            .write(CONFIG_OFFSET + 4, &raw[4..])
            .expect("config");
        self.dev
            .store(CONFIG_OFFSET + CONFIG_GEN as u64, self.gen)
            .expect("gen");
    }

    pub fn configure(&mut self) {
        let c = self.config();
        self.configure_with(&c);
    }

    /// The device's answer to the last config: `Some(status)` once acked.
    pub fn answer(&self) -> Option<u32> {
        let ack = self.dev.load(header::CFG_ACK as u64).expect("ack");
        (ack == self.gen).then(|| self.dev.load(header::CFG_STATUS as u64).expect("status"))
    }

    /// Queues a frame on queue `q` (the tail is stored by `flush`).
    pub fn send(&mut self, q: usize, frame: &[u8]) -> bool {
        let inline = self.inline;
        let (cfg, entry) = {
            let queue = &self.queues[q];
            match queue.tx.next() {
                Some(e) => (queue.cfg, e),
                None => return false,
            }
        };
        let buf = entry.slot as u64 * u64::from(BUF);
        self.write(&cfg.tx_area, buf, frame);
        let desc = TxDesc {
            buf,
            len: frame.len() as u32,
            tag: entry.tag,
        };
        let raw = desc.encode();
        let at = (entry.slot * DESC_BYTES) as u64;
        // The tag, which publishes the entry, last.
        self.write(&cfg.tx_ring, at, &raw[..12]);
        self.store(&cfg.tx_ring, at + 12, desc.tag);
        let queue = &mut self.queues[q];
        queue.tx.commit();
        queue.tx_pending += 1;
        let _ = inline;
        true
    }

    /// Publishes the TX entries written (tail mode).
    pub fn flush(&mut self, q: usize) {
        let cfg = self.queues[q].cfg;
        let tail = self.queues[q].tx.tail();
        if !self.inline {
            self.store(&cfg.driver_line, 0, tail);
        }
        self.queues[q].tx_pending = 0;
    }

    /// Posts RX buffers until the ring is full.
    pub fn post_rx(&mut self, q: usize) {
        let cfg = self.queues[q].cfg;
        while let Some(entry) = self.queues[q].rx.next() {
            let desc = RxDesc {
                buf: entry.slot as u64 * u64::from(BUF),
                cap: BUF,
                tag: entry.tag,
            };
            let raw = desc.encode();
            let at = (entry.slot * DESC_BYTES) as u64;
            self.write(&cfg.rx_ring, at, &raw[..12]);
            self.store(&cfg.rx_ring, at + 12, desc.tag);
            self.queues[q].rx.commit();
        }
        self.store(&cfg.driver_line, 4, self.queues[q].rx.tail());
    }

    /// Asks for interrupts on queue `q`.
    pub fn want_irq(&self, q: usize, bits: u32) {
        self.store(&self.queues[q].cfg.driver_line, 8, bits);
    }

    /// Frames the device completed on queue `q` since the last call, and
    /// completions refused.
    pub fn receive(&mut self, q: usize) -> (Vec<Vec<u8>>, u32) {
        let cfg = self.queues[q].cfg;
        let head = self.load(&cfg.device_line, 4);
        let mut frames = vec![];
        let mut refused = 0;
        let Ok(span) = self.queues[q].rx.consumed(head) else {
            return (frames, 1);
        };
        for index in span.indices() {
            let slot = self.size.slot(index);
            let mut raw = [0u8; COMPLETION_BYTES];
            self.read(&cfg.rx_done, (slot * COMPLETION_BYTES) as u64, &mut raw);
            let c = RxCompletion::decode(&raw);
            match check_completion(&c, index, BUF) {
                Ok(len) => {
                    let mut f = vec![0u8; len as usize];
                    self.read(&cfg.rx_area, slot as u64 * u64::from(BUF), &mut f);
                    frames.push(f);
                }
                Err(_) => refused += 1,
            }
        }
        (frames, refused)
    }

    /// TX entries the device has taken (freed) since the last call;
    /// `None` if its head was refused.
    pub fn tx_done(&mut self, q: usize) -> Option<u32> {
        let cfg = self.queues[q].cfg;
        let head = self.load(&cfg.device_line, 0);
        self.queues[q].tx.consumed(head).ok().map(|s| s.count)
    }
}

/// An Ethernet/IPv4/UDP-looking frame of `len` bytes whose payload is a
/// function of `seq` (to check it arrives whole).
pub fn frame(len: usize, seq: u32) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[12] = 0x08;
    for (i, b) in f.iter_mut().enumerate().skip(14) {
        *b = (i as u32 ^ seq.wrapping_mul(2_654_435_761)) as u8;
    }
    f[14..18].copy_from_slice(&seq.to_le_bytes());
    f
}
