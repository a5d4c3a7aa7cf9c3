//! `cargo xtask test`: host tests, module builds, then the emulated CXL
//! machine (KUnit + scenarios), then the harness self-test. Ends with one
//! line `N passed, M failed, K skipped` and a non-zero exit on any failure.

use crate::kernel::{self, Flavor};
use crate::ktap::{self, Outcome};
use crate::modules;
use crate::setup;
use crate::util::{repo_root, Phases};
use crate::vm::{self, HostRun, Mode, VmOptions};
use anyhow::{bail, Result};
use std::process::Command;
use std::time::Duration;

#[derive(Default)]
pub struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
    failures: Vec<String>,
}

impl Tally {
    pub fn record(&mut self, name: &str, outcome: Outcome) {
        match outcome {
            Outcome::Pass => self.passed += 1,
            Outcome::Skip => self.skipped += 1,
            Outcome::Fail => {
                self.failed += 1;
                self.failures.push(name.to_string());
            }
        }
        let word = match outcome {
            Outcome::Pass => "ok",
            Outcome::Fail => "FAIL",
            Outcome::Skip => "skip",
        };
        eprintln!("  {word:<4} {name}");
    }

    pub fn check(&mut self, name: &str, ok: bool) {
        self.record(name, if ok { Outcome::Pass } else { Outcome::Fail });
    }

    fn add_counts(&mut self, passed: usize, failed: usize, skipped: usize, label: &str) {
        self.passed += passed;
        self.failed += failed;
        self.skipped += skipped;
        if failed > 0 {
            self.failures.push(format!("{label}: {failed} failed"));
        }
        eprintln!("  {label}: {passed} passed, {failed} failed, {skipped} skipped");
    }
}

pub struct TestOptions {
    pub only: Option<String>,
    pub timeout: Duration,
    pub flavor: Flavor,
}

/// Sums the `test result:` lines of `cargo test` output.
fn cargo_test_counts(output: &str) -> Option<(usize, usize, usize)> {
    let mut found = false;
    let (mut p, mut f, mut s) = (0, 0, 0);
    for line in output.lines().filter(|l| l.starts_with("test result:")) {
        found = true;
        let count = |word: &str| {
            line.split(';')
                .find_map(|part| {
                    part.trim()
                        .trim_start_matches("test result: ok.")
                        .trim_start_matches("test result: FAILED.")
                        .trim()
                        .strip_suffix(word)
                        .map(str::trim)
                })
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0)
        };
        p += count("passed");
        f += count("failed");
        s += count("ignored");
    }
    found.then_some((p, f, s))
}

/// CI keeps only the console, so a failed host test is named there with
/// what it printed (libtest's `---- name stdout ----` sections).
fn show_failed_tests(output: &str) {
    for line in output
        .lines()
        .filter(|l| l.starts_with("test ") && l.ends_with("FAILED"))
    {
        eprintln!("  FAIL {line}");
    }
    let mut in_section = false;
    for line in output.lines() {
        if line.starts_with("---- ") && line.ends_with(" stdout ----") {
            in_section = true;
        } else if line == "failures:" || line.starts_with("test result:") {
            in_section = false;
        }
        if in_section {
            eprintln!("    {line}");
        }
    }
}

fn show_output_on_failure(out: &std::process::Output) {
    if !out.status.success() {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for line in text.lines().take(30) {
            eprintln!("      | {line}");
        }
    }
}

/// Workspace crates that belong to `only`: those whose name contains it,
/// or its first word (`beluga_dax` selects `beluga-*` crates), with `-`
/// and `_` taken as the same.
fn crates_for(only: &str) -> Result<Vec<String>> {
    let metadata = crate::util::output(Command::new("cargo").current_dir(repo_root()).args([
        "metadata",
        "--no-deps",
        "--format-version",
        "1",
    ]))?;
    let metadata: serde_json::Value = serde_json::from_str(&metadata)?;
    let norm = |s: &str| s.replace('-', "_");
    let only = norm(only);
    let first_word = only.split('_').next().unwrap_or_default().to_string();
    Ok(metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .filter(|name| {
            let name = norm(name);
            name.contains(&only)
                || (!first_word.is_empty() && name.split('_').next() == Some(first_word.as_str()))
        })
        .map(str::to_string)
        .collect())
}

