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
//!
//! Congestion marking (when a controller asks for it, [`Marking`]): each
//! direction marks the messages offered to it with a probability that rises
//! from 0 at a threshold to 1 at `ramp` times it, on its queue (waiting
//! plus in transfer), either as the message finds it or averaged over time
//! (an exponential average with time constant `average_ps`, as RED averages
//! its queue so that bursts pass unmarked), and the threshold may grow with
//! the square root of the requesters that started a burst (began sending
//! after a whole interval of `average_ps` without) in the current or the
//! previous interval; it may mark only a standing queue (one whose
//! average stayed at a level or above through the current and the
//! previous interval of `standing_ps`, CoDel's distinction between a
//! queue that drains and one that stays). Marks are counted as
//! probabilities (millionths of a message), so the signal is
//! deterministic.

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

/// How a link direction marks the messages offered to it (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Marking {
    /// Queue (messages waiting plus in transfer) at which marking starts,
    /// before scaling (at least 1).
    pub threshold: u32,
    /// Every message is marked from `ramp` times the threshold on; in
    /// between the probability rises linearly (1: a step at the threshold).
    pub ramp: u32,
    /// Time constant of the queue average, and the interval in which burst
    /// starts are counted, ps (0: the queue as each message finds it).
    pub average_ps: Ps,
    /// Scale the threshold by the square root of the burst starts (needs
    /// `average_ps`).
    pub burst_scaling: bool,
    /// Mark only a standing queue: while the averaged queue has stayed at
    /// or above `standing_level` messages through the current and the
    /// previous interval of `standing_ps` (0: always; needs `average_ps`).
    pub standing_ps: Ps,
    pub standing_level: f64,
}

impl Marking {
    /// The step at `threshold` on the instantaneous queue.
    pub const fn step(threshold: u32) -> Marking {
        Marking {
            threshold,
            ramp: 1,
            average_ps: 0,
            burst_scaling: false,
            standing_ps: 0,
            standing_level: 0.0,
        }
    }

    /// Marking probability of a message that finds the (instantaneous or
    /// averaged) queue `q` after `starts` burst starts.
    pub fn probability(&self, q: f64, starts: u32) -> f64 {
        let mut k = f64::from(self.threshold.max(1));
        if self.burst_scaling {
            k *= f64::from(starts.max(1)).sqrt();
        }
        if self.ramp <= 1 {
            return if q >= k { 1.0 } else { 0.0 };
        }
        ((q - k) / (k * f64::from(self.ramp - 1))).clamp(0.0, 1.0)
    }
}

/// A direction's marking state.
#[derive(Debug, Default)]
pub struct MarkState {
    /// Queue (waiting plus in transfer) averaged up to `at`.
    pub average: f64,
    at: Ps,
    /// Per requester: the last interval (counted from 1) in which it sent
    /// here.
    last: Vec<u64>,
    interval: u64,
    /// Requesters that started sending in the current and the previous
    /// interval.
    starts: u32,
    prev_starts: u32,
    /// The least average in the current and the previous interval of
    /// `standing_ps`, and the current one's number (counted from 1).
    least: f64,
    prev_least: f64,
    least_interval: u64,
}

impl MarkState {
    /// Requester `source` sends at `now`, in intervals of `len` ps.
    fn note(&mut self, source: u32, now: Ps, len: Ps) {
        let i = now / len + 1;
        if i != self.interval {
            self.prev_starts = if i == self.interval + 1 {
                self.starts
            } else {
                0
            };
            self.starts = 0;
            self.interval = i;
        }
        let s = source as usize;
        if self.last.len() <= s {
            self.last.resize(s + 1, 0);
        }
        let last = self.last[s];
        if last != i {
            // New, or silent through the whole previous interval: a burst
            // starts.
            if last == 0 || last + 1 < i {
                self.starts += 1;
            }
            self.last[s] = i;
        }
    }

    /// Tracks the least average after an update from `before` to
    /// `average` at `at`, in intervals of `len` ps (between updates the
    /// average moves monotonically, so its least value in an interval is
    /// at an update or an end of the interval).
    fn track_least(&mut self, before: f64, len: Ps) {
        let i = self.at / len + 1;
        let low = before.min(self.average);
        if i != self.least_interval {
            self.prev_least = if i == self.least_interval + 1 {
                self.least.min(before)
            } else {
                // Whole intervals without an update: the average moved
                // from `before` to `average` through them.
                low
            };
            self.least = low;
            self.least_interval = i;
        } else {
            self.least = self.least.min(self.average);
        }
    }

    /// The least average over the current and the previous interval.
    pub fn least(&self) -> f64 {
        self.least.min(self.prev_least)
    }

    /// Burst starts in the current or the previous interval, whichever
    /// had more.
    pub fn starts(&self) -> u32 {
        self.starts.max(self.prev_starts)
    }
}

