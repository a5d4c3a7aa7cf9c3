// SPDX-License-Identifier: GPL-2.0

//! One queue pair as the driver runs it: its seven parts placed in host
//! memory (DMA-coherent) or device memory (BAR2) as the mode says, the
//! TX producer the stack's transmits drive, and the RX producer the NAPI
//! poll drives. No MMIO on the data path except pcie mode's doorbell.
//!
//! Everything read from shared memory (the device's heads, completions)
//! goes through the ring core's checks first: a bad value drops frames
//! and is counted, never moves an index or a copy out of bounds.
//!
//! Locks: `tx` (transmit, and the poll's TX completion), `rx` (the poll)
//! and `irq` (both) are taken only with bottom halves off (the RX ring
//! is primed before its lock exists); `irq` nests inside the other two.
//! `health` is the port's watch's (process context).
//!
//! One file per concern; each uses only the files listed before it:
//! - `rings.rs`: where the parts live, and the config naming them;
//! - `access.rs`: bounds-checked access to the parts, and the ring steps
//!   made of it (post, take the TX head, doorbell);
//! - `state.rs`: the queue pair, its producers' state and counters, the
//!   interrupt word;
//! - `tx.rs`: transmit, stopping and waking the stack's TX queue, TX
//!   completion;
//! - `rx.rs`: receive, and the NAPI poll;
//! - `health.rs`: the device's heads and counters, the stall detector.

mod access;
mod health;
mod rings;
mod rx;
mod state;
mod tx;

pub(crate) use rings::Shape;
pub(crate) use state::{Counters, Queue, GROWING};
