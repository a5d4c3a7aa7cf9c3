//! `cargo xtask setup`: installs what the project needs on a fresh Debian 12
//! machine. Every step checks first, so running it again is cheap.

use crate::util::{have, output, run};
use anyhow::{bail, Context, Result};
use std::process::Command;

/// The kernel source the project is tested against. If Debian no longer
/// serves it, the newest 6.12 is used and the fallback is reported.
pub const LINUX_SOURCE_PKG: &str = "linux-source-6.12";
pub const LINUX_SOURCE_PIN: &str = "6.12.117-1~deb12u1";
pub const BINDGEN_VERSION: &str = "0.73.2";
const BACKPORTS_LIST: &str = "/etc/apt/sources.list.d/cxlfabric-backports.list";

const APT_PACKAGES: &[&str] = &[
    "clang",
    "lld",
    "llvm",
    "libclang-dev",
    "flex",
    "bison",
    "bc",
    "libelf-dev",
    "libssl-dev",
    "busybox-static",
    "cpio",
    "dkms",
    "kmod",
    "xz-utils",
    "make",
    "python3",
    // /bin/kill: the harness stops QEMU process groups.
    "procps",
    // The guest's `ip` and `ethtool` (copied with their libraries): the
    // real tools operators use, not busybox look-alikes.
    "iproute2",
    "ethtool",
];

fn is_installed(pkg: &str) -> bool {
    output(Command::new("dpkg-query").args(["-W", "-f=${Status}", pkg]))
        .is_ok_and(|s| s.contains("install ok installed"))
}

fn installed_version(pkg: &str) -> Option<String> {
    output(Command::new("dpkg-query").args(["-W", "-f=${Version}", pkg]))
        .ok()
        .filter(|v| !v.is_empty())
}

fn root_cmd(program: &str) -> Command {
    let is_root = output(Command::new("id").arg("-u")).is_ok_and(|s| s.trim() == "0");
    if is_root {
        Command::new(program)
    } else {
        let mut cmd = Command::new("sudo");
        cmd.arg(program);
        cmd
    }
}

struct Apt {
    updated: bool,
}

impl Apt {
    fn update(&mut self) -> Result<()> {
        if !self.updated {
            run(root_cmd("apt-get").args(["update", "-q"]))?;
            self.updated = true;
        }
        Ok(())
    }

    fn install(&mut self, args: &[&str]) -> Result<()> {
        self.update()?;
        run(root_cmd("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(args))
    }
}

fn qemu_major() -> Option<u32> {
    let out = output(Command::new("qemu-system-x86_64").arg("--version")).ok()?;
    let version = out.split_whitespace().nth(3)?;
    version.split('.').next()?.parse().ok()
}

pub fn setup() -> Result<()> {
    let mut apt = Apt { updated: false };

    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .copied()
        .filter(|p| !is_installed(p))
        .collect();
    if !missing.is_empty() {
        eprintln!("setup: installing {}", missing.join(" "));
        apt.install(&missing)?;
    }

    match installed_version(LINUX_SOURCE_PKG) {
        Some(v) if v == LINUX_SOURCE_PIN => {}
        current => {
            let pinned = format!("{LINUX_SOURCE_PKG}={LINUX_SOURCE_PIN}");
            if apt.install(&[&pinned]).is_err() {
                eprintln!(
                    "setup: WARNING: {pinned} is not available; using the newest {LINUX_SOURCE_PKG} \
                     (was: {})",
                    current.as_deref().unwrap_or("not installed")
                );
                apt.install(&[LINUX_SOURCE_PKG])?;
            }
        }
    }

    if qemu_major().is_none_or(|m| m < 10) {
        let listed = output(Command::new("sh").args([
            "-c",
            "grep -rhs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/ || true",
        ]))?;
        if listed.trim().is_empty() {
            eprintln!("setup: adding bookworm-backports to apt sources (QEMU >= 10)");
            run(root_cmd("sh").args([
                "-c",
                &format!(
                    "echo 'deb http://deb.debian.org/debian bookworm-backports main' > {BACKPORTS_LIST}"
                ),
            ]))?;
            apt.updated = false;
        }
        apt.install(&["-t", "bookworm-backports", "qemu-system-x86"])?;
        match qemu_major() {
            Some(m) if m >= 10 => {}
            other => bail!("QEMU >= 10 is required for volatile cxl-type3, found {other:?}"),
        }
    }

    let sysroot = output(Command::new("rustc").args(["--print", "sysroot"]))?;
    let rust_src = std::path::Path::new(sysroot.trim()).join("lib/rustlib/src/rust/library");
    if !rust_src.is_dir() {
        run(Command::new("rustup").args(["component", "add", "rust-src"]))
            .context("the kernel build compiles core from rust-src")?;
    }

    let bindgen_ok = have("bindgen")
        && output(Command::new("bindgen").arg("--version"))
            .is_ok_and(|v| v.trim().ends_with(BINDGEN_VERSION));
    if !bindgen_ok {
        run(Command::new("cargo").args([
            "install",
            "--locked",
            "bindgen-cli",
            "--version",
            BINDGEN_VERSION,
        ]))?;
    }
    Ok(())
}

/// Version of the installed kernel source package, part of the kernel cache key.
pub fn linux_source_version() -> Result<String> {
    installed_version(LINUX_SOURCE_PKG)
        .with_context(|| format!("{LINUX_SOURCE_PKG} is not installed: run `cargo xtask setup`"))
}
