//! DKMS check: `dkms add` + `dkms build` of a clean copy of the module
//! sources against the cached kernel tree, then `dkms remove`, as an
//! operator would do it (standard /usr/src and /var/lib/dkms).

use crate::kernel::KernelTree;
use crate::util::{repo_root, run, run_logged};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::Path;
use std::process::Command;

/// What the DKMS package ships besides the modules' own directories.
const COMMON_SOURCES: &[&str] = &[
    "Makefile",
    "Kbuild",
    "dkms.conf",
    "scripts",
    "support",
    "common",
    "uapi",
];

/// What the DKMS package ships: the Kbuild tree of the modules.
fn sources() -> Vec<&'static str> {
    let mut sources = COMMON_SOURCES.to_vec();
    for module in crate::modules::all() {
        if !sources.contains(&module.dir.as_str()) {
            sources.push(&module.dir);
        }
    }
    sources
}

fn package() -> Result<(String, String)> {
    let conf = fs::read_to_string(repo_root().join("dkms.conf"))?;
    let field = |key: &str| {
        conf.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(|v| v.trim_matches('"').to_string())
            .with_context(|| format!("dkms.conf has no {key}"))
    };
    Ok((field("PACKAGE_NAME")?, field("PACKAGE_VERSION")?))
}

fn is_source(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    matches!(name, "Kbuild" | "Makefile" | "dkms.conf" | "parameters")
        || matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("rs" | "c" | "h" | "mk")
        )
}

fn copy_sources(src: &Path, dest: &Path) -> Result<()> {
    if src.is_dir() {
        fs::create_dir_all(dest)?;
        for entry in fs::read_dir(src)? {
            let entry = entry?;
            copy_sources(&entry.path(), &dest.join(entry.file_name()))?;
        }
    } else if is_source(src) {
        fs::copy(src, dest)?;
    }
    Ok(())
}

fn dkms(args: &[&str]) -> Command {
    let mut cmd = Command::new("dkms");
    cmd.args(args);
    cmd
}

pub fn check(tree: &KernelTree) -> Result<()> {
    let (name, version) = package()?;
    let release = tree.release()?;
    let id = format!("{name}/{version}");
    let staged = Path::new("/usr/src").join(format!("{name}-{version}"));
    let log_dir = crate::util::out_dir();
    // Leftovers from an interrupted run would make `dkms add` fail.
    let _ = dkms(&["remove", &id, "--all"]).output();
    if staged.exists() {
        fs::remove_dir_all(&staged)?;
    }
    fs::create_dir_all(&staged)?;
    for item in sources() {
        copy_sources(&repo_root().join(item), &staged.join(item))?;
    }
    let result = (|| {
        run_logged(
            &mut dkms(&["add", "-m", &name, "-v", &version]),
            &log_dir.join("dkms-add.log"),
        )?;
        let build = run_logged(
            dkms(&["build", "-m", &name, "-v", &version, "-k", &release])
                .arg(format!("--kernelsourcedir={}", tree.dir.display())),
            &log_dir.join("dkms-build.log"),
        );
        if build.is_err() {
            // `dkms remove` below deletes it; keep the compiler's words.
            let make_log = Path::new("/var/lib/dkms")
                .join(&name)
                .join(&version)
                .join("build/make.log");
            let kept = log_dir.join("dkms-make.log");
            if fs::copy(&make_log, &kept).is_ok() {
                crate::util::print_tail(&kept, 30);
            }
        }
        build?;
        let built = Path::new("/var/lib/dkms")
            .join(&name)
            .join(&version)
            .join(&release)
            .join("x86_64/module");
        for module in crate::modules::names(crate::modules::Kind::Product) {
            if !built.join(format!("{module}.ko")).exists()
                && !built.join(format!("{module}.ko.xz")).exists()
            {
                bail!(
                    "dkms build did not produce {module}.ko in {}",
                    built.display()
                );
            }
        }
        Ok(())
    })();
    run(&mut dkms(&["remove", &id, "--all"])).ok();
    fs::remove_dir_all(&staged).ok();
    result
}
