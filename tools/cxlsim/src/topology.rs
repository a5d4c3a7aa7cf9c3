//! The interconnect layer: a graph of requesters, switches and memories joined
//! by links, the built-in topology families, and shortest-path routing tables
//! keyed by port-based routing (PBR) ids.
//!
//! As in ESF, the fabric is given as device pairs joined by links; routing
//! uses shortest paths in hops. Requesters and memories never forward
//! traffic, only switches do. Every requester and memory is an edge port with
//! a PBR id (requesters first, then memories); CXL PBR ids are 12 bits, so a
//! fabric has at most 4096 of them.
//!
//! Built-in families for `n` requesters and `n` memories (the ESF paper's
//! figure 9 is not in the text we have; these placements reproduce the
//! bottlenecks its section V-A describes):
//! * `chain`: switches in a line; the requesters hang (about two per switch)
//!   off the first half of the line, the memories off the second half, so
//!   every request crosses the middle "bridge" link: about 1x one port.
//! * `ring`: the chain closed into a ring: two bridges, about 2x.
//! * `tree`: a root switch with a requester-side and a memory-side subtree
//!   (leaf switches of two devices below an aggregation switch); the root's
//!   links are the bridges: about 1x.
//! * `spine-leaf`: leaves of up to `leaf_devices` (4) requesters or memories;
//!   a full leaf is linked once to each of `spines` (2) spines, a partly
//!   filled one to as many spines as keep its devices:uplinks ratio at
//!   `leaf_devices`:`spines` (rounded up). The leaf uplinks are thus
//!   oversubscribed 2:1 and the aggregate is about n/2 x. A partly filled
//!   leaf's flows can only use the first spines, so the full leaves' flows
//!   must favour the others: [`Routes::balance`] does that.
//! * `fully-connected`: one switch per requester/memory pair, every pair of
//!   switches linked: about n x.

use crate::config::{LinkSpec, TopologyConfig};
use crate::util::FxMap;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

/// Most PBR ids a fabric may have (12-bit ids).
pub const MAX_PBR_IDS: usize = 4096;
/// Largest `n` of the built-in families.
pub const MAX_N: u32 = 1024;

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    Requester,
    Switch,
    Memory,
}

/// One end of a link as seen from a node: transmitting through this port
/// uses link `link` in direction `dir` (0: a to b, 1: b to a).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    pub link: u32,
    pub dir: u8,
    /// The node at the other end.
    pub peer: u32,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    /// Index among the nodes of its kind (requester 0, 1, ...).
    pub index: u32,
    pub ports: Vec<Port>,
}

#[derive(Clone, Debug)]
pub struct LinkDef {
    pub a: u32,
    pub b: u32,
    /// Per-link parameters (names in `a`/`b` are informative only).
    pub spec: LinkSpec,
}

/// A validated fabric graph.
#[derive(Clone, Debug)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub links: Vec<LinkDef>,
    /// Node ids of the requesters, by requester index (= PBR id).
    pub requesters: Vec<u32>,
    /// Node ids of the memories, by memory index (PBR id = requesters + index).
    pub memories: Vec<u32>,
}

/// Builds a graph by names.
#[derive(Default, Debug)]
pub struct GraphBuilder {
    nodes: Vec<Node>,
    by_name: BTreeMap<String, u32>,
    links: Vec<LinkDef>,
    counts: [u32; 3],
}

