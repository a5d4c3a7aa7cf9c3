//! The configuration file (TOML or JSON) and its validation.
//!
//! Every field has a default; latencies default to the ESF paper's Table III
//! (requester 10 ns, cache access 12 ns, device controller 40 ns, PCIe port
//! 25 ns, bus 1 ns, switching 20 ns). Values the paper does not give (link
//! bandwidth, DRAM timing, queue sizes) have documented defaults of our own.
//!
//! Times are written in nanoseconds (floats are accepted) and converted once,
//! with range checks, into integer picoseconds for the event core.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Table III: requester process time.
pub const TABLE3_REQUESTER_NS: f64 = 10.0;
/// Table III: cache access time (requester cache and snoop filter lookup).
pub const TABLE3_CACHE_NS: f64 = 12.0;
/// Table III: device controller process time.
pub const TABLE3_CONTROLLER_NS: f64 = 40.0;
/// Table III: PCIe port delay.
pub const TABLE3_PORT_NS: f64 = 25.0;
/// Table III: bus time (per hop).
pub const TABLE3_BUS_NS: f64 = 1.0;
/// Table III: switching time.
pub const TABLE3_SWITCHING_NS: f64 = 20.0;

/// Largest time accepted anywhere in a configuration (1000 s); with times
/// in u64 picoseconds, sums of such values cannot overflow in any run that
/// finishes, and the core adds them with saturation besides.
pub const MAX_NS: f64 = 1e12;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Seed of every random stream of the run.
    pub seed: u64,
    pub topology: TopologyConfig,
    /// Parameters of every link (custom topologies can override per link).
    pub link: LinkConfig,
    pub switch: SwitchConfig,
    pub memory: MemoryConfig,
    /// Parameters of every requester (see `requester_override`).
    pub requester: RequesterConfig,
    /// Per-requester changes, by requester name (`r0`, `r1`, ... in the
    /// built-in topologies).
    pub requester_override: Vec<RequesterOverride>,
    /// A device-side inclusive snoop filter in front of every memory.
    pub snoop_filter: Option<SnoopFilterConfig>,
    pub run: RunConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 1,
            topology: TopologyConfig::FullyConnected { n: 4 },
            link: LinkConfig::default(),
            switch: SwitchConfig::default(),
            memory: MemoryConfig::default(),
            requester: RequesterConfig::default(),
            requester_override: Vec::new(),
            snoop_filter: None,
            run: RunConfig::default(),
        }
    }
}

/// How the fabric is built. The built-in families take `n` requesters and `n`
/// memories; see `topology.rs` for where each device is attached.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TopologyConfig {
    Chain {
        n: u32,
    },
    Tree {
        n: u32,
    },
    Ring {
        n: u32,
    },
    SpineLeaf {
        n: u32,
        /// Devices per leaf switch (requesters and memories sit on separate
        /// leaves).
        #[serde(default = "default_leaf_devices")]
        leaf_devices: u32,
        /// Spine switches; every leaf has one link to every spine.
        #[serde(default = "default_spines")]
        spines: u32,
    },
    FullyConnected {
        n: u32,
    },
    /// Explicit switches, requesters, memories and links.
    Custom {
        #[serde(default)]
        switches: Vec<String>,
        requesters: Vec<String>,
        memories: Vec<String>,
        links: Vec<LinkSpec>,
    },
    /// The switch topology `cxlctl --json topology` reports, read from `file`
    /// (relative to the configuration file) or given inline as `json`.
    Cxlctl {
        #[serde(default)]
        file: Option<String>,
        #[serde(default)]
        json: Option<serde_json::Value>,
        /// Requesters (hosts) attached to every root.
        #[serde(default = "default_one")]
        requesters_per_root: u32,
    },
}

fn default_leaf_devices() -> u32 {
    4
}
fn default_spines() -> u32 {
    2
}
fn default_one() -> u32 {
    1
}

