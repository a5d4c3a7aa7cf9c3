// SPDX-License-Identifier: GPL-2.0

//! A NIC port's network interface. `open` places the queue pairs (as the
//! mode says), posts the RX buffers, requests each queue's interrupt for
//! its NAPI context and configures the device; `stop` undoes it in
//! reverse and frees the rings once the device has let go of them
//! (`recovery.rs`). A watch follows the device's heartbeat and link:
//! carrier on while both are alive, a device that comes back from a stall
//! is configured afresh, and queue pairs that stalled while it runs are
//! restarted.
//!
//! Lock order: `watch`, then `up`, then a queue's `health`, `held`,
//! `lanes` and a TX queue's slot `txq[q]` (the last two IRQ-off
//! spinlocks, leaves: nothing is taken under them, and nothing that
//! can free memory is dropped under them). `up` owns the queues, their
//! interrupts and the memory lent to the device, `held` the memory the
//! device has not let go of yet, `lanes` the running queues for the
//! counters. `settings` is only copied or stored, `start` takes it under
//! `up`: nothing is taken under it. The key-value offload's mutex
//! (`kvs/`) is taken under RTNL by its switch (`kvs.rs`), with none of
//! the port's held.
//!
//! A transmit takes no lock of the port's but its TX queue's slot
//! `txq[q]`, only to take a reference on the queue (and the stack holds
//! that TX queue's xmit lock around it, so no other transmit contends
//! for it); then the queue's own `tx` lock (`queue/`). Nothing is
//! shared between the TX queues on that path.
//!
//! One file per concern; each uses only the files listed before it:
//! - `settings.rs`: what an operator chooses, and the defaults;
//! - `state.rs`: the port, its running queues (`Up`), the TX slots and
//!   the watch's state;
//! - `kvs.rs`: the key-value offload's switch (ethtool, `/dev/cxlnic`);
//! - `counters.rs`: the interface's counters, those of retired queues;
//! - `held.rs`: rings the device has not let go of yet;
//! - `lifecycle.rs`: starting and stopping the queue pairs, restarts;
//! - `watch.rs`: heartbeat, link, and the restarts of stalled rings;
//! - `ethtool.rs`: checking and applying changed settings;
//! - `netdev.rs`: the port as the stack sees it (`NetDevice`).

mod counters;
mod ethtool;
mod held;
mod kvs;
mod lifecycle;
mod netdev;
mod settings;
mod state;
mod watch;

pub(crate) use settings::{default_settings, mode_name};
pub(crate) use state::{Port, TX_WATCHDOG_MS};
