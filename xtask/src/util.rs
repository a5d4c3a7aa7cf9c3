//! Paths, command running and phase timing shared by every xtask step.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Top of the repository (the parent of `xtask/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the repository root")
        .to_path_buf()
}

/// Where built kernels and other large artifacts live, outside the repository
/// so that a clean checkout reuses them. Override with `CXLFABRIC_CACHE`.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CXLFABRIC_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/cxlfabric")
}

/// Scratch output of the harness (initramfs, VM logs, reports), inside
/// `target/` so `cargo clean` removes it.
pub fn out_dir() -> PathBuf {
    repo_root().join("target/xtask")
}

pub fn nproc() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Runs a command with inherited stdio; fails with the command line on a
/// non-zero exit.
pub fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Runs a command and returns its stdout; stderr passes through.
pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed with {}", out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a command, sending stdout and stderr to `log`; on failure prints the
/// log's tail so the reason is visible without opening the file.
pub fn run_logged(cmd: &mut Command, log: &Path) -> Result<()> {
    let file = std::fs::File::create(log).with_context(|| format!("create {}", log.display()))?;
    let status = cmd
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        print_tail(log, 60);
        bail!("{cmd:?} failed with {status} (full log: {})", log.display());
    }
    Ok(())
}

pub fn print_tail(path: &Path, lines: usize) {
    if let Ok(text) = std::fs::read_to_string(path) {
        let all: Vec<&str> = text.lines().collect();
        for line in &all[all.len().saturating_sub(lines)..] {
            eprintln!("  | {line}");
        }
    }
}

/// Whether an executable is on PATH.
pub fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

/// Times the phases of one xtask run and prints a summary at the end, so the
/// cold/warm budgets are checked rather than hoped.
#[derive(Default)]
pub struct Phases {
    done: Vec<(String, f64)>,
}

impl Phases {
    pub fn time<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        eprintln!("==> {name}");
        let start = Instant::now();
        let result = f();
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "<== {name}: {secs:.1} s{}",
            if result.is_err() { " (failed)" } else { "" }
        );
        self.done.push((name.to_string(), secs));
        result
    }

    pub fn summary(&self) {
        eprintln!("phase times:");
        let mut total = 0.0;
        for (name, secs) in &self.done {
            eprintln!("  {name:<28} {secs:>8.1} s");
            total += secs;
        }
        eprintln!("  {:<28} {total:>8.1} s", "total");
    }
}
