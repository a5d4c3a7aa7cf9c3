//! The ring protocol of both sides, as state machines that do no memory
//! access themselves: the caller reads and writes the entries and control
//! lines (with the flushes its memory needs) and hands what it read to
//! these, which validate it first.
//!
//! TX: the driver (a [`Producer`]) fills a frame into its buffer, writes
//! the descriptor with the entry's ready tag last, and (in tail mode)
//! stores its tail; the device (a [`Consumer`]) polls the next entry's
//! tag (or the tail), takes the frame, and after a batch stores its head,
//! which frees the entries to the driver.
//!
//! RX: the driver (a [`Producer`]) posts empty buffers the same way; the
//! device (a [`Consumer`]) fills one per frame, writes the entry's
//! completion (length and tag) and, after a batch, its head; the driver
//! takes the completed entries up to the head.

use super::index::{distance, ready_tag, within, RingSize};
use super::layout::{RxCompletion, RxDesc, TxDesc, FRAME_MAX, FRAME_MIN};

/// What was wrong with something read from shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A head or tail outside what the peer can have reached.
    Index,
    /// A frame or buffer length out of range.
    Length,
    /// A buffer outside its area.
    Buffer,
    /// An entry whose tag is not its index's (damaged, or stale).
    Tag,
}

/// A queue's buffer area: `len` bytes at offsets `0..len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Area {
    /// Bytes of the area.
    pub len: u64,
}

impl Area {
    /// Whether `len` bytes at `offset` lie inside the area.
    pub fn contains(self, offset: u64, len: u32) -> bool {
        offset
            .checked_add(u64::from(len))
            .is_some_and(|end| end <= self.len)
    }
}

/// An entry a producer may fill: its index, slot and tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The entry's free-running index.
    pub index: u32,
    /// Its slot in the ring, `index % size`.
    pub slot: usize,
    /// Its ready tag, [`ready_tag`]`(index)`.
    pub tag: u32,
}

impl Entry {
    fn at(size: RingSize, index: u32) -> Entry {
        Entry {
            index,
            slot: size.slot(index),
            tag: ready_tag(index),
        }
    }
}

/// Consecutive entries, `count` of them from `start` (wrapping: a
/// `Range<u32>` would be empty across the wrap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The first entry's index.
    pub start: u32,
    /// Entries in the span (0: none).
    pub count: u32,
}

impl Span {
    /// The entries' indices, in order.
    pub fn indices(self) -> impl Iterator<Item = u32> {
        (0..self.count).map(move |i| self.start.wrapping_add(i))
    }
}

/// The producing side of a ring: entries `head..tail` are in flight.
///
/// # Invariants
///
/// `distance(head, tail) <= size`.
#[derive(Debug, Clone, Copy)]
pub struct Producer {
    size: RingSize,
    head: u32,
    tail: u32,
}

impl Producer {
    /// A ring starting at entry `start` (0 after a reset; tests start near
    /// the wrap).
    pub fn new(size: RingSize, start: u32) -> Producer {
        // INVARIANT: nothing in flight.
        Producer {
            size,
            head: start,
            tail: start,
        }
    }

    /// The ring's number of entries.
    pub fn size(&self) -> RingSize {
        self.size
    }

    /// The next entry to fill (its free-running index).
    pub fn tail(&self) -> u32 {
        self.tail
    }

    /// The oldest entry not yet consumed (its free-running index).
    pub fn head(&self) -> u32 {
        self.head
    }

    /// Entries posted and not yet consumed, `0..=size`.
    pub fn in_flight(&self) -> u32 {
        distance(self.head, self.tail)
    }

    /// Entries the producer may still post, `0..=size`.
    pub fn free(&self) -> u32 {
        self.size.get().saturating_sub(self.in_flight())
    }

    /// The next entry, if the ring has room; the caller fills it, then
    /// [`Producer::commit`]s it.
    pub fn next(&self) -> Option<Entry> {
        (self.free() > 0).then(|| Entry::at(self.size, self.tail))
    }

