//! `cargo xtask build`: the out-of-tree modules against the cached kernel,
//! with and without `CLIPPY=1`. A warning fails the build.

use crate::kernel::KernelTree;
use crate::util::{nproc, out_dir, repo_root};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;

/// Product modules, in load order.
pub const PRODUCT_MODULES: &[&str] =
    &["beluga_dax", "mchannel_sched", "cxlnic_drv", "drack_netdev"];
/// KUnit modules, loaded in every test boot (the first also carries the
/// support layer's test device).
pub const KUNIT_MODULES: &[&str] = &["cxlfabric_support_kunit", "beluga_dax_kunit"];
const SUPPORT_KUNIT_MODULE: &str = "cxlfabric_support_kunit";
/// Fails on purpose; loaded only in the self-test boot.
pub const SELFTEST_MODULE: &str = "cxlfabric_selftest";
/// Loaded by scenarios that need a module using a product module's API.
pub const TEST_HELPER_MODULES: &[&str] = &["beluga_client_test"];

/// Where a module's sources live: (module, directory, Rust crate root).
/// Every module is composite: its crate root plus its `helpers.c`.
fn layout(module: &str) -> (String, String) {
    match module {
        SUPPORT_KUNIT_MODULE => ("kunit".into(), "kunit/support_kunit_main.rs".into()),
        SELFTEST_MODULE => ("kunit".into(), "kunit/selftest_main.rs".into()),
        kunit if KUNIT_MODULES.contains(&kunit) || TEST_HELPER_MODULES.contains(&kunit) => {
            ("kunit".into(), format!("kunit/{kunit}_main.rs"))
        }
        product => (product.into(), format!("{product}/{product}_main.rs")),
    }
}

/// Path of a built `.ko`.
pub fn ko_path(module: &str) -> PathBuf {
    let (dir, _) = layout(module);
    repo_root().join(dir).join(format!("{module}.ko"))
}

pub fn all_modules() -> Vec<String> {
    PRODUCT_MODULES
        .iter()
        .chain(KUNIT_MODULES.iter())
        .chain([SELFTEST_MODULE].iter())
        .chain(TEST_HELPER_MODULES.iter())
        .map(|m| m.to_string())
        .collect()
}

/// The crate root of every module (rustfmt follows their `mod`s).
pub fn crate_roots() -> Vec<PathBuf> {
    all_modules()
        .iter()
        .map(|m| repo_root().join(layout(m).1))
        .collect()
}

/// Builds every module; `clippy` runs clippy-driver in place of rustc.
pub fn build(tree: &KernelTree, clippy: bool) -> Result<()> {
    let label = if clippy { "CLIPPY=1" } else { "rustc" };
    std::fs::create_dir_all(out_dir())?;
    let log = out_dir().join(if clippy {
        "modules-clippy.log"
    } else {
        "modules.log"
    });
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(&tree.dir)
        .arg(format!("M={}", repo_root().display()))
        .arg("LLVM=1")
        .arg(format!("-j{}", nproc()))
        .arg("modules");
    if clippy {
        cmd.arg("CLIPPY=1");
    }
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&log, &text)?;
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("warning:") || l.contains("error:") || l.contains("error["))
        .collect();
    if !out.status.success() || !warnings.is_empty() {
        for line in text
            .lines()
            .rev()
            .take(80)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            eprintln!("  | {line}");
        }
        bail!(
            "module build ({label}) {} (log: {})",
            if out.status.success() {
                "printed warnings"
            } else {
                "failed"
            },
            log.display()
        );
    }
    for module in all_modules() {
        let ko = ko_path(&module);
        if !ko.exists() {
            bail!("module build ({label}) did not produce {}", ko.display());
        }
    }
    eprintln!("modules: built ({label}), no warnings");
    Ok(())
}
