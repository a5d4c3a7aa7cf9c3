//! `mchannel`: configure mchannel_sched from the shell.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use mchannel::{
    channel_spec, cxl_components, kind_of, perf_event, sys_channels, sys_components, ChannelStat,
    Mchannel, Meter, SysEntry, DEFAULT_DEVICE,
};
use serde::Serialize;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(about = "MemChannel run windows: components, channels, attached threads")]
struct Cli {
    /// The control device.
    #[arg(long, default_value = DEFAULT_DEVICE, global = true)]
    dev: PathBuf,
    /// Print results as JSON.
    #[arg(long, global = true)]
    json: bool,
    /// The module's sysfs directory.
    #[arg(long, default_value = uapi::mchannel::SYSFS_ROOT, global = true)]
    sysfs: PathBuf,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(clap::Args)]
struct ChannelOpts {
    /// Weight among the channels sharing a component (1..=10000).
    #[arg(long, default_value_t = 1)]
    weight: u32,
    /// Component ids on the channel's memory path, comma-separated.
    #[arg(long, value_delimiter = ',')]
    path: Vec<u32>,
    /// The path to a CXL memory device instead (mem0): its host bridge,
    /// switches and endpoint, each a component named after its port
    /// (registered with --capacity if it is not yet).
    #[arg(long, conflicts_with = "path")]
    cxl: Option<String>,
    /// Capacity, bytes per second, of components --cxl registers.
    #[arg(long)]
    capacity: Option<u64>,
    /// The system's sysfs (where --cxl reads the CXL topology).
    #[arg(long, default_value = "/sys")]
    sys_root: PathBuf,
    /// Run window T_W in microseconds (0: the kernel's default, 100).
    #[arg(long, default_value_t = 0)]
    t_w_us: u64,
    /// Emulated meter: bytes the channel moves per microsecond of running
    /// (0: not metered, unless --perf or --reported).
    #[arg(long, default_value_t = 0)]
    meter: u64,
    /// Perf meter: a per-thread event (llc-misses, the default;
    /// task-clock, raw:0xCONFIG or TYPE:CONFIG).
    #[arg(long, conflicts_with_all = ["meter", "reported"], num_args = 0..=1, default_missing_value = "llc-misses")]
    perf: Option<String>,
    /// Bytes one perf event stands for.
    #[arg(long, default_value_t = 64, requires = "perf")]
    bytes_per_event: u64,
    /// Reported meter: the threads report the bytes they move.
    #[arg(long, conflicts_with = "meter")]
    reported: bool,
    /// Best effort: what the weighted channels leave.
    #[arg(long)]
    best_effort: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Register a fabric component.
    Component {
        #[arg(long)]
        name: String,
        /// host-port, switch or endpoint.
        #[arg(long)]
        kind: String,
        /// Configured maximum capacity, bytes per second.
        #[arg(long)]
        capacity: u64,
    },
    /// Create a channel, or with --group a group (tenant, application)
    /// that channels and groups name as --parent.
    Create {
        #[arg(long)]
        name: String,
        #[command(flatten)]
        opts: ChannelOpts,
        /// A group: threads attach only to channels.
        #[arg(long)]
        group: bool,
        /// The parent group's id (its path is the child's).
        #[arg(long)]
        parent: Option<u32>,
    },
    /// Change a channel's weight, T_W and meter.
    Set {
        id: u32,
        #[command(flatten)]
        opts: ChannelOpts,
    },
    /// Destroy a channel with no threads.
    Destroy { id: u32 },
    /// Attach a thread (or with --process, a process and its future
    /// threads) to a channel.
    Attach {
        #[arg(long)]
        channel: u32,
        #[arg(long)]
        pid: i32,
        #[arg(long)]
        process: bool,
    },
    /// Detach a thread or process.
    Detach {
        #[arg(long)]
        pid: i32,
        #[arg(long)]
        process: bool,
    },
    /// Set a component's congestion signal: fixed, in parts per million,
    /// or from the model of a device that delivers --model-capacity bytes
    /// per second.
    Inject {
        #[arg(long)]
        component: u32,
        #[arg(long, required_unless_present = "model_capacity")]
        ppm: Option<u32>,
        #[arg(long, conflicts_with = "ppm")]
        model_capacity: Option<u64>,
    },
    /// A channel's statistics.
    Stat { id: u32 },
    /// Every component and channel, as sysfs shows them.
    List,
    /// A live view of components and channels, refreshed every interval
    /// (each channel's run and throttled time as CPUs over the interval).
    Top {
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// Stop after this many refreshes (0: never).
        #[arg(long, default_value_t = 0)]
        count: u64,
    },
    /// Run a command attached to a channel (the process and every thread it
    /// creates), like numactl.
    ///
    /// With --channel it attaches to that channel and execs. Otherwise it
    /// creates a channel from the options (named --name, or run-PID),
    /// runs the command attached to it, and destroys it when the command
    /// ends, exiting with the command's status.
    Run {
        #[arg(long, conflicts_with_all = ["name", "weight", "path", "cxl", "capacity", "t_w_us", "meter", "perf", "bytes_per_event", "reported", "best_effort"])]
        channel: Option<u32>,
        /// The channel to create for the command.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        opts: ChannelOpts,
        #[arg(trailing_var_arg = true, required = true)]
        command: Vec<String>,
    },
}

