//! The modules and `cargo xtask build`.
//!
//! The Kbuild files are the one list of modules: the top-level `Kbuild`
//! names their directories, each directory's `Kbuild` its modules and
//! their objects. Everything else derives from them (what the initramfs
//! carries and the guest init loads, DKMS's sources and checks, rustfmt's
//! crate roots, the modules whose kmemleak reports count), and the host
//! tests below fail if `dkms.conf` or a guest script disagrees.
//!
//! `cargo xtask build` builds them out of tree against the cached kernel,
//! with and without `CLIPPY=1`. A warning fails the build.

use crate::kernel::KernelTree;
use crate::util::{nproc, out_dir, repo_root};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// What a module is for. Kbuild says it: the directories of the top-level
/// `Kbuild` other than `kunit/` hold the product modules; in `kunit/`, a
/// name ending in `_kunit` is a KUnit module, one ending in `_selftest`
/// the harness self-test, anything else a test helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Loaded by the demo, in Kbuild order; packaged by DKMS.
    Product,
    /// Loaded in every test boot (the support layer's carries its test
    /// device).
    Kunit,
    /// Fails on purpose; loaded only in the self-test boot.
    Selftest,
    /// Loaded by scenarios that need a module using a product's API.
    Helper,
}

impl Kind {
    /// The word for this kind in the guest's module list.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Product => "product",
            Kind::Kunit => "kunit",
            Kind::Selftest => "selftest",
            Kind::Helper => "helper",
        }
    }
}

/// One module, as Kbuild builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    pub name: String,
    pub kind: Kind,
    /// Its directory, relative to the repository.
    pub dir: String,
    /// Its Rust crate root, relative to the repository.
    pub crate_root: String,
}

/// The directory of the test modules.
const TEST_DIR: &str = "kunit";

/// The tokens of every `obj-m += ...` (or `:=`) line of a Kbuild file.
fn obj_m(kbuild: &str) -> Vec<&str> {
    kbuild
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("obj-m")?.trim_start();
            rest.strip_prefix("+=").or_else(|| rest.strip_prefix(":="))
        })
        .flat_map(str::split_whitespace)
        .collect()
}

/// The objects of composite module `name` (`name-y := a.o b.o`), if any.
fn parts<'a>(kbuild: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!("{name}-y");
    kbuild
        .lines()
        .filter_map(|l| {
            let (lhs, rhs) = l.split_once(":=").or_else(|| l.split_once("+="))?;
            (lhs.trim() == key).then_some(rhs)
        })
        .flat_map(str::split_whitespace)
        .collect()
}

/// Every module the Kbuild files under `root` build, in Kbuild order: the
/// directories of the top-level `Kbuild`, then each directory's `obj-m`.
/// The crate root of a module is the one of its objects with a `.rs`
/// source.
pub fn parse(root: &Path) -> Result<Vec<Module>> {
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    };
    let top = read(root.join("Kbuild"))?;
    let mut modules = Vec::new();
    for dir in obj_m(&top) {
        let Some(dir) = dir.strip_suffix('/') else {
            bail!("Kbuild: {dir} is not a directory (a module belongs in its own directory)");
        };
        let kbuild = read(root.join(dir).join("Kbuild"))?;
        for object in obj_m(&kbuild) {
            let Some(name) = object.strip_suffix(".o") else {
                bail!("{dir}/Kbuild: obj-m entry {object} is not an object");
            };
            let mut objects = parts(&kbuild, name);
            if objects.is_empty() {
                objects.push(object);
            }
            let roots: Vec<String> = objects
                .iter()
                .filter_map(|o| o.strip_suffix(".o"))
                .map(|o| format!("{dir}/{o}.rs"))
                .filter(|rs| root.join(rs).exists())
                .collect();
            let [crate_root] = roots.as_slice() else {
                bail!("{dir}/Kbuild: module {name} needs exactly one Rust object, found {roots:?}");
            };
            let kind = if dir != TEST_DIR {
                Kind::Product
            } else if name.ends_with("_kunit") {
                Kind::Kunit
            } else if name.ends_with("_selftest") {
                Kind::Selftest
            } else {
                Kind::Helper
            };
            modules.push(Module {
                name: name.to_string(),
                kind,
                dir: dir.to_string(),
                crate_root: crate_root.clone(),
            });
        }
    }
    if !modules.iter().any(|m| m.kind == Kind::Product) {
        bail!("Kbuild lists no product module");
    }
    Ok(modules)
}

