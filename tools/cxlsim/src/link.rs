//! Links (ESF's "bus"): a point-to-point connection with a bandwidth per
//! direction, full or half duplex, header overhead and a per-hop bus time.
//!
//! What is modelled: serialisation (a message occupies the link for its size
//! divided by the bandwidth), then the bus time (Table III: 1 ns) before it
//! reaches the far port. A data message (read data, write data, dirty BIRsp)
//! is one payload (a cache line); a message without data (read request,
//! completion, BISnp, BIRsp) is `header_ratio` times a payload. This is the
//! accounting under which ESF's full-duplex results follow the closed form
//! bandwidth/B = 1/max(r h + (1-r), r + (1-r) h) (full duplex) and 1/(1+h)
//! (half duplex, no turnaround), r the read fraction and h the header ratio.
//!
//! Full duplex: the two directions are independent (ESF's bandwidth
//! allocation gives each direction the full bandwidth). Half duplex: one
//! direction at a time; reversing costs the turnaround time; a direction
//! keeps the link for up to `half_duplex_burst` messages while the other
//! waits. The queue of each direction is the output queue of the sending port
//! (a switch's per-port output queue); queues are unbounded (the requesters'
//! queue capacities bound the messages in flight).

use crate::config::{ns_to_ps, Duplex, LinkConfig, LinkSpec};
use crate::event::Ps;
use crate::stats::Occupancy;
use anyhow::{bail, Result};
use std::collections::VecDeque;

/// Resolved link parameters (integer picoseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkParams {
    /// Serialisation of a data message (one payload).
    pub ser_data_ps: Ps,
    /// Serialisation of a message without data.
    pub ser_hdr_ps: Ps,
    pub bus_ps: Ps,
    pub half: bool,
    pub turnaround_ps: Ps,
    pub burst: u32,
}

impl LinkParams {
    /// `spec` overrides `base`; `line_bytes` is the payload size.
    pub fn resolve(base: &LinkConfig, spec: &LinkSpec, line_bytes: u32) -> Result<LinkParams> {
        let what = format!("link {} - {}", spec.a, spec.b);
        let bw = spec.bandwidth_gbps.unwrap_or(base.bandwidth_gbps);
        let unlimited = spec.unlimited.unwrap_or(base.unlimited);
        let h = spec.header_ratio.unwrap_or(base.header_ratio);
        if !h.is_finite() || !(0.0..=16.0).contains(&h) {
            bail!("{what}: header_ratio = {h}: must be between 0 and 16");
        }
        let (ser_data_ps, ser_hdr_ps) = if unlimited {
            (0, 0)
        } else {
            if !bw.is_finite() || bw <= 0.0 {
                bail!("{what}: bandwidth_gbps = {bw}: must be > 0 (or set unlimited = true)");
            }
            if bw > 1e6 {
                bail!("{what}: bandwidth_gbps = {bw}: at most 1e6 (use unlimited = true)");
            }
            // bytes / (GB/s) = ns; * 1000 = ps.
            let data = line_bytes as f64 * 1000.0 / bw;
            let hdr = h * data;
            if data > 1e12 {
                bail!("{what}: bandwidth_gbps = {bw}: too small");
            }
            (data.round() as Ps, hdr.round() as Ps)
        };
        let duplex = spec.duplex.unwrap_or(base.duplex);
        if base.half_duplex_burst == 0 {
            bail!("link half_duplex_burst = 0: must be at least 1");
        }
        Ok(LinkParams {
            ser_data_ps,
            ser_hdr_ps,
            bus_ps: ns_to_ps(
                &format!("{what}: bus_ns"),
                spec.bus_ns.unwrap_or(base.bus_ns),
            )?,
            half: duplex == Duplex::Half,
            turnaround_ps: ns_to_ps(
                &format!("{what}: turnaround_ns"),
                spec.turnaround_ns.unwrap_or(base.turnaround_ns),
            )?,
            burst: base.half_duplex_burst,
        })
    }

    #[inline]
    pub fn ser_ps(&self, data: bool) -> Ps {
        if data {
            self.ser_data_ps
        } else {
            self.ser_hdr_ps
        }
    }
}

/// A queued message: packet id with the data flag in the top bit.
pub type Queued = u32;
pub const DATA_BIT: u32 = 1 << 31;

