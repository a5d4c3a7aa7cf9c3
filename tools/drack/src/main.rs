//! `drack`: drack_netdev's pooled NICs from the shell. `lend IFNAME`
//! and `unlend IFNAME` write `/sys/class/net/drack0/nics/{lend,unlend}`
//! (root with CAP_NET_ADMIN; the kernel log says why a write failed);
//! `status` shows this host's lent NICs (`nics/<slot>/`) and its vNICs
//! on other hosts' NICs (`/sys/class/net/drackv*`), `--json` for
//! scripts. `Documentation/cxlfabric/drack.rst` has the rest.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(about = "Lend NICs to the rack through drack_netdev, and show them")]
struct Cli {
    /// The interface drack_netdev runs the pool on.
    #[arg(long, default_value = "drack0", global = true)]
    dev: String,
    /// Where sysfs is (tests point this at a copy).
    #[arg(long, default_value = "/sys", global = true, hide = true)]
    sysfs: PathBuf,
    /// Machine-readable output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Lend IFNAME to the rack: every other host gets a vNIC on it.
    Lend { ifname: String },
    /// Give IFNAME back.
    Unlend { ifname: String },
    /// This host's lent NICs and its vNICs.
    Status,
}

/// A slot of `nics/`.
#[derive(Serialize, Debug, PartialEq)]
struct LentNic {
    slot: u32,
    ifname: String,
    generation: u64,
    mtu: u64,
    carrier: bool,
    to_nic_frames: u64,
    to_nic_bytes: u64,
    to_nic_dropped: u64,
    from_nic_frames: u64,
    from_nic_bytes: u64,
    from_nic_dropped: u64,
}

/// A vNIC (`drackv<owner>n<slot>`).
#[derive(Serialize, Debug, PartialEq)]
struct Vnic {
    ifname: String,
    owner: u32,
    slot: u32,
    carrier: bool,
    tx_packets: u64,
    tx_bytes: u64,
    tx_dropped: u64,
    rx_packets: u64,
    rx_bytes: u64,
    rx_dropped: u64,
}

#[derive(Serialize, Debug)]
struct Status {
    lent: Vec<LentNic>,
    vnics: Vec<Vnic>,
}

fn read(p: &Path) -> Result<String> {
    Ok(fs::read_to_string(p)
        .with_context(|| format!("reading {}", p.display()))?
        .trim()
        .to_string())
}

fn number(p: &Path) -> Result<u64> {
    let s = read(p)?;
    s.parse()
        .with_context(|| format!("{}: {s:?} is not a number", p.display()))
}

/// `drackv<owner>n<slot>`'s owner and slot.
fn vnic_name(name: &str) -> Option<(u32, u32)> {
    let (owner, slot) = name.strip_prefix("drackv")?.split_once('n')?;
    Some((owner.parse().ok()?, slot.parse().ok()?))
}

fn lent(nics: &Path) -> Result<Vec<LentNic>> {
    let mut out = Vec::new();
    for slot in 0u32.. {
        let d = nics.join(slot.to_string());
        if !d.is_dir() {
            break;
        }
        let ifname = read(&d.join("ifname"))?;
        if ifname.is_empty() {
            continue;
        }
        let n = |f: &str| number(&d.join(f));
        out.push(LentNic {
            slot,
            ifname,
            generation: n("generation")?,
            mtu: n("mtu")?,
            carrier: n("carrier")? != 0,
            to_nic_frames: n("to_nic_frames")?,
            to_nic_bytes: n("to_nic_bytes")?,
            to_nic_dropped: n("to_nic_dropped")?,
            from_nic_frames: n("from_nic_frames")?,
            from_nic_bytes: n("from_nic_bytes")?,
            from_nic_dropped: n("from_nic_dropped")?,
        });
    }
    Ok(out)
}

