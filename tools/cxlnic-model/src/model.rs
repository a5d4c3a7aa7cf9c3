//! The device model's run loop: one ivshmem server per port, the ports'
//! devices, the link between them (or a port's TAP interface on the
//! host), and a control socket for the tests.
//!
//! One thread polls everything (the machine running it is small and
//! also runs the VMs): it spins while there is work and backs off to at
//! most [`IDLE_MAX`] between passes when there is none, so an idle NIC
//! costs little and a busy one is served at once.

use crate::ivshmem::{Guest, Server};
use crate::mem::{GuestRam, Shared};
use crate::port::{Inject, Port, PortSpec};
use crate::tap::{Tap, TapStats};
use anyhow::{Context, Result};
use cxlnic_ring::device::{self, HEARTBEAT_MS, VECTORS, VECTOR_CONFIG, VECTOR_QUEUE0};
use cxlnic_ring::kvs;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The longest the loop sleeps when nothing happens.
pub const IDLE_MAX: Duration = Duration::from_micros(500);
/// Passes with no work before it sleeps at all.
pub const SPIN_PASSES: u32 = 64;

/// One port as given on the command line.
#[derive(Debug, Clone)]
pub struct PortOptions {
    pub socket: PathBuf,
    pub bar_bytes: usize,
    pub ram: Option<PathBuf>,
    pub spec: PortSpec,
    /// The port its frames go to (itself for a loopback).
    pub link: Option<usize>,
    /// The host TAP interface its frames go to and come from instead
    /// (not with `link`).
    pub tap: Option<String>,
}

/// Where a port's frames go and where frames for it come from.
enum Backend {
    /// Nowhere: what the port sends is dropped.
    None,
    /// Another port of this model (itself for a loopback).
    Link(usize),
    /// The host's network stack, through a TAP interface.
    Tap(Tap),
}

/// A port with its server and, once QEMU connected, its guest.
struct Device {
    server: Server,
    guest: Option<Guest>,
    port: Port,
    backend: Backend,
}

/// A control command (one JSON object per line on the control socket).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Command {
    /// Make port `port` commit a fault once.
    Inject {
        port: usize,
        fault: Inject,
    },
    /// Stop serving (heartbeat, rings, config) as a crashed device does,
    /// and start again from reset.
    Stop,
    Start,
    /// Every port's counters.
    Stats,
    /// The longest pause between passes while idle, microseconds (the
    /// device's polling cadence: a NIC in hardware polls all the time;
    /// a model on a shared CPU backs off).
    Poll {
        idle_max_us: u64,
    },
}

/// Each port's mode and per-queue counters (`stats`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PortStats {
    pub mode: Option<u32>,
    pub link: bool,
    pub guest: bool,
    pub queues: Vec<std::collections::BTreeMap<String, u64>>,
    /// Queue accesses dropped because the driver had written a newer
    /// config (absent in answers from before, hence the default).
    #[serde(default)]
    pub superseded: u64,
    /// The TAP backend's counters; absent for other ports (and in
    /// answers from before TAP backends, hence the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap: Option<TapStats>,
    /// The key-value offload's counters; absent for a port without one
    /// (and in answers from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kvs: Option<KvsPortStats>,
}

/// A port's key-value offload (`stats`: a port's `kvs`): whether it
/// serves, and its counters by their names (`KVS_STATS_NAMES`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvsPortStats {
    pub enabled: bool,
    #[serde(flatten)]
    pub counters: std::collections::BTreeMap<String, u64>,
}

pub struct Model {
    devices: Vec<Device>,
    control: Option<UnixListener>,
    running: bool,
    idle_max: Duration,
}

fn device_memory(bytes: usize) -> Result<OwnedFd> {
    anyhow::ensure!(
        bytes.is_power_of_two(),
        "device memory of {bytes} bytes: ivshmem wants a power of two"
    );
    let fd = nix::sys::memfd::memfd_create(
        c"cxlnic-bar2",
        nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC,
    )
    .context("memfd_create")?;
    nix::unistd::ftruncate(&fd, bytes as i64).context("ftruncate")?;
    Ok(fd)
}

