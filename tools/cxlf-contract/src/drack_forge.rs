//! drack_netdev's hostile peer: plays a host of the region that no
//! module runs as (a third host of a region laid out for three on a
//! two-host testbed), through the core's own source end, so every entry
//! it writes is well-formed (CRC, sequence, epoch, buffer of its own):
//! only the port byte or the frame's contents are hostile. What scenario
//! 49_drack_pooled_nics makes the destination's driver face on the vNIC
//! ports; it passes only if every buffer comes back.

use anyhow::{bail, ensure, Context, Result};
use beluga::{Mapping, Pool};
use drack_core::layout::{Geometry, RefEntry};
use drack_core::mem::{OutOfBounds, PoolMem};
use drack_core::nic::{vnic_mac, NicTable, Port};
use drack_core::peer::{attach, beat, heartbeat, join, Session, SrcEnd};
use drack_core::refq::RefQueue;
use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The pool through a user-space mapping (whose reads invalidate and
/// writes write back already).
struct MapMem<'a>(&'a Mapping);

fn at(off: u64) -> Result<usize, OutOfBounds> {
    usize::try_from(off).map_err(|_| OutOfBounds)
}

impl PoolMem for MapMem<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn read(&self, off: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        self.0.read(at(off)?, buf).map_err(|_| OutOfBounds)
    }
    fn write(&self, off: u64, data: &[u8]) -> Result<(), OutOfBounds> {
        self.0.write(at(off)?, data).map_err(|_| OutOfBounds)
    }
    fn write_back(&self, off: u64, len: u64) -> Result<(), OutOfBounds> {
        self.0
            .write_back(at(off)?, at(len)?)
            .map_err(|_| OutOfBounds)
    }
    fn invalidate(&self, off: u64, len: u64) -> Result<(), OutOfBounds> {
        self.0
            .invalidate(at(off)?, at(len)?)
            .map_err(|_| OutOfBounds)
    }
}

/// One forged frame: its port byte and the addresses in it.
#[derive(Debug, Clone, Copy)]
pub struct Forged {
    port: u8,
    src_mac: Option<[u8; 6]>,
}

fn mac(s: &str) -> Result<[u8; 6]> {
    let v: Vec<u8> = s
        .split(':')
        .map(|b| u8::from_str_radix(b, 16))
        .collect::<Result<_, _>>()
        .with_context(|| format!("MAC address {s:?}"))?;
    v.try_into()
        .map_err(|_| anyhow::anyhow!("MAC address {s:?}: not six bytes"))
}

fn number(s: &str) -> Result<u8> {
    let v = match s.strip_prefix("0x") {
        Some(h) => u8::from_str_radix(h, 16),
        None => s.parse(),
    };
    v.with_context(|| format!("{s:?} is not a byte"))
}

/// `link`, `to:N`, `from:N` or `raw:BYTE`, then optionally `/MAC`: the
/// frame's source address (by default the one an honest sender puts:
/// its vNIC's for `to:N`).
pub fn parse(spec: &str) -> Result<Forged> {
    let (port, src_mac) = match spec.split_once('/') {
        Some((p, m)) => (p, Some(mac(m)?)),
        None => (spec, None),
    };
    let port = match port.split_once(':') {
        None if port == "link" => Port::Link.encode(),
        Some(("to", n)) => Port::ToNic(number(n)?).encode(),
        Some(("from", n)) => Port::FromNic(number(n)?).encode(),
        Some(("raw", b)) => number(b)?,
        _ => bail!("frame {spec:?}: link, to:N, from:N or raw:BYTE, then /MAC"),
    };
    Ok(Forged { port, src_mac })
}

/// An Ethernet frame of 60 bytes from `me` to `dst` on `port`: to a
/// unicast address no host has, EtherType 0x88b5 (local experimental),
/// marked as ours. Its source is `f.src_mac`, else what an honest host
/// puts (its vNIC's address for a NIC's port).
fn frame(f: &Forged, me: u32, dst: u32, k: usize) -> [u8; 60] {
    let honest = match Port::decode(f.port) {
        Some(Port::ToNic(n)) => vnic_mac(dst, n, me),
        Some(Port::FromNic(_)) => [0x02, 0, 0, 0, 0, 0x66],
        _ => [0x02, 0x44, 0x52, 0x4b, 0, 0xee],
    };
    let to = match Port::decode(f.port) {
        // What a lent NIC passes on: for the destination's vNIC of it.
        Some(Port::FromNic(n)) => vnic_mac(me, n, dst),
        _ => [0x02, 0, 0, 0, 0, 0x99],
    };
    let mut b = [0u8; 60];
    b[..6].copy_from_slice(&to);
    b[6..12].copy_from_slice(&f.src_mac.unwrap_or(honest));
    b[12..14].copy_from_slice(&[0x88, 0xb5]);
    b[14..25].copy_from_slice(b"drack-forge");
    b[25] = u8::try_from(k).unwrap_or(u8::MAX);
    b
}

/// Host `me`'s heartbeat, every 100 ms while it forges (a lease of a
/// second announced): the destination reads a live peer's queue, and
/// declares it dead a lease after it stops.
struct Beater {
    geom: Geometry,
    me: u32,
    epoch: u32,
    beat: u64,
    last: Instant,
}

