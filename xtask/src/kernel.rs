//! `cargo xtask kernel`: a Rust-enabled 6.12 kernel tree, built once and
//! cached outside the repository under a key made of everything that goes
//! into it.

use crate::setup::linux_source_version;
use crate::util::{cache_root, nproc, output, repo_root, run, run_logged};
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Bump when the recipe below changes in a way the key does not see.
const RECIPE_VERSION: &str = "1";
const SOURCE_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";
const STAMP_CONFIGURED: &str = ".cxlfabric-configured";
const STAMP_BUILT: &str = ".cxlfabric-built";

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Flavor {
    /// The tree every test and the demo use.
    Default,
    /// KASAN, lockdep, kmemleak, KFENCE, DEBUG_VM: built only when asked for.
    Debug,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::Default => "default",
            Flavor::Debug => "debug",
        }
    }

    fn fragments(self) -> Vec<PathBuf> {
        let configs = repo_root().join("configs");
        let mut list = vec![
            configs.join("trim.config"),
            configs.join("cxlfabric.config"),
        ];
        if self == Flavor::Debug {
            list.push(configs.join("debug.config"));
        }
        list
    }
}

pub struct KernelTree {
    pub dir: PathBuf,
    /// What it was built as (the guests' timing-based tests scale their
    /// leases on a debug kernel).
    pub flavor: Flavor,
}

impl KernelTree {
    pub fn bzimage(&self) -> PathBuf {
        self.dir.join("arch/x86/boot/bzImage")
    }

    pub fn release(&self) -> Result<String> {
        Ok(
            std::fs::read_to_string(self.dir.join("include/config/kernel.release"))?
                .trim()
                .to_string(),
        )
    }
}

fn tool_version(program: &str) -> String {
    output(Command::new(program).arg("--version"))
        .map(|s| s.lines().next().unwrap_or_default().to_string())
        .unwrap_or_else(|_| format!("{program}: missing"))
}