/// Port `i`'s backend from its options: a link or a TAP, not both (the
/// frames a port sends go to one place).
fn backend(i: usize, p: &PortOptions) -> Result<Backend> {
    match (p.link, &p.tap) {
        (Some(_), Some(_)) => anyhow::bail!("port {i}: link= and tap= exclude each other"),
        (Some(l), None) => Ok(Backend::Link(l)),
        (None, Some(name)) => Ok(Backend::Tap(
            Tap::open(name).with_context(|| format!("port {i}"))?,
        )),
        (None, None) => Ok(Backend::None),
    }
}

fn guest_ram(path: &Path) -> Result<GuestRam> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("guest RAM {}", path.display()))?;
    let len = file.metadata()?.len();
    let mem = Shared::map(&file, 0, usize::try_from(len)?)?;
    Ok(GuestRam::new(mem))
}

impl Model {
    /// Creates every port's device memory and server, and the control
    /// socket if asked; QEMU may connect from now on.
    pub fn new(ports: &[PortOptions], control: Option<&Path>) -> Result<Model> {
        let mut devices = vec![];
        for (i, p) in ports.iter().enumerate() {
            // The backend first: a TAP refused leaves no socket behind.
            let backend = backend(i, p)?;
            let fd = device_memory(p.bar_bytes)?;
            let mem = Shared::map(&fd, 0, p.bar_bytes)?;
            let ram = p.ram.as_deref().map(guest_ram).transpose()?;
            let port = Port::new(mem, ram, p.spec.clone()).with_context(|| format!("port {i}"))?;
            let server = Server::bind(&p.socket, fd, VECTORS)?;
            server.listener().set_nonblocking(true)?;
            devices.push(Device {
                server,
                guest: None,
                port,
                backend,
            });
        }
        let control = control
            .map(|path| -> Result<UnixListener> {
                if path.exists() {
                    std::fs::remove_file(path)?;
                }
                let l =
                    UnixListener::bind(path).with_context(|| format!("bind {}", path.display()))?;
                l.set_nonblocking(true)?;
                Ok(l)
            })
            .transpose()?;
        Ok(Model {
            devices,
            control,
            running: true,
            idle_max: IDLE_MAX,
        })
    }

    /// Runs until `stop` says so.
    pub fn run(&mut self, stop: impl Fn() -> bool) -> Result<()> {
        let mut idle = 0u32;
        let mut pause = Duration::from_micros(10);
        let mut last_beat = Instant::now();
        while !stop() {
            let beat = last_beat.elapsed() >= Duration::from_millis(HEARTBEAT_MS.into());
            if beat {
                last_beat = Instant::now();
            }
            let work = self.tick(beat)?;
            if work > 0 {
                idle = 0;
                pause = Duration::from_micros(10);
            } else {
                idle = idle.saturating_add(1);
                if idle > SPIN_PASSES {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(self.idle_max);
                }
            }
        }
        Ok(())
    }

    /// Greets new guests, answers the control socket and, unless
    /// stopped, makes one pass (bumping heartbeats if `beat`).
    pub fn tick(&mut self, beat: bool) -> Result<u32> {
        self.accept()?;
        self.control()?;
        if self.running {
            self.pass(beat)
        } else {
            Ok(0)
        }
    }

