//! The testbed's L2 hub: an Ethernet segment outside the VMs that every
//! host's second NIC (and its third, for a server in a network
//! namespace) reaches, so that a host can send through another host's
//! NIC (drack_netdev's pooled NICs, #28).
//!
//! QEMU's `-netdev dgram` sends each frame as one unix datagram from the
//! port's socket to `hub.sock`; the hub floods it to every other port, as
//! a hub does (each virtio-net's MAC filter drops what is not for it).
//! Layout in `Documentation/cxlfabric/testbed.rst`.
//!
//! A port that is not there (its VM not started yet, killed, or restarted
//! on the same path) costs nothing: the datagram is dropped. A port that
//! does not read (a stopped VM) has a bounded queue and a send timeout,
//! so it never holds up the others.

use anyhow::{Context, Result};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Largest frame relayed: QEMU's dgram backend sends at most 68 KiB.
const MAX_FRAME: usize = 69 * 1024;
/// Frames queued per port before the hub drops (a port that stopped
/// reading); a few windows of a TCP flow at the rates tests shape to.
const PORT_QUEUE: usize = 512;
/// How long a send may wait for room in a port's socket queue.
const SEND_TIMEOUT: Duration = Duration::from_millis(20);
/// How often the threads look at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// One port of the hub: a NIC of one VM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubPort {
    pub host: usize,
    /// 1: the host's hub NIC; 2: host 1's NIC for namespace `ext`.
    pub index: usize,
    /// The VM's end (QEMU binds it).
    pub socket: PathBuf,
    pub mac: String,
}

/// The ports for `hosts` VMs: `hub<h>-1.sock` and `hub<h>-2.sock` on
/// every host (the second for a server in a namespace behind the hub:
/// host 1's while host 0 measures, host 0's when host 1 dies). MACs `52:54:00:cf:<index>:<host + 1>` (the
/// VM link's eth0 is `52:54:00:cf:00:<host + 1>`).
pub fn ports(run_dir: &Path, hosts: usize) -> Vec<HubPort> {
    let mut ports = Vec::new();
    if hosts < 2 {
        return ports;
    }
    for host in 0..hosts {
        for index in [1, 2] {
            ports.push(HubPort {
                host,
                index,
                socket: run_dir.join(format!("hub{host}-{index}.sock")),
                mac: format!("52:54:00:cf:{index:02x}:{:02x}", host + 1),
            });
        }
    }
    ports
}

/// The hub's own socket in `run_dir`.
pub fn socket(run_dir: &Path) -> PathBuf {
    run_dir.join("hub.sock")
}

/// QEMU arguments for `host`'s hub NICs, after the VM link's eth0 (the
/// guest names virtio-nets in PCI order: eth1, then eth2).
pub fn qemu_args(run_dir: &Path, ports: &[HubPort], host: usize) -> Vec<String> {
    let mut args = Vec::new();
    for p in ports.iter().filter(|p| p.host == host) {
        args.push("-netdev".to_string());
        args.push(format!(
            "dgram,id=hub{},local.type=unix,local.path={},remote.type=unix,remote.path={}",
            p.index,
            p.socket.display(),
            socket(run_dir).display()
        ));
        args.push("-device".to_string());
        args.push(format!(
            "virtio-net-pci,netdev=hub{},bus=pcie.0,mac={}",
            p.index, p.mac
        ));
    }
    args
}

#[derive(Default)]
struct Counters {
    received: AtomicU64,
    relayed: AtomicU64,
    dropped_full: AtomicU64,
    send_errors: AtomicU64,
}

/// The running hub; dropping it stops its threads, writes its counters
/// to `hub.log` and removes its socket.
pub struct Hub {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    counters: Arc<Counters>,
    dir: PathBuf,
}