fn cache_key(flavor: Flavor) -> Result<String> {
    let mut hasher = Sha256::new();
    hasher.update(RECIPE_VERSION);
    hasher.update(linux_source_version()?);
    for fragment in flavor.fragments() {
        hasher.update(fragment.file_name().unwrap().as_encoded_bytes());
        hasher.update(std::fs::read(&fragment).with_context(|| format!("{}", fragment.display()))?);
    }
    for tool in ["rustc", "bindgen", "clang", "ld.lld"] {
        hasher.update(tool_version(tool));
    }
    let digest = hasher.finalize();
    Ok(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// Where the tree for `flavor` lives, without building it.
pub fn tree_dir(flavor: Flavor) -> Result<PathBuf> {
    Ok(cache_root().join(format!("kernel-{}-{}", flavor.name(), cache_key(flavor)?)))
}

fn make(dir: &Path) -> Command {
    let mut cmd = Command::new("make");
    cmd.current_dir(dir).arg("LLVM=1");
    cmd
}

/// Every `CONFIG_X=y` (or `=m`) the fragments ask for must survive olddefconfig: a
/// silently dropped option (unmet dependency) would otherwise surface much
/// later as a missing feature in the guest.
fn check_config(dir: &Path, fragments: &[PathBuf]) -> Result<()> {
    let config = std::fs::read_to_string(dir.join(".config"))?;
    let mut dropped = Vec::new();
    for fragment in fragments {
        for line in std::fs::read_to_string(fragment)?.lines() {
            let line = line.trim();
            if let Some(option) = line.strip_suffix("=y").or(line.strip_suffix("=m")) {
                if !config.lines().any(|l| l == line) {
                    dropped.push(option.to_string());
                }
            } else if let Some(option) = line.strip_suffix("=n") {
                if config.lines().any(|l| l.starts_with(&format!("{option}="))) {
                    dropped.push(format!("{option} (asked off, still on)"));
                }
            }
        }
    }
    if !dropped.is_empty() {
        bail!("kernel config did not take: {}", dropped.join(", "));
    }
    Ok(())
}

/// Deletes unfinished trees of the same flavor under other keys (a build
/// whose inputs changed before it finished will never be resumed).
fn remove_abandoned(flavor: Flavor, keep: &Path) -> Result<()> {
    let prefix = format!("kernel-{}-", flavor.name());
    let Ok(entries) = std::fs::read_dir(cache_root()) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path != keep
            && name.starts_with(&prefix)
            && !name.ends_with(".logs")
            && !path.join(STAMP_BUILT).exists()
        {
            eprintln!(
                "kernel: removing abandoned unfinished tree {}",
                path.display()
            );
            std::fs::remove_dir_all(&path)?;
            let _ = std::fs::remove_dir_all(path.with_extension("logs"));
        }
    }
    Ok(())
}

/// The kernel tree to use: `CXLFABRIC_KDIR` if set (a built, Rust-enabled
/// tree of your own), else the cached tree for `flavor`, built if missing.
pub fn ensure(flavor: Flavor) -> Result<KernelTree> {
    if let Some(dir) = std::env::var_os("CXLFABRIC_KDIR") {
        let tree = KernelTree {
            dir: PathBuf::from(dir),
            flavor,
        };
        if !tree.bzimage().exists() || !tree.dir.join("rust/libkernel.rmeta").exists() {
            bail!(
                "CXLFABRIC_KDIR={} is not a built Rust-enabled kernel tree (no bzImage or rust/libkernel.rmeta)",
                tree.dir.display()
            );
        }
        eprintln!("kernel: using CXLFABRIC_KDIR={}", tree.dir.display());
        return Ok(tree);
    }
    build_cached(flavor)
}

fn build_cached(flavor: Flavor) -> Result<KernelTree> {
    let dir = tree_dir(flavor)?;
    if dir.join(STAMP_BUILT).exists() {
        eprintln!("kernel: cached tree {}", dir.display());
        return Ok(KernelTree { dir, flavor });
    }
    // One kernel build at a time, whoever asks (`kernel --print-dir` too):
    // two makes in one tree corrupt it, and two in different trees
    // starve each other on this machine's cores.
    std::fs::create_dir_all(cache_root())?;
    let lock = std::fs::File::create(cache_root().join("kernel-build.lock"))?;
    if lock.try_lock().is_err() {
        eprintln!("kernel: waiting for another kernel build to finish");
        lock.lock()?;
    }
    if dir.join(STAMP_BUILT).exists() {
        eprintln!("kernel: cached tree {}", dir.display());
        return Ok(KernelTree { dir, flavor });
    }
    remove_abandoned(flavor, &dir)?;
    std::fs::create_dir_all(&dir)?;
    let log_dir = dir.with_extension("logs");
    std::fs::create_dir_all(&log_dir)?;

    if !dir.join(STAMP_CONFIGURED).exists() {
        eprintln!("kernel: unpacking {SOURCE_TARBALL} into {}", dir.display());
        run(Command::new("tar")
            .args(["-xf", SOURCE_TARBALL, "--strip-components=1", "-C"])
            .arg(&dir))?;
        run_logged(
            make(&dir).arg("rustavailable"),
            &log_dir.join("rustavailable.log"),
        )
        .context("the Rust toolchain does not suit this kernel: run `cargo xtask setup`")?;
        run_logged(make(&dir).arg("defconfig"), &log_dir.join("defconfig.log"))?;
        let fragments = flavor.fragments();
        run_logged(
            Command::new("scripts/kconfig/merge_config.sh")
                .current_dir(&dir)
                .env("LLVM", "1")
                .args(["-m", ".config"])
                .args(&fragments),
            &log_dir.join("merge_config.log"),
        )?;
        run_logged(
            make(&dir).arg("olddefconfig"),
            &log_dir.join("olddefconfig.log"),
        )?;
        check_config(&dir, &fragments)?;
        std::fs::write(dir.join(STAMP_CONFIGURED), "")?;
    }

    // `make` is incremental: an interrupted build resumes here.
    eprintln!(
        "kernel: building {} flavor with {} jobs (log: {}/build.log)",
        flavor.name(),
        nproc(),
        log_dir.display()
    );
    run_logged(
        make(&dir)
            .arg(format!("-j{}", nproc()))
            .args(["bzImage", "modules"]),
        &log_dir.join("build.log"),
    )?;
    std::fs::write(dir.join(STAMP_BUILT), "")?;
    Ok(KernelTree { dir, flavor })
}