impl GraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, name: &str, kind: NodeKind) -> Result<u32> {
        if name.is_empty() {
            bail!("a node has an empty name");
        }
        if self.by_name.contains_key(name) {
            bail!("node name {name:?} is used twice");
        }
        let id = self.nodes.len() as u32;
        let k = kind as usize;
        self.nodes.push(Node {
            name: name.to_string(),
            kind,
            index: self.counts[k],
            ports: Vec::new(),
        });
        self.counts[k] += 1;
        self.by_name.insert(name.to_string(), id);
        Ok(id)
    }

    pub fn id(&self, name: &str) -> Result<u32> {
        self.by_name
            .get(name)
            .copied()
            .with_context(|| format!("unknown node {name:?}"))
    }

    pub fn link(&mut self, a: u32, b: u32, mut spec: LinkSpec) -> Result<()> {
        if a == b {
            bail!("link from {:?} to itself", self.nodes[a as usize].name);
        }
        spec.a.clone_from(&self.nodes[a as usize].name);
        spec.b.clone_from(&self.nodes[b as usize].name);
        let link = self.links.len() as u32;
        self.nodes[a as usize].ports.push(Port {
            link,
            dir: 0,
            peer: b,
        });
        self.nodes[b as usize].ports.push(Port {
            link,
            dir: 1,
            peer: a,
        });
        self.links.push(LinkDef { a, b, spec });
        Ok(())
    }

    pub fn link_names(&mut self, a: &str, b: &str, spec: LinkSpec) -> Result<()> {
        let ia = self
            .id(a)
            .with_context(|| format!("in link {a:?} - {b:?}"))?;
        let ib = self
            .id(b)
            .with_context(|| format!("in link {a:?} - {b:?}"))?;
        self.link(ia, ib, spec)
    }

    fn plain(&mut self, a: u32, b: u32) -> Result<()> {
        self.link(a, b, LinkSpec::default())
    }

    pub fn build(self) -> Result<Graph> {
        let nodes = self.nodes;
        let mut requesters = Vec::new();
        let mut memories = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            match n.kind {
                NodeKind::Requester => requesters.push(i as u32),
                NodeKind::Memory => memories.push(i as u32),
                NodeKind::Switch => {}
            }
            if n.ports.is_empty() {
                bail!("node {:?} has no link", n.name);
            }
        }
        if requesters.is_empty() {
            bail!("the topology has no requester");
        }
        if memories.is_empty() {
            bail!("the topology has no memory");
        }
        if requesters.len() + memories.len() > MAX_PBR_IDS {
            bail!(
                "{} requesters and memories: more than the {MAX_PBR_IDS} PBR ids of a fabric",
                requesters.len() + memories.len()
            );
        }
        if nodes.len() > u32::MAX as usize / 2 || self.links.len() > u32::MAX as usize / 2 {
            bail!("topology too large");
        }
        for n in &nodes {
            if n.ports.len() > u16::MAX as usize {
                bail!("node {:?} has too many ports", n.name);
            }
        }
        Ok(Graph {
            nodes,
            links: self.links,
            requesters,
            memories,
        })
    }
}

fn check_n(n: u32) -> Result<()> {
    if n == 0 {
        bail!("topology n = 0: need at least one requester and one memory");
    }
    if n > MAX_N {
        bail!("topology n = {n}: at most {MAX_N}");
    }
    Ok(())
}

/// Adds requesters `r0..` and memories `m0..`.
fn devices(b: &mut GraphBuilder, n: u32) -> Result<(Vec<u32>, Vec<u32>)> {
    let r = (0..n)
        .map(|i| b.add(&format!("r{i}"), NodeKind::Requester))
        .collect::<Result<Vec<_>>>()?;
    let m = (0..n)
        .map(|i| b.add(&format!("m{i}"), NodeKind::Memory))
        .collect::<Result<Vec<_>>>()?;
    Ok((r, m))
}

fn switches(b: &mut GraphBuilder, prefix: &str, count: u32) -> Result<Vec<u32>> {
    (0..count)
        .map(|i| b.add(&format!("{prefix}{i}"), NodeKind::Switch))
        .collect()
}

/// Chain or ring: requesters on the first half of the switches, memories on
/// the second half.
fn line(n: u32, ring: bool) -> Result<Graph> {
    let mut b = GraphBuilder::new();
    let (r, m) = devices(&mut b, n)?;
    let hr = n.div_ceil(2).max(1);
    let hm = (n / 2).max(1);
    let s = switches(&mut b, "s", hr + hm)?;
    for (i, &node) in r.iter().enumerate() {
        let k = (i as u64 * hr as u64 / n as u64) as usize;
        b.plain(node, s[k])?;
    }
    for (j, &node) in m.iter().enumerate() {
        let k = hr as usize + (j as u64 * hm as u64 / n as u64) as usize;
        b.plain(node, s[k])?;
    }
    for w in s.windows(2) {
        b.plain(w[0], w[1])?;
    }
    if ring {
        // A ring of two switches is two parallel links.
        b.plain(s[s.len() - 1], s[0])?;
    }
    b.build()
}