#[derive(Serialize)]
struct Stat {
    id: u32,
    threads: u32,
    rate: u64,
    demand: u64,
    alpha: u64,
    t_r_ns: u64,
    t_w_ns: u64,
    windows: u64,
    throttled_ns: u64,
    run_ns: u64,
    granted_ns: u64,
    max_overrun_ns: u64,
}

impl From<ChannelStat> for Stat {
    fn from(s: ChannelStat) -> Stat {
        Stat {
            id: s.id,
            threads: s.threads,
            rate: s.rate,
            demand: s.demand,
            alpha: s.alpha,
            t_r_ns: s.t_r_ns,
            t_w_ns: s.t_w_ns,
            windows: s.windows,
            throttled_ns: s.throttled_ns,
            run_ns: s.run_ns,
            granted_ns: s.granted_ns,
            max_overrun_ns: s.max_overrun_ns,
        }
    }
}

fn spec(name: &str, o: &ChannelOpts) -> Result<mchannel::ChannelSpec> {
    let t_w_ns = o.t_w_us.checked_mul(1000).context("T_W too large")?;
    let mut spec = channel_spec(name, o.weight, &o.path, t_w_ns, o.meter, o.best_effort)?;
    if let Some(event) = &o.perf {
        let Some((type_, config)) = perf_event(event) else {
            bail!(
                "perf event is llc-misses, task-clock, raw:0xCONFIG or TYPE:CONFIG, not {event:?}"
            );
        };
        Meter::Perf {
            type_,
            config,
            bytes_per_event: o.bytes_per_event,
        }
        .apply(&mut spec);
    } else if o.reported {
        Meter::Reported.apply(&mut spec);
    }
    Ok(spec)
}

/// A new channel's spec, its path from `--cxl` if given (registering
/// the components it lacks).
fn new_spec(
    m: &Mchannel,
    sysfs: &Path,
    name: &str,
    o: &ChannelOpts,
) -> Result<mchannel::ChannelSpec> {
    let mut s = spec(name, o)?;
    if let Some(memdev) = &o.cxl {
        let path = cxl_path(m, sysfs, o, memdev)?;
        s.path[..path.len()].copy_from_slice(&path);
        s.path_len = path.len() as u32;
    }
    Ok(s)
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let dev = || Mchannel::open(&cli.dev).with_context(|| format!("open {}", cli.dev.display()));
    match &cli.command {
        Cmd::Component {
            name,
            kind,
            capacity,
        } => {
            let Some(kind) = kind_of(kind) else {
                bail!("kind is host-port, switch or endpoint, not {kind:?}");
            };
            let id = dev()?
                .register_component(name, kind, *capacity)
                .context("REGISTER_COMPONENT")?;
            print_id(cli.json, id);
        }
        Cmd::Create {
            name,
            opts,
            group,
            parent,
        } => {
            let mut spec = new_spec(&dev()?, &cli.sysfs, name, opts)?;
            if *group {
                spec.flags |= uapi::mchannel::CHANNEL_GROUP;
            }
            spec.parent = parent.unwrap_or(uapi::mchannel::NO_PARENT);
            let s = dev()?.create_channel(&spec).context("CREATE_CHANNEL")?;
            print_id(cli.json, s.id);
        }
        Cmd::Set { id, opts } => {
            if opts.cxl.is_some() || !opts.path.is_empty() {
                bail!("a channel's path is fixed when it is created");
            }
            let mut s = spec("x", opts)?;
            s.id = *id;
            dev()?.set_channel(&s).context("SET_CHANNEL")?;
        }
        Cmd::Destroy { id } => dev()?.destroy_channel(*id).context("DESTROY_CHANNEL")?,
        Cmd::Attach {
            channel,
            pid,
            process,
        } => dev()?.attach(*channel, *pid, *process).context("ATTACH")?,
        Cmd::Detach { pid, process } => dev()?.detach(*pid, *process).context("DETACH")?,
        Cmd::Inject {
            component,
            ppm,
            model_capacity,
        } => match (ppm, model_capacity) {
            (_, Some(c)) => dev()?.inject_model(*component, *c).context("INJECT")?,
            (Some(p), None) => dev()?.inject(*component, *p).context("INJECT")?,
            (None, None) => bail!("--ppm or --model-capacity"),
        },
        Cmd::Stat { id } => {
            let s = Stat::from(dev()?.query(*id).context("QUERY_CHANNEL")?);
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                println!(
                    "channel {}: {} threads, rate {} B/s, demand {} B/s, alpha {} B/s, T_R {} of {} ns, {} windows, ran {} of {} ms granted, throttled {} ms, overrun up to {} us",

                    s.id,
                    s.threads,
                    s.rate,
                    s.demand,
                    s.alpha,
                    s.t_r_ns,
                    s.t_w_ns,
                    s.windows,
                    s.run_ns / 1_000_000,
                    s.granted_ns / 1_000_000,
                    s.throttled_ns / 1_000_000,
                    s.max_overrun_ns / 1_000
                );
            }
        }
        Cmd::List => {
            let (components, channels) = sys_state(&cli.sysfs)?;
            if cli.json {
                let v = serde_json::json!({"components": components, "channels": channels});
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", components_table(&components));
                print!("{}", channels_table(&channels, None, 0.0));
            }
        }
        Cmd::Top { interval_ms, count } => top(&cli.sysfs, cli.json, *interval_ms, *count)?,
        Cmd::Run {
            channel: Some(channel),
            command,
            ..
        } => {
            dev()?.attach(*channel, 0, true).context("ATTACH")?;
            let err = std::process::Command::new(&command[0])
                .args(&command[1..])
                .exec();
            bail!("exec {}: {err}", command[0]);
        }
        Cmd::Run {
            channel: None,
            name,
            opts,
            command,
        } => {
            let m = dev()?;
            let name = name
                .clone()
                .unwrap_or_else(|| format!("run-{}", std::process::id()));
            let s = new_spec(&m, &cli.sysfs, &name, opts)?;
            let id = m.create_channel(&s).context("CREATE_CHANNEL")?.id;
            let code = run_in(&m, id, command);
            // Its threads left the channel as they exited; one that
            // outlives it (a daemon) keeps the channel.
            if let Err(e) = m.destroy_channel(id) {
                eprintln!("mchannel: channel {name} ({id}) not destroyed: {e}");
            }
            std::process::exit(code?);
        }
    }
    Ok(())
}