    /// One pass over every port; returns the work done.
    /// Configs (the NIC's, the KVS offload's and its commands), then
    /// every port's TX, then the link (and the TAPs, both ways), then the
    /// offload's answers to what arrived, then every port's RX: a frame
    /// sent is in its receiver's buffer by the pass's end, one the host
    /// sent is in its port's, and a request's answer is on its way back.
    pub fn pass(&mut self, beat: bool) -> Result<u32> {
        let mut work = 0;
        let mut carried: Vec<(usize, Vec<u8>)> = vec![];
        let mut sent = vec![];
        for d in &mut self.devices {
            // A device whose hang is over resumes mid-pass, where it
            // stopped, before it looks at a config again.
            if let Some(v) = d.port.resume()? {
                ring(d, v);
            }
            if d.port.hung() {
                // No heartbeat, no config; doorbells wait in their
                // eventfds.
                sent.push(vec![]);
                continue;
            }
            let (config, queues) = doorbells(d);
            if d.port.poll_config()? || config {
                ring(d, VECTOR_CONFIG);
                work += 1;
            }
            work += d.port.poll_kvs();
            if beat {
                d.port.beat()?;
            }
            sent.push(d.port.transmit(&queues)?);
            send_outbound(d, &mut carried);
        }
        for (to, frame) in carried {
            if let Some(d) = self.devices.get_mut(to) {
                d.port.deliver(frame);
            }
        }
        for d in &mut self.devices {
            work += receive_from_host(d);
        }
        // The offload's answers to what was just delivered go out now,
        // as frames the driver sent would have: a request and its answer
        // take one pass. (Answers to these answers wait for the next.)
        let mut answers = vec![];
        for d in &mut self.devices {
            work += send_answers(d, &mut answers);
        }
        for (to, frame) in answers {
            if let Some(d) = self.devices.get_mut(to) {
                d.port.deliver(frame);
            }
        }
        for (d, tx) in self.devices.iter_mut().zip(&sent) {
            let (progress, irqs) = d.port.receive(tx)?;
            work += progress.work;
            for v in irqs {
                ring(d, v);
            }
        }
        for d in &mut self.devices {
            if !d.port.hung() {
                d.port.publish_kvs();
            }
        }
        self.update_links()?;
        Ok(work)
    }

    /// Carrier is up on a configured port whose link partner is
    /// configured too, or whose backend is a TAP.
    fn update_links(&mut self) -> Result<()> {
        let configured: Vec<bool> = self
            .devices
            .iter()
            .map(|d| d.port.mode().is_some())
            .collect();
        for d in &mut self.devices {
            let partner = match &d.backend {
                Backend::Link(l) => configured.get(*l).copied().unwrap_or(false),
                // The host's side of a TAP is there while the TAP works.
                Backend::Tap(t) => t.healthy(),
                Backend::None => false,
            };
            let up = self.running && d.port.mode().is_some() && partner;
            if up != d.port.link_up() && !d.port.hung() {
                d.port.set_link(up)?;
                ring(d, VECTOR_CONFIG);
            }
            if let Backend::Tap(t) = &mut d.backend {
                t.set_carrier(up);
            }
        }
        Ok(())
    }