fn tree(n: u32) -> Result<Graph> {
    let mut b = GraphBuilder::new();
    let (r, m) = devices(&mut b, n)?;
    let root = b.add("root", NodeKind::Switch)?;
    for (side, devs) in [("r", &r), ("m", &m)] {
        let agg = b.add(&format!("agg-{side}"), NodeKind::Switch)?;
        b.plain(root, agg)?;
        if devs.len() <= 2 {
            for &d in devs.iter() {
                b.plain(d, agg)?;
            }
        } else {
            let leaves = switches(
                &mut b,
                &format!("leaf-{side}"),
                (devs.len() as u32).div_ceil(2),
            )?;
            for &l in &leaves {
                b.plain(agg, l)?;
            }
            for (i, &d) in devs.iter().enumerate() {
                b.plain(d, leaves[i / 2])?;
            }
        }
    }
    b.build()
}

fn spine_leaf(n: u32, leaf_devices: u32, spines: u32) -> Result<Graph> {
    if leaf_devices == 0 {
        bail!("spine-leaf leaf_devices = 0");
    }
    if spines == 0 || spines > MAX_N {
        bail!("spine-leaf spines = {spines}: between 1 and {MAX_N}");
    }
    let mut b = GraphBuilder::new();
    let (r, m) = devices(&mut b, n)?;
    let per_side = n.div_ceil(leaf_devices);
    // Uplinks of leaf `li` (the same on both sides).
    let uplinks = |li: u32| {
        let d = (n - li * leaf_devices).min(leaf_devices) as u64;
        (d * spines as u64)
            .div_ceil(leaf_devices as u64)
            .clamp(1, spines as u64) as usize
    };
    let sp = switches(&mut b, "spine", uplinks(0) as u32)?;
    for (side, devs) in [("r", &r), ("m", &m)] {
        let leaves = switches(&mut b, &format!("leaf-{side}"), per_side)?;
        for (li, &l) in leaves.iter().enumerate() {
            for &s in &sp[..uplinks(li as u32)] {
                b.plain(l, s)?;
            }
        }
        for (i, &d) in devs.iter().enumerate() {
            b.plain(d, leaves[i / leaf_devices as usize])?;
        }
    }
    b.build()
}

fn fully_connected(n: u32) -> Result<Graph> {
    let mut b = GraphBuilder::new();
    let (r, m) = devices(&mut b, n)?;
    let s = switches(&mut b, "s", n)?;
    for i in 0..n as usize {
        b.plain(r[i], s[i])?;
        b.plain(m[i], s[i])?;
    }
    for i in 0..s.len() {
        for j in i + 1..s.len() {
            b.plain(s[i], s[j])?;
        }
    }
    b.build()
}

/// Builds the graph a topology configuration describes. `base` resolves
/// relative file names.
pub fn build(cfg: &TopologyConfig, base: &Path) -> Result<Graph> {
    match cfg {
        TopologyConfig::Chain { n } => {
            check_n(*n)?;
            line(*n, false)
        }
        TopologyConfig::Ring { n } => {
            check_n(*n)?;
            line(*n, true)
        }
        TopologyConfig::Tree { n } => {
            check_n(*n)?;
            tree(*n)
        }
        TopologyConfig::SpineLeaf {
            n,
            leaf_devices,
            spines,
        } => {
            check_n(*n)?;
            spine_leaf(*n, *leaf_devices, *spines)
        }
        TopologyConfig::FullyConnected { n } => {
            check_n(*n)?;
            if *n > 256 {
                bail!("fully-connected n = {n}: at most 256 (n^2/2 switch links)");
            }
            fully_connected(*n)
        }
        TopologyConfig::Custom {
            switches,
            requesters,
            memories,
            links,
        } => {
            let mut b = GraphBuilder::new();
            for s in switches {
                b.add(s, NodeKind::Switch)?;
            }
            for s in requesters {
                b.add(s, NodeKind::Requester)?;
            }
            for s in memories {
                b.add(s, NodeKind::Memory)?;
            }
            for l in links {
                b.link_names(&l.a, &l.b, l.clone())?;
            }
            b.build()
        }
        TopologyConfig::Cxlctl {
            file,
            json,
            requesters_per_root,
        } => {
            let topo = match (file, json) {
                (Some(f), None) => {
                    let path = base.join(f);
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    crate::cxlctl::parse(&text).with_context(|| format!("in {}", path.display()))?
                }
                (None, Some(v)) => serde_json::from_value(v.clone())
                    .context("the inline cxlctl topology (json)")?,
                _ => bail!("topology kind = \"cxlctl\" needs exactly one of file or json"),
            };
            crate::cxlctl::to_graph(&topo, *requesters_per_root)
        }
    }
}

