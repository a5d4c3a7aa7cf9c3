//! Import of the switch topology `cxlctl --json topology` prints (read
//! with cxlctl's own types: `{"devices": [{"name", "kind", "parent",
//! ...attributes}]}`), so a run can mirror the testbed.
//!
//! Mapping: every `root`, `host-bridge` and `switch` (a switch port object)
//! becomes a switch node linked to its parent; `requesters_per_root`
//! requesters (hosts) attach to every root; every `memdev` becomes a memory
//! node linked to the parent of its endpoint (an endpoint without a memdev
//! becomes a memory of its own name). Decoders, regions and dax devices are
//! ignored. The links between the root, host bridge and switch objects are
//! ordinary links of the configured parameters (an approximation: in the
//! machine, only the root port to switch and switch to device hops are PCIe
//! links). Parent links that loop are refused.

use crate::config::LinkSpec;
use crate::topology::{Graph, GraphBuilder, NodeKind};
use anyhow::{bail, Context, Result};
pub use cxlctl::topology::{Device, Kind, Topology};
use std::collections::BTreeMap;

pub fn parse(text: &str) -> Result<Topology> {
    serde_json::from_str(text).context("parsing cxlctl --json topology output")
}

/// Refuses parent links that loop: sysfs is a tree, so a loop is a corrupt
/// or hand-edited file, and a loop of ports would become a ring of links.
fn check_no_cycle(topo: &Topology) -> Result<()> {
    let index: BTreeMap<&str, usize> = topo
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    // 0: not seen, 1: on the current walk, 2: leads to a device without a parent.
    let mut state = vec![0u8; topo.devices.len()];
    for start in 0..topo.devices.len() {
        let mut walk = Vec::new();
        let mut at = Some(start);
        while let Some(i) = at {
            match state[i] {
                2 => break,
                1 => {
                    let from = walk.iter().position(|&j| j == i).unwrap_or(0);
                    let names: Vec<&str> = walk[from..]
                        .iter()
                        .chain(std::iter::once(&i))
                        .map(|&j| topo.devices[j].name.as_str())
                        .collect();
                    bail!(
                        "cxlctl topology has a parent cycle: {} (parents must lead to a root)",
                        names.join(" -> ")
                    );
                }
                _ => {}
            }
            state[i] = 1;
            walk.push(i);
            at = topo.devices[i]
                .parent
                .as_deref()
                .and_then(|p| index.get(p).copied());
        }
        for j in walk {
            state[j] = 2;
        }
    }
    Ok(())
}

/// The fabric graph of a cxlctl topology.
pub fn to_graph(topo: &Topology, requesters_per_root: u32) -> Result<Graph> {
    if requesters_per_root == 0 {
        bail!("requesters_per_root = 0: need at least one requester");
    }
    if requesters_per_root > 64 {
        bail!("requesters_per_root = {requesters_per_root}: at most 64");
    }
    let by_name: BTreeMap<&str, &Device> =
        topo.devices.iter().map(|d| (d.name.as_str(), d)).collect();
    if by_name.len() != topo.devices.len() {
        bail!("cxlctl topology names a device twice");
    }
    check_no_cycle(topo)?;
    let is_port = |k: Kind| matches!(k, Kind::Root | Kind::HostBridge | Kind::Switch);
    let mut b = GraphBuilder::new();
    let mut roots = Vec::new();
    for d in &topo.devices {
        if is_port(d.kind) {
            let id = b.add(&d.name, NodeKind::Switch)?;
            if d.kind == Kind::Root {
                roots.push(id);
            }
        }
    }
    if roots.is_empty() {
        bail!("cxlctl topology has no root");
    }
    fn port_parent<'a>(
        by_name: &BTreeMap<&str, &Device>,
        d: &'a Device,
    ) -> Result<Option<&'a str>> {
        let is_port = |k: Kind| matches!(k, Kind::Root | Kind::HostBridge | Kind::Switch);
        match d.parent.as_deref() {
            None => Ok(None),
            Some(p) => {
                let pd = by_name
                    .get(p)
                    .with_context(|| format!("{}: parent {p:?} is not in the topology", d.name))?;
                if !is_port(pd.kind) {
                    bail!("{}: parent {p:?} is a {:?}, not a port", d.name, pd.kind);
                }
                Ok(Some(p))
            }
        }
    }
    for d in &topo.devices {
        if is_port(d.kind) {
            match port_parent(&by_name, d)? {
                Some(p) => b.link_names(&d.name, p, LinkSpec::default())?,
                None if d.kind != Kind::Root => {
                    bail!("{}: a {:?} without a parent", d.name, d.kind)
                }
                None => {}
            }
        }
    }
    let mut n_req = 0;
    for &root in &roots {
        for _ in 0..requesters_per_root {
            let r = b.add(&format!("r{n_req}"), NodeKind::Requester)?;
            n_req += 1;
            b.link(r, root, LinkSpec::default())?;
        }
    }
    // Memories: memdevs under endpoints, and endpoints without a memdev.
    let mut with_memdev = std::collections::BTreeSet::new();
    let mut mems: Vec<(String, String)> = Vec::new(); // (memory name, endpoint)
    for d in &topo.devices {
        if d.kind == Kind::Memdev {
            let Some(ep) = d.parent.as_deref() else {
                continue; // not attached to the port tree (no cxl_port)
            };
            let epd = by_name
                .get(ep)
                .with_context(|| format!("{}: parent {ep:?} is not in the topology", d.name))?;
            if epd.kind != Kind::Endpoint {
                bail!("{}: parent {ep:?} is not an endpoint", d.name);
            }
            with_memdev.insert(ep.to_string());
            mems.push((d.name.clone(), ep.to_string()));
        }
    }
    for d in &topo.devices {
        if d.kind == Kind::Endpoint && !with_memdev.contains(&d.name) {
            mems.push((d.name.clone(), d.name.clone()));
        }
    }
    mems.sort();
    if mems.is_empty() {
        bail!("cxlctl topology has no memory device (memdev or endpoint)");
    }
    for (name, ep) in &mems {
        let epd = by_name[ep.as_str()];
        let Some(p) = port_parent(&by_name, epd)? else {
            bail!("endpoint {ep} has no parent port");
        };
        b.add(name, NodeKind::Memory)?;
        b.link_names(name, p, LinkSpec::default())?;
    }
    b.build()
}
