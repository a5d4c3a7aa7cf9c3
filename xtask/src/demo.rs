//! `cargo xtask demo`: the main job. Boots the emulated CXL machine, creates
//! the interleaved RAM region, loads the product modules and prints a report.
//! With one host (the default) a second boot of two hosts follows for the
//! part that needs a peer: drack_netdev (`tests/vm/demo-drack.sh`).
//! `--only <part>` runs one part: a two-host part in its boot alone, any
//! other in the one-host boot.

use crate::util::Phases;
use crate::vm::{self, HostRun, Mode, VmOptions};
use anyhow::{bail, Result};
use std::time::Duration;

/// The demo parts that need two hosts, run in a boot of their own after
/// the one-host demo (the guest runs only `/demo-<part>.sh`).
const TWO_HOST_PARTS: [&str; 1] = ["drack"];

pub fn demo(
    hosts: usize,
    timeout: Duration,
    flavor: crate::kernel::Flavor,
    only: Option<String>,
) -> Result<()> {
    let mut phases = Phases::default();
    let (tree, initramfs) = vm::prepare(&mut phases, flavor)?;
    let two_host_only = only.as_deref().is_some_and(|p| TWO_HOST_PARTS.contains(&p));
    let runs = if two_host_only {
        Vec::new()
    } else {
        let opts = VmOptions {
            only: only.clone(),
            ..VmOptions::new(Mode::Demo, hosts, timeout)
        };
        phases.time("boot", || vm::boot(&tree, &initramfs, &opts))?
    };
    let mut parts = Vec::new();
    if hosts == 1 || two_host_only {
        for part in TWO_HOST_PARTS
            .into_iter()
            .filter(|p| only.as_deref().is_none_or(|o| o == *p))
        {
            let opts = VmOptions {
                only: Some(part.to_string()),
                ..VmOptions::new(Mode::Demo, 2, timeout)
            };
            let runs = phases.time(&format!("boot: {part}, two hosts"), || {
                vm::boot(&tree, &initramfs, &opts)
            })?;
            parts.push((part, runs));
        }
    }
    phases.summary();

    let mut ok = true;
    for run in &runs {
        println!();
        println!(
            "==================== host {} ====================",
            run.host
        );
        if let Some(hello) = &run.report.hello {
            println!("guest: {hello}");
        }
        ok &= print_blocks(run, "", |_| true);
    }
    for (part, runs) in &parts {
        println!();
        println!("==================== {part}: two hosts ====================");
        for run in runs {
            // The setup blocks (region, topology, modules) were shown
            // above; here host 0's report (host 1's output too if either
            // failed) and any failed block.
            let failed = runs
                .iter()
                .flat_map(|r| &r.report.blocks)
                .any(|b| b.kind == "error");
            ok &= print_blocks(run, &format!("host {}: ", run.host), |name| {
                name == *part && (run.host == 0 || failed)
            });
        }
    }
    if !ok {
        bail!("demo did not complete cleanly");
    }
    Ok(())
}

/// Prints (titles after `label`) the blocks of `run` whose names `show` selects (and every
/// failed one), its kernel trouble and how it ended; whether all was well.
fn print_blocks(run: &HostRun, label: &str, show: impl Fn(&str) -> bool) -> bool {
    let mut ok = true;
    for block in run.report.blocks.iter().filter(|b| b.kind != "dmesg") {
        let failed = block.kind == "error";
        ok &= !failed;
        if !failed && !show(&block.name) {
            continue;
        }
        let title = if failed {
            format!("{} (FAILED)", block.name)
        } else {
            block.name.clone()
        };
        println!("--- {label}{title} ---");
        print!("{}", block.text);
    }
    let trouble = run.report.kernel_trouble();
    if !trouble.is_empty() {
        println!("--- {label}kernel trouble ---");
        for line in &trouble {
            println!("{line}");
        }
        ok = false;
    }
    println!("--- {label}result: {} ---", run.describe_exit());
    ok & run.finished()
}
