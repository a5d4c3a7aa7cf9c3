// SPDX-License-Identifier: GPL-2.0

//! The checks of `/dev/mchannel`'s arguments (`chardev.rs`): names,
//! windows, weights, meters and owners as the ABI allows them, each
//! refusal with its errno and a (rate-limited) log line that says why.

#![deny(clippy::arithmetic_side_effects)]

use crate::meter::{self, ChannelMeter};
use crate::pr_info_ratelimited;
use crate::support::uapi::mchannel as abi;
use kernel::prelude::*;

/// Logs why a new component or channel (`what`, at most `max` of them)
/// was refused, if the caller caused it; returns the error.
pub(crate) fn not_created(e: Error, what: &str, max: usize) -> Error {
    if e == EEXIST {
        pr_info_ratelimited!("mchannel: a {} has that name\n", what);
    } else if e == ENOSPC {
        pr_info_ratelimited!("mchannel: {} {}s at most\n", max, what);
    }
    e
}

/// A name from the ABI: NUL-terminated, printable, zero-padded.
pub(crate) fn check_name(
    bytes: &[u8; abi::NAME_BYTES],
    what: &str,
) -> Result<[u8; abi::NAME_BYTES]> {
    let Some(name) = abi::name_of(bytes) else {
        refuse!(
            EINVAL,
            "mchannel: {} name is empty, unterminated or not printable\n",
            what
        );
    };
    // It names a sysfs directory.
    if name.contains('/') || name == "." || name == ".." {
        refuse!(
            EINVAL,
            "mchannel: {} name may not hold '/' or be '.' or '..'\n",
            what
        );
    }
    if bytes
        .get(name.len()..)
        .map_or(true, |tail| tail.iter().any(|&b| b != 0))
    {
        refuse!(EINVAL, "mchannel: {} name has bytes after its NUL\n", what);
    }
    Ok(*bytes)
}

pub(crate) fn check_window(t_w_ns: u64) -> Result<u64> {
    let t_w = if t_w_ns == 0 {
        abi::T_W_DEFAULT_NS
    } else {
        t_w_ns
    };
    if !(abi::T_W_MIN_NS..=abi::T_W_MAX_NS).contains(&t_w) {
        refuse!(
            EINVAL,
            "mchannel: T_W {} ns is outside {}..={} ns\n",
            t_w,
            abi::T_W_MIN_NS,
            abi::T_W_MAX_NS
        );
    }
    Ok(t_w)
}

/// A new channel's flags: known ones, and a group without a meter and
/// not best effort.
pub(crate) fn check_flags(spec: &abi::ChannelSpec) -> Result {
    let known = abi::CHANNEL_GROUP | abi::CHANNEL_BEST_EFFORT | abi::CHANNEL_OWNER;
    if spec.flags & !known != 0 {
        refuse!(
            EINVAL,
            "mchannel: unknown channel flags {:#x}\n",
            spec.flags
        );
    }
    let group = spec.flags & abi::CHANNEL_GROUP != 0;
    if group && (spec.meter != abi::METER_NONE || spec.flags & abi::CHANNEL_BEST_EFFORT != 0) {
        refuse!(
            EINVAL,
            "mchannel: a group runs no threads: no meter, not best effort\n"
        );
    }
    Ok(())
}

/// The weight and the meter of `spec`, checked (a perf event is tried on
/// the caller).
pub(crate) fn check_weight_meter(spec: &abi::ChannelSpec) -> Result<ChannelMeter> {
    if spec.weight == 0 || spec.weight > abi::WEIGHT_MAX {
        refuse!(
            EINVAL,
            "mchannel: weight {} is outside 1..={}\n",
            spec.weight,
            abi::WEIGHT_MAX
        );
    }
    meter::meter_of(spec)
}

/// The owner `spec` names (`CHANNEL_OWNER`), or `None`; `owner_uid` is 0
/// without the flag.
pub(crate) fn check_owner(spec: &abi::ChannelSpec) -> Result<Option<u32>> {
    if spec.flags & abi::CHANNEL_OWNER != 0 {
        return Ok(Some(spec.owner_uid));
    }
    if spec.owner_uid != 0 {
        refuse!(
            EINVAL,
            "mchannel: owner_uid {} without CHANNEL_OWNER\n",
            spec.owner_uid
        );
    }
    Ok(None)
}