    /// Counts the entry [`Producer::next`] gave as posted.
    pub fn commit(&mut self) {
        if self.free() > 0 {
            // INVARIANT: there was room for one more.
            self.tail = self.tail.wrapping_add(1);
        }
    }

    /// Takes the consumer's head as read from its control line: the
    /// entries newly consumed (from the old head), or `Fault::Index` if
    /// the head is outside `head..=tail` (then nothing changes).
    pub fn consumed(&mut self, peer_head: u32) -> Result<Span, Fault> {
        self.consume(peer_head, u32::MAX)
    }

    /// Whether the consumer's head, as read, says entries are consumed
    /// that [`Producer::consume`] has not taken (a head outside what was
    /// posted says nothing: it is refused there).
    pub fn pending(&self, peer_head: u32) -> bool {
        peer_head != self.head && within(self.head, peer_head, self.tail)
    }

    /// As [`Producer::consumed`], but takes at most `max` entries (a NAPI
    /// budget); the rest stay for the next call with the same head.
    ///
    /// A head inside `head..=tail` is taken as the consumer's progress:
    /// a forged one frees entries the consumer never took, and nothing
    /// here can tell. `health` detects the stall that follows.
    pub fn consume(&mut self, peer_head: u32, max: u32) -> Result<Span, Fault> {
        if !within(self.head, peer_head, self.tail) {
            return Err(Fault::Index);
        }
        let done = Span {
            start: self.head,
            count: distance(self.head, peer_head).min(max),
        };
        // INVARIANT: at most up to `peer_head`, which is in `head..=tail`.
        self.head = self.head.wrapping_add(done.count);
        Ok(done)
    }
}

/// Ring entries one frame takes, the largest included: every entry has a
/// buffer slot of its own sized for the largest frame the MTU allows
/// (`plan::slot_bytes`: 1536 bytes at MTU 1500, 9024 at 9000), and the
/// driver copies a frame whole into its entry's slot (the interface
/// offers no scatter-gather, so the stack hands it linear frames of at
/// most the MTU's size). A 9018-byte frame takes one entry, as a 60-byte
/// one does.
pub const FRAME_ENTRIES: u32 = 1;

/// The entries a stopped TX queue waits for before it wakes: a `batch`
/// (the device stores its head at least every batch, so free entries
/// come a batch at a time and a wake lets a batch of frames in, not one),
/// at least a frame's worth and at most the ring. A device that takes
/// every entry posted always gets there: the queue stops only when a
/// frame no longer fits, with at least `size - FRAME_ENTRIES + 1`
/// entries out, and once a device that stores its head only every
/// `batch` entries has taken them, its head covers at least a batch (a
/// batch is at most the ring).
pub fn wake_entries(size: RingSize, batch: u32) -> u32 {
    batch.clamp(FRAME_ENTRIES, size.get())
}

/// When a driver stops and wakes the stack's TX queue in front of a
/// producer (Documentation/networking/driver.rst: stop the queue before
/// the ring fills, so that a transmit never meets a full ring and
/// `NETDEV_TX_BUSY` is left to bugs).
///
/// - After posting a frame, the driver stops the queue if
///   [`Producer::must_stop`] (fewer free entries than a maximal frame
///   takes); it then asks the consumer to signal progress, makes both
///   stores visible with a full barrier, reads the consumer's head again
///   and wakes the queue at once if [`Producer::may_wake`]: the consumer
///   may have freed entries before it saw the request, and then no signal
///   comes (`netif_txq_maybe_stop`).
/// - After taking the consumer's head on completion, the driver wakes a
///   stopped queue if [`Producer::may_wake`] (`netif_txq_completed_wake`).
impl Producer {
    /// Whether the stack's queue must stop: a maximal frame no longer
    /// fits.
    pub fn must_stop(&self) -> bool {
        self.free() < FRAME_ENTRIES
    }

    /// Whether a stopped queue may wake: [`wake_entries`] are free.
    pub fn may_wake(&self, batch: u32) -> bool {
        self.free() >= wake_entries(self.size, batch)
    }
}

