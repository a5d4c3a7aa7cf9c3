//! The device model as QEMU and a guest driver see it: the ivshmem
//! greeting and doorbells, configuration and its refusals, frames across
//! a link in each mode, interrupts when asked, and hostile or faulty
//! entries on both sides.

mod driver;

use cxlnic_model::ivshmem::{client_setup, ClientSetup, MODEL_PEER};
use cxlnic_model::mem::Shared;
use cxlnic_model::model::{Command, Model, PortOptions};
use cxlnic_model::port::{Inject, PortSpec};
use cxlnic_ring::device::{
    ConfigError, DriverConfig, LINK_UP, MODE_PCIE, MODE_TYPE1, MODE_TYPE2, QUEUES_MAX,
    SPACE_DEVICE, VECTORS, VECTOR_CONFIG, VECTOR_QUEUE0,
};
use driver::{frame, Driver};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

const BAR: usize = 1 << 20;
const RAM: u64 = 8 << 20;

struct Bed {
    model: Model,
    clients: Vec<ClientSetup>,
    _dir: tempfile::TempDir,
    rams: Vec<std::fs::File>,
}

fn ram_file(dir: &Path, i: usize) -> (std::path::PathBuf, std::fs::File) {
    let p = dir.join(format!("ram{i}"));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    f.set_len(RAM).unwrap();
    (p, f)
}

/// Two ports linked to each other, each with a connected "QEMU".
fn bed(queues: u32) -> Bed {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = vec![];
    let mut rams = vec![];
    for i in 0..2 {
        let (p, f) = ram_file(dir.path(), i);
        rams.push(f);
        opts.push(PortOptions {
            socket: dir.path().join(format!("p{i}.sock")),
            bar_bytes: BAR,
            ram: Some(p),
            spec: PortSpec {
                mac: [2, 0, 0, 0, 0, i as u8],
                queues_max: queues,
                speed_mbps: 1000,
            },
            link: Some(1 - i),
        });
    }
    let mut model = Model::new(&opts, None).unwrap();
    let socks: Vec<UnixStream> = opts
        .iter()
        .map(|o| UnixStream::connect(&o.socket).unwrap())
        .collect();
    model.accept().unwrap();
    let clients = socks
        .iter()
        .map(|s| client_setup(s, VECTORS as usize).unwrap())
        .collect();
    Bed {
        model,
        clients,
        _dir: dir,
        rams,
    }
}

impl Bed {
    fn driver(&self, i: usize, mode: u32, size: u32, queues: u32) -> Driver {
        let dev = Shared::map(&self.clients[i].shm, 0, BAR).unwrap();
        let ram = Shared::map(&self.rams[i], 0, RAM as usize).unwrap();
        Driver::new(dev, ram, mode, size, queues)
    }

    fn pass(&mut self, n: usize) {
        for _ in 0..n {
            self.model.pass(false).unwrap();
        }
    }

    /// Interrupts pending on port `i`'s vector `v` (and clears them).
    fn irqs(&self, i: usize, v: u32) -> u64 {
        let mut n = [0u8; 8];
        match nix::unistd::read(self.clients[i].own[v as usize].as_raw_fd(), &mut n) {
            Ok(8) => u64::from_ne_bytes(n),
            _ => 0,
        }
    }

    /// Rings the model's doorbell `v` from port `i`'s guest.
    fn doorbell(&self, i: usize, v: u32) {
        let fd = &self.clients[i].peers[0].1[v as usize];
        nix::unistd::write(fd, &1u64.to_ne_bytes()).unwrap();
    }
}

/// Two linked ports, each configured in `mode` (8-entry rings, one
/// queue pair) by its driver, and the answers taken.
fn configured(mode: u32) -> (Bed, Driver, Driver) {
    let mut b = bed(1);
    let mut tx = b.driver(0, mode, 8, 1);
    let mut rx = b.driver(1, mode, 8, 1);
    tx.configure();
    rx.configure();
    b.pass(2);
    (b, tx, rx)
}

fn nonblock(fds: &[OwnedFd]) {
    for fd in fds {
        let flags = nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::F_GETFL).unwrap();
        let mut f = nix::fcntl::OFlag::from_bits_truncate(flags);
        f.insert(nix::fcntl::OFlag::O_NONBLOCK);
        nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::F_SETFL(f)).unwrap();
    }
}