    /// Greets every guest that connected since (a port takes one).
    pub fn accept(&mut self) -> Result<()> {
        for (i, d) in self.devices.iter_mut().enumerate() {
            if d.guest.is_some() {
                continue;
            }
            match d.server.accept(i as i64 + 1) {
                Ok(g) => {
                    eprintln!("cxlnic-model: port {i}: guest connected as peer {}", g.id);
                    d.guest = Some(g);
                }
                Err(e) if is_would_block(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn control(&mut self) -> Result<()> {
        let Some(l) = &self.control else {
            return Ok(());
        };
        let stream = match l.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        let reply = match read_command(&stream) {
            Ok(cmd) => self.command(cmd),
            Err(e) => serde_json::json!({ "error": format!("{e:#}") }),
        };
        let mut w = &stream;
        let _ = writeln!(w, "{reply}");
        Ok(())
    }

    /// Carries out one control command; its JSON answer.
    pub fn command(&mut self, cmd: Command) -> serde_json::Value {
        match cmd {
            Command::Inject { port, fault } => match self.devices.get_mut(port) {
                Some(d) => {
                    d.port.inject(fault);
                    serde_json::json!({ "ok": true })
                }
                None => serde_json::json!({ "error": format!("no port {port}") }),
            },
            Command::Stop => {
                self.running = false;
                serde_json::json!({ "ok": true })
            }
            Command::Start => {
                for d in &mut self.devices {
                    if let Err(e) = d.port.reset() {
                        return serde_json::json!({ "error": format!("{e:#}") });
                    }
                }
                self.running = true;
                serde_json::json!({ "ok": true })
            }
            Command::Stats => serde_json::to_value(self.stats()).unwrap_or_default(),
            Command::Poll { idle_max_us } => {
                self.idle_max = Duration::from_micros(idle_max_us.clamp(1, 100_000));
                serde_json::json!({ "ok": true })
            }
        }
    }

    pub fn stats(&self) -> Vec<PortStats> {
        self.devices
            .iter()
            .map(|d| PortStats {
                mode: d.port.mode(),
                link: d.port.link_up(),
                guest: d.guest.is_some(),
                superseded: d.port.superseded(),
                queues: (0..d.port.queues())
                    .filter_map(|q| d.port.stats(q))
                    .map(|s| {
                        device::QUEUE_STATS_NAMES
                            .iter()
                            .zip(s.values())
                            .map(|(n, v)| (n.to_string(), v))
                            .collect()
                    })
                    .collect(),
                tap: match &d.backend {
                    Backend::Tap(t) => Some(t.stats()),
                    _ => None,
                },
                kvs: d.port.kvs_stats().map(|(enabled, s)| KvsPortStats {
                    enabled,
                    counters: kvs::KVS_STATS_NAMES
                        .iter()
                        .zip(s.values())
                        .map(|(n, v)| (n.to_string(), v))
                        .collect(),
                }),
            })
            .collect()
    }

    /// Port `i` (the tests drive ports directly).
    pub fn port_mut(&mut self, i: usize) -> Option<&mut Port> {
        self.devices.get_mut(i).map(|d| &mut d.port)
    }
}

fn is_would_block(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::WouldBlock)
    })
}

/// Hands the frames a port sent to its backend: a link's go to
/// `carried` (delivered once every port has sent), a TAP's are written
/// to the host now, and without a backend they are dropped.
fn send_outbound(d: &mut Device, carried: &mut Vec<(usize, Vec<u8>)>) {
    let frames = d.port.outbound.drain(..).map(|(_, f)| f);
    match &mut d.backend {
        Backend::Link(to) => carried.extend(frames.map(|f| (*to, f))),
        Backend::Tap(tap) => {
            tap.send(frames);
        }
        // Dropping the drain empties `outbound`.
        Backend::None => drop(frames),
    }
}

/// Hands the offload's answers to the port's backend, as
/// [`send_outbound`] does the driver's frames, and counts those sent and
/// dropped. Returns the answers (work).
fn send_answers(d: &mut Device, carried: &mut Vec<(usize, Vec<u8>)>) -> u32 {
    let answers = d.port.take_kvs_answers();
    let n = answers.len();
    if n == 0 {
        return 0;
    }
    let sent = match &mut d.backend {
        Backend::Link(to) => {
            carried.extend(answers.into_iter().map(|f| (*to, f)));
            n
        }
        Backend::Tap(tap) => tap.send(answers) as usize,
        Backend::None => 0,
    };
    d.port.kvs_sent(sent, n - sent);
    n as u32
}

/// Delivers to a TAP port what the host sent it (a bounded batch, never
/// waiting); a port without a config takes nothing. Returns the frames
/// read: work, so the loop keeps spinning while the host sends.
fn receive_from_host(d: &mut Device) -> u32 {
    let Backend::Tap(tap) = &mut d.backend else {
        return 0;
    };
    let port = &mut d.port;
    tap.receive(|frame| {
        if port.mode().is_none() {
            return false;
        }
        port.deliver(frame);
        true
    })
}

/// Which doorbells the guest rang: the config vector, and each queue's.
fn doorbells(d: &Device) -> (bool, Vec<bool>) {
    let bells = d.server.doorbells();
    let config = bells.take(VECTOR_CONFIG) > 0;
    let queues = (0..device::QUEUES_MAX)
        .map(|q| bells.take(VECTOR_QUEUE0 + q) > 0)
        .collect();
    (config, queues)
}

/// Interrupts the guest on vector `v` (nothing if none is connected).
fn ring(d: &Device, v: u32) {
    if let Some(g) = &d.guest {
        let _ = g.irq.ring(v);
    }
}

fn read_command(stream: &UnixStream) -> Result<Command> {
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line)?;
    serde_json::from_str(line.trim()).context("a command")
}

/// Sends `cmd` to a model's control socket; its answer.
pub fn send_command(path: &Path, cmd: &Command) -> Result<serde_json::Value> {
    let mut s = UnixStream::connect(path).with_context(|| format!("connect {}", path.display()))?;
    writeln!(s, "{}", serde_json::to_string(cmd)?)?;
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line)?;
    let v: serde_json::Value = serde_json::from_str(line.trim()).context("answer")?;
    if let Some(e) = v.get("error") {
        anyhow::bail!("model: {e}");
    }
    Ok(v)
}