/// Runs `command` attached to channel `id` (attached between fork and
/// exec, so nothing it does runs unattached); returns its exit code (128
/// plus the signal that killed it).
fn run_in(m: &Mchannel, id: u32, command: &[String]) -> Result<i32> {
    use nix::sys::signal::{signal, SigHandler, SIGINT, SIGQUIT};
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    let m2 = m.try_clone()?;
    // SAFETY: the closure makes one ioctl on an open descriptor and resets
    // two signal dispositions (no allocation, no lock): what is allowed
    // between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for sig in [SIGINT, SIGQUIT] {
                signal(sig, SigHandler::SigDfl)?;
            }
            m2.attach(id, 0, true)
        })
    };
    // Like system(3): a ^C is for the command; this waits to clean up
    // (ignored before the fork, so no ^C falls between the two; the
    // command gets the defaults back).
    for sig in [SIGINT, SIGQUIT] {
        // SAFETY: ignoring a signal installs no handler: nothing runs in
        // a signal context.
        unsafe { signal(sig, SigHandler::SigIgn) }?;
    }
    let mut child = cmd.spawn().with_context(|| format!("run {}", command[0]))?;
    let status = child.wait()?;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// The component ids on the way to `memdev`, registering those not yet
/// known (by name: a component named after each CXL port).
fn cxl_path(m: &Mchannel, sysfs: &Path, o: &ChannelOpts, memdev: &str) -> Result<Vec<u32>> {
    let sys = cxlctl::sysfs::Sysfs::new(&o.sys_root);
    let topo = cxlctl::topology::Topology::read(&sys)?;
    let known = sys_components(sysfs).with_context(|| not_loaded(sysfs))?;
    let mut ids = vec![];
    for (name, kind) in cxl_components(&topo, memdev)? {
        let id = match known.iter().find(|c| c.name == name) {
            Some(c) => c.get("id") as u32,
            None => {
                let Some(capacity) = o.capacity else {
                    bail!("component {name} is not registered: give --capacity");
                };
                m.register_component(&name, kind, capacity)
                    .with_context(|| format!("REGISTER_COMPONENT {name}"))?
            }
        };
        ids.push(id);
    }
    Ok(ids)
}

const MB: f64 = 1e6;