impl Hub {
    /// Binds `hub.sock` in `run_dir` and starts relaying among `ports`
    /// (before QEMU starts: a VM's first frames would otherwise be lost).
    pub fn start(run_dir: &Path, ports: &[HubPort]) -> Result<Hub> {
        let path = socket(run_dir);
        let _ = std::fs::remove_file(&path);
        let sock = UnixDatagram::bind(&path).with_context(|| format!("bind {}", path.display()))?;
        sock.set_read_timeout(Some(POLL))?;
        // The same socket sends: QEMU sees frames come from its remote
        // path. The option is the socket's, so it holds for every clone.
        sock.set_write_timeout(Some(SEND_TIMEOUT))?;
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let mut threads = Vec::new();
        let mut outputs = Vec::new();
        for p in ports {
            let (tx, rx) = sync_channel::<Arc<Vec<u8>>>(PORT_QUEUE);
            let out = sock.try_clone()?;
            let (dest, stop, counters) = (p.socket.clone(), stop.clone(), counters.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("hub{}-{}", p.host, p.index))
                    .spawn(move || send_loop(&out, &dest, &rx, &stop, &counters))?,
            );
            outputs.push((p.socket.clone(), tx));
        }
        let (stop2, counters2) = (stop.clone(), counters.clone());
        let receiver = std::thread::Builder::new()
            .name("hub".into())
            .spawn(move || receive_loop(&sock, outputs, &stop2, &counters2));
        let mut hub = Hub {
            stop,
            threads,
            counters,
            dir: run_dir.to_path_buf(),
        };
        // On a spawn failure, the drop stops the senders already started.
        hub.threads.push(receiver?);
        Ok(hub)
    }
}

/// Floods every datagram to every port but the one it came from.
fn receive_loop(
    sock: &UnixDatagram,
    outputs: Vec<(PathBuf, SyncSender<Arc<Vec<u8>>>)>,
    stop: &AtomicBool,
    counters: &Counters,
) {
    let mut buf = vec![0u8; MAX_FRAME];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            // The poll timeout, or an error on one datagram: look again.
            continue;
        };
        counters.received.fetch_add(1, Ordering::Relaxed);
        let frame = Arc::new(buf[..n].to_vec());
        for (path, tx) in &outputs {
            if from.as_pathname() == Some(path.as_path()) {
                continue;
            }
            match tx.try_send(frame.clone()) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    counters.dropped_full.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
    // Dropping `outputs` disconnects the senders.
}