/// Shortest-path routing tables: for every node and destination PBR id, the
/// ports on a shortest path (in hops) to it.
#[derive(Clone, Debug)]
pub struct Routes {
    endpoints: usize,
    /// `(start, len)` into `ports`, indexed `node * endpoints + pbr`.
    index: Vec<(u32, u16)>,
    ports: Vec<u16>,
    /// Hops from each node to each endpoint (u32::MAX: unreachable).
    hops: Vec<u32>,
    /// The candidate (index into `candidates`) each balanced flow takes at
    /// nodes with several, by `flow_key(node, src, dst)`.
    pinned: FxMap<u64, u16>,
}

/// PBR ids are 12 bits.
#[inline]
fn flow_key(node: u32, src: u32, dst: u32) -> u64 {
    (node as u64) << 24 | (src as u64) << 12 | dst as u64
}

impl Graph {
    /// Number of PBR ids (requesters + memories).
    pub fn endpoints(&self) -> usize {
        self.requesters.len() + self.memories.len()
    }

    /// Node id of PBR id `pbr`.
    pub fn endpoint_node(&self, pbr: usize) -> u32 {
        if pbr < self.requesters.len() {
            self.requesters[pbr]
        } else {
            self.memories[pbr - self.requesters.len()]
        }
    }

    pub fn find(&self, name: &str) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as u32)
    }

    /// Computes the routing tables (breadth-first search from every
    /// destination, expanding only through switches).
    pub fn routes(&self) -> Routes {
        let e = self.endpoints();
        let nn = self.nodes.len();
        let mut index = vec![(0u32, 0u16); nn * e];
        let mut ports = Vec::new();
        let mut hops = vec![u32::MAX; nn * e];
        let mut dist = vec![u32::MAX; nn];
        let mut queue = VecDeque::new();
        for pbr in 0..e {
            let dst = self.endpoint_node(pbr) as usize;
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst] = 0;
            queue.clear();
            queue.push_back(dst);
            while let Some(v) = queue.pop_front() {
                if v != dst && self.nodes[v].kind != NodeKind::Switch {
                    continue; // endpoints do not forward
                }
                for p in &self.nodes[v].ports {
                    let u = p.peer as usize;
                    if dist[u] == u32::MAX {
                        dist[u] = dist[v] + 1;
                        queue.push_back(u);
                    }
                }
            }
            for v in 0..nn {
                hops[v * e + pbr] = dist[v];
                if v == dst || dist[v] == u32::MAX {
                    continue;
                }
                let start = ports.len() as u32;
                for (pi, p) in self.nodes[v].ports.iter().enumerate() {
                    let u = p.peer as usize;
                    let via_ok = u == dst || self.nodes[u].kind == NodeKind::Switch;
                    if via_ok && dist[u] != u32::MAX && dist[u] + 1 == dist[v] {
                        ports.push(pi as u16);
                    }
                }
                index[v * e + pbr] = (start, (ports.len() as u32 - start) as u16);
            }
        }
        Routes {
            endpoints: e,
            index,
            ports,
            hops,
            pinned: FxMap::default(),
        }
    }
}

impl Routes {
    /// Candidate egress ports (indices into the node's ports) from `node`
    /// towards PBR id `pbr`.
    #[inline]
    pub fn candidates(&self, node: u32, pbr: u32) -> &[u16] {
        let (s, l) = self.index[node as usize * self.endpoints + pbr as usize];
        &self.ports[s as usize..s as usize + l as usize]
    }

    /// Hops (links) from `node` to PBR id `pbr`, if reachable.
    pub fn hops(&self, node: u32, pbr: u32) -> Option<u32> {
        let h = self.hops[node as usize * self.endpoints + pbr as usize];
        (h != u32::MAX).then_some(h)
    }

