// SPDX-License-Identifier: GPL-2.0

//! The key-value offload's switch on a port: `ethtool --set-priv-flags
//! ethX kvs on|off` and `/dev/cxlnic`'s `KVS_CONFIG`, both under RTNL
//! (which orders them with mode changes: the offload needs type2 mode,
//! and type2 mode stays while it is enabled). Allowed while the
//! interface is up or down: the offload has its own config and rings.
//!
//! Locks: RTNL, then `settings` (a copy), then the offload's own mutex.

use super::state::Port;
use crate::kvs::{KvsSettings, DEFAULT_CACHE_BUCKETS};
use crate::support::netdev::RtnlGuard;
use kernel::prelude::*;

impl Port {
    /// The offload's settings from `KVS_CONFIG`'s fields (0: the
    /// default, the `kvs_port` module parameter for the port).
    pub(crate) fn kvs_settings(&self, udp_port: u16, ipv4: [u8; 4], cache: u32) -> KvsSettings {
        KvsSettings {
            udp_port: if udp_port == 0 {
                crate::default_kvs_port()
            } else {
                udp_port
            },
            ipv4,
            cache_buckets: if cache == 0 {
                DEFAULT_CACHE_BUCKETS
            } else {
                cache
            },
        }
    }

    /// Enables the offload with `want`, or disables it (`KVS_CONFIG`).
    pub(crate) fn kvs_switch(&self, who: &CStr, enable: bool, want: KvsSettings) -> Result {
        let _rtnl = RtnlGuard::lock();
        self.kvs_switch_rtnl(who, enable, want)
    }

    /// As [`Port::kvs_switch`], under RTNL (ethtool's callbacks).
    pub(super) fn kvs_switch_rtnl(&self, who: &CStr, enable: bool, want: KvsSettings) -> Result {
        if !enable {
            return self.kvs.disable(who);
        }
        let mode = self.settings.lock().mode;
        self.kvs.enable(who, mode, want)
    }
}