fn vnics(net: &Path) -> Result<Vec<Vnic>> {
    let mut out = Vec::new();
    let mut names: Vec<String> = fs::read_dir(net)
        .with_context(|| format!("reading {}", net.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    for ifname in names {
        let Some((owner, slot)) = vnic_name(&ifname) else {
            continue;
        };
        let d = net.join(&ifname);
        let s = |f: &str| number(&d.join("statistics").join(f));
        // Reading `carrier` of an interface that is down fails (EINVAL).
        let carrier = read(&d.join("carrier")).map(|c| c == "1").unwrap_or(false);
        out.push(Vnic {
            ifname,
            owner,
            slot,
            carrier,
            tx_packets: s("tx_packets")?,
            tx_bytes: s("tx_bytes")?,
            tx_dropped: s("tx_dropped")?,
            rx_packets: s("rx_packets")?,
            rx_bytes: s("rx_bytes")?,
            rx_dropped: s("rx_dropped")?,
        });
    }
    Ok(out)
}

/// Writes `ifname` to `nics/<what>`, with the kernel's reason on failure.
fn write(nics: &Path, what: &str, ifname: &str) -> Result<()> {
    if ifname.is_empty() || ifname.len() > 15 || ifname.contains(['/', ' ', '\n']) {
        bail!("{ifname:?} is not an interface name");
    }
    let p = nics.join(what);
    fs::write(&p, ifname).with_context(|| {
        format!(
            "{what} {ifname}: {} refused it (the kernel log says why)",
            p.display()
        )
    })
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let net = cli.sysfs.join("class/net");
    let nics = net.join(&cli.dev).join("nics");
    if !nics.is_dir() {
        bail!(
            "{} is missing: is drack_netdev loaded with a pool (and {} its interface)?",
            nics.display(),
            cli.dev
        );
    }
    match cli.cmd {
        Cmd::Lend { ifname } => write(&nics, "lend", &ifname),
        Cmd::Unlend { ifname } => write(&nics, "unlend", &ifname),
        Cmd::Status => {
            let s = Status {
                lent: lent(&nics)?,
                vnics: vnics(&net)?,
            };
            if cli.json {
                println!("{}", serde_json::to_string(&s)?);
                return Ok(());
            }
            if s.lent.is_empty() {
                println!("lent: none");
            }
            for l in &s.lent {
                println!(
                    "lent NIC {}: {} (generation {}, MTU {}, carrier {}): to the NIC {} frames ({} dropped), from it {} frames ({} dropped)",
                    l.slot,
                    l.ifname,
                    l.generation,
                    l.mtu,
                    if l.carrier { "up" } else { "down" },
                    l.to_nic_frames,
                    l.to_nic_dropped,
                    l.from_nic_frames,
                    l.from_nic_dropped
                );
            }
            if s.vnics.is_empty() {
                println!("vNICs: none");
            }
            for v in &s.vnics {
                println!(
                    "vNIC {} on host {}'s NIC {}: carrier {}, sent {} frames, received {}",
                    v.ifname,
                    v.owner,
                    v.slot,
                    if v.carrier { "up" } else { "down" },
                    v.tx_packets,
                    v.rx_packets
                );
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(p: &Path, v: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, v).unwrap();
    }

    #[test]
    fn vnic_names_parse() {
        assert_eq!(vnic_name("drackv1n0"), Some((1, 0)));
        assert_eq!(vnic_name("drackv12n3"), Some((12, 3)));
        assert_eq!(vnic_name("drack0"), None);
        assert_eq!(vnic_name("drackvxn0"), None);
        assert_eq!(vnic_name("drackv1"), None);
    }

    #[test]
    fn status_reads_slots_and_vnics() {
        let t = tempfile::tempdir().unwrap();
        let net = t.path().join("class/net");
        let nics = net.join("drack0/nics");
        for slot in 0..4 {
            put(&nics.join(format!("{slot}/ifname")), "\n");
        }
        let one = nics.join("1");
        put(&one.join("ifname"), "eth1\n");
        for (f, v) in [
            ("generation", "513"),
            ("mtu", "1500"),
            ("carrier", "1"),
            ("to_nic_frames", "7"),
            ("to_nic_bytes", "700"),
            ("to_nic_dropped", "0"),
            ("from_nic_frames", "9"),
            ("from_nic_bytes", "900"),
            ("from_nic_dropped", "2"),
        ] {
            put(&one.join(f), &format!("{v}\n"));
        }
        let v = net.join("drackv0n1");
        put(&v.join("carrier"), "1\n");
        for f in [
            "tx_packets",
            "tx_bytes",
            "tx_dropped",
            "rx_packets",
            "rx_bytes",
            "rx_dropped",
        ] {
            put(&v.join("statistics").join(f), "3\n");
        }
        fs::create_dir_all(net.join("eth0")).unwrap();
        let l = lent(&nics).unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(
            (l[0].slot, l[0].ifname.as_str(), l[0].generation),
            (1, "eth1", 513)
        );
        assert!(l[0].carrier);
        assert_eq!(l[0].from_nic_dropped, 2);
        let vs = vnics(&net).unwrap();
        assert_eq!(vs.len(), 1);
        assert_eq!((vs[0].owner, vs[0].slot, vs[0].rx_packets), (0, 1, 3));
        // A counter that is not a number is an error, not a zero.
        put(&one.join("mtu"), "many\n");
        assert!(lent(&nics).is_err());
    }

    #[test]
    fn bad_names_are_refused_before_writing() {
        let t = tempfile::tempdir().unwrap();
        for bad in ["", "a/b", "has space", "sixteen-chars-xx"] {
            assert!(write(t.path(), "lend", bad).is_err(), "{bad:?}");
            assert!(!t.path().join("lend").exists());
        }
    }
}
