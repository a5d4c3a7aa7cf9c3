//! `cxlnic`: the key-value offload of cxlnic_drv's interfaces from the
//! shell (`/dev/cxlnic`).

use anyhow::{anyhow, Result};
use clap::{Parser, Subcommand};
use cxlnic::{describe, describe_open, explain_open, Cxlnic, Enable, Stats, DEFAULT_DEVICE};
use serde_json::json;
use std::io;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(about = "CXL-NIC key-value offload: enable, put, get, del, stats")]
struct Cli {
    /// The control device.
    #[arg(long, default_value = DEFAULT_DEVICE, global = true)]
    dev: PathBuf,
    /// Print results (and errors) as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Top,
}

#[derive(Subcommand)]
enum Top {
    /// The key-value offload (issue #29).
    #[command(subcommand)]
    Kvs(Kvs),
}

#[derive(Subcommand)]
enum Kvs {
    /// Serve GET/PUT requests from the device (the port in type2 mode).
    Enable {
        iface: String,
        /// UDP port (default: the module's kvs_port, 7878).
        #[arg(long)]
        port: Option<u16>,
        /// IPv4 address requests come to (default: any).
        #[arg(long)]
        ip: Option<Ipv4Addr>,
        /// Cache buckets in device memory, a power of two up to 4096
        /// (default 1024).
        #[arg(long)]
        cache_buckets: Option<u32>,
    },
    /// Stop serving (the pairs stay).
    Disable { iface: String },
    /// Write a pair.
    Put {
        iface: String,
        key: String,
        value: String,
    },
    /// Read a key's value.
    Get { iface: String, key: String },
    /// Delete a key.
    Del { iface: String, key: String },
    /// The offload's state and counters.
    Stats { iface: String },
}

/// An error of an ioctl, with what was asked.
struct Failed {
    what: String,
    err: io::Error,
}

fn ifindex(iface: &str) -> Result<u32> {
    nix::net::if_::if_nametoindex(iface).map_err(|e| anyhow!("{iface}: no such interface ({e})"))
}

fn print_stats(iface: &str, s: &Stats, json: bool) {
    if json {
        let map = |v: &[(String, u64)]| {
            v.iter()
                .map(|(n, c)| (n.clone(), json!(c)))
                .collect::<serde_json::Map<_, _>>()
        };
        let out = json!({
            "iface": iface,
            "enabled": s.enabled,
            "serving": s.serving,
            "table": s.table,
            "udp_port": s.udp_port,
            "ipv4": s.ipv4,
            "cache_buckets": s.cache_buckets,
            "host_buckets": s.host_buckets,
            "device": map(&s.device),
            "driver": map(&s.driver),
        });
        println!("{out}");
        return;
    }
    println!(
        "{iface}: {}, UDP port {}, address {}, cache {} buckets, host table {} buckets",
        if s.serving {
            "serving"
        } else if s.enabled {
            "enabled (not serving)"
        } else {
            "disabled"
        },
        s.udp_port,
        s.ipv4,
        s.cache_buckets,
        s.host_buckets
    );
    for (n, v) in s.device.iter().chain(s.driver.iter()) {
        println!("  {n}: {v}");
    }
}

fn run(cli: &Cli, dev: &Cxlnic) -> std::result::Result<(), Failed> {
    let fail = |what: &str| {
        let what = what.to_string();
        move |err| Failed { what, err }
    };
    let done = |what: &str, iface: &str| {
        if cli.json {
            println!("{}", json!({ "ok": true, "op": what, "iface": iface }));
        }
    };
    let Top::Kvs(cmd) = &cli.command;
    let index = |iface: &str, what: &str| {
        ifindex(iface).map_err(|e| Failed {
            what: what.to_string(),
            err: io::Error::new(io::ErrorKind::NotFound, e.to_string()),
        })
    };
    match cmd {
        Kvs::Enable {
            iface,
            port,
            ip,
            cache_buckets,
        } => {
            let what = format!("enable {iface}");
            let e = Enable {
                udp_port: port.unwrap_or(0),
                ipv4: *ip,
                cache_buckets: cache_buckets.unwrap_or(0),
            };
            dev.config(index(iface, &what)?, Some(e))
                .map_err(fail(&what))?;
            done("enable", iface);
        }
        Kvs::Disable { iface } => {
            let what = format!("disable {iface}");
            dev.config(index(iface, &what)?, None)
                .map_err(fail(&what))?;
            done("disable", iface);
        }
        Kvs::Put { iface, key, value } => {
            let what = format!("put {iface} {key}");
            dev.put(index(iface, &what)?, key.as_bytes(), value.as_bytes())
                .map_err(fail(&what))?;
            done("put", iface);
        }
        Kvs::Get { iface, key } => {
            let what = format!("get {iface} {key}");
            let v = dev
                .get(index(iface, &what)?, key.as_bytes())
                .map_err(fail(&what))?;
            let text = String::from_utf8_lossy(&v);
            if cli.json {
                let hex: String = v.iter().map(|b| format!("{b:02x}")).collect();
                println!(
                    "{}",
                    json!({ "ok": true, "iface": iface, "key": key, "value": text, "value_hex": hex })
                );
            } else {
                println!("{text}");
            }
        }
        Kvs::Del { iface, key } => {
            let what = format!("del {iface} {key}");
            dev.del(index(iface, &what)?, key.as_bytes())
                .map_err(fail(&what))?;
            done("del", iface);
        }
        Kvs::Stats { iface } => {
            let what = format!("stats {iface}");
            let s = dev.stats(index(iface, &what)?).map_err(fail(&what))?;
            print_stats(iface, &s, cli.json);
        }
    }
    Ok(())
}

fn report(json: bool, what: &str, err: &io::Error) {
    let text = describe(err);
    if json {
        let errno = err
            .raw_os_error()
            .map(|c| cxlnic::explain(c).0)
            .unwrap_or("");
        println!(
            "{}",
            json!({ "ok": false, "op": what, "errno": errno, "code": err.raw_os_error(), "error": text })
        );
    }
    eprintln!("cxlnic: {what}: {text}");
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let dev = match Cxlnic::open(&cli.dev) {
        Ok(d) => d,
        Err(e) => {
            let text = describe_open(&e);
            if cli.json {
                let errno = e.raw_os_error().map(|c| explain_open(c).0);
                println!(
                    "{}",
                    json!({ "ok": false, "op": "open", "errno": errno, "code": e.raw_os_error(),
                            "error": format!("{}: {text}", cli.dev.display()) })
                );
            }
            eprintln!("cxlnic: cannot open {}: {text}", cli.dev.display());
            return ExitCode::FAILURE;
        }
    };
    match run(&cli, &dev) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            report(cli.json, &f.what, &f.err);
            ExitCode::FAILURE
        }
    }
}