impl Beater {
    fn tick(&mut self, m: &MapMem<'_>) -> Result<()> {
        if self.last.elapsed() >= Duration::from_millis(100) {
            self.beat += 1;
            self.last = Instant::now();
            beat(
                m,
                &self.geom,
                self.me,
                self.epoch,
                self.beat,
                1000,
                &NicTable::default(),
            )
            .map_err(|_| anyhow::anyhow!("cannot write host {}'s heartbeat", self.me))?;
        }
        Ok(())
    }
}

/// Polls `end` (beating) until `done` holds or `timeout` passes.
fn poll_until(
    m: &MapMem<'_>,
    end: &mut SrcEnd,
    b: &mut Beater,
    timeout: Duration,
    done: impl Fn(&SrcEnd) -> bool,
) -> Result<bool> {
    let until = Instant::now() + timeout;
    while Instant::now() < until {
        b.tick(m)?;
        end.poll(m);
        if done(end) {
            return Ok(true);
        }
        sleep(Duration::from_millis(2));
    }
    Ok(false)
}

/// Joins region `region` as host `me` (which no module may run as: its
/// heartbeat must not move), opens a session with host `dst` and sends
/// it `frames`, one by one, each by reference in a buffer of our own:
/// written, committed, then its entry rewritten with the forged port
/// byte (CRC and all) before the tail is published. Each buffer must
/// come back as a return (not a refusal: the entries are intact and the
/// session's) within `timeout_ms`. Prints one line per frame.
pub fn forge(
    dev: &Path,
    region: &str,
    me: u32,
    dst: u32,
    frames: &[Forged],
    timeout_ms: u64,
) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready()?;
    let h = pool
        .open_object(region)
        .with_context(|| format!("open region {region}"))?;
    let map = pool.map(&h)?;
    let m = MapMem(&map);
    let geom = attach(&m).map_err(|e| anyhow::anyhow!("region {region}: {e:?}"))?;
    ensure!(
        me < geom.hosts() && dst < geom.hosts() && me != dst,
        "hosts {me} and {dst} in a region of {}",
        geom.hosts()
    );
    let was = heartbeat(&m, &geom, me).map(|h| (h.epoch, h.beat));
    sleep(Duration::from_millis(300));
    ensure!(
        heartbeat(&m, &geom, me).map(|h| (h.epoch, h.beat)) == was,
        "host {me} beats: a module runs as it"
    );
    let epoch = join(&m, &geom, me).map_err(|_| anyhow::anyhow!("join as host {me}"))?;
    let mut b = Beater {
        geom,
        me,
        epoch,
        beat: 0,
        last: Instant::now(),
    };
    let mut end = SrcEnd::new(geom, me, dst, epoch).context("no such pair")?;
    end.start(&m)
        .map_err(|_| anyhow::anyhow!("cannot write the source line"))?;
    let timeout = Duration::from_millis(timeout_ms);
    ensure!(
        poll_until(&m, &mut end, &mut b, timeout, |e| e.session()
            == Session::Up)?,
        "host {dst} did not take a session with host {me} (epoch {epoch})"
    );
    println!("host {me} joined in epoch {epoch}, session with host {dst} up");
    let queue = RefQueue::new(geom, end.pair());
    for (k, f) in frames.iter().enumerate() {
        let payload = frame(f, me, dst, k);
        let before = (end.counters.returned, end.counters.refused);
        let r = end
            .reserve(payload.len() as u32, false)
            .map_err(|e| anyhow::anyhow!("reserve: {e:?}"))?;
        for (_, off, l) in r.parts() {
            let part = payload.get(..usize::from(l)).context("frame part")?;
            m.write(off, part)
                .map_err(|_| anyhow::anyhow!("write buffer"))?;
        }
        end.commit(&m, &r, None)
            .map_err(|e| anyhow::anyhow!("commit: {e:?}"))?;
        // The entry as the core wrote it, with our port byte: a new CRC.
        let (e, intact) = queue
            .get(&m, r.pos)
            .map_err(|_| anyhow::anyhow!("read entry"))?;
        ensure!(intact, "the entry just written does not check");
        queue
            .put(&m, &RefEntry { port: f.port, ..e })
            .map_err(|_| anyhow::anyhow!("write entry"))?;
        end.publish(&m)
            .map_err(|_| anyhow::anyhow!("publish the tail"))?;
        let back = poll_until(&m, &mut end, &mut b, timeout, |e| {
            e.buffers().not_free() == 0
        })?;
        let (returned, refused) = (
            end.counters.returned - before.0,
            end.counters.refused - before.1,
        );
        println!(
            "frame {k}: port {:#04x}, source {}, buffer {}: {returned} returned, {refused} refused",
            f.port,
            payload[6..12]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":"),
            r.bufs[0],
        );
        ensure!(
            back,
            "frame {k}: its buffer did not come back in {timeout_ms} ms"
        );
        ensure!(
            (returned, refused) == (1, 0),
            "frame {k}: its buffer came back by refusal, not returned"
        );
    }
    ensure!(
        end.counters.faults() == 0,
        "host {dst}'s lines gave faults: {:?}",
        end.counters
    );
    println!("{} frames to host {dst}, every buffer back", frames.len());
    Ok(())
}