/// The consuming side of a ring: it takes entries in order.
#[derive(Debug, Clone, Copy)]
pub struct Consumer {
    size: RingSize,
    next: u32,
}

impl Consumer {
    /// A consumer expecting entry `start` first (0 after a reset).
    pub fn new(size: RingSize, start: u32) -> Consumer {
        Consumer { size, next: start }
    }

    /// The entry expected next (its slot and tag).
    pub fn expected(&self) -> Entry {
        Entry::at(self.size, self.next)
    }

    /// The head to publish: entries before it are consumed.
    pub fn head(&self) -> u32 {
        self.next
    }

    /// Whether the producer's tail (tail mode), as read, says the expected
    /// entry is posted; `Fault::Index` if the tail claims more than a ring.
    pub fn posted(&self, peer_tail: u32) -> Result<bool, Fault> {
        if distance(self.next, peer_tail) > self.size.get() {
            return Err(Fault::Index);
        }
        Ok(peer_tail != self.next)
    }

    /// Whether an entry carrying `tag` is the expected one (inline mode:
    /// a stale or unwritten entry is not).
    pub fn ready(&self, tag: u32) -> bool {
        tag == ready_tag(self.next)
    }

    /// Moves past the expected entry (taken, or dropped as faulty).
    pub fn advance(&mut self) {
        self.next = self.next.wrapping_add(1);
    }
}

/// A frame the device may read: `len` bytes at `buf` in the TX area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Offset of the frame in the TX area, bytes.
    pub buf: u64,
    /// Bytes of the frame, `FRAME_MIN..=FRAME_MAX`.
    pub len: u32,
}

/// Checks a TX descriptor the device read for entry `expected`: its tag,
/// its length, and that the frame lies in the TX area.
pub fn check_tx(desc: &TxDesc, expected: Entry, area: Area) -> Result<Frame, Fault> {
    if desc.tag != expected.tag {
        return Err(Fault::Tag);
    }
    if !(FRAME_MIN..=FRAME_MAX).contains(&desc.len) {
        return Err(Fault::Length);
    }
    if !area.contains(desc.buf, desc.len) {
        return Err(Fault::Buffer);
    }
    Ok(Frame {
        buf: desc.buf,
        len: desc.len,
    })
}

/// A buffer the device may fill: `cap` bytes at `buf` in the RX area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffer {
    /// Offset of the buffer in the RX area, bytes.
    pub buf: u64,
    /// Bytes the buffer holds, at least `FRAME_MIN`.
    pub cap: u32,
}

/// Checks an RX descriptor the device read for entry `expected`: its tag,
/// a capacity of at least a minimal frame, and that the buffer lies in
/// the RX area.
pub fn check_rx(desc: &RxDesc, expected: Entry, area: Area) -> Result<Buffer, Fault> {
    if desc.tag != expected.tag {
        return Err(Fault::Tag);
    }
    if desc.cap < FRAME_MIN {
        return Err(Fault::Length);
    }
    if !area.contains(desc.buf, desc.cap) {
        return Err(Fault::Buffer);
    }
    Ok(Buffer {
        buf: desc.buf,
        cap: desc.cap,
    })
}

/// The completion the device writes after filling entry `entry` with a
/// frame of `len` bytes (at most the buffer's capacity).
pub fn completion(entry: Entry, len: u32) -> RxCompletion {
    RxCompletion {
        len,
        tag: entry.tag,
    }
}

/// Checks a completion the driver read for entry `index` of a ring whose
/// buffer there holds `cap` bytes (the driver's own record, not the
/// descriptor in shared memory): the frame's length.
pub fn check_completion(c: &RxCompletion, index: u32, cap: u32) -> Result<u32, Fault> {
    if c.tag != ready_tag(index) {
        return Err(Fault::Tag);
    }
    if c.len < FRAME_MIN || c.len > cap.min(FRAME_MAX) {
        return Err(Fault::Length);
    }
    Ok(c.len)
}
