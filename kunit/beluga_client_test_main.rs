// SPDX-License-Identifier: GPL-2.0

//! beluga_client_test: a module that uses beluga_dax's in-kernel region
//! API the way mchannel_sched and drack_netdev will. At load it obtains the
//! shared region `kclient.test` of `size_mib` MiB from pool `beluga0.0`,
//! writes [`pattern_byte`] over its first 64 KiB and last page, and reads
//! them back; at unload it releases the region. Scenario
//! `22_beluga_region` checks the result from user space.

use kernel::c_str;
use kernel::prelude::*;

use cxlf_support as support;

use support::params::module_param_uint;
use support::region::Region;
use support::uapi::selftest::pattern_byte;

module! {
    type: BelugaClient,
    name: "beluga_client_test",
    author: "cxlfabric developers",
    description: "Test user of beluga_dax's in-kernel region API",
    license: "GPL",
}

module_param_uint!(
    /// Size of the region, in MiB.
    size_mib
);

const SPAN: usize = 64 * 1024;

struct BelugaClient {
    _region: Region,
}

fn fill(region: &Region, offset: u64, len: usize) -> Result {
    let mut chunk = [0u8; 512];
    let mut done = 0;
    while done < len {
        let n = chunk.len().min(len - done);
        for (i, b) in chunk[..n].iter_mut().enumerate() {
            *b = pattern_byte(offset as usize + done + i);
        }
        region.write(offset + done as u64, &chunk[..n])?;
        done += n;
    }
    let mut back = [0u8; 512];
    done = 0;
    while done < len {
        let n = back.len().min(len - done);
        region.read(offset + done as u64, &mut back[..n])?;
        if back[..n]
            .iter()
            .enumerate()
            .any(|(i, b)| *b != pattern_byte(offset as usize + done + i))
        {
            pr_err!("read back differs at {:#x}\n", offset as usize + done);
            return Err(EIO);
        }
        done += n;
    }
    Ok(())
}

impl kernel::Module for BelugaClient {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let size = u64::from(size_mib()) << 20;
        let region = Region::get(c_str!("beluga0.0"), c_str!("kclient.test"), size)?;
        let end = region.size() - 4096;
        fill(&region, 0, SPAN)?;
        fill(&region, end, 4096)?;
        // Out of range is refused, not followed.
        if region.write(region.size() - 1, &[0, 0]).is_ok() {
            pr_err!("a write past the region was accepted\n");
            return Err(EINVAL);
        }
        pr_info!(
            "region kclient.test: {} bytes at {:#x}, pattern written\n",
            region.size(),
            region.phys()
        );
        Ok(BelugaClient { _region: region })
    }
}