fn cargo_tests(tally: &mut Tally, only: Option<&str>) -> Result<()> {
    let root = repo_root();
    let mut cargo_test = Command::new("cargo");
    cargo_test
        .current_dir(&root)
        .args(["test", "--color", "never"]);
    match only {
        None => {
            cargo_test.arg("--workspace");
        }
        Some(only) => {
            let crates = crates_for(only)?;
            if crates.is_empty() {
                eprintln!("  host cargo test: no workspace crate matches '{only}'");
                return Ok(());
            }
            for name in &crates {
                cargo_test.args(["-p", name]);
            }
        }
    }
    let out = cargo_test.output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(crate::util::out_dir().join("cargo-test.log"), &text)?;
    match cargo_test_counts(&text) {
        Some((p, f, s)) => {
            tally.add_counts(p, f, s, "host cargo test");
            show_failed_tests(&text);
            if !out.status.success() && f == 0 {
                tally.check("host cargo test exits 0", false);
            }
        }
        None => {
            eprintln!("{text}");
            tally.check("host cargo test builds", false);
        }
    }
    Ok(())
}

fn host_checks(tally: &mut Tally, only: Option<&str>) -> Result<()> {
    let root = repo_root();
    cargo_tests(tally, only)?;
    let fmt = Command::new("cargo")
        .current_dir(&root)
        .args(["fmt", "--all", "--", "--check"])
        .output()?;
    show_output_on_failure(&fmt);
    tally.check("host: cargo fmt --check", fmt.status.success());
    let kernel_sources = crate::modules::crate_roots();
    let rustfmt = Command::new("rustfmt")
        .args(["--edition", "2021", "--check"])
        .args(&kernel_sources)
        .output()?;
    show_output_on_failure(&rustfmt);
    tally.check("modules: rustfmt --check", rustfmt.status.success());
    let clippy = Command::new("cargo")
        .current_dir(&root)
        .args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--quiet",
            "--",
            "-D",
            "warnings",
        ])
        .status()?;
    tally.check("host: cargo clippy -D warnings", clippy.success());
    let bare = crate::lint::bare_negations(&root)?;
    for line in &bare {
        eprintln!("  bare negative check (a no-op under set -e): {line}");
    }
    tally.check("guest scripts: no bare `! cmd` checks", bare.is_empty());
    Ok(())
}

/// Boots, or records the failure to boot as a failed check.
fn boot_or_record(
    tally: &mut Tally,
    label: &str,
    tree: &kernel::KernelTree,
    initramfs: &std::path::Path,
    opts: VmOptions,
) -> Option<Vec<HostRun>> {
    match vm::boot(tree, initramfs, &opts) {
        Ok(runs) => Some(runs),
        Err(err) => {
            eprintln!("    {err:#}");
            tally.check(&format!("{label}: boot"), false);
            None
        }
    }
}

fn record_boot(tally: &mut Tally, label: &str, run: &HostRun) {
    tally.check(
        &format!("{label}: guest init finished ({})", run.describe_exit()),
        run.finished(),
    );
    let trouble = run.report.kernel_trouble();
    for line in &trouble {
        eprintln!("    kernel: {line}");
    }
    tally.check(
        &format!("{label}: kernel log has no oops/BUG/WARNING"),
        run.finished() && trouble.is_empty(),
    );
}

fn kunit_cases(run: &HostRun) -> Vec<ktap::CaseResult> {
    run.report
        .blocks("kunit")
        .flat_map(|b| ktap::parse(&b.text))
        .collect()
}

fn vm_tests(
    tally: &mut Tally,
    tree: &kernel::KernelTree,
    initramfs: &std::path::Path,
    opts: &TestOptions,
) -> Result<()> {
    let Some(runs) = boot_or_record(
        tally,
        "vm",
        tree,
        initramfs,
        VmOptions {
            only: opts.only.clone(),
            ..VmOptions::new(Mode::Test, 1, opts.timeout)
        },
    ) else {
        return Ok(());
    };
    let run = &runs[0];
    record_boot(tally, "vm", run);
    let wanted = |name: &str| opts.only.as_deref().is_none_or(|only| name.contains(only));
    record_scenarios(tally, run, "scenario", &wanted);
    let cases = kunit_cases(run);
    tally.check(
        "kunit: support-layer suites reported results",
        cases
            .iter()
            .any(|c| c.name.starts_with("cxlfabric_support_kunit.")),
    );
    for case in cases.iter().filter(|c| wanted(&c.name)) {
        tally.record(&format!("kunit {}", case.name), case.outcome);
    }
    Ok(())
}

