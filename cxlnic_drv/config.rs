// SPDX-License-Identifier: GPL-2.0

//! Configuring the device: the driver writes its config into device
//! memory with a new generation last, rings doorbell vector 0, and waits
//! for the device to acknowledge that generation with a status.

use crate::io::NicIo;
use crate::ring::device::{
    header, DriverConfig, CONFIG_BYTES, CONFIG_GEN, CONFIG_OFFSET, VECTOR_CONFIG,
};
use crate::support::coherent::Coherent;
use crate::support::time;
use kernel::prelude::*;

/// How long the device has to answer a config.
pub(crate) const ANSWER_MS: u32 = 1000;

/// What became of a config.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Answer {
    Taken,
    /// Refused with a `ConfigError` code.
    Refused(u32),
    /// No answer in time.
    Silent,
}

/// A config written: its generation, and the device's answer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Exchange {
    pub(crate) gen: u32,
    pub(crate) answer: Answer,
}

/// Writes `cfg` under a generation the device has not answered yet and
/// waits for its answer (process context; may sleep up to [`ANSWER_MS`]).
/// An error means the generation was not stored: the device never saw
/// the config.
pub(crate) fn exchange(io: &NicIo, cfg: &DriverConfig) -> Result<Exchange> {
    let gen = io.next_gen();
    let mut raw = cfg.encode();
    raw[CONFIG_GEN..CONFIG_GEN + 4].copy_from_slice(&gen.to_le_bytes());
    let base = CONFIG_OFFSET as usize;
    // Everything but the generation, then the generation (release).
    io.mem
        .write(base + CONFIG_GEN + 4, &raw[CONFIG_GEN + 4..CONFIG_BYTES])?;
    io.mem.store32(base + CONFIG_GEN, gen)?;
    io.ring(VECTOR_CONFIG);
    for _ in 0..ANSWER_MS {
        if io.header32(header::CFG_ACK) == gen {
            let answer = match io.header32(header::CFG_STATUS) {
                0 => Answer::Taken,
                code => Answer::Refused(code),
            };
            return Ok(Exchange { gen, answer });
        }
        time::sleep_ms(1);
    }
    Ok(Exchange {
        gen,
        answer: Answer::Silent,
    })
}