    /// The oblivious choice among the `n` candidates at `node` for a
    /// message from PBR id `src` to `dst`: the flow's pinned one if
    /// [`Routes::balance`] pinned it, else (src + dst) mod n.
    #[inline]
    pub fn preferred(&self, node: u32, src: u32, dst: u32, n: usize) -> usize {
        match self.pinned.get(&flow_key(node, src, dst)) {
            Some(&i) => i as usize,
            None => (src as usize + dst as usize) % n,
        }
    }

    /// Pins each flow of `flows` (source, destination PBR ids, all carrying
    /// the same load) to one shortest path so that the load per link
    /// direction is balanced: flows with fewer paths go first (a partly
    /// filled leaf's forced flows), then each takes the path whose busiest
    /// link direction, then whose total, carries the fewest flows so far.
    /// Hashing the ids instead splits every node's flows evenly, which
    /// overloads the links that forced flows also need.
    pub fn balance(&mut self, g: &Graph, flows: &[(u32, u32)]) {
        let nn = g.nodes.len();
        let mut load = vec![0u64; g.links.len() * 2];
        let mut stack = Vec::new();
        let mut order: Vec<(u64, u32, u32)> = Vec::with_capacity(flows.len());
        let mut by_dst: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &(s, d) in flows {
            by_dst.entry(d).or_default().push(s);
        }
        let mut counts: Vec<Option<u64>> = vec![None; nn];
        for (&d, srcs) in &by_dst {
            counts.iter_mut().for_each(|c| *c = None);
            for &s in srcs {
                let from = g.endpoint_node(s as usize);
                let paths = self.count_paths(g, from, d, &mut counts, &mut stack);
                order.push((paths, s, d));
            }
        }
        order.sort_unstable();
        order.dedup();
        let unset = Best {
            flow: usize::MAX,
            cost: (0, 0),
            choice: 0,
        };
        let mut memo = vec![unset; nn];
        for (id, &(paths, s, d)) in order.iter().enumerate() {
            let (from, to) = (g.endpoint_node(s as usize), g.endpoint_node(d as usize));
            if paths == 0 {
                continue;
            }
            if paths > 1 {
                let flow = Flow {
                    g,
                    load: &load,
                    src: s,
                    dst: d,
                    to,
                    id,
                };
                self.best(&flow, from, &mut memo, &mut stack);
            }
            let mut v = from;
            while v != to {
                let cands = self.candidates(v, d);
                let multi = cands.len() > 1;
                let i = if multi { memo[v as usize].choice } else { 0 };
                let port = g.nodes[v as usize].ports[cands[i] as usize];
                if multi {
                    self.pinned.insert(flow_key(v, s, d), i as u16);
                }
                load[2 * port.link as usize + port.dir as usize] += 1;
                v = port.peer;
            }
        }
    }

    /// Shortest paths from `from` to PBR id `dst` (saturating); `memo`
    /// keeps the counts of the nodes seen, for further sources. Depth-first
    /// on an explicit stack: a custom fabric may be a line of any length.
    fn count_paths(
        &self,
        g: &Graph,
        from: u32,
        dst: u32,
        memo: &mut [Option<u64>],
        stack: &mut Vec<(u32, bool)>,
    ) -> u64 {
        let to = g.endpoint_node(dst as usize);
        stack.clear();
        stack.push((from, false));
        while let Some((v, expanded)) = stack.pop() {
            if v == to || memo[v as usize].is_some() {
                continue;
            }
            let ports = &g.nodes[v as usize].ports;
            let cands = self.candidates(v, dst);
            if !expanded {
                // Shortest paths only go down in hops: no node is its own
                // descendant, so the children are done when `v` comes back.
                stack.push((v, true));
                stack.extend(cands.iter().map(|&c| (ports[c as usize].peer, false)));
            } else {
                let n = cands.iter().fold(0u64, |n, &c| {
                    let p = ports[c as usize].peer;
                    n.saturating_add(if p == to {
                        1
                    } else {
                        memo[p as usize].unwrap_or(0)
                    })
                });
                memo[v as usize] = Some(n);
            }
        }
        if from == to {
            1
        } else {
            memo[from as usize].unwrap_or(0)
        }
    }