/// Sends one port's queue to its VM; a missing or dead VM (ENOENT,
/// ECONNREFUSED) or one whose queue stays full (EAGAIN after the
/// timeout) loses the frame.
fn send_loop(
    sock: &UnixDatagram,
    dest: &Path,
    rx: &Receiver<Arc<Vec<u8>>>,
    stop: &AtomicBool,
    counters: &Counters,
) {
    while !stop.load(Ordering::Relaxed) {
        match rx.recv_timeout(POLL) {
            Ok(frame) => match sock.send_to(&frame, dest) {
                Ok(_) => {
                    counters.relayed.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    counters.send_errors.fetch_add(1, Ordering::Relaxed);
                }
            },
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let c = &self.counters;
        let _ = std::fs::write(
            self.dir.join("hub.log"),
            format!(
                "hub: {} frames received, {} delivered, {} dropped (port queue full), \
                 {} not delivered (port absent, dead or not reading)\n",
                c.received.load(Ordering::Relaxed),
                c.relayed.load(Ordering::Relaxed),
                c.dropped_full.load(Ordering::Relaxed),
                c.send_errors.load(Ordering::Relaxed),
            ),
        );
        let _ = std::fs::remove_file(socket(&self.dir));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(dir: &Path, name: &str) -> (UnixDatagram, HubPort) {
        let path = dir.join(name);
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let p = HubPort {
            host: 0,
            index: 1,
            socket: path,
            mac: String::new(),
        };
        (sock, p)
    }

    #[test]
    fn ports_and_macs() {
        let p = ports(Path::new("/r"), 2);
        let names: Vec<_> = p
            .iter()
            .map(|p| (p.socket.display().to_string(), p.mac.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("/r/hub0-1.sock".to_string(), "52:54:00:cf:01:01"),
                ("/r/hub0-2.sock".to_string(), "52:54:00:cf:02:01"),
                ("/r/hub1-1.sock".to_string(), "52:54:00:cf:01:02"),
                ("/r/hub1-2.sock".to_string(), "52:54:00:cf:02:02"),
            ]
        );
        assert!(ports(Path::new("/r"), 1).is_empty());
        let args = qemu_args(Path::new("/r"), &p, 1).join(" ");
        assert!(args.contains("local.path=/r/hub1-2.sock,remote.type=unix,remote.path=/r/hub.sock"));
        assert!(args.contains("mac=52:54:00:cf:02:02"));
    }

    /// A frame reaches every port but its sender; a port that went away
    /// and came back on the same path gets frames again; the threads and
    /// the socket go with the hub.
    #[test]
    fn floods_survives_a_dead_port_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        let (a, pa) = port(dir.path(), "a.sock");
        let (b, pb) = port(dir.path(), "b.sock");
        let (c, pc) = port(dir.path(), "c.sock");
        let hub = Hub::start(dir.path(), &[pa.clone(), pb.clone(), pc.clone()]).unwrap();
        let hub_path = socket(dir.path());
        a.send_to(b"frame-1", &hub_path).unwrap();
        let mut buf = [0u8; 64];
        for s in [&b, &c] {
            let (n, from) = s.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"frame-1");
            assert_eq!(from.as_pathname(), Some(hub_path.as_path()));
        }
        a.set_nonblocking(true).unwrap();
        assert!(a.recv(&mut buf).is_err(), "echoed to its sender");
        // Port c dies: b still gets frames; c comes back on its path.
        drop(c);
        std::fs::remove_file(&pc.socket).unwrap();
        a.send_to(b"frame-2", &hub_path).unwrap();
        let n = b.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"frame-2");
        // c's own thread may still be about to send frame-2 (under load,
        // it ran after b's): only once it tried may c's path come back,
        // or the new c would get frame-2.
        let tried = || {
            let c = &hub.counters;
            c.relayed.load(Ordering::Relaxed) + c.send_errors.load(Ordering::Relaxed)
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while tried() < 4 {
            assert!(
                std::time::Instant::now() < deadline,
                "frame-2 never tried to c"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let (c, _) = port(dir.path(), "c.sock");
        b.send_to(b"frame-3", &hub_path).unwrap();
        let n = c.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"frame-3");
        drop(hub);
        assert!(!hub_path.exists());
        let log = std::fs::read_to_string(dir.path().join("hub.log")).unwrap();
        assert!(log.starts_with("hub: 3 frames received"), "{log}");
    }

    /// A port that reads nothing (a stopped VM) does not hold up the
    /// others: they get every frame, promptly.
    #[test]
    fn a_port_that_does_not_read_holds_up_no_one() {
        let dir = tempfile::tempdir().unwrap();
        let (a, pa) = port(dir.path(), "a.sock");
        let (_stuck, pb) = port(dir.path(), "b.sock");
        let (c, pc) = port(dir.path(), "c.sock");
        let hub = Hub::start(dir.path(), &[pa, pb, pc]).unwrap();
        let hub_path = socket(dir.path());
        const FRAMES: u32 = 300;
        let start = std::time::Instant::now();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 16];
            let mut got = 0;
            while got < FRAMES {
                let n = c.recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], got.to_le_bytes());
                got += 1;
            }
        });
        for i in 0..FRAMES {
            a.send_to(&i.to_le_bytes(), &hub_path).unwrap();
        }
        reader.join().unwrap();
        // Far less than one send timeout per frame to the stuck port.
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        drop(hub);
        let log = std::fs::read_to_string(dir.path().join("hub.log")).unwrap();
        assert!(log.starts_with("hub: 300 frames received"), "{log}");
    }
}
