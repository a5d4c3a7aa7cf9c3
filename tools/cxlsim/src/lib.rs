//! `cxlsim`: an event-driven CXL fabric simulator after ESF (Wang et al.,
//! "ESF: an event-driven simulation framework for CXL systems").
//!
//! Library layout, one concern per module: [`event`] (the deterministic event
//! queue), [`config`] (configuration and defaults from ESF's Table III),
//! [`topology`] (graph, built-in families, shortest-path PBR routing),
//! [`cxlctl`] (import of `cxlctl --json topology`), [`link`], [`memory`],
//! [`switch`] (port delay, switching, routing choice), [`requester`]
//! (traffic, caches, run-window hook), [`snoop`] (device-side
//! snoop filter), [`sim`] (the models wired together), [`stats`], [`output`]
//! (JSON/CSV), [`plot`] (SVG figures) and [`experiments`] (the checks against
//! the paper), [`memchannel`] (the MemChannel control core driving run
//! windows), [`mcexp`] (the MemChannel experiments) and [`nicexp`] (the
//! CXL-NIC modes' modelled latency).
#![forbid(unsafe_code)]

pub mod config;
pub mod cxlctl;
pub mod event;
pub mod experiments;
pub mod link;
pub mod mcexp;
pub mod memchannel;
pub mod memory;
pub mod nicexp;
pub mod output;
pub mod perf;
pub mod plot;
pub mod requester;
pub mod rng;
pub mod sim;
pub mod snoop;
pub mod stats;
pub mod switch;
pub mod topology;
pub mod util;

pub use config::Config;
pub use sim::{run, Sim};
pub use stats::Report;