fn kind_name(kind: u64) -> &'static str {
    match u32::try_from(kind) {
        Ok(uapi::mchannel::COMPONENT_HOST_PORT) => "host-port",
        Ok(uapi::mchannel::COMPONENT_SWITCH) => "switch",
        Ok(uapi::mchannel::COMPONENT_ENDPOINT) => "endpoint",
        _ => "?",
    }
}

fn components_table(cs: &[SysEntry]) -> String {
    let mut out = format!(
        "{:<4} {:<20} {:<9} {:>10} {:>10} {:>8} {:>10}\n",
        "id", "component", "kind", "C MB/s", "F MB/s", "load", "alpha MB/s"
    );
    for c in cs {
        out += &format!(
            "{:<4} {:<20} {:<9} {:>10.1} {:>10.1} {:>8.3} {:>10.1}\n",
            c.get("id"),
            c.name,
            kind_name(c.get("kind")),
            c.get("capacity") as f64 / MB,
            c.get("rate") as f64 / MB,
            c.get("load_ppm") as f64 / 1e6,
            c.get("alpha") as f64 / MB,
        );
    }
    out
}

/// With `prev` (the same channels `dt` seconds earlier), the time run and
/// throttled over the interval, in CPUs.
fn channels_table(chs: &[SysEntry], prev: Option<&[SysEntry]>, dt: f64) -> String {
    let mut out = format!(
        "{:<4} {:<20} {:>6} {:>7} {:>10} {:>10} {:>10} {:>7} {:>6} {:>9}\n",
        "id",
        "channel",
        "weight",
        "threads",
        "rate MB/s",
        "demand",
        "alpha",
        "T_R/T_W",
        "run",
        "throttled"
    );
    for c in chs {
        let delta = |attr: &str| {
            let before = prev
                .and_then(|p| p.iter().find(|e| e.name == c.name))
                .map(|e| e.get(attr));
            match before {
                Some(b) if dt > 0.0 => {
                    format!("{:.2}", c.get(attr).saturating_sub(b) as f64 / 1e9 / dt)
                }
                _ => "-".to_string(),
            }
        };
        out += &format!(
            "{:<4} {:<20} {:>6} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>7.3} {:>6} {:>9}\n",
            c.get("id"),
            c.name,
            c.get("weight"),
            c.get("threads"),
            c.get("rate") as f64 / MB,
            c.get("demand") as f64 / MB,
            c.get("alpha") as f64 / MB,
            c.get("t_r_ns") as f64 / c.get("t_w_ns").max(1) as f64,
            delta("run_ns"),
            delta("throttled_ns"),
        );
    }
    out
}

/// What a missing or unreadable sysfs directory most likely means.
fn not_loaded(root: &Path) -> String {
    if root.exists() {
        format!("reading {}", root.display())
    } else {
        format!(
            "{} does not exist: is mchannel_sched loaded? (insmod mchannel_sched.ko)",
            root.display()
        )
    }
}

/// Every component and channel under `root`, as sysfs shows them.
fn sys_state(root: &Path) -> Result<(Vec<SysEntry>, Vec<SysEntry>)> {
    let components = sys_components(root).with_context(|| not_loaded(root))?;
    let channels = sys_channels(root).with_context(|| not_loaded(root))?;
    Ok((components, channels))
}

fn top(root: &std::path::Path, json: bool, interval_ms: u64, count: u64) -> Result<()> {
    let interval = std::time::Duration::from_millis(interval_ms.max(10));
    let mut prev: Option<(std::time::Instant, Vec<SysEntry>)> = None;
    let mut n = 0u64;
    loop {
        let now = std::time::Instant::now();
        let (components, channels) = sys_state(root)?;
        if json {
            let v = serde_json::json!({"components": components, "channels": channels});
            println!("{}", serde_json::to_string(&v)?);
        } else {
            let dt = prev.as_ref().map_or(0.0, |(t, _)| (now - *t).as_secs_f64());
            // Clear the screen and go home, as top does.
            print!("\x1b[2J\x1b[H");
            print!("{}", components_table(&components));
            println!();
            print!(
                "{}",
                channels_table(&channels, prev.as_ref().map(|(_, p)| p.as_slice()), dt)
            );
        }
        n += 1;
        if count != 0 && n >= count {
            return Ok(());
        }
        prev = Some((now, channels));
        std::thread::sleep(interval);
    }
}

fn print_id(json: bool, id: u32) {
    if json {
        println!("{{\"id\": {id}}}");
    } else {
        println!("{id}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_module_is_named_with_its_path() {
        let root = Path::new("/nonexistent/mchannel");
        let err = format!("{:#}", sys_state(root).unwrap_err());
        assert!(err.contains("/nonexistent/mchannel"), "{err}");
        assert!(err.contains("is mchannel_sched loaded?"), "{err}");
    }
}
