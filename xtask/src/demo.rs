//! `cargo xtask demo`: the main job. Boots the emulated CXL machine, creates
//! the interleaved RAM region, loads the product modules and prints a report.

use crate::util::Phases;
use crate::vm::{self, Mode, VmOptions};
use anyhow::{bail, Result};
use std::time::Duration;

pub fn demo(hosts: usize, timeout: Duration, flavor: crate::kernel::Flavor) -> Result<()> {
    let mut phases = Phases::default();
    let (tree, initramfs) = vm::prepare(&mut phases, flavor)?;
    let runs = phases.time("boot", || {
        vm::boot(
            &tree,
            &initramfs,
            &VmOptions::new(Mode::Demo, hosts, timeout),
        )
    })?;
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
        for block in run.report.blocks.iter().filter(|b| b.kind != "dmesg") {
            let title = if block.kind == "error" {
                format!("{} (FAILED)", block.name)
            } else {
                block.name.clone()
            };
            println!("--- {title} ---");
            print!("{}", block.text);
            ok &= block.kind != "error";
        }
        let trouble = run.report.kernel_trouble();
        if !trouble.is_empty() {
            println!("--- kernel trouble ---");
            for line in &trouble {
                println!("{line}");
            }
            ok = false;
        }
        println!("--- result: {} ---", run.describe_exit());
        ok &= run.finished();
    }
    if !ok {
        bail!("demo did not complete cleanly");
    }
    Ok(())
}
