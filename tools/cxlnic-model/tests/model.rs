//! The device model as QEMU and a guest driver see it: the ivshmem
//! greeting and doorbells, configuration and its refusals, frames across
//! a link in each mode, interrupts when asked, hostile or faulty
//! entries on both sides, and a port on a host TAP interface.

mod driver;

use cxlnic_model::ivshmem::{client_setup, ClientSetup, MODEL_PEER};
use cxlnic_model::mem::Shared;
use cxlnic_model::model::{Command, Model, PortOptions};
use cxlnic_model::port::{Inject, PortSpec};
use cxlnic_ring::device::{
    ConfigError, DriverConfig, LINK_UP, MODE_OFF, MODE_PCIE, MODE_TYPE1, MODE_TYPE2, QUEUES_MAX,
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
    try_bed(queues, |i, o| o.link = Some(1 - i)).unwrap()
}

/// Two ports whose backends `backend` sets, each with a connected
/// "QEMU"; the model's error if it refuses them.
fn try_bed(queues: u32, backend: impl Fn(usize, &mut PortOptions)) -> anyhow::Result<Bed> {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = vec![];
    let mut rams = vec![];
    for i in 0..2 {
        let (p, f) = ram_file(dir.path(), i);
        rams.push(f);
        let mut o = PortOptions {
            socket: dir.path().join(format!("p{i}.sock")),
            bar_bytes: BAR,
            ram: Some(p),
            spec: PortSpec {
                mac: [2, 0, 0, 0, 0, i as u8],
                queues_max: queues,
                speed_mbps: 1000,
            },
            link: None,
            tap: None,
        };
        backend(i, &mut o);
        opts.push(o);
    }
    let mut model = Model::new(&opts, None)?;
    let socks: Vec<UnixStream> = opts
        .iter()
        .map(|o| UnixStream::connect(&o.socket).unwrap())
        .collect();
    model.accept().unwrap();
    let clients = socks
        .iter()
        .map(|s| client_setup(s, VECTORS as usize).unwrap())
        .collect();
    Ok(Bed {
        model,
        clients,
        _dir: dir,
        rams,
    })
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

/// Fills `len` bytes at `loc` of `d`'s memory with `byte`.
fn poison(d: &Driver, loc: &cxlnic_ring::device::Loc, len: usize, byte: u8) {
    d.write(loc, 0, &vec![byte; len]);
}

/// Whether `len` bytes at `loc` of `d`'s memory all hold `byte`.
fn holds(d: &Driver, loc: &cxlnic_ring::device::Loc, len: usize, byte: u8) -> bool {
    let mut got = vec![0u8; len];
    d.read(loc, 0, &mut got);
    got.iter().all(|&b| b == byte)
}

#[test]
fn a_config_written_between_a_descriptor_read_and_its_completion_stops_the_write() {
    let (mut b, mut tx, mut rx) = configured(MODE_TYPE1);
    rx.post_rx(0);
    b.model.command(Command::Inject {
        port: 1,
        fault: Inject::Hang,
    });
    assert!(tx.send(0, &frame(100, 1)));
    tx.flush(0);
    b.pass(1);
    let port = b.model.port_mut(1).unwrap();
    assert!(port.hung(), "hung after reading the descriptor");
    let s = port.stats(0).unwrap();
    assert_eq!((s.rx_desc_reads, s.completions), (1, 0));
    // A hung device does not beat: the driver takes it as gone.
    let beat = rx.header().heartbeat;
    b.model.tick(true).unwrap();
    assert_eq!(rx.header().heartbeat, beat);
    // The driver writes a new config (off) and gives the rings' memory
    // to other uses: the buffers, completions and its line.
    let cfg = rx.queues[0].cfg;
    let area = cfg.rx_area_len as usize;
    poison(&rx, &cfg.rx_area, area, 0xa5);
    poison(&rx, &cfg.rx_done, 8 * 8, 0xa5);
    poison(&rx, &cfg.device_line, 64, 0xa5);
    let mut off = rx.config();
    off.mode = MODE_OFF;
    rx.configure_with(&off);
    // The device resumes mid-pass, where it stopped.
    b.model.port_mut(1).unwrap().wake();
    b.pass(2);
    assert!(holds(&rx, &cfg.rx_area, area, 0xa5), "a frame was written");
    assert!(holds(&rx, &cfg.rx_done, 8 * 8, 0xa5), "a completion");
    assert!(holds(&rx, &cfg.device_line, 64, 0xa5), "a head");
    let port = b.model.port_mut(1).unwrap();
    assert_eq!(port.superseded(), 1);
    // Then it took the new config.
    assert_eq!(rx.answer(), Some(0));
    assert_eq!(port.mode(), None);
    assert_eq!(b.model.stats()[1].superseded, 1);
}

#[test]
fn a_hung_device_resumes_where_it_stopped() {
    let (mut b, mut tx, mut rx) = configured(MODE_TYPE2);
    rx.post_rx(0);
    b.model.command(Command::Inject {
        port: 1,
        fault: Inject::Hang,
    });
    assert!(tx.send(0, &frame(300, 1)));
    assert!(tx.send(0, &frame(300, 2)));
    tx.flush(0);
    b.pass(3);
    assert!(b.model.port_mut(1).unwrap().hung());
    assert_eq!(rx.receive(0).0.len(), 0, "nothing while hung");
    b.model.port_mut(1).unwrap().wake();
    b.pass(1);
    assert_eq!(rx.receive(0).0, vec![frame(300, 1), frame(300, 2)]);
    assert_eq!(b.model.port_mut(1).unwrap().superseded(), 0);
}

#[test]
fn a_forged_tx_head_inside_the_posted_range_parts_the_two_sides() {
    for inline in [false, true] {
        let mut b = bed(1);
        let mut tx = b.driver(0, MODE_TYPE1, 8, 1);
        let mut rx = b.driver(1, MODE_TYPE1, 8, 1);
        tx.inline = inline;
        tx.configure();
        rx.configure();
        b.pass(2);
        rx.post_rx(0);
        for i in 0..2 {
            assert!(tx.send(0, &frame(100, i)));
        }
        tx.flush(0);
        b.model.command(Command::Inject {
            port: 0,
            fault: Inject::TxHeadForged,
        });
        b.pass(1);
        // The driver takes the head as progress: both entries are free
        // again, though the device sent neither.
        assert_eq!(tx.tx_done(0), Some(2), "inline {inline}");
        assert_eq!(rx.receive(0).0.len(), 0);
        // It fills the ring, over the entries the device has not taken.
        let mut n = 0;
        while tx.send(0, &frame(100, 10 + n)) {
            n += 1;
        }
        assert_eq!(n, 8);
        tx.flush(0);
        b.pass(3);
        // The device goes on from where it was, but its entry is gone:
        // it takes nothing, for good.
        let s = b.model.port_mut(0).unwrap().stats(0).unwrap();
        assert_eq!(s.tx_frames, 0, "inline {inline}");
        if !inline {
            assert!(s.tx_faults >= 1, "a tail more than a ring ahead");
        }
        assert_eq!(rx.receive(0).0.len(), 0);
        assert_eq!(tx.tx_done(0), Some(0), "nothing freed");
    }
}

#[test]
fn a_forged_rx_head_claims_buffers_never_filled() {
    let (mut b, mut tx, mut rx) = configured(MODE_TYPE1);
    rx.post_rx(0);
    b.model.command(Command::Inject {
        port: 1,
        fault: Inject::RxHeadForged,
    });
    b.pass(1);
    // Every buffer "completed", none filled: the completions are refused.
    assert_eq!(rx.receive(0), (vec![], 8));
    // The driver posts them again; the device goes on from where it was
    // and finds the ring more than full.
    rx.post_rx(0);
    assert!(tx.send(0, &frame(100, 1)));
    tx.flush(0);
    b.pass(3);
    let s = b.model.port_mut(1).unwrap().stats(0).unwrap();
    assert_eq!(s.rx_frames, 0);
    assert!(s.rx_faults >= 1);
    assert_eq!(rx.receive(0), (vec![], 0));
}

#[test]
fn a_pcie_doorbell_drains_the_ring_past_one_step() {
    let mut b = bed(1);
    let mut tx = b.driver(0, MODE_PCIE, 256, 1);
    let mut rx = b.driver(1, MODE_PCIE, 256, 1);
    tx.configure();
    rx.configure();
    b.pass(2);
    rx.post_rx(0);
    let n = 3 * cxlnic_model::port::STEP_BUDGET + 10;
    for i in 0..n {
        assert!(tx.send(0, &frame(64, i)));
    }
    tx.flush(0);
    // One doorbell for the lot, as a driver rings after a burst.
    b.doorbell(0, VECTOR_QUEUE0);
    b.pass(6);
    let s = b.model.port_mut(0).unwrap().stats(0).unwrap();
    assert_eq!((s.tx_frames, s.doorbells), (u64::from(n), 1));
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

#[test]
fn stats_answers_without_tap_counters_still_parse() {
    // An answer from before TAP backends, and a linked port's now: no
    // `tap` in either.
    let old = r#"{"mode":1,"link":true,"guest":false,"queues":[{"tx_frames":3}]}"#;
    let s: cxlnic_model::model::PortStats = serde_json::from_str(old).unwrap();
    assert_eq!((s.mode, s.tap), (Some(1), None));
    let b = bed(1);
    let v = serde_json::to_value(b.model.stats()).unwrap();
    assert!(v[0].get("tap").is_none(), "{v}");
}

#[test]
fn a_port_with_both_a_link_and_a_tap_is_refused() {
    let e = try_bed(1, |i, o| {
        o.link = Some(1 - i);
        o.tap = (i == 0).then(|| "cxlnt-never".to_string());
    })
    .err()
    .expect("refused");
    assert!(format!("{e:#}").contains("exclude each other"), "{e:#}");
}

/// The host's side of a TAP interface, as the test sees it.
mod host {
    use nix::libc;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::{Duration, Instant};

    /// IEEE 802 "local experimental": nothing in the host stack answers
    /// it, so what a packet socket bound to it sees is the test's.
    pub const ETHERTYPE: u16 = 0x88b5;

    /// Why a TAP cannot be made here, if it cannot.
    pub fn tun_unavailable() -> Option<String> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(cxlnic_model::tap::TUN_PATH)
            .err()
            .map(|e| format!("cannot open {}: {e}", cxlnic_model::tap::TUN_PATH))
    }

    /// Whether `e` comes from a refused permission (no CAP_NET_ADMIN).
    pub fn is_permission(e: &anyhow::Error) -> bool {
        e.chain().any(|c| {
            c.downcast_ref::<nix::errno::Errno>()
                .is_some_and(|&n| n == nix::errno::Errno::EPERM || n == nix::errno::Errno::EACCES)
        })
    }

    /// A syscall's result, or its errno named after `what`.
    fn check(ret: libc::c_int, what: &str) -> io::Result<libc::c_int> {
        if ret < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
        }
        Ok(ret)
    }

    /// An interface request for `name`, the rest zero.
    fn ifreq(name: &str) -> libc::ifreq {
        // SAFETY: plain data; all zeroes is valid.
        let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, s) in r.ifr_name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        r
    }

    /// A packet socket bound to the interface and `ETHERTYPE`: it sees
    /// the frames the model writes to the TAP (the host receives them)
    /// and sends frames out of the interface (to the model).
    pub struct Host {
        name: String,
        sock: OwnedFd,
        /// Any socket will do for interface ioctls.
        ctl: std::net::UdpSocket,
    }

    impl Host {
        /// Brings interface `name` up (without IPv6, whose chatter
        /// would reach the port too) and binds a packet socket to it.
        pub fn new(name: &str) -> io::Result<Host> {
            let ipv6 = format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6");
            let _ = std::fs::write(ipv6, "1");
            let ctl = std::net::UdpSocket::bind("127.0.0.1:0")?;
            let proto = ETHERTYPE.to_be();
            // SAFETY: plain syscall; the fd is owned at once.
            let fd = check(
                unsafe {
                    libc::socket(
                        libc::AF_PACKET,
                        libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                        i32::from(proto),
                    )
                },
                "socket(AF_PACKET)",
            )?;
            // SAFETY: fd was just returned by socket() and is ours.
            let sock = unsafe { OwnedFd::from_raw_fd(fd) };
            let h = Host {
                name: name.to_string(),
                sock,
                ctl,
            };
            h.set_up()?;
            h.bind(proto)?;
            Ok(h)
        }

        /// Sets IFF_UP (a TAP that is down refuses the model's writes).
        fn set_up(&self) -> io::Result<()> {
            let mut r = ifreq(&self.name);
            let fd = self.ctl.as_raw_fd();
            // SAFETY: SIOC[GS]IFFLAGS read and write the ifreq, which
            // lives across the calls.
            unsafe {
                check(
                    libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut r),
                    "SIOCGIFFLAGS",
                )?;
                r.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
                check(libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &r), "SIOCSIFFLAGS")?;
            }
            Ok(())
        }

        /// Sets the interface's MTU.
        pub fn set_mtu(&self, mtu: i32) -> io::Result<()> {
            let mut r = ifreq(&self.name);
            r.ifr_ifru.ifru_mtu = mtu;
            // SAFETY: SIOCSIFMTU reads the ifreq, which lives across it.
            check(
                unsafe { libc::ioctl(self.ctl.as_raw_fd(), libc::SIOCSIFMTU as _, &r) },
                "SIOCSIFMTU",
            )?;
            Ok(())
        }

        /// Binds the socket to the interface and the protocol.
        fn bind(&self, proto: u16) -> io::Result<()> {
            let cname = std::ffi::CString::new(self.name.as_str())?;
            // SAFETY: a NUL-terminated name.
            let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
            if index == 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: plain data; all zeroes is valid.
            let mut sa: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sa.sll_family = libc::AF_PACKET as u16;
            sa.sll_protocol = proto;
            sa.sll_ifindex = index as i32;
            // SAFETY: sa is a sockaddr_ll of the length given.
            check(
                unsafe {
                    libc::bind(
                        self.sock.as_raw_fd(),
                        (&sa as *const libc::sockaddr_ll).cast(),
                        std::mem::size_of::<libc::sockaddr_ll>() as u32,
                    )
                },
                "bind(AF_PACKET)",
            )?;
            Ok(())
        }

        /// Sends `frame` out of the interface: into the TAP, to the model.
        pub fn send(&self, frame: &[u8]) -> io::Result<()> {
            // SAFETY: the buffer is valid for its length.
            let n =
                unsafe { libc::send(self.sock.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            check(n as libc::c_int, "send(AF_PACKET)")?;
            assert_eq!(n as usize, frame.len());
            Ok(())
        }

        /// The next frame the host received on the interface (what the
        /// model wrote to the TAP), waiting at most `within`.
        pub fn recv(&self, within: Duration) -> Option<Vec<u8>> {
            let end = Instant::now() + within;
            let mut buf = vec![0u8; 1 << 16];
            while Instant::now() < end {
                // SAFETY: the buffer is valid for its length.
                let n = unsafe {
                    libc::recv(
                        self.sock.as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                        libc::MSG_DONTWAIT,
                    )
                };
                if n >= 0 {
                    return Some(buf[..n as usize].to_vec());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            None
        }
    }

    /// The interface's carrier as sysfs reads it ("0" or "1"; `None`
    /// while it is down, when the kernel refuses the read).
    pub fn carrier(name: &str) -> Option<String> {
        let path = format!("/sys/class/net/{name}/carrier");
        Some(std::fs::read_to_string(path).ok()?.trim().to_string())
    }

    /// A broadcast frame of `len` bytes of `ETHERTYPE` whose payload is
    /// a function of `seq`.
    pub fn frame(len: usize, seq: u8) -> Vec<u8> {
        let mut f: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seq).collect();
        f[..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0xee, seq]);
        f[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
        f
    }
}

/// Passes until `done` holds, for at most two seconds: the host's side
/// of a TAP runs in the kernel, at its own pace.
fn pass_until(b: &mut Bed, mut done: impl FnMut(&mut Bed) -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < end {
        b.pass(1);
        if done(b) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    false
}

/// Port 0's TAP counters, as `stats` answers them.
fn tap_stats(b: &Bed) -> cxlnic_model::tap::TapStats {
    b.model.stats()[0].tap.expect("port 0 has a TAP")
}

/// Port 0 on a fresh TAP interface (port 1 unconnected), or why not here.
fn tap_bed(name: &str) -> Result<Bed, String> {
    if let Some(why) = host::tun_unavailable() {
        return Err(why);
    }
    match try_bed(1, |i, o| o.tap = (i == 0).then(|| name.to_string())) {
        Ok(b) => Ok(b),
        Err(e) if host::is_permission(&e) => Err(format!("{e:#}")),
        Err(e) => panic!("a TAP port: {e:#}"),
    }
}

#[test]
fn a_tap_port_carries_frames_to_and_from_the_host() {
    let name = format!("cxlnt{}", std::process::id());
    let mut b = match tap_bed(&name) {
        Ok(b) => b,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let mut d = b.driver(0, MODE_TYPE1, 8, 1);
    d.configure();
    b.pass(2);
    assert_eq!(d.answer(), Some(0));
    assert_eq!(
        d.header().link,
        LINK_UP,
        "a configured TAP port has carrier"
    );

    // The interface is still down: the kernel refuses what the port
    // sends, and the model drops it, counts it and goes on.
    assert!(d.send(0, &host::frame(100, 0)));
    d.flush(0);
    b.pass(1);
    assert_eq!(tap_stats(&b).dropped_to_host, 1);

    let host = host::Host::new(&name).expect("the TAP's host side");

    // Port to host: what the driver sends, the host receives, whole.
    let out = host::frame(200, 1);
    assert!(d.send(0, &out));
    d.flush(0);
    b.pass(1);
    let seen = host.recv(std::time::Duration::from_secs(2));
    assert!(
        seen.as_ref() == Some(&out),
        "the port's frame on the host's side: {:?} bytes",
        seen.map(|f| f.len())
    );

    // Host to port: what the host sends out of the interface lands in
    // the driver's RX ring, whole.
    d.post_rx(0);
    let back = host::frame(300, 2);
    host.send(&back).unwrap();
    let mut got = vec![];
    let arrived = pass_until(&mut b, |_| {
        let (frames, refused) = d.receive(0);
        assert_eq!(refused, 0);
        got.extend(frames);
        d.post_rx(0);
        got.contains(&back)
    });
    let lens: Vec<usize> = got.iter().map(|f| f.len()).collect();
    assert!(arrived, "the host's frame in the port's RX ring: {lens:?}");

    // A frame past FRAME_MAX from the host is dropped and counted.
    host.set_mtu(9500).unwrap();
    host.send(&host::frame(9100, 3)).unwrap();
    assert!(pass_until(&mut b, |b| tap_stats(b).dropped_from_host == 1));
    assert!(d.receive(0).0.iter().all(|f| f.len() < 9100));

    // The TAP's carrier follows the port's link.
    assert_eq!(host::carrier(&name).as_deref(), Some("1"));

    // A port the driver turned off loses carrier, on both sides (so the
    // host's stack holds what it would send).
    let mut off = d.config();
    off.mode = MODE_OFF;
    d.configure_with(&off);
    b.pass(2);
    assert_eq!(d.header().link, 0, "no config, no carrier");
    assert_eq!(host::carrier(&name).as_deref(), Some("0"));

    // The counters, also on the control socket's answer.
    let s = tap_stats(&b);
    assert_eq!(
        (s.frames_to_host, s.bytes_to_host, s.dropped_to_host),
        (1, 200, 1)
    );
    assert_eq!((s.frames_from_host, s.bytes_from_host), (1, 300));
    let v = b.model.command(Command::Stats);
    assert_eq!(v[0]["tap"]["frames_to_host"], 1, "{v}");
    assert_eq!(v[0]["tap"]["dropped_from_host"], 1, "{v}");
    assert_eq!(s.errors, 0);

    // The interface deleted under the model: the model goes on, counts
    // the failure, drops what the port sends and takes the port's
    // carrier away.
    d.configure();
    b.pass(2);
    assert_eq!(d.header().link, LINK_UP);
    let deleted = std::process::Command::new("ip")
        .args(["link", "del", &name])
        .status();
    if !deleted.as_ref().is_ok_and(|s| s.success()) {
        println!("not checked: a deleted TAP (`ip link del {name}`: {deleted:?})");
        return;
    }
    assert!(d.send(0, &host::frame(100, 5)));
    d.flush(0);
    b.pass(2);
    let s = tap_stats(&b);
    assert!(s.errors >= 1, "{s:?}");
    assert_eq!(s.dropped_to_host, 2, "{s:?}");
    assert_eq!(d.header().link, 0, "a failing TAP, no carrier");
}