/// `average` decayed towards the constant `x` over `dt` with time constant
/// `tau` (ps).
#[inline]
fn toward(average: f64, x: f64, dt: Ps, tau: Ps) -> f64 {
    x + (average - x) * (-(dt as f64) / tau as f64).exp()
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
    /// Messages offered, and the marks they got (see [`Marking`]), in
    /// millionths of a message: a message marked with probability p adds
    /// p * 1,000,000.
    pub offered: u64,
    pub marked_ppm: u64,
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
    pub mark: MarkState,
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
    /// Congestion marking (`None`: off).
    pub marking: Option<Marking>,
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
            marking: None,
        }
    }

    /// Brings the queue averages up to `now` (before the queues change):
    /// each direction's queue is its waiting messages, plus one until its
    /// transfer ends.
    fn settle(&mut self, now: Ps, tau: Ps, least: Ps) {
        for d in 0..2 {
            let end = if self.params.half {
                if self.cur_dir as usize == d {
                    self.busy_until
                } else {
                    0
                }
            } else {
                self.chans[d].busy_until
            };
            let ch = &mut self.chans[d];
            let m = &mut ch.mark;
            if now <= m.at {
                continue;
            }
            let waiting = ch.queue.len() as f64;
            if end > m.at {
                let e = end.min(now);
                let before = m.average;
                m.average = toward(m.average, waiting + 1.0, e - m.at, tau);
                m.at = e;
                if least > 0 {
                    m.track_least(before, least);
                }
            }
            if now > m.at {
                let before = m.average;
                m.average = toward(m.average, waiting, now - m.at, tau);
                m.at = now;
                if least > 0 {
                    m.track_least(before, least);
                }
            }
        }
    }

    /// Counts the offer of a message from requester `source` to direction
    /// `dir` and its mark.
    fn mark(&mut self, now: Ps, dir: u8, source: u32, m: Marking) {
        let mut standing = true;
        let q = if m.average_ps > 0 {
            self.settle(now, m.average_ps, m.standing_ps);
            if m.standing_ps > 0 {
                standing = self.chans[dir as usize].mark.least() >= m.standing_level;
            }
            if m.burst_scaling {
                self.chans[dir as usize]
                    .mark
                    .note(source, now, m.average_ps);
            }
            self.chans[dir as usize].mark.average
        } else {
            self.load(dir, now) as f64
        };
        let ch = &mut self.chans[dir as usize];
        let p = if standing {
            m.probability(q, ch.mark.starts())
        } else {
            0.0
        };
        ch.counters.offered += 1;
        ch.counters.marked_ppm += (p * 1e6).round() as u64;
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

    /// Offers message `msg` (packet id | DATA_BIT) of requester `source`
    /// to direction `dir`.
    #[inline]
    pub fn offer(&mut self, now: Ps, dir: u8, msg: Queued, source: u32) -> Offer {
        let data = msg & DATA_BIT != 0;
        if let Some(m) = self.marking {
            self.mark(now, dir, source, m);
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
        if let Some(m) = self.marking.filter(|m| m.average_ps > 0) {
            self.settle(now, m.average_ps, m.standing_ps);
        }
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
        assert_eq!(l.offer(0, 0, 1 | DATA_BIT, 0), Offer::Started { end: 1000 });
        assert_eq!(l.offer(0, 1, 2 | DATA_BIT, 0), Offer::Started { end: 1000 });
        assert_eq!(l.offer(10, 0, 3, 0), Offer::Queued { wake: Some(1000) });
        assert_eq!(l.offer(20, 0, 4, 0), Offer::Queued { wake: None });
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
        assert_eq!(l.offer(0, 0, 1 | DATA_BIT, 0), Offer::Started { end: 1000 });
        assert_eq!(
            l.offer(0, 1, 2 | DATA_BIT, 0),
            Offer::Queued { wake: Some(1000) }
        );
        assert_eq!(l.offer(0, 0, 3 | DATA_BIT, 0), Offer::Queued { wake: None });
        assert_eq!(l.offer(0, 0, 4 | DATA_BIT, 0), Offer::Queued { wake: None });
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
    fn the_step_marks_what_finds_the_queue_at_the_threshold() {
        let mut l = Link::new(params(false));
        l.marking = Some(Marking::step(3));
        for i in 0..5 {
            l.offer(0, 0, i | DATA_BIT, 7);
        }
        // Loads 0, 1, 2, 3, 4: the last two are marked.
        let c = &l.chans[0].counters;
        assert_eq!((c.offered, c.marked_ppm), (5, 2_000_000));
    }

    #[test]
    fn an_averaged_queue_lets_a_burst_pass_and_marks_a_standing_queue() {
        let m = Marking {
            threshold: 3,
            ramp: 2,
            average_ps: 100_000,
            burst_scaling: false,
            standing_ps: 0,
            standing_level: 0.0,
        };
        // A burst of 8 on an idle link: the step at 3 marks 5 of them, the
        // average (100 transfers long) none.
        for (marking, marked) in [(Marking::step(3), 5_000_000), (m, 0)] {
            let mut l = Link::new(params(false));
            l.marking = Some(marking);
            for i in 0..8 {
                l.offer(0, 0, i | DATA_BIT, 1);
            }
            assert_eq!(l.chans[0].counters.marked_ppm, marked);
        }
        // A queue of 8 that stands (a message in for every message out)
        // for ten time constants: the average reaches 8, beyond 2 * 3, and
        // from there on every message is marked.
        let mut l = Link::new(params(false));
        l.marking = Some(m);
        for i in 0..8 {
            l.offer(0, 1, i | DATA_BIT, 1);
        }
        let mut marks = Vec::new();
        for i in 8..1008 {
            let t = l.chans[1].busy_until;
            l.on_free(t, 1);
            let before = l.chans[1].counters.marked_ppm;
            l.offer(t, 1, i | DATA_BIT, 1);
            marks.push(l.chans[1].counters.marked_ppm - before);
        }
        assert_eq!(marks[0], 0);
        assert_eq!(marks[999], 1_000_000);
        let avg = l.chans[1].mark.average;
        assert!((avg - 8.0).abs() < 0.1, "{avg}");
    }

    #[test]
    fn the_standing_gate_marks_a_standing_queue_not_one_that_drains() {
        let plain = Marking {
            threshold: 3,
            ramp: 2,
            average_ps: 2_000,
            burst_scaling: false,
            standing_ps: 0,
            standing_level: 0.0,
        };
        let gated = Marking {
            standing_ps: 20_000,
            standing_level: 1.0,
            ..plain
        };
        // Bursts of 20 messages at three per transfer time every 60
        // transfers, the link idle in between: the averaged queue passes
        // 6 in every burst, but it drains.
        let bursts = |m: Marking| {
            let mut l = Link::new(params(false));
            l.marking = Some(m);
            let mut id = 0;
            for k in 0..20u64 {
                let t0 = k * 60_000;
                for j in 0..20 {
                    let t = t0 + j * 333;
                    while !l.chans[0].queue.is_empty() && l.chans[0].busy_until <= t {
                        let f = l.chans[0].busy_until;
                        l.on_free(f, 0);
                    }
                    l.offer(t, 0, id | DATA_BIT, 1);
                    id += 1;
                }
                while !l.chans[0].queue.is_empty() {
                    let t = l.chans[0].busy_until;
                    l.on_free(t, 0);
                }
            }
            l.chans[0].counters.marked_ppm
        };
        assert!(bursts(plain) > 20_000_000, "{}", bursts(plain));
        assert_eq!(bursts(gated), 0);
        // A queue of 8 that stands for 1000 transfers: marked once it has
        // stood through two intervals, fully from then on.
        let mut l = Link::new(params(false));
        l.marking = Some(gated);
        for i in 0..8 {
            l.offer(0, 1, i | DATA_BIT, 1);
        }
        let mut marks = Vec::new();
        for i in 8..1008 {
            let t = l.chans[1].busy_until;
            l.on_free(t, 1);
            let before = l.chans[1].counters.marked_ppm;
            l.offer(t, 1, i | DATA_BIT, 1);
            marks.push(l.chans[1].counters.marked_ppm - before);
        }
        assert_eq!(marks[0], 0);
        assert!(marks[40..].iter().all(|&m| m == 1_000_000));
        assert!(
            l.chans[1].mark.least() >= 7.0,
            "{}",
            l.chans[1].mark.least()
        );
    }

    #[test]
    fn the_ramp_and_the_burst_scaling() {
        let m = Marking {
            threshold: 4,
            ramp: 3,
            average_ps: 1,
            burst_scaling: true,
            standing_ps: 0,
            standing_level: 0.0,
        };
        assert_eq!(m.probability(4.0, 1), 0.0);
        assert_eq!(m.probability(8.0, 1), 0.5);
        assert_eq!(m.probability(12.0, 0), 1.0);
        // Nine burst starts: the threshold triples.
        assert_eq!(m.probability(12.0, 9), 0.0);
        assert_eq!(m.probability(24.0, 9), 0.5);
        assert_eq!(Marking::step(4).probability(3.9, 9), 0.0);
        assert_eq!(Marking::step(4).probability(4.0, 9), 1.0);
        // Burst starts: a requester that sent in the previous interval
        // does not start one; one silent for a whole interval does.
        let mut s = MarkState::default();
        s.note(1, 0, 10); // interval 1: a start
        s.note(2, 5, 10); // a start
        s.note(1, 15, 10); // interval 2: 1 sent in interval 1
        assert_eq!(s.starts(), 2);
        s.note(2, 35, 10); // interval 4: 2 was silent in 3
        assert_eq!((s.starts, s.prev_starts), (1, 0));
        s.note(3, 35, 10);
        s.note(3, 36, 10);
        assert_eq!(s.starts(), 2);
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