#[test]
fn qemu_gets_the_ivshmem_greeting() {
    let b = bed(2);
    let c = &b.clients[0];
    assert_eq!(c.id, 1);
    assert_eq!(c.own.len(), VECTORS as usize);
    assert_eq!(c.peers.len(), 1, "the model is the one other peer");
    assert_eq!(c.peers[0].0, i64::from(MODEL_PEER));
    assert_eq!(c.peers[0].1.len(), VECTORS as usize);
    let st = nix::sys::stat::fstat(c.shm.as_raw_fd()).unwrap();
    assert_eq!(st.st_size as usize, BAR);
    assert_eq!(b.clients[1].id, 2);
    // The device header is there for the driver to find.
    let d = b.driver(0, MODE_TYPE1, 8, 1);
    let h = d.header();
    assert!(h.supported());
    assert_eq!(h.bar_bytes, BAR as u64);
    assert_eq!(h.host_bytes, RAM);
    assert_eq!(h.queues_max, 2);
    assert_eq!(h.mac[..6], [2, 0, 0, 0, 0, 0]);
    assert_eq!(h.link, 0, "no carrier before both ends are configured");
}

#[test]
fn doorbells_reach_the_model_and_interrupts_the_guest() {
    let mut b = bed(1);
    nonblock(&b.clients[0].own);
    let mut d = b.driver(0, MODE_TYPE1, 8, 1);
    d.configure();
    // The guest rings the config doorbell (BAR0: peer 0, vector 0).
    b.doorbell(0, VECTOR_CONFIG);
    b.pass(1);
    assert_eq!(d.answer(), Some(0));
    assert!(b.irqs(0, VECTOR_CONFIG) >= 1, "the answer interrupts");
}

#[test]
fn a_config_out_of_bounds_or_in_the_wrong_space_is_refused() {
    let mut b = bed(2);
    let mut d = b.driver(0, MODE_TYPE1, 8, 1);
    let good = d.config();
    type Spoil = fn(&mut DriverConfig);
    let cases: [(Spoil, ConfigError); 8] = [
        (|c| c.mode = 9, ConfigError::Mode),
        (|c| c.queues = 0, ConfigError::Queues),
        (|c| c.queues = QUEUES_MAX + 1, ConfigError::Queues),
        (|c| c.tx_size = 12, ConfigError::RingSize),
        (|c| c.batch = 0, ConfigError::Batch),
        (|c| c.flags = 1 << 9, ConfigError::Flags),
        (
            |c| c.queue[0].rx_area.addr = RAM - 64,
            ConfigError::Placement,
        ),
        (
            |c| c.queue[0].tx_ring.space = SPACE_DEVICE,
            ConfigError::Placement,
        ),
    ];
    for (spoil, want) in cases {
        let mut c = good;
        spoil(&mut c);
        d.configure_with(&c);
        b.pass(1);
        assert_eq!(d.answer(), Some(want.code()), "{want:?}");
        assert_eq!(b.model.port_mut(0).unwrap().mode(), None);
    }
    // Two queues on a device that has two, then the queue past them is
    // not looked at.
    let mut c = good;
    c.queue[1] = c.queue[0];
    c.queues = 2;
    c.queue[2].rx_area.addr = u64::MAX;
    d.configure_with(&c);
    b.pass(1);
    assert_eq!(d.answer(), Some(0));
    assert_eq!(b.model.port_mut(0).unwrap().mode(), Some(MODE_TYPE1));
}