/// Counters of one direction.
#[derive(Clone, Debug, Default)]
pub struct ChanCounters {
    /// Time spent serialising messages.
    pub busy_ps: u64,
    /// Time spent reversing (half duplex), charged to the direction turned to.
    pub turnaround_ps: u64,
    pub messages: u64,
    pub data_messages: u64,
    /// Messages offered, and those offered while the queue (waiting plus
    /// in transfer) held at least `Link::mark_threshold` (a congestion
    /// mark, as a device-load field or ECN would carry).
    pub offered: u64,
    pub marked: u64,
}

/// One direction of a link, with the output queue of its sending port.
#[derive(Debug, Default)]
pub struct Channel {
    pub queue: VecDeque<Queued>,
    /// End of the current transfer (full duplex).
    pub busy_until: Ps,
    /// A LinkFree event is scheduled.
    pub free_pending: bool,
    pub counters: ChanCounters,
    pub occupancy: Occupancy,
}

/// The result of offering a message to a link.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer {
    /// Transfer started now; it ends at `end`.
    Started { end: Ps },
    /// Queued; schedule a LinkFree at `wake` if given.
    Queued { wake: Option<Ps> },
}

/// A transfer started when the link became free.
#[derive(Debug, PartialEq, Eq)]
pub struct Next {
    pub dir: u8,
    pub msg: Queued,
    pub end: Ps,
}

#[derive(Debug)]
pub struct Link {
    pub params: LinkParams,
    pub chans: [Channel; 2],
    /// Half duplex: end of the current transfer, current direction, messages
    /// sent in it, LinkFree pending.
    busy_until: Ps,
    cur_dir: u8,
    burst_count: u32,
    free_pending: bool,
    /// Marking threshold (`u32::MAX`: off).
    pub mark_threshold: u32,
}

impl Link {
    pub fn new(params: LinkParams) -> Link {
        Link {
            params,
            chans: [Channel::default(), Channel::default()],
            busy_until: 0,
            cur_dir: 0,
            burst_count: 0,
            free_pending: false,
            mark_threshold: u32::MAX,
        }
    }

    /// Messages waiting or in transfer in direction `dir` (for adaptive
    /// routing).
    #[inline]
    pub fn load(&self, dir: u8, now: Ps) -> usize {
        let ch = &self.chans[dir as usize];
        let busy = if self.params.half {
            self.busy_until > now
        } else {
            ch.busy_until > now
        };
        ch.queue.len() + busy as usize
    }

    #[inline]
    fn start(&mut self, now: Ps, dir: u8, data: bool) -> Ps {
        let ser = self.params.ser_ps(data);
        let p = &self.params;
        if p.half {
            let mut t = now;
            if dir != self.cur_dir {
                t = t.saturating_add(p.turnaround_ps);
                self.chans[dir as usize].counters.turnaround_ps += p.turnaround_ps;
                self.cur_dir = dir;
                self.burst_count = 0;
            }
            self.burst_count += 1;
            self.busy_until = t.saturating_add(ser);
        } else {
            self.chans[dir as usize].busy_until = now.saturating_add(ser);
        }
        let c = &mut self.chans[dir as usize].counters;
        c.busy_ps = c.busy_ps.saturating_add(ser);
        c.messages += 1;
        c.data_messages += data as u64;
        if p.half {
            self.busy_until
        } else {
            now.saturating_add(ser)
        }
    }

    /// Offers message `msg` (packet id | DATA_BIT) to direction `dir`.
    #[inline]
    pub fn offer(&mut self, now: Ps, dir: u8, msg: Queued) -> Offer {
        let data = msg & DATA_BIT != 0;
        if self.mark_threshold != u32::MAX {
            let load = self.load(dir, now);
            let c = &mut self.chans[dir as usize].counters;
            c.offered += 1;
            c.marked += (load >= self.mark_threshold as usize) as u64;
        }
        if self.params.half {
            if self.chans[0].queue.is_empty()
                && self.chans[1].queue.is_empty()
                && self.busy_until <= now
            {
                return Offer::Started {
                    end: self.start(now, dir, data),
                };
            }
            let ch = &mut self.chans[dir as usize];
            ch.queue.push_back(msg);
            ch.occupancy.set(now, ch.queue.len() as u32);
            if self.free_pending {
                Offer::Queued { wake: None }
            } else {
                self.free_pending = true;
                Offer::Queued {
                    wake: Some(self.busy_until.max(now)),
                }
            }
        } else {
            let ch = &mut self.chans[dir as usize];
            if ch.queue.is_empty() && ch.busy_until <= now {
                return Offer::Started {
                    end: self.start(now, dir, data),
                };
            }
            ch.queue.push_back(msg);
            ch.occupancy.set(now, ch.queue.len() as u32);
            if ch.free_pending {
                Offer::Queued { wake: None }
            } else {
                ch.free_pending = true;
                Offer::Queued {
                    wake: Some(ch.busy_until.max(now)),
                }
            }
        }
    }