    /// For every node on the shortest paths from `from` to the flow's
    /// destination, the least (busiest link direction, sum of loads) on to
    /// it and the candidate that gives it, in `memo` (ties: the hash's
    /// rotation order). Explicit stack, as in `count_paths`.
    fn best(&self, f: &Flow, from: u32, memo: &mut [Best], stack: &mut Vec<(u32, bool)>) {
        stack.clear();
        stack.push((from, false));
        while let Some((v, expanded)) = stack.pop() {
            if v == f.to || memo[v as usize].flow == f.id {
                continue;
            }
            let ports = &f.g.nodes[v as usize].ports;
            let cands = self.candidates(v, f.dst);
            if !expanded {
                stack.push((v, true));
                stack.extend(cands.iter().map(|&c| (ports[c as usize].peer, false)));
                continue;
            }
            let n = cands.len();
            let first = (f.src as usize + f.dst as usize) % n;
            let mut best = Best {
                flow: f.id,
                cost: (u64::MAX, u64::MAX),
                choice: first,
            };
            for k in 0..n {
                let i = (first + k) % n;
                let port = ports[cands[i] as usize];
                let l = f.load[2 * port.link as usize + port.dir as usize];
                let (max, sum) = if port.peer == f.to {
                    (0, 0)
                } else {
                    memo[port.peer as usize].cost
                };
                let cost = (max.max(l), sum.saturating_add(l));
                if cost < best.cost {
                    best.cost = cost;
                    best.choice = i;
                }
            }
            memo[v as usize] = best;
        }
    }
}

/// What [`Routes::best`] found at a node.
#[derive(Clone, Copy, Debug)]
struct Best {
    /// The flow it was computed for.
    flow: usize,
    cost: (u64, u64),
    /// Index into the node's candidates.
    choice: usize,
}

/// One flow being placed by [`Routes::balance`].
struct Flow<'a> {
    g: &'a Graph,
    load: &'a [u64],
    src: u32,
    dst: u32,
    /// Node of `dst`.
    to: u32,
    id: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hops(g: &Graph, r: usize, m: usize) -> u32 {
        let routes = g.routes();
        routes
            .hops(g.requesters[r], (g.requesters.len() + m) as u32)
            .unwrap()
    }

    #[test]
    fn chain_of_eight_has_nine_hops_end_to_end() {
        let g = line(8, false).unwrap();
        assert_eq!(hops(&g, 0, 7), 9);
        assert_eq!(hops(&g, 7, 0), 3);
    }

    #[test]
    fn ring_shortens_the_far_pairs() {
        let g = line(8, true).unwrap();
        assert_eq!(hops(&g, 0, 7), 3);
        assert_eq!(hops(&g, 0, 0), 6);
        let r = g.routes();
        // r0's switch s0 reaches m0 (on s4) both ways round.
        let s0 = g.find("s0").unwrap();
        assert_eq!(r.candidates(s0, 8).len(), 2);
    }

    #[test]
    fn built_in_families_connect_everything() {
        for g in [
            line(1, false).unwrap(),
            line(3, true).unwrap(),
            line(2, true).unwrap(),
            tree(1).unwrap(),
            tree(5).unwrap(),
            spine_leaf(6, 4, 2).unwrap(),
            spine_leaf(1, 4, 2).unwrap(),
            spine_leaf(2, 4, 2).unwrap(),
            spine_leaf(5, 2, 3).unwrap(),
            fully_connected(3).unwrap(),
        ] {
            let routes = g.routes();
            for &r in &g.requesters {
                for m in 0..g.memories.len() {
                    assert!(routes.hops(r, (g.requesters.len() + m) as u32).is_some());
                }
            }
        }
    }

    #[test]
    fn endpoints_do_not_forward() {
        // r0 - m0 - s0 - m1: r0 must not reach m1 through m0.
        let mut b = GraphBuilder::new();
        let r0 = b.add("r0", NodeKind::Requester).unwrap();
        let m0 = b.add("m0", NodeKind::Memory).unwrap();
        let s0 = b.add("s0", NodeKind::Switch).unwrap();
        let m1 = b.add("m1", NodeKind::Memory).unwrap();
        b.plain(r0, m0).unwrap();
        b.plain(m0, s0).unwrap();
        b.plain(s0, m1).unwrap();
        let g = b.build().unwrap();
        let routes = g.routes();
        assert_eq!(routes.hops(r0, 1), Some(1));
        assert_eq!(routes.hops(r0, 2), None);
    }
}