/// Sends `n` frames from port 0 to port 1 in `mode`, in bursts, and
/// checks each arrives once, in order, whole.
fn carry(mode: u32, inline: bool, n: u32, size: u32) -> Bed {
    let mut b = bed(1);
    let mut tx = b.driver(0, mode, size, 1);
    let mut rx = b.driver(1, mode, size, 1);
    tx.inline = inline;
    tx.configure();
    rx.configure();
    b.pass(1);
    assert_eq!((tx.answer(), rx.answer()), (Some(0), Some(0)));
    b.pass(1);
    assert_eq!(tx.header().link, LINK_UP);
    rx.post_rx(0);
    let mut sent = 0u32;
    let mut got = vec![];
    let mut rounds = 0;
    while got.len() < n as usize {
        rounds += 1;
        assert!(rounds < 10_000, "stuck after {} frames", got.len());
        while sent < n && tx.send(0, &frame(60 + (sent as usize * 37) % 1400, sent)) {
            sent += 1;
        }
        tx.flush(0);
        if mode == MODE_PCIE {
            b.doorbell(0, VECTOR_QUEUE0);
        }
        b.pass(1);
        tx.tx_done(0).expect("a head within what was posted");
        let (frames, refused) = rx.receive(0);
        assert_eq!(refused, 0);
        got.extend(frames);
        rx.post_rx(0);
    }
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f, &frame(60 + (i * 37) % 1400, i as u32), "frame {i}");
    }
    b
}

#[test]
fn frames_cross_the_link_in_every_mode() {
    for mode in [MODE_TYPE1, MODE_TYPE2, MODE_PCIE] {
        let mut b = carry(mode, false, 300, 16);
        let s = b.model.port_mut(0).unwrap().stats(0).unwrap();
        assert_eq!(s.tx_frames, 300, "mode {mode}");
        assert_eq!(s.tx_faults, 0);
        let r = b.model.port_mut(1).unwrap().stats(0).unwrap();
        assert_eq!((r.rx_frames, r.completions), (300, 300));
        if mode == MODE_PCIE {
            assert!(s.doorbells > 0);
        } else {
            assert_eq!(s.doorbells, 0);
        }
    }
}

#[test]
fn inline_tags_need_no_tail() {
    let mut b = carry(MODE_TYPE1, true, 100, 8);
    let s = b.model.port_mut(0).unwrap().stats(0).unwrap();
    assert_eq!((s.tx_frames, s.tx_faults), (100, 0));
}

#[test]
fn the_device_polls_only_with_a_doorbell_in_pcie_mode() {
    let (mut b, mut tx, mut rx) = configured(MODE_PCIE);
    rx.post_rx(0);
    assert!(tx.send(0, &frame(100, 0)));
    tx.flush(0);
    b.pass(3);
    assert_eq!(rx.receive(0).0.len(), 0, "no doorbell, no frame");
    b.doorbell(0, VECTOR_QUEUE0);
    b.pass(1);
    assert_eq!(rx.receive(0).0.len(), 1);
}

#[test]
fn interrupts_come_only_when_asked() {
    let (mut b, mut tx, mut rx) = configured(MODE_TYPE1);
    nonblock(&b.clients[1].own);
    b.irqs(1, VECTOR_QUEUE0);
    rx.post_rx(0);
    tx.send(0, &frame(100, 0));
    tx.flush(0);
    b.pass(1);
    assert_eq!(b.irqs(1, VECTOR_QUEUE0), 0, "busy polling: no interrupt");
    rx.want_irq(0, cxlnic_ring::layout::IRQ_RX);
    tx.send(0, &frame(100, 1));
    tx.flush(0);
    b.pass(1);
    assert_eq!(b.irqs(1, VECTOR_QUEUE0), 1);
    assert_eq!(rx.receive(0).0.len(), 2);
}

#[test]
fn hostile_descriptors_are_dropped_and_counted() {
    let (mut b, mut tx, mut rx) = configured(MODE_TYPE1);
    rx.post_rx(0);
    // A descriptor pointing past its area, one too long, one good.
    let cfg = tx.queues[0].cfg;
    for (i, (buf, len)) in [(u64::MAX - 8, 100u32), (0, 100_000), (0, 64)]
        .into_iter()
        .enumerate()
    {
        let e = tx.queues[0].tx.next().unwrap();
        tx.write(&cfg.tx_area, 0, &frame(64, 9));
        let d = cxlnic_ring::layout::TxDesc {
            buf,
            len,
            tag: e.tag,
        };
        tx.write(&cfg.tx_ring, (e.slot * 16) as u64, &d.encode());
        tx.queues[0].tx.commit();
        assert_eq!(e.index, i as u32);
    }
    tx.flush(0);
    // A tail claiming more than a ring.
    b.pass(1);
    let s = b.model.port_mut(0).unwrap().stats(0).unwrap();
    assert_eq!((s.tx_faults, s.tx_frames), (2, 1));
    assert_eq!(rx.receive(0).0, vec![frame(64, 9)]);
    tx.store(&cfg.driver_line, 0, 1 << 30);
    b.pass(1);
    let s = b.model.port_mut(0).unwrap().stats(0).unwrap();
    assert_eq!(s.tx_faults, 3);
}