/// One link of a custom topology, with optional per-link parameters.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    #[serde(default)]
    pub bandwidth_gbps: Option<f64>,
    #[serde(default)]
    pub unlimited: Option<bool>,
    #[serde(default)]
    pub duplex: Option<Duplex>,
    #[serde(default)]
    pub header_ratio: Option<f64>,
    #[serde(default)]
    pub turnaround_ns: Option<f64>,
    #[serde(default)]
    pub bus_ns: Option<f64>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Duplex {
    Full,
    Half,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// Bandwidth of each direction in GB/s (10^9 bytes/s). Default 64, about
    /// a PCIe 5.0 x16 link (not in Table III).
    pub bandwidth_gbps: f64,
    /// Infinite bandwidth (transfers take no time; the bus time still applies).
    pub unlimited: bool,
    /// Full duplex: each direction has the whole bandwidth. Half duplex: one
    /// direction at a time, with `turnaround_ns` to change direction.
    pub duplex: Duplex,
    /// Time to reverse a half-duplex link (not in Table III; default 1 ns).
    pub turnaround_ns: f64,
    /// Half duplex: packets sent in one direction before the link turns if
    /// the other direction is waiting.
    pub half_duplex_burst: u32,
    /// Size of a message without data as a fraction of the payload (a line).
    /// Data messages occupy one payload. Default 0.25 (our choice).
    pub header_ratio: f64,
    /// Table III bus time: propagation per hop, added after serialisation.
    pub bus_ns: f64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            bandwidth_gbps: 64.0,
            unlimited: false,
            duplex: Duplex::Full,
            turnaround_ns: 1.0,
            half_duplex_burst: 16,
            header_ratio: 0.25,
            bus_ns: TABLE3_BUS_NS,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Routing {
    /// A fixed shortest path per (source, destination) pair.
    Oblivious,
    /// At each switch, the shortest-path next hop whose output queue is
    /// shortest.
    Adaptive,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SwitchConfig {
    /// Table III PCIe port delay, paid on entering any device's port
    /// (switch, requester or memory).
    pub port_delay_ns: f64,
    /// Table III switching time, paid inside every switch.
    pub switching_ns: f64,
    pub routing: Routing,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            port_delay_ns: TABLE3_PORT_NS,
            switching_ns: TABLE3_SWITCHING_NS,
            routing: Routing::Oblivious,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Table III device controller process time (pipelined).
    pub controller_ns: f64,
    /// DRAM banks (each serves one access at a time, first come first served).
    /// Default 64 (four DIMMs of 16 banks; not in Table III).
    pub banks: u32,
    /// Row (page) size of a bank in bytes.
    pub row_bytes: u64,
    /// Access to the open row (about tCL + burst of DDR5-4800).
    pub row_hit_ns: f64,
    /// Access to another row (about tRP + tRCD + tCL of DDR5-4800).
    pub row_miss_ns: f64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            controller_ns: TABLE3_CONTROLLER_NS,
            banks: 64,
            row_bytes: 8192,
            row_hit_ns: 18.0,
            row_miss_ns: 50.0,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Traffic {
    /// Uniformly random lines of the footprint (optionally hot/cold skewed).
    Random,
    /// Consecutive lines, wrapping at the footprint.
    Stream,
    /// Replay of `trace_file`.
    Trace,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RwPattern {
    /// Each request is a read with probability `read_ratio`.
    Random,
    /// Reads and writes evenly spread in the exact proportion.
    Interleaved,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RequesterConfig {
    /// Requests in flight at most (the request queue capacity).
    pub queue_capacity: u32,
    /// Minimum time between two issued requests.
    pub issue_interval_ns: f64,
    /// Table III requester process time, before a request leaves.
    pub process_ns: f64,
    /// Requests each requester issues.
    pub requests: u64,
    /// Fraction of reads.
    pub read_ratio: f64,
    pub rw_pattern: RwPattern,
    pub traffic: Traffic,
    /// Trace file (traffic = "trace"): one request per line, `R addr` or
    /// `W addr`, the address decimal or 0x-hex; `#` starts a comment. The
    /// trace is replayed once, at most `requests` of its entries, as fast as
    /// the queue capacity and issue interval allow.
    pub trace_file: Option<String>,
    /// Bytes of address space the requester touches.
    pub footprint_bytes: u64,
    /// Cache line (payload) size.
    pub line_bytes: u32,
    /// Address interleave granularity across the target memories.
    pub interleave_granularity: u64,
    /// Memories the requester interleaves over (by name); default all.
    pub targets: Option<Vec<String>>,
    /// Hot/cold skew (random traffic): this fraction of the footprint...
    pub hot_fraction: f64,
    /// ...receives this fraction of the accesses.
    pub hot_probability: f64,
    /// Local cache size in lines (0: no cache). With a cache, misses become
    /// coherent reads a snoop filter tracks.
    pub cache_lines: u64,
    /// Table III cache access time.
    pub cache_access_ns: f64,
    /// Run window: the requester may issue only during `run_ns` out of every
    /// `window_ns` (both unset: always).
    pub run_ns: Option<f64>,
    pub window_ns: Option<f64>,
}

impl Default for RequesterConfig {
    fn default() -> Self {
        RequesterConfig {
            queue_capacity: 256,
            issue_interval_ns: 0.0,
            process_ns: TABLE3_REQUESTER_NS,
            requests: 10_000,
            read_ratio: 1.0,
            rw_pattern: RwPattern::Random,
            traffic: Traffic::Random,
            trace_file: None,
            footprint_bytes: 1 << 30,
            line_bytes: 64,
            interleave_granularity: 256,
            targets: None,
            hot_fraction: 0.0,
            hot_probability: 0.9,
            cache_lines: 0,
            cache_access_ns: TABLE3_CACHE_NS,
            run_ns: None,
            window_ns: None,
        }
    }
}

/// Changes to one requester's parameters (unset fields keep the defaults of
/// `[requester]`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RequesterOverride {
    pub name: String,
    #[serde(default)]
    pub queue_capacity: Option<u32>,
    #[serde(default)]
    pub issue_interval_ns: Option<f64>,
    #[serde(default)]
    pub requests: Option<u64>,
    #[serde(default)]
    pub read_ratio: Option<f64>,
    #[serde(default)]
    pub traffic: Option<Traffic>,
    #[serde(default)]
    pub trace_file: Option<String>,
    #[serde(default)]
    pub targets: Option<Vec<String>>,
    #[serde(default)]
    pub footprint_bytes: Option<u64>,
    #[serde(default)]
    pub hot_fraction: Option<f64>,
    #[serde(default)]
    pub cache_lines: Option<u64>,
    #[serde(default)]
    pub run_ns: Option<f64>,
    #[serde(default)]
    pub window_ns: Option<f64>,
}

impl RequesterConfig {
    /// This configuration with `o` applied.
    pub fn with(&self, o: &RequesterOverride) -> RequesterConfig {
        let mut c = self.clone();
        if let Some(v) = o.queue_capacity {
            c.queue_capacity = v;
        }
        if let Some(v) = o.issue_interval_ns {
            c.issue_interval_ns = v;
        }
        if let Some(v) = o.requests {
            c.requests = v;
        }
        if let Some(v) = o.read_ratio {
            c.read_ratio = v;
        }
        if let Some(v) = o.traffic {
            c.traffic = v;
        }
        if let Some(v) = &o.trace_file {
            c.trace_file = Some(v.clone());
        }
        if let Some(v) = &o.targets {
            c.targets = Some(v.clone());
        }
        if let Some(v) = o.footprint_bytes {
            c.footprint_bytes = v;
        }
        if let Some(v) = o.hot_fraction {
            c.hot_fraction = v;
        }
        if let Some(v) = o.cache_lines {
            c.cache_lines = v;
        }
        if o.run_ns.is_some() {
            c.run_ns = o.run_ns;
        }
        if o.window_ns.is_some() {
            c.window_ns = o.window_ns;
        }
        c
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    /// First in, first out (oldest insertion).
    Fifo,
    /// Least recently used (insertion or snoop-filter hit).
    Lru,
    /// Last in, first out (newest insertion).
    Lifo,
    /// Most recently used.
    Mru,
    /// Least frequently inserted (global insertion counter per line).
    Lfi,
}

impl VictimPolicy {
    pub const ALL: [VictimPolicy; 5] = [
        VictimPolicy::Fifo,
        VictimPolicy::Lru,
        VictimPolicy::Lifo,
        VictimPolicy::Mru,
        VictimPolicy::Lfi,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VictimPolicy::Fifo => "FIFO",
            VictimPolicy::Lru => "LRU",
            VictimPolicy::Lifo => "LIFO",
            VictimPolicy::Mru => "MRU",
            VictimPolicy::Lfi => "LFI",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SnoopFilterConfig {
    /// Entries (lines tracked) of each memory's snoop filter.
    pub entries: u64,
    pub policy: VictimPolicy,
    /// Longest InvBlk: a BISnp may clear up to this many contiguous lines
    /// (1 = plain BISnp; CXL allows 2 to 4).
    pub invblk_max: u32,
    /// Lookup time (Table III cache access time).
    pub lookup_ns: f64,
}

impl Default for SnoopFilterConfig {
    fn default() -> Self {
        SnoopFilterConfig {
            entries: 4096,
            policy: VictimPolicy::Fifo,
            invblk_max: 1,
            lookup_ns: TABLE3_CACHE_NS,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// The measurement window is one time interval for all requesters: it
    /// opens when every requester has completed this fraction of its own
    /// requests...
    pub warmup_fraction: f64,
    /// ...and closes when the first one has completed all but this fraction
    /// of its requests or has issued its last one (steady state only).
    pub cooldown_fraction: f64,
    /// Instead of the fractions: open the window at this time...
    pub warmup_ns: Option<f64>,
    /// ...close it this much later and stop the run (both or neither).
    pub measure_ns: Option<f64>,
    /// Stop at this simulated time even if requests remain.
    pub max_time_ns: Option<f64>,
    /// Print progress to stderr about once a second.
    pub progress: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            warmup_fraction: 0.1,
            cooldown_fraction: 0.1,
            warmup_ns: None,
            measure_ns: None,
            max_time_ns: None,
            progress: false,
        }
    }
}

impl Config {
    /// Parses TOML, or JSON when the text starts with `{`.
    pub fn parse(text: &str) -> Result<Config> {
        if text.trim_start().starts_with('{') {
            serde_json::from_str(text).context("parsing the JSON configuration")
        } else {
            toml::from_str(text).context("parsing the TOML configuration")
        }
    }

    /// Reads a configuration file; relative paths inside it (trace files,
    /// cxlctl topology files) are resolved against its directory.
    pub fn load(path: &Path) -> Result<(Config, std::path::PathBuf)> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let cfg = Config::parse(&text).with_context(|| format!("in {}", path.display()))?;
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| std::path::PathBuf::from("."));
        Ok((cfg, dir))
    }
}

/// Nanoseconds (from a configuration) to picoseconds, rejecting negative,
/// non-finite or absurdly large values.
pub fn ns_to_ps(what: &str, ns: f64) -> Result<u64> {
    if !ns.is_finite() || ns < 0.0 {
        bail!("{what} = {ns}: must be a finite number of nanoseconds >= 0");
    }
    if ns > MAX_NS {
        bail!("{what} = {ns} ns: larger than the maximum {MAX_NS} ns");
    }
    Ok((ns * 1000.0).round() as u64)
}

/// A fraction in [0, 1].
pub fn check_fraction(what: &str, v: f64) -> Result<f64> {
    if !v.is_finite() || !(0.0..=1.0).contains(&v) {
        bail!("{what} = {v}: must be between 0 and 1");
    }
    Ok(v)
}

/// A fraction to parts per million (integer probabilities for the core).
pub fn fraction_ppm(v: f64) -> u32 {
    (v * 1e6).round().clamp(0.0, 1e6) as u32
}
