//! The CXL topology as sysfs shows it: ports, switches, endpoints, memdevs,
//! decoders, regions and the dax devices on top of regions.

use crate::sysfs::Sysfs;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub const CXL_DEVICES: &str = "bus/cxl/devices";
pub const DAX_DEVICES: &str = "bus/dax/devices";

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Root,
    HostBridge,
    Switch,
    Endpoint,
    Memdev,
    Decoder,
    Region,
    DaxRegion,
    Dax,
    Other,
}

/// Attributes read for each kind (only those present are kept).
pub fn attributes(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Root | Kind::HostBridge | Kind::Switch | Kind::Endpoint => &["decoders_committed"],
        Kind::Memdev => &["serial", "ram/size", "pmem/size", "numa_node"],
        Kind::Decoder => &[
            "start",
            "size",
            "locked",
            "target_type",
            "target_list",
            "interleave_ways",
            "interleave_granularity",
            "cap_ram",
            "cap_pmem",
            "mode",
            "dpa_size",
            "dpa_resource",
            "region",
            "create_ram_region",
        ],
        Kind::Region => &[
            "size",
            "resource",
            "mode",
            "commit",
            "interleave_ways",
            "interleave_granularity",
        ],
        Kind::Dax => &["size", "resource", "target_node", "align"],
        Kind::DaxRegion | Kind::Other => &[],
    }
}

/// Symlinks read for each kind, recorded by their target's name.
pub fn links(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Root | Kind::HostBridge | Kind::Switch | Kind::Endpoint => &["uport", "driver"],
        _ => &["driver"],
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Device {
    pub name: String,
    pub kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Attribute and link values, by attribute name.
    #[serde(flatten)]
    pub attrs: BTreeMap<String, String>,
}

impl Device {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.get(name).map(String::as_str)
    }

    pub fn attr_u64(&self, name: &str) -> Option<u64> {
        parse_u64(self.attr(name)?)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Topology {
    pub devices: Vec<Device>,
}

pub fn parse_u64(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// The kind a device name implies (ports are refined by their place in the tree).
pub fn kind_of(name: &str) -> Kind {
    let prefix: String = name.chars().take_while(|c| !c.is_ascii_digit()).collect();
    match prefix.as_str() {
        "root" => Kind::Root,
        "port" => Kind::Switch,
        "endpoint" => Kind::Endpoint,
        "mem" => Kind::Memdev,
        "decoder" => Kind::Decoder,
        "region" => Kind::Region,
        "dax_region" => Kind::DaxRegion,
        "dax" => Kind::Dax,
        _ => Kind::Other,
    }
}

/// The nearest path component that names a known device.
fn nearest_ancestor(path: &str, own: &str, known: &BTreeSet<String>) -> Option<String> {
    path.split('/')
        .rev()
        .filter(|c| *c != own)
        .find(|c| known.contains(*c))
        .map(str::to_string)
}

impl Topology {
    pub fn read(sys: &Sysfs) -> Result<Topology> {
        if !sys.exists(CXL_DEVICES) {
            bail!(
                "{} does not exist: no CXL bus (is CONFIG_CXL_BUS enabled and cxl_acpi loaded?)",
                sys.path(CXL_DEVICES).display()
            );
        }
        let mut entries: Vec<(String, String, &str)> = Vec::new();
        for name in sys.list(CXL_DEVICES)? {
            entries.push((
                name.clone(),
                sys.canonical(&format!("{CXL_DEVICES}/{name}"))?,
                CXL_DEVICES,
            ));
        }
        if sys.exists(DAX_DEVICES) {
            for name in sys.list(DAX_DEVICES)? {
                entries.push((
                    name.clone(),
                    sys.canonical(&format!("{DAX_DEVICES}/{name}"))?,
                    DAX_DEVICES,
                ));
            }
        }
        let known: BTreeSet<String> = entries.iter().map(|(n, ..)| n.clone()).collect();

        let mut devices = Vec::new();
        for (name, path, bus) in &entries {
            let mut kind = kind_of(name);
            let mut attrs = BTreeMap::new();
            for attr in attributes(kind) {
                if let Some(v) = sys.read_opt(&format!("{bus}/{name}/{attr}")) {
                    attrs.insert(attr.to_string(), v);
                }
            }
            for link in links(kind) {
                if let Some(v) = sys.link_name(&format!("{bus}/{name}/{link}")) {
                    attrs.insert(link.to_string(), v);
                }
            }
            let parent = nearest_ancestor(path, name, &known);
            if kind == Kind::Switch && parent.as_deref().is_some_and(|p| kind_of(p) == Kind::Root) {
                kind = Kind::HostBridge;
            }
            devices.push(Device {
                name: name.clone(),
                kind,
                parent,
                attrs,
            });
        }
        // A memdev hangs below the PCI device, not the port tree: attach it
        // to the endpoint whose uport it is.
        let uports: BTreeMap<String, String> = devices
            .iter()
            .filter(|d| d.kind == Kind::Endpoint)
            .filter_map(|d| Some((d.attr("uport")?.to_string(), d.name.clone())))
            .collect();
        for dev in devices.iter_mut().filter(|d| d.kind == Kind::Memdev) {
            dev.parent = uports.get(&dev.name).cloned();
        }
        Ok(Topology { devices })
    }

    pub fn get(&self, name: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.name == name)
    }

    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Device> {
        self.devices.iter().filter(move |d| d.kind == kind)
    }

    pub fn children<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Device> + 'a {
        self.devices
            .iter()
            .filter(move |d| d.parent.as_deref() == Some(name))
    }

    /// The ports between the host and memory device `memdev`, host side
    /// first: its host bridge, each switch, and its endpoint (what memory
    /// traffic to it crosses; a fabric component each for mchannel_sched).
    pub fn path_to(&self, memdev: &str) -> Result<Vec<&Device>> {
        let Some(dev) = self.get(memdev).filter(|d| d.kind == Kind::Memdev) else {
            bail!("no CXL memory device {memdev:?}");
        };
        let mut path = vec![];
        let mut current = dev.parent.as_deref();
        while let Some(name) = current {
            let Some(d) = self.get(name) else {
                bail!("{memdev}: its ancestor {name} is not in the topology");
            };
            if matches!(d.kind, Kind::HostBridge | Kind::Switch | Kind::Endpoint) {
                path.push(d);
            }
            if path.len() > self.devices.len() {
                bail!("{memdev}: the topology has a cycle");
            }
            current = d.parent.as_deref();
        }
        if !path.iter().any(|d| d.kind == Kind::Endpoint) {
            bail!("{memdev} has no endpoint port (is cxl_port loaded?)");
        }
        path.reverse();
        Ok(path)
    }

    /// Whether `ancestor` is on the path from `name` to the root.
    pub fn is_below(&self, name: &str, ancestor: &str) -> bool {
        let mut current = self.get(name).and_then(|d| d.parent.clone());
        while let Some(p) = current {
            if p == ancestor {
                return true;
            }
            current = self.get(&p).and_then(|d| d.parent.clone());
        }
        false
    }

    /// An indented tree, one device per line, with a short summary.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let roots: Vec<&Device> = self.devices.iter().filter(|d| d.parent.is_none()).collect();
        for dev in roots {
            self.render_into(&mut out, dev, 0);
        }
        out
    }

    fn render_into(&self, out: &mut String, dev: &Device, depth: usize) {
        let label = format!("{}{}", "  ".repeat(depth), dev.name);
        out.push_str(&format!(
            "{label:<28} {:<12} {}\n",
            kind_label(dev.kind),
            summary(dev)
        ));
        let mut kids: Vec<&Device> = self.children(&dev.name).collect();
        // Ports and endpoints first, then decoders, then what hangs off them.
        kids.sort_by_key(|d| (d.kind, crate::sysfs::natural_key(&d.name)));
        for kid in kids {
            self.render_into(out, kid, depth + 1);
        }
    }
}

fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Root => "root",
        Kind::HostBridge => "host-bridge",
        Kind::Switch => "switch-port",
        Kind::Endpoint => "endpoint",
        Kind::Memdev => "memdev",
        Kind::Decoder => "decoder",
        Kind::Region => "region",
        Kind::DaxRegion => "dax-region",
        Kind::Dax => "dax",
        Kind::Other => "other",
    }
}

pub fn human_size(bytes: u64) -> String {
    const UNITS: &[(&str, u64)] = &[
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    for (unit, scale) in UNITS {
        if bytes >= *scale && bytes.is_multiple_of(*scale) {
            return format!("{}{unit}", bytes / scale);
        }
    }
    format!("{bytes}")
}

fn summary(dev: &Device) -> String {
    let size = |a: &str| {
        dev.attr_u64(a)
            .map(human_size)
            .unwrap_or_else(|| "-".into())
    };
    let opt = |a: &str| dev.attr(a).unwrap_or("-").to_string();
    match dev.kind {
        Kind::Memdev => format!(
            "ram {} pmem {} serial {}",
            size("ram/size"),
            size("pmem/size"),
            opt("serial")
        ),
        Kind::Endpoint => format!("memdev {}", opt("uport")),
        Kind::Root | Kind::HostBridge | Kind::Switch => {
            format!("decoders committed {}", opt("decoders_committed"))
        }
        Kind::Decoder => {
            let mut s = format!(
                "size {} ways {} gran {}",
                size("size"),
                opt("interleave_ways"),
                opt("interleave_granularity")
            );
            if let Some(mode) = dev.attr("mode") {
                s.push_str(&format!(" mode {mode} dpa {}", size("dpa_size")));
            }
            if let Some(targets) = dev.attr("target_list").filter(|t| !t.is_empty()) {
                s.push_str(&format!(" targets {targets}"));
            }
            if dev.attr("cap_ram") == Some("1") {
                s.push_str(" [ram window]");
            }
            if let Some(region) = dev.attr("region").filter(|r| !r.is_empty()) {
                s.push_str(&format!(" -> {region}"));
            }
            s
        }
        Kind::Region => format!(
            "size {} ways {} gran {} {} {}",
            size("size"),
            opt("interleave_ways"),
            opt("interleave_granularity"),
            opt("mode"),
            if dev.attr("commit") == Some("1") {
                "committed"
            } else {
                "not committed"
            }
        ),
        Kind::Dax => format!("size {} driver {}", size("size"), opt("driver")),
        _ => String::new(),
    }
}