#[test]
fn a_bad_rx_buffer_is_skipped_and_the_frame_takes_the_next() {
    let (mut b, mut tx, mut rx) = configured(MODE_TYPE1);
    // Entry 0 points past the RX area; the rest are good.
    let rcfg = rx.queues[0].cfg;
    let e = rx.queues[0].rx.next().unwrap();
    let d = cxlnic_ring::layout::RxDesc {
        buf: u64::from(rcfg.rx_area_len),
        cap: 2048,
        tag: e.tag,
    };
    rx.write(&rcfg.rx_ring, (e.slot * 16) as u64, &d.encode());
    rx.queues[0].rx.commit();
    rx.post_rx(0);
    assert!(tx.send(0, &frame(80, 1)));
    tx.flush(0);
    b.pass(1);
    let r = b.model.port_mut(1).unwrap().stats(0).unwrap();
    assert_eq!((r.rx_faults, r.rx_frames), (1, 1));
    // The skipped entry has no completion: the driver refuses it.
    let (frames, refused) = rx.receive(0);
    assert_eq!((frames, refused), (vec![frame(80, 1)], 1));
}

#[test]
fn a_faulty_device_is_caught_by_the_driver_checks() {
    let (mut b, mut tx, mut rx) = configured(MODE_TYPE1);
    rx.post_rx(0);
    for f in [Inject::CompletionLength, Inject::CompletionTag] {
        b.model.command(Command::Inject { port: 1, fault: f });
        assert!(tx.send(0, &frame(100, 0)));
        tx.flush(0);
        b.pass(1);
        let (frames, refused) = rx.receive(0);
        assert_eq!((frames.len(), refused), (0, 1), "{f:?}");
        rx.post_rx(0);
    }
    b.model.command(Command::Inject {
        port: 0,
        fault: Inject::TxHead,
    });
    assert!(tx.send(0, &frame(100, 0)));
    tx.flush(0);
    b.pass(1);
    assert_eq!(tx.tx_done(0), None, "a head past the tail is refused");
}

#[test]
fn a_stopped_device_stops_beating_and_comes_back_reset() {
    let mut b = bed(1);
    let mut tx = b.driver(0, MODE_TYPE1, 8, 1);
    let mut rx = b.driver(1, MODE_TYPE1, 8, 1);
    tx.configure();
    rx.configure();
    b.model.tick(true).unwrap();
    b.model.tick(true).unwrap();
    let beat = tx.header().heartbeat;
    assert!(beat >= 2);
    b.model.command(Command::Stop);
    for _ in 0..3 {
        b.model.tick(true).unwrap();
    }
    assert_eq!(
        tx.header().heartbeat,
        beat,
        "a stopped device does not beat"
    );
    b.model.command(Command::Start);
    let h = tx.header();
    assert_eq!(h.link, 0, "reset: no carrier");
    assert_eq!(
        b.model.port_mut(0).unwrap().mode(),
        None,
        "reset: no config"
    );
    tx.configure();
    rx.configure();
    b.pass(2);
    assert_eq!(tx.answer(), Some(0));
    assert_eq!(tx.header().link, LINK_UP);
}

#[test]
fn the_flow_hash_spreads_flows_over_queues() {
    let mut b = bed(4);
    let mut tx = b.driver(0, MODE_TYPE1, 64, 1);
    let mut rx = b.driver(1, MODE_TYPE1, 64, 4);
    tx.configure();
    rx.configure();
    b.pass(2);
    for q in 0..4 {
        rx.post_rx(q);
    }
    for i in 0..40 {
        assert!(tx.send(0, &frame(100, i)));
    }
    tx.flush(0);
    b.pass(2);
    let per: Vec<usize> = (0..4).map(|q| rx.receive(q).0.len()).collect();
    assert_eq!(per.iter().sum::<usize>(), 40);
    assert!(per.iter().filter(|&&n| n > 0).count() >= 3, "{per:?}");
}