    /// The LinkFree event of direction `dir` (ignored for half duplex):
    /// starts the next queued message, if any, and tells when to wake next.
    #[inline]
    pub fn on_free(&mut self, now: Ps, dir: u8) -> (Option<Next>, Option<Ps>) {
        if self.params.half {
            self.free_pending = false;
            let cur = self.cur_dir as usize;
            let other = 1 - cur;
            let pick = if !self.chans[cur].queue.is_empty()
                && (self.burst_count < self.params.burst || self.chans[other].queue.is_empty())
            {
                cur
            } else if !self.chans[other].queue.is_empty() {
                other
            } else {
                return (None, None);
            };
            let ch = &mut self.chans[pick];
            let msg = ch.queue.pop_front().expect("non-empty");
            ch.occupancy.set(now, ch.queue.len() as u32);
            let end = self.start(now, pick as u8, msg & DATA_BIT != 0);
            let wake = if self.chans[0].queue.is_empty() && self.chans[1].queue.is_empty() {
                None
            } else {
                self.free_pending = true;
                Some(end)
            };
            (
                Some(Next {
                    dir: pick as u8,
                    msg,
                    end,
                }),
                wake,
            )
        } else {
            let ch = &mut self.chans[dir as usize];
            ch.free_pending = false;
            let Some(msg) = ch.queue.pop_front() else {
                return (None, None);
            };
            ch.occupancy.set(now, ch.queue.len() as u32);
            let end = self.start(now, dir, msg & DATA_BIT != 0);
            let ch = &mut self.chans[dir as usize];
            let wake = if ch.queue.is_empty() {
                None
            } else {
                ch.free_pending = true;
                Some(end)
            };
            (Some(Next { dir, msg, end }), wake)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(half: bool) -> LinkParams {
        LinkParams {
            ser_data_ps: 1000,
            ser_hdr_ps: 250,
            bus_ps: 1000,
            half,
            turnaround_ps: 100,
            burst: 2,
        }
    }

    #[test]
    fn full_duplex_directions_are_independent() {
        let mut l = Link::new(params(false));
        assert_eq!(l.offer(0, 0, 1 | DATA_BIT), Offer::Started { end: 1000 });
        assert_eq!(l.offer(0, 1, 2 | DATA_BIT), Offer::Started { end: 1000 });
        assert_eq!(l.offer(10, 0, 3), Offer::Queued { wake: Some(1000) });
        assert_eq!(l.offer(20, 0, 4), Offer::Queued { wake: None });
        let (next, wake) = l.on_free(1000, 0);
        assert_eq!(
            next,
            Some(Next {
                dir: 0,
                msg: 3,
                end: 1250
            })
        );
        assert_eq!(wake, Some(1250));
    }

    #[test]
    fn half_duplex_turns_around_and_bursts() {
        let mut l = Link::new(params(true));
        assert_eq!(l.offer(0, 0, 1 | DATA_BIT), Offer::Started { end: 1000 });
        assert_eq!(
            l.offer(0, 1, 2 | DATA_BIT),
            Offer::Queued { wake: Some(1000) }
        );
        assert_eq!(l.offer(0, 0, 3 | DATA_BIT), Offer::Queued { wake: None });
        assert_eq!(l.offer(0, 0, 4 | DATA_BIT), Offer::Queued { wake: None });
        // Burst of 2 in direction 0: message 3, then the link turns.
        let (n, _) = l.on_free(1000, 0);
        assert_eq!(n.unwrap().msg, 3 | DATA_BIT);
        let (n, _) = l.on_free(2000, 0);
        let n = n.unwrap();
        assert_eq!((n.dir, n.end), (1, 3100));
        let (n, wake) = l.on_free(3100, 0);
        assert_eq!(n.unwrap().end, 4200);
        assert_eq!(wake, None);
    }

    #[test]
    fn zero_bandwidth_is_rejected() {
        let spec = LinkSpec {
            a: "x".into(),
            b: "y".into(),
            bandwidth_gbps: Some(0.0),
            ..Default::default()
        };
        let err = LinkParams::resolve(&LinkConfig::default(), &spec, 64).unwrap_err();
        assert!(err.to_string().contains("bandwidth_gbps"), "{err}");
    }
}