/// Boots with the deliberately failing KUnit module and scenario, and
/// checks that the harness sees exactly those failures. Its own outcome is
/// a pass when the failures were seen.
fn selftest(
    tally: &mut Tally,
    tree: &kernel::KernelTree,
    initramfs: &std::path::Path,
    opts: &TestOptions,
) -> Result<()> {
    let Some(runs) = boot_or_record(
        tally,
        "selftest",
        tree,
        initramfs,
        VmOptions::new(Mode::Selftest, 1, opts.timeout),
    ) else {
        return Ok(());
    };
    let run = &runs[0];
    tally.check("selftest: guest init finished", run.finished());
    let cases = kunit_cases(run);
    let outcome_of = |name: &str| cases.iter().find(|c| c.name == name).map(|c| c.outcome);
    tally.check(
        "selftest: passing KUnit case reported as passed",
        outcome_of("cxlfabric_selftest.selftest_passes") == Some(Outcome::Pass),
    );
    tally.check(
        "selftest: failed KUnit assertion reported as failed",
        outcome_of("cxlfabric_selftest.selftest_fails_assertion") == Some(Outcome::Fail),
    );
    tally.check(
        "selftest: KUnit case returning Err reported as failed",
        outcome_of("cxlfabric_selftest.selftest_fails_by_error") == Some(Outcome::Fail),
    );
    let scenario = |name: &str| {
        run.report
            .scenarios
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.outcome)
    };
    tally.check(
        "selftest: failing scenario reported as failed",
        scenario("fails_on_purpose") == Some(Outcome::Fail),
    );
    tally.check(
        "selftest: passing scenario reported as passed",
        scenario("passes") == Some(Outcome::Pass),
    );
    Ok(())
}

/// Two VMs on one pool: each host's scenarios count separately.
fn multihost(
    tally: &mut Tally,
    tree: &kernel::KernelTree,
    initramfs: &std::path::Path,
    opts: &TestOptions,
) -> Result<()> {
    let Some(runs) = boot_or_record(
        tally,
        "two hosts",
        tree,
        initramfs,
        // Every two-host scenario runs: later ones use what earlier ones
        // left (47's channels in 50).
        VmOptions::new(Mode::Multihost, 2, opts.timeout),
    ) else {
        return Ok(());
    };
    for run in &runs {
        let label = format!("host{}", run.host);
        record_boot(tally, &label, run);
        tally.check(
            &format!("{label}: ran the multi-host scenarios"),
            !run.report.scenarios.is_empty(),
        );
        let wanted = |name: &str| {
            opts.only
                .as_deref()
                .is_none_or(|o| selects(o, "multihost", name))
        };
        record_scenarios(tally, run, &format!("{label}: scenario"), &wanted);
    }
    Ok(())
}

/// Counts a boot's scenarios (those `wanted` by name), showing the output of
/// each that failed.
fn record_scenarios(tally: &mut Tally, run: &HostRun, prefix: &str, wanted: &dyn Fn(&str) -> bool) {
    for scenario in run.report.scenarios.iter().filter(|s| wanted(&s.name)) {
        tally.record(&format!("{prefix} {}", scenario.name), scenario.outcome);
        if scenario.outcome == Outcome::Fail {
            print_scenario_output(run, &scenario.name);
        }
    }
}

fn print_scenario_output(run: &HostRun, name: &str) {
    for block in run
        .report
        .blocks("scenario-output")
        .filter(|b| b.name == name)
    {
        for line in excerpt(&block.text) {
            eprintln!("      | {line}");
        }
    }
}

/// What a failed scenario's traced output (`sh -x`) shows: first the
/// lines before an exit trap's `set +x` (the command that failed, which
/// the trap's own output can bury), then the output's end.
fn excerpt(text: &str) -> Vec<&str> {
    const BEFORE: usize = 8;
    const TAIL: usize = 20;
    let lines: Vec<&str> = text.lines().collect();
    let tail_from = lines.len().saturating_sub(TAIL);
    let trap = lines
        .iter()
        .rposition(|l| l.trim_start_matches('+').trim() == "set +x");
    let mut out = Vec::new();
    if let Some(t) = trap.filter(|&t| t < tail_from) {
        out.push("(the commands before the failure, then the output's end)");
        out.extend(&lines[t.saturating_sub(BEFORE)..t]);
        out.push("...");
    }
    out.extend(&lines[tail_from..]);
    out
}

/// Whether filter `only` selects scenario `name` of directory `dir`
/// (`tests/vm/<dir>`): by a part of its name, or by the directory's name.
fn selects(only: &str, dir: &str, name: &str) -> bool {
    name.contains(only) || dir == only
}

/// The scenarios of `tests/vm/<dir>`, by name.
fn scenario_names(dir: &str) -> Result<Vec<String>> {
    let mut names: Vec<String> =
        std::fs::read_dir(crate::util::repo_root().join("tests/vm").join(dir))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".sh").map(str::to_string)
            })
            .collect();
    names.sort();
    Ok(names)
}

