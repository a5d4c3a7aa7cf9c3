//! Developer tooling for cxlfabric: set up the machine, build the kernel and
//! the modules, boot the emulated CXL machine, run tests, demo and benchmarks.

mod bench;
mod bench_nic;
mod demo;
mod dkms;
mod guest;
mod hub;
mod kernel;
mod ktap;
mod linkcheck;
mod lint;
mod modules;
mod nicmodel;
mod setup;
mod test;
mod util;
mod vm;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::time::Duration;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "cxlfabric build, boot and test harness")]
struct Cli {
    /// Kernel flavor for every step: `debug` adds KASAN, lockdep,
    /// kmemleak, KFENCE and DEBUG_VM (built on first use, cached like the
    /// default).
    #[arg(long, global = true, value_enum, default_value = "default")]
    flavor: kernel::Flavor,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Install everything the project needs on a fresh Debian 12 machine.
    Setup,
    /// Build (or reuse from the cache) the Rust-enabled guest kernel.
    Kernel {
        /// Print the cached tree's path (building it if missing).
        #[arg(long)]
        print_dir: bool,
    },
    /// Build the modules against the cached kernel (also with CLIPPY=1),
    /// then check what each links (`nm -u`, `xtask/src/linkcheck.rs`).
    Build {
        #[arg(long)]
        clippy: bool,
    },
    /// Boot the emulated CXL machine in one of the guest modes.
    Vm {
        #[arg(long, value_enum, default_value = "demo")]
        mode: vm::Mode,
        /// Number of hosts (VMs) sharing the CXL pool.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
        hosts: u8,
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
    /// Everything: host tests, module builds, KUnit and scenarios in the VM.
    Test {
        /// Run one module's share (matches crate, suite and scenario names).
        #[arg(long)]
        only: Option<String>,
        /// Per-boot timeout in seconds (default 300; 1800 with `--flavor
        /// debug`, whose KASAN and lockdep make every scenario several
        /// times slower: its two-host boot takes about 20 minutes).
        #[arg(long)]
        timeout: Option<u64>,
        /// Print what `--only` selects, run nothing.
        #[arg(long)]
        list: bool,
    },
    /// Benchmarks, each side by side with its anchor (JSON + table).
    Bench {
        /// Per-boot timeout in seconds (benchmarks repeat their series).
        #[arg(long, default_value_t = 2400)]
        timeout: u64,
        /// Only the benchmarks whose names contain this (each sets up what
        /// it needs, so any subset runs).
        #[arg(long, value_parser = bench::parse_only)]
        only: Option<String>,
    },
    /// The main job: boot the emulated CXL machine and show what it does.
    Demo {
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
        hosts: u8,
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        /// One part only (`tests/vm/demo-<part>.sh`: beluga, mchannel,
        /// cxlnic, or drack, which boots two hosts).
        #[arg(long, value_parser = bench::parse_only)]
        only: Option<String>,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let flavor = cli.flavor;
    match cli.command {
        Cmd::Setup => setup::setup(),
        Cmd::Kernel { print_dir } => {
            setup::setup()?;
            let tree = kernel::ensure(flavor)?;
            if print_dir {
                println!("{}", tree.dir.display());
            }
            Ok(())
        }
        Cmd::Build { clippy } => {
            setup::setup()?;
            let tree = kernel::ensure(flavor)?;
            modules::build(&tree, clippy)?;
            linkcheck::check()
        }
        Cmd::Vm {
            mode,
            hosts,
            timeout,
        } => {
            let (tree, initramfs) = vm::prepare(&mut util::Phases::default(), flavor)?;
            let runs = vm::boot(
                &tree,
                &initramfs,
                &vm::VmOptions::new(mode, hosts.into(), Duration::from_secs(timeout)),
            )?;
            for run in &runs {
                println!(
                    "host {}: {} (console: {})",
                    run.host,
                    run.describe_exit(),
                    run.console.display()
                );
            }
            Ok(())
        }
        Cmd::Test {
            only, list: true, ..
        } => test::list(only.as_deref()),
        Cmd::Test { only, timeout, .. } => test::test(test::TestOptions {
            only,
            timeout: Duration::from_secs(timeout.unwrap_or(match flavor {
                kernel::Flavor::Debug => 1800,
                _ => 300,
            })),
            flavor,
        }),
        Cmd::Bench { timeout, only } => bench::bench(Duration::from_secs(timeout), flavor, only),
        Cmd::Demo {
            hosts,
            timeout,
            only,
        } => demo::demo(hosts.into(), Duration::from_secs(timeout), flavor, only),
    }
}
