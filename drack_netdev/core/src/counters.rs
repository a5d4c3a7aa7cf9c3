//! What went wrong, counted: every rejected entry, return or control
//! word is one [`Fault`], and each end keeps [`Counters`] of them next to
//! its traffic counts. The module shows them (ethtool statistics).

/// Why something read from the pool was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A ref entry whose CRC or reserved word does not check.
    Crc,
    /// A ref entry for another destination.
    Dst,
    /// A ref entry from another source than its queue's.
    Src,
    /// A ref entry or return of a wrong epoch.
    Epoch,
    /// A ref entry or return whose sequence is not its position.
    Seq,
    /// A buffer or slot index out of the pair's range.
    Index,
    /// A length out of range, or lengths that do not add up.
    Len,
    /// Frame fields (`frag`, `frags`, flags) inconsistent or unknown.
    Frag,
    /// A port byte this version does not know ([`crate::nic::Port`]).
    Port,
    /// A buffer that is already lent (or twice in one frame).
    Lent,
    /// A tail more than a ring ahead of the head.
    Tail,
    /// A head or return tail that is not between what we hold and what we
    /// published.
    Head,
    /// A returned buffer that is not out (double return, or never sent),
    /// or a refusal notice that names no entry consumed with a buffer out.
    Return,
    /// A peer's control line inconsistent with the session.
    Desync,
    /// The pool refused an access (a layout or geometry bug).
    Access,
}

/// An end's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames sent (source) or received (destination).
    pub frames: u64,
    /// Bytes of those frames.
    pub bytes: u64,
    /// Frames received by value (copied out of a slot).
    pub by_value: u64,
    /// Frames received by reference and lent to the stack.
    pub lent: u64,
    /// Frames received by reference but copied: the lend cap was reached
    /// or the module asked for a copy.
    pub copied: u64,
    /// Buffers given back (destination) or taken back (source).
    pub returned: u64,
    /// Sends refused: no free buffer.
    pub no_buffer: u64,
    /// Sends refused: the `ref_queue` is full.
    pub ring_full: u64,
    /// Sessions (re)started with the peer.
    pub resets: u64,
    /// Buffers out with a destination that died or reset: taken back
    /// without a return (as unknown until its held bitmap says).
    pub reclaimed: u64,
    /// Entries skipped without their buffer given back (CRC failed):
    /// refusal notices put on the return ring (destination), buffers
    /// taken back by one (source).
    pub refused: u64,
    /// Destination: a refusal found the return ring full; the entry stays
    /// in the queue until the source takes returns (each try counted).
    pub refused_no_room: u64,
    /// Rejected entries, by [`Fault`]: CRC.
    pub crc: u64,
    /// ... wrong destination.
    pub dst: u64,
    /// ... wrong source.
    pub src: u64,
    /// ... wrong epoch.
    pub epoch: u64,
    /// ... wrong sequence.
    pub seq: u64,
    /// ... index out of range.
    pub index: u64,
    /// ... length.
    pub len: u64,
    /// ... frame fields.
    pub frag: u64,
    /// ... unknown port.
    pub port: u64,
    /// ... buffer already lent.
    pub dup_lent: u64,
    /// ... tail out of range.
    pub tail: u64,
    /// ... head out of range.
    pub head: u64,
    /// ... bad return.
    pub bad_return: u64,
    /// ... control lines out of step.
    pub desync: u64,
    /// ... pool access refused.
    pub access: u64,
}

impl Counters {
    /// Counts `fault`.
    pub fn count(&mut self, fault: Fault) {
        let c = match fault {
            Fault::Crc => &mut self.crc,
            Fault::Dst => &mut self.dst,
            Fault::Src => &mut self.src,
            Fault::Epoch => &mut self.epoch,
            Fault::Seq => &mut self.seq,
            Fault::Index => &mut self.index,
            Fault::Len => &mut self.len,
            Fault::Frag => &mut self.frag,
            Fault::Port => &mut self.port,
            Fault::Lent => &mut self.dup_lent,
            Fault::Tail => &mut self.tail,
            Fault::Head => &mut self.head,
            Fault::Return => &mut self.bad_return,
            Fault::Desync => &mut self.desync,
            Fault::Access => &mut self.access,
        };
        *c = c.saturating_add(1);
    }

    /// All faults counted.
    pub fn faults(&self) -> u64 {
        [
            self.crc,
            self.dst,
            self.src,
            self.epoch,
            self.seq,
            self.index,
            self.len,
            self.frag,
            self.port,
            self.dup_lent,
            self.tail,
            self.head,
            self.bad_return,
            self.desync,
            self.access,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// How many counters [`Counters::named`] lists.
pub const COUNT: usize = 27;

impl Counters {
    /// Every counter with its name as `ethtool -S` shows it (after a
    /// `tx_` or `rx_` prefix): the one list of them.
    pub fn named(&self) -> [(&'static str, u64); COUNT] {
        [
            ("core_frames", self.frames),
            ("core_bytes", self.bytes),
            ("core_by_value_frames", self.by_value),
            ("core_lent_frames", self.lent),
            ("core_copied_frames", self.copied),
            ("returned_buffers", self.returned),
            ("no_buffer_events", self.no_buffer),
            ("ring_full_events", self.ring_full),
            ("session_resets", self.resets),
            ("reclaimed_buffers", self.reclaimed),
            ("refused_entries", self.refused),
            ("refused_no_room_events", self.refused_no_room),
            ("bad_crc_entries", self.crc),
            ("bad_dst_entries", self.dst),
            ("bad_src_entries", self.src),
            ("bad_epoch_entries", self.epoch),
            ("bad_seq_entries", self.seq),
            ("bad_index_entries", self.index),
            ("bad_len_entries", self.len),
            ("bad_frag_entries", self.frag),
            ("bad_port_entries", self.port),
            ("dup_lent_entries", self.dup_lent),
            ("bad_tail_events", self.tail),
            ("bad_head_events", self.head),
            ("bad_return_entries", self.bad_return),
            ("desync_events", self.desync),
            ("access_faults", self.access),
        ]
    }
}

/// Adds one to `c`, saturating.
pub(crate) fn bump(c: &mut u64) {
    *c = c.saturating_add(1);
}

/// Adds `n` to `c`, saturating.
pub(crate) fn add(c: &mut u64, n: u64) {
    *c = c.saturating_add(n);
}