/// Every module of this repository, from its Kbuild files: the one list
/// of modules (xtask, the guest's `modules.list`, DKMS's check).
pub fn all() -> &'static [Module] {
    static ALL: OnceLock<Vec<Module>> = OnceLock::new();
    ALL.get_or_init(|| {
        parse(&repo_root()).unwrap_or_else(|e| panic!("the module list (Kbuild): {e:#}"))
    })
}

/// The names of the modules of one kind, in Kbuild order.
pub fn names(kind: Kind) -> Vec<&'static str> {
    all()
        .iter()
        .filter(|m| m.kind == kind)
        .map(|m| m.name.as_str())
        .collect()
}

/// Path of a built `.ko`.
pub fn ko_path(module: &Module) -> PathBuf {
    repo_root()
        .join(&module.dir)
        .join(format!("{}.ko", module.name))
}

/// The support crate's root, built into the modules (not a workspace
/// member, so `cargo fmt` does not see it).
pub const SUPPORT_ROOT: &str = "support/lib.rs";

/// The crate root of every module and of the support crate (rustfmt
/// follows their `mod`s).
pub fn crate_roots() -> Vec<PathBuf> {
    all()
        .iter()
        .map(|m| repo_root().join(&m.crate_root))
        .chain([repo_root().join(SUPPORT_ROOT)])
        .collect()
}

/// The guest's module list (`/lib/cxlfabric/modules.list`): `<kind>
/// <name>` per line, in Kbuild order, for `tests/vm/init`.
pub fn guest_list() -> String {
    all()
        .iter()
        .map(|m| format!("{} {}\n", m.kind.word(), m.name))
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
    for module in all() {
        let ko = ko_path(module);
        if !ko.exists() {
            bail!("module build ({label}) did not produce {}", ko.display());
        }
    }
    eprintln!("modules: built ({label}), no warnings");
    Ok(())
}

/// The other places that name modules must agree with Kbuild; these
/// checks run with the host tests (`cargo test -p xtask`).
#[cfg(test)]
mod tests {
    use super::*;

    fn repo_file(path: &str) -> String {
        std::fs::read_to_string(repo_root().join(path)).unwrap()
    }

    fn is_module(name: &str) -> bool {
        all().iter().any(|m| m.name == name)
    }

    #[test]
    fn kbuild_lists_modules_of_every_kind() {
        for kind in [Kind::Product, Kind::Kunit, Kind::Selftest, Kind::Helper] {
            assert!(!names(kind).is_empty(), "no {kind:?} module in Kbuild");
        }
        for m in all() {
            assert!(repo_root().join(&m.crate_root).exists(), "{m:?}");
        }
    }

    /// A module's sources that Kbuild does not build are a module someone
    /// forgot to list: every `*_main.rs` in a module directory, and every
    /// directory with a `Kbuild`, must be Kbuild's.
    #[test]
    fn every_module_source_is_built() {
        let roots: Vec<&str> = all().iter().map(|m| m.crate_root.as_str()).collect();
        let dirs: Vec<&str> = all().iter().map(|m| m.dir.as_str()).collect();
        for entry in std::fs::read_dir(repo_root()).unwrap() {
            let path = entry.unwrap().path();
            let dir = path.file_name().unwrap().to_str().unwrap().to_string();
            if !path.join("Kbuild").exists() {
                continue;
            }
            assert!(
                dirs.contains(&dir.as_str()),
                "{dir}/Kbuild: not in the top-level Kbuild"
            );
            for file in std::fs::read_dir(&path).unwrap() {
                let name = file.unwrap().file_name().into_string().unwrap();
                if name.ends_with("_main.rs") {
                    let source = format!("{dir}/{name}");
                    assert!(
                        roots.contains(&source.as_str()),
                        "{source}: no module builds it"
                    );
                }
            }
        }
    }

