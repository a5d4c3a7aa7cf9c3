//! `cxlnic-model`: serves CXL-NIC ports to QEMU guests (`serve`) and
//! talks to a running model (`ctl`).

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use cxlnic_model::model::{self, Command, Model, PortOptions};
use cxlnic_model::port::{Inject, PortSpec};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Parser)]
#[command(about = "The CXL-NIC device model: ivshmem-doorbell ports on coherent rings")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve ports until SIGTERM or SIGINT.
    Serve {
        /// A port: `socket=PATH[,ram=PATH][,link=N|,tap=NAME][,mac=XX:..][,bar-mib=N][,queues=N]`
        /// (`link`: the port its frames go to; `tap`: instead, the host
        /// TAP interface NAME they go to and come from, created or
        /// attached to, which needs CAP_NET_ADMIN; `ram`: the file
        /// backing the guest's RAM, for type1 and pcie).
        #[arg(long = "port", required = true)]
        ports: Vec<String>,
        /// A control socket for `ctl`.
        #[arg(long)]
        control: Option<PathBuf>,
        /// Written once every socket listens (what a starter waits for).
        #[arg(long)]
        ready_file: Option<PathBuf>,
    },
    /// Send a command to a running model.
    Ctl {
        #[arg(long)]
        control: PathBuf,
        #[command(subcommand)]
        what: Ctl,
    },
}

#[derive(Subcommand)]
enum Ctl {
    /// Make a port commit a fault once.
    Inject {
        #[arg(long)]
        port: usize,
        #[arg(long, value_parser = parse_fault)]
        fault: Inject,
    },
    /// Stop serving, as a crashed device.
    Stop,
    /// Start again from reset.
    Start,
    /// Every port's counters, as JSON.
    Stats,
}

fn parse_fault(s: &str) -> Result<Inject, String> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| {
        format!(
            "{s}: completion-length, completion-tag, tx-head, rx-head, tx-head-forged, \
                 rx-head-forged or hang"
        )
    })
}

fn parse_mac(s: &str) -> Result<[u8; 6]> {
    let parts: Vec<u8> = s
        .split(':')
        .map(|p| u8::from_str_radix(p, 16))
        .collect::<Result<_, _>>()
        .with_context(|| format!("MAC {s}"))?;
    parts
        .try_into()
        .map_err(|_| anyhow::anyhow!("MAC {s}: six bytes"))
}

fn parse_port(i: usize, s: &str) -> Result<PortOptions> {
    let mut p = PortOptions {
        socket: PathBuf::new(),
        bar_bytes: 16 << 20,
        ram: None,
        spec: PortSpec {
            mac: [0x52, 0x54, 0x00, 0xc1, 0x00, i as u8 + 1],
            queues_max: cxlnic_ring::device::QUEUES_MAX,
            speed_mbps: 100_000,
        },
        link: None,
        tap: None,
    };
    for kv in s.split(',') {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("{kv}: key=value"))?;
        match k {
            "socket" => p.socket = v.into(),
            "ram" => p.ram = Some(v.into()),
            "link" => p.link = Some(v.parse().context("link")?),
            "tap" => {
                cxlnic_model::tap::check_name(v).with_context(|| format!("port {i}"))?;
                p.tap = Some(v.into());
            }
            "mac" => p.spec.mac = parse_mac(v)?,
            "bar-mib" => p.bar_bytes = v.parse::<usize>().context("bar-mib")? << 20,
            "queues" => p.spec.queues_max = v.parse().context("queues")?,
            _ => bail!("unknown port key {k}"),
        }
    }
    if p.socket.as_os_str().is_empty() {
        bail!("port {i}: socket= is required");
    }
    if p.link.is_some() && p.tap.is_some() {
        bail!("port {i}: link= and tap= exclude each other (a port's frames go to one place)");
    }
    Ok(p)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: nix::libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn serve(ports: &[String], control: Option<PathBuf>, ready: Option<PathBuf>) -> Result<()> {
    let opts = ports
        .iter()
        .enumerate()
        .map(|(i, s)| parse_port(i, s))
        .collect::<Result<Vec<_>>>()?;
    for (i, p) in opts.iter().enumerate() {
        if let Some(l) = p.link {
            anyhow::ensure!(
                l < opts.len(),
                "port {i} links to port {l}, which is not given"
            );
        }
    }
    let mut m = Model::new(&opts, control.as_deref())?;
    let action = nix::sys::signal::SigAction::new(
        nix::sys::signal::SigHandler::Handler(on_signal),
        nix::sys::signal::SaFlags::empty(),
        nix::sys::signal::SigSet::empty(),
    );
    for sig in [nix::sys::signal::SIGTERM, nix::sys::signal::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe { nix::sys::signal::sigaction(sig, &action) }.context("sigaction")?;
    }
    if let Some(r) = ready {
        std::fs::write(&r, "ready\n").with_context(|| format!("{}", r.display()))?;
    }
    eprintln!("cxlnic-model: serving {} port(s)", opts.len());
    m.run(|| STOP.load(Ordering::SeqCst))?;
    eprintln!("cxlnic-model: stopped");
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Serve {
            ports,
            control,
            ready_file,
        } => serve(&ports, control, ready_file),
        Cmd::Ctl { control, what } => {
            let cmd = match what {
                Ctl::Inject { port, fault } => Command::Inject { port, fault },
                Ctl::Stop => Command::Stop,
                Ctl::Start => Command::Start,
                Ctl::Stats => Command::Stats,
            };
            let answer = model::send_command(&control, &cmd)?;
            println!("{}", serde_json::to_string_pretty(&answer)?);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_takes_a_tap_or_a_link_not_both() {
        let p = parse_port(0, "socket=/s,tap=cxl0").unwrap();
        assert_eq!((p.tap.as_deref(), p.link), (Some("cxl0"), None));
        let p = parse_port(0, "socket=/s,link=1").unwrap();
        assert_eq!((p.tap, p.link), (None, Some(1)));
        for both in ["socket=/s,link=1,tap=cxl0", "socket=/s,tap=cxl0,link=0"] {
            let e = parse_port(2, both).unwrap_err().to_string();
            assert!(e.contains("port 2: link= and tap= exclude"), "{both}: {e}");
        }
    }

    #[test]
    fn a_tap_name_the_kernel_would_refuse_is_refused() {
        for bad in ["tap=", "tap=a234567890123456", "tap=a/b"] {
            let e = parse_port(0, &format!("socket=/s,{bad}")).unwrap_err();
            assert!(format!("{e:#}").contains("TAP name"), "{bad}: {e:#}");
        }
    }
}
