//! Creating and destroying CXL RAM regions through sysfs.
//!
//! `plan` is a pure function of the topology (tested on recorded trees);
//! `create` carries a plan out and undoes what it did if a step fails.

use crate::sysfs::Sysfs;
use crate::topology::{human_size, Device, Kind, Topology, CXL_DEVICES, DAX_DEVICES};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Region sizes are multiples of this per interleave way.
pub const REGION_ALIGN: u64 = 256 << 20;
/// Interleave ways CXL 2.0/3.0 decoders can encode.
pub const VALID_WAYS: &[u64] = &[1, 2, 3, 4, 6, 8, 12, 16];
pub const VALID_GRANULARITIES: &[u64] = &[256, 512, 1024, 2048, 4096, 8192, 16384];

#[derive(Debug, Clone, Default)]
pub struct RegionRequest {
    pub ways: u64,
    pub size: u64,
    pub granularity: Option<u64>,
    pub root_decoder: Option<String>,
    /// Memdevs in interleave order; default: the first `ways` by serial number.
    pub memdevs: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegionPlan {
    pub root_decoder: String,
    pub ways: u64,
    pub granularity: u64,
    pub size: u64,
    /// (memdev, endpoint decoder) in interleave position order.
    pub targets: Vec<(String, String)>,
    pub dpa_per_device: u64,
}

/// RAM capacity of a memdev not yet allocated to one of its endpoint decoders.
fn free_ram(topo: &Topology, memdev: &Device) -> u64 {
    let total = memdev.attr_u64("ram/size").unwrap_or(0);
    let used: u64 = memdev
        .parent
        .as_deref()
        .map(|ep| {
            topo.children(ep)
                .filter(|d| d.kind == Kind::Decoder)
                .filter_map(|d| d.attr_u64("dpa_size"))
                .sum()
        })
        .unwrap_or(0);
    total.saturating_sub(used)
}

/// The endpoint decoder a memdev's next allocation must use: decoders are
/// allocated in order, so it is the first one with no DPA.
fn free_endpoint_decoder<'a>(topo: &'a Topology, memdev: &'a Device) -> Result<&'a Device> {
    let endpoint = memdev
        .parent
        .as_deref()
        .with_context(|| format!("{} has no endpoint port (is cxl_mem bound?)", memdev.name))?;
    let mut decoders: Vec<&Device> = topo
        .children(endpoint)
        .filter(|d| d.kind == Kind::Decoder)
        .collect();
    decoders.sort_by_key(|d| crate::sysfs::natural_key(&d.name));
    decoders
        .into_iter()
        .find(|d| d.attr_u64("dpa_size") == Some(0))
        .with_context(|| {
            format!(
                "{}: every endpoint decoder of {endpoint} is in use",
                memdev.name
            )
        })
}

pub fn plan(topo: &Topology, req: &RegionRequest) -> Result<RegionPlan> {
    if !VALID_WAYS.contains(&req.ways) {
        bail!(
            "interleave ways must be one of {VALID_WAYS:?}, not {}",
            req.ways
        );
    }
    if req.size == 0 || !req.size.is_multiple_of(REGION_ALIGN * req.ways) {
        bail!(
            "region size {} must be a non-zero multiple of {} ({} per way x {} ways)",
            human_size(req.size),
            human_size(REGION_ALIGN * req.ways),
            human_size(REGION_ALIGN),
            req.ways
        );
    }
    let root = match &req.root_decoder {
        Some(name) => topo.get(name).with_context(|| format!("no decoder named {name}"))?,
        None => topo
            .of_kind(Kind::Decoder)
            .find(|d| {
                d.attr("cap_ram") == Some("1")
                    && d.attr("create_ram_region").is_some()
                    && d.parent.as_deref().and_then(|p| topo.get(p)).is_some_and(|p| p.kind == Kind::Root)
            })
            .context("no root decoder can hold RAM regions (no CXL fixed memory window with RAM capability)")?,
    };
    if root.attr("create_ram_region").is_none() {
        bail!(
            "{} is not a root decoder that can create RAM regions",
            root.name
        );
    }
    let root_ways = root.attr_u64("interleave_ways").unwrap_or(1);
    let root_gran = root.attr_u64("interleave_granularity").unwrap_or(4096);
    let granularity = req
        .granularity
        .unwrap_or(if root_ways > 1 { root_gran } else { 4096 });
    if !VALID_GRANULARITIES.contains(&granularity) {
        bail!("interleave granularity {granularity} is not one of {VALID_GRANULARITIES:?}");
    }
    if root_ways > 1 && granularity != root_gran {
        bail!(
            "{} interleaves host bridges at {root_gran}: the region must use the same granularity",
            root.name
        );
    }

    let candidates: Vec<&Device> = match &req.memdevs {
        Some(names) => names
            .iter()
            .map(|n| {
                topo.get(n)
                    .filter(|d| d.kind == Kind::Memdev)
                    .with_context(|| format!("no memdev named {n}"))
            })
            .collect::<Result<_>>()?,
        None => {
            let mut all: Vec<&Device> = topo
                .of_kind(Kind::Memdev)
                .filter(|m| {
                    m.parent.as_deref().is_some_and(|ep| {
                        topo.is_below(ep, &root.name) || root_parent_covers(topo, root, ep)
                    })
                })
                .collect();
            // Serial numbers are stable across boots and hosts, memdev
            // names are not (probe order): hosts sharing a pool must
            // interleave it the same way to see the same bytes at the same
            // region offset.
            all.sort_by_key(|d| {
                (
                    d.attr_u64("serial").unwrap_or(u64::MAX),
                    crate::sysfs::natural_key(&d.name),
                )
            });
            all
        }
    };
    if (candidates.len() as u64) < req.ways {
        bail!(
            "{} ways need {} memdevs below {}, found {}",
            req.ways,
            req.ways,
            root.name,
            candidates.len()
        );
    }
    let dpa_per_device = req.size / req.ways;
    let mut targets = Vec::new();
    for memdev in candidates.into_iter().take(req.ways as usize) {
        let free = free_ram(topo, memdev);
        if free < dpa_per_device {
            bail!(
                "{} has {} of RAM capacity free, the region needs {} on each device",
                memdev.name,
                human_size(free),
                human_size(dpa_per_device)
            );
        }
        let decoder = free_endpoint_decoder(topo, memdev)?;
        targets.push((memdev.name.clone(), decoder.name.clone()));
    }
    Ok(RegionPlan {
        root_decoder: root.name.clone(),
        ways: req.ways,
        granularity,
        size: req.size,
        targets,
        dpa_per_device,
    })
}

/// Root decoders are siblings of the host-bridge ports, not their parents:
/// a memdev is reachable from a root decoder when both share the root port.
fn root_parent_covers(topo: &Topology, root_decoder: &Device, endpoint: &str) -> bool {
    root_decoder
        .parent
        .as_deref()
        .is_some_and(|root| topo.is_below(endpoint, root))
}

/// Polls for up to `limit` until `f` returns `Some`.
fn wait_for<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[derive(Debug, Serialize)]
pub struct CreatedRegion {
    pub region: String,
    pub dax: Option<String>,
    #[serde(flatten)]
    pub plan: RegionPlan,
}

/// Carries out `plan`. On failure, undoes what was done so that the
/// decoders are free again, and reports the step that failed.
pub fn create(sys: &Sysfs, plan: &RegionPlan) -> Result<CreatedRegion> {
    let root = format!("{CXL_DEVICES}/{}", plan.root_decoder);
    let region = sys.read(&format!("{root}/create_ram_region"))?;
    if region.is_empty() {
        bail!("{} offers no region id to create", plan.root_decoder);
    }
    sys.write(&format!("{root}/create_ram_region"), &region)?;
    let mut programmed: Vec<&str> = Vec::new();
    let result = (|| -> Result<Option<String>> {
        let reg = format!("{CXL_DEVICES}/{region}");
        sys.write(
            &format!("{reg}/interleave_granularity"),
            &plan.granularity.to_string(),
        )?;
        sys.write(&format!("{reg}/interleave_ways"), &plan.ways.to_string())?;
        sys.write(&format!("{reg}/size"), &format!("{:#x}", plan.size))?;
        for (pos, (_memdev, decoder)) in plan.targets.iter().enumerate() {
            let dec = format!("{CXL_DEVICES}/{decoder}");
            sys.write(&format!("{dec}/mode"), "ram")?;
            programmed.push(decoder);
            sys.write(
                &format!("{dec}/dpa_size"),
                &format!("{:#x}", plan.dpa_per_device),
            )?;
            sys.write(&format!("{reg}/target{pos}"), decoder)?;
        }
        sys.write(&format!("{reg}/commit"), "1")?;
        if sys.link_name(&format!("{reg}/driver")).is_none() {
            sys.write("bus/cxl/drivers/cxl_region/bind", &region)?;
        }
        bind_dax(sys, &region)
    })();
    match result {
        Ok(dax) => Ok(CreatedRegion {
            region,
            dax,
            plan: plan.clone(),
        }),
        Err(err) => {
            let undo = teardown(sys, &plan.root_decoder, &region, &programmed);
            match undo {
                Ok(()) => {
                    Err(err.context(format!("creating {region} failed; it was removed again")))
                }
                Err(undo_err) => Err(err.context(format!(
                    "creating {region} failed, and undoing it failed too: {undo_err:#}"
                ))),
            }
        }
    }
}

/// The dax device of a region (dax_cxl creates it unbound), bound to
/// device_dax so that `/dev/daxX.Y` appears.
fn bind_dax(sys: &Sysfs, region: &str) -> Result<Option<String>> {
    let find = || {
        sys.list(DAX_DEVICES).ok()?.into_iter().find(|name| {
            sys.canonical(&format!("{DAX_DEVICES}/{name}"))
                .is_ok_and(|p| p.split('/').any(|c| c == region))
        })
    };
    let Some(dax) = wait_for(Duration::from_secs(5), find) else {
        bail!("{region} is committed but no dax device appeared (is CONFIG_DEV_DAX_CXL enabled?)");
    };
    if sys
        .link_name(&format!("{DAX_DEVICES}/{dax}/driver"))
        .is_none()
    {
        sys.write("bus/dax/drivers/device_dax/bind", &dax)?;
    }
    Ok(Some(dax))
}

/// Removes a region and frees the DPA of the given endpoint decoders
/// (highest first: DPA is freed in the reverse order of allocation).
fn teardown(sys: &Sysfs, root_decoder: &str, region: &str, decoders: &[&str]) -> Result<()> {
    let reg = format!("{CXL_DEVICES}/{region}");
    if sys.exists(&reg) {
        if sys.link_name(&format!("{reg}/driver")).is_some() {
            sys.write("bus/cxl/drivers/cxl_region/unbind", region)?;
        }
        if sys.read_opt(&format!("{reg}/commit")).as_deref() == Some("1") {
            sys.write(&format!("{reg}/commit"), "0")?;
        }
        sys.write(
            &format!("{CXL_DEVICES}/{root_decoder}/delete_region"),
            region,
        )?;
    }
    let mut sorted: Vec<&str> = decoders.to_vec();
    sorted.sort_by_key(|d| std::cmp::Reverse(crate::sysfs::natural_key(d)));
    for decoder in sorted {
        let path = format!("{CXL_DEVICES}/{decoder}/dpa_size");
        if sys
            .read_opt(&path)
            .and_then(|v| crate::topology::parse_u64(&v))
            .is_some_and(|v| v != 0)
        {
            sys.write(&path, "0")?;
        }
    }
    Ok(())
}

/// Destroys a region created by [`create`] (or by hand) and frees its
/// endpoint decoders' DPA.
pub fn destroy(sys: &Sysfs, topo: &Topology, region: &str) -> Result<()> {
    let dev = topo
        .get(region)
        .filter(|d| d.kind == Kind::Region)
        .with_context(|| format!("no region named {region}"))?;
    let root = dev
        .parent
        .clone()
        .with_context(|| format!("{region} has no root decoder"))?;
    let decoders: Vec<&str> = topo
        .of_kind(Kind::Decoder)
        .filter(|d| d.attr("region") == Some(region) && d.attr("dpa_size").is_some())
        .map(|d| d.name.as_str())
        .collect();
    teardown(sys, &root, region, &decoders)
}