/// `cargo xtask test --list [--only X]`: what the filter selects.
pub fn list(only: Option<&str>) -> Result<()> {
    let crates = match only {
        None => vec!["(the whole workspace)".to_string()],
        Some(o) => crates_for(o)?,
    };
    println!("host crates: {}", crates.join(", "));
    for (dir, label) in [("scenarios", "one host"), ("multihost", "two hosts")] {
        let names: Vec<String> = scenario_names(dir)?
            .into_iter()
            .filter(|n| only.is_none_or(|o| selects(o, dir, n)))
            .collect();
        println!("scenarios ({label}): {}", names.join(", "));
    }
    match only {
        None => println!("kunit: every case of every suite"),
        Some(o) => println!("kunit: cases whose name contains '{o}'"),
    }
    Ok(())
}

pub fn test(opts: TestOptions) -> Result<()> {
    let mut phases = Phases::default();
    let mut tally = Tally::default();
    std::fs::create_dir_all(crate::util::out_dir())?;

    phases.time("setup", setup::setup)?;
    let tree = phases.time("kernel", || kernel::ensure(opts.flavor))?;
    phases.time("host tests", || {
        host_checks(&mut tally, opts.only.as_deref())
    })?;
    let built = phases.time("module build", || {
        let clippy = modules::build(&tree, true);
        tally.check("modules build with CLIPPY=1, no warnings", clippy.is_ok());
        let plain = modules::build(&tree, false);
        tally.check("modules build, no warnings", plain.is_ok());
        if plain.is_ok() {
            let linked = crate::linkcheck::check();
            if let Err(err) = &linked {
                eprintln!("    {err:#}");
            }
            tally.check("modules link only their subsystems (nm -u)", linked.is_ok());
        }
        Ok(plain.is_ok())
    })?;
    phases.time("dkms", || {
        let result = crate::dkms::check(&tree);
        if let Err(err) = &result {
            eprintln!("    {err:#}");
        }
        tally.check("dkms add + build against the cached kernel", result.is_ok());
        Ok(())
    })?;
    if built {
        let initramfs = phases.time("initramfs", vm::build_initramfs)?;
        phases.time("device model", crate::nicmodel::build)?;
        phases.time("vm: KUnit + scenarios", || {
            vm_tests(&mut tally, &tree, &initramfs, &opts)
        })?;
        phases.time("vm: harness self-test", || {
            selftest(&mut tally, &tree, &initramfs, &opts)
        })?;
        let two_hosts = match opts.only.as_deref() {
            None => true,
            Some(o) => scenario_names("multihost")?
                .iter()
                .any(|n| selects(o, "multihost", n)),
        };
        if two_hosts {
            phases.time("vm: two hosts, one pool", || {
                multihost(&mut tally, &tree, &initramfs, &opts)
            })?;
        }
    }
    phases.summary();
    if !tally.failures.is_empty() {
        eprintln!("failures:");
        for f in &tally.failures {
            eprintln!("  {f}");
        }
    }
    println!(
        "{} passed, {} failed, {} skipped",
        tally.passed, tally.failed, tally.skipped
    );
    if tally.failed > 0 {
        bail!("{} test(s) failed", tally.failed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_cargo_test_result_lines() {
        let out = "test result: ok. 5 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n\
                   test result: FAILED. 2 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(cargo_test_counts(out), Some((7, 3, 1)));
        assert_eq!(cargo_test_counts("error: could not compile"), None);
    }

    #[test]
    fn tally_counts_failures() {
        let mut t = Tally::default();
        t.check("a", true);
        t.check("b", false);
        t.record("c", Outcome::Skip);
        assert_eq!((t.passed, t.failed, t.skipped), (1, 1, 1));
        assert_eq!(t.failures, vec!["b".to_string()]);
    }

    #[test]
    fn a_failed_command_before_a_long_trap_is_shown_first() {
        let mut text = String::from("+ setup\n+ test 3 -gt 5\n+ nic_debug\n+ set +x\n");
        for i in 0..40 {
            text.push_str(&format!("dmesg {i}\n"));
        }
        let shown = excerpt(&text);
        assert!(shown[..6].contains(&"+ test 3 -gt 5"));
        assert_eq!(shown.last(), Some(&"dmesg 39"));
        assert!(!shown.contains(&"dmesg 19"));
        // Short output, or no trap: the end alone.
        assert_eq!(excerpt("+ a\n+ set +x\nx\n"), vec!["+ a", "+ set +x", "x"]);
        assert_eq!(excerpt("+ a\nb\n"), vec!["+ a", "b"]);
    }
}
