//! `cxlctl`: show the CXL topology, create and destroy RAM regions.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use cxlctl::region::{self, RegionRequest};
use cxlctl::snapshot;
use cxlctl::sysfs::Sysfs;
use cxlctl::topology::{parse_u64, Topology};

#[derive(Parser)]
#[command(
    name = "cxlctl",
    version,
    about = "CXL topology and RAM regions, through sysfs"
)]
struct Cli {
    /// sysfs mount point (a recorded tree works too).
    #[arg(long, global = true, default_value = "/sys")]
    sysfs: String,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Ports, switches, endpoints, memdevs, decoders, regions, dax devices.
    List,
    /// Create a RAM region, commit it, and bind its dax device.
    CreateRegion {
        /// Interleave ways (number of memdevs).
        #[arg(long, default_value_t = 1)]
        ways: u64,
        /// Region size: bytes, or with a K/M/G suffix; a multiple of 256M per way.
        #[arg(long, value_parser = parse_size)]
        size: u64,
        /// Interleave granularity in bytes (default: the root decoder's if
        /// it interleaves host bridges, else 4096).
        #[arg(long)]
        granularity: Option<u64>,
        /// Root decoder (default: the first with RAM capability).
        #[arg(long)]
        root_decoder: Option<String>,
        /// Memdevs in interleave order, comma separated.
        #[arg(long, value_delimiter = ',')]
        memdevs: Option<Vec<String>>,
        /// Only print the plan.
        #[arg(long)]
        dry_run: bool,
    },
    /// Unbind, decommit and delete a region, and free its decoders' DPA.
    DestroyRegion { region: String },
    /// Record the sysfs attributes cxlctl reads, as JSON (for host tests).
    Snapshot,
}

fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 10),
        Some('M') => (&t[..t.len() - 1], 20),
        Some('G') => (&t[..t.len() - 1], 30),
        Some('T') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n = parse_u64(digits).ok_or_else(|| format!("'{text}' is not a size"))?;
    n.checked_shl(shift)
        .filter(|v| v >> shift == n)
        .ok_or_else(|| format!("'{text}' is too large"))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let sys = Sysfs::new(&cli.sysfs);
    match cli.command {
        Cmd::List => {
            let topo = Topology::read(&sys)?;
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&topo)?);
            } else {
                print!("{}", topo.render_table());
            }
        }
        Cmd::CreateRegion {
            ways,
            size,
            granularity,
            root_decoder,
            memdevs,
            dry_run,
        } => {
            let topo = Topology::read(&sys)?;
            let req = RegionRequest {
                ways,
                size,
                granularity,
                root_decoder,
                memdevs,
            };
            let plan = region::plan(&topo, &req).context("cannot plan the region")?;
            if dry_run {
                println!("{}", serde_json::to_string_pretty(&plan)?);
                return Ok(());
            }
            let created = region::create(&sys, &plan)?;
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&created)?);
            } else {
                let targets: Vec<String> = plan
                    .targets
                    .iter()
                    .map(|(m, d)| format!("{m}:{d}"))
                    .collect();
                println!(
                    "{}: {} ways {} granularity {} on {} via {}; dax device {}",
                    created.region,
                    cxlctl::topology::human_size(plan.size),
                    plan.ways,
                    plan.granularity,
                    targets.join(","),
                    plan.root_decoder,
                    created.dax.as_deref().unwrap_or("none")
                );
            }
        }
        Cmd::DestroyRegion { region } => {
            let topo = Topology::read(&sys)?;
            region::destroy(&sys, &topo, &region)?;
            println!("{region}: destroyed");
        }
        Cmd::Snapshot => println!(
            "{}",
            serde_json::to_string_pretty(&snapshot::record(&sys)?)?
        ),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("0x10000000"), Ok(0x1000_0000));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("99999999999999999999T").is_err());
    }
}