    /// dkms.conf packages exactly the product modules, in Kbuild order.
    #[test]
    fn dkms_conf_lists_the_product_modules() {
        let conf = repo_file("dkms.conf");
        let field = |key: &str, i: usize| {
            let prefix = format!("{key}[{i}]=");
            conf.lines()
                .find_map(|l| l.strip_prefix(prefix.as_str()))
                .map(|v| v.trim_matches('"').to_string())
        };
        let products: Vec<&Module> = all().iter().filter(|m| m.kind == Kind::Product).collect();
        for (i, m) in products.iter().enumerate() {
            assert_eq!(
                field("BUILT_MODULE_NAME", i).as_deref(),
                Some(m.name.as_str())
            );
            assert_eq!(
                field("BUILT_MODULE_LOCATION", i),
                Some(format!("{}/", m.dir)),
                "dkms.conf: {}",
                m.name
            );
            assert!(
                field("DEST_MODULE_LOCATION", i).is_some(),
                "dkms.conf: {}",
                m.name
            );
        }
        let entries = conf
            .lines()
            .filter(|l| l.starts_with("BUILT_MODULE_NAME["))
            .count();
        assert_eq!(entries, products.len(), "dkms.conf packages other modules");
    }

    /// The guest init loads modules by kind from the list xtask writes, and
    /// whatever module it or a guest script names is one Kbuild builds. A
    /// loop over product module names (scenario 10) names every product
    /// module, in load order or in reverse.
    #[test]
    fn guest_scripts_agree_with_kbuild() {
        let init = repo_file("tests/vm/init");
        for kind in [Kind::Product, Kind::Kunit, Kind::Selftest] {
            let call = format!("$(modules {})", kind.word());
            assert!(init.contains(&call), "tests/vm/init does not load {call}");
        }
        let products = names(Kind::Product);
        let mut reversed = products.clone();
        reversed.reverse();
        let mut scripts = vec![repo_root().join("tests/vm/init")];
        for sub in ["", "scenarios", "multihost", "selftest", "bench"] {
            for entry in std::fs::read_dir(repo_root().join("tests/vm").join(sub)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "sh") {
                    scripts.push(path);
                }
            }
        }
        for script in scripts {
            let text = std::fs::read_to_string(&script).unwrap();
            let at = |line: &str| format!("{}: {line}", script.display());
            for line in text.lines() {
                let line = line.trim();
                // `/lib/cxlfabric/<name>.ko` and `<name>) insmod ...`.
                for piece in line.split("/lib/cxlfabric/").skip(1) {
                    if let Some((name, _)) = piece.split_once(".ko") {
                        if !name.starts_with('$') {
                            assert!(is_module(name), "{}", at(line));
                        }
                    }
                }
                if let Some((label, _)) = line.split_once(") insmod") {
                    let label = label.trim();
                    if label != "*" {
                        assert!(is_module(label), "{}", at(line));
                    }
                }
                // `for m in a b c; do` over module names.
                if let Some(rest) = line.strip_prefix("for ") {
                    let words: Vec<&str> = rest
                        .split_once(" in ")
                        .map_or("", |(_, w)| w)
                        .trim_end_matches("; do")
                        .split_whitespace()
                        .collect();
                    if words.iter().any(|w| products.contains(w)) {
                        assert!(
                            words == products || words == reversed,
                            "{}: not the product modules {products:?}",
                            at(line)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn parse_reads_composite_modules_and_kinds() {
        let root = std::env::temp_dir().join(format!("xtask-kbuild-{}", std::process::id()));
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("Kbuild", "# x\nobj-m += prod/ kunit/\n");
        write(
            "prod/Kbuild",
            "obj-m += prod.o\nprod-y := prod_main.o helpers.o\n",
        );
        write("prod/prod_main.rs", "");
        write(
            "kunit/Kbuild",
            "obj-m += a_kunit.o b_selftest.o\nobj-m += c.o\n\
             a_kunit-y := a_main.o a_helpers.o\nb_selftest-y := b_main.o\nc-y := c_main.o\n",
        );
        for rs in ["a_main.rs", "b_main.rs", "c_main.rs"] {
            write(&format!("kunit/{rs}"), "");
        }
        let got: Vec<(String, Kind, String)> = parse(&root)
            .unwrap()
            .into_iter()
            .map(|m| (m.name, m.kind, m.crate_root))
            .collect();
        let want = [
            ("prod", Kind::Product, "prod/prod_main.rs"),
            ("a_kunit", Kind::Kunit, "kunit/a_main.rs"),
            ("b_selftest", Kind::Selftest, "kunit/b_main.rs"),
            ("c", Kind::Helper, "kunit/c_main.rs"),
        ]
        .map(|(n, k, r)| (n.to_string(), k, r.to_string()));
        assert_eq!(got, want);
        // A module without a Rust object is refused with its name.
        write("prod/Kbuild", "obj-m += prod.o\nprod-y := helpers.o\n");
        let err = parse(&root).unwrap_err().to_string();
        assert!(err.contains("prod"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
