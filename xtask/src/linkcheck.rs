//! Each module links only what it uses: `nm -u` on every built `.ko`
//! lists the symbols it takes from the kernel, and a module that takes
//! one of a subsystem it has no business with fails (say a support part
//! its Kbuild names by mistake, or one part dragging in another).
//!
//! The rule is [`FORBIDDEN`]: which subsystems a module must not
//! reference. A subsystem is known by the prefixes of its symbols
//! ([`SUBSYSTEMS`]).

use crate::modules::{self, Kind};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// A kernel subsystem, by the prefixes of the symbols it exports.
struct Subsystem {
    name: &'static str,
    prefixes: &'static [&'static str],
}

/// The subsystems the rule names.
const SUBSYSTEMS: &[Subsystem] = &[
    Subsystem {
        name: "dax",
        prefixes: &["dax_", "__dax_", "kill_dev_dax", "devm_create_dev_dax"],
    },
    Subsystem {
        name: "pci",
        prefixes: &["pci_", "__pci_", "pcim_", "pcie_", "pcibios_"],
    },
    Subsystem {
        name: "napi",
        prefixes: &[
            "napi_",
            "__napi_",
            "netif_napi_",
            "gro_",
            "netif_receive_skb",
        ],
    },
    // Before `netdev`, whose `netdev_` would take these: claiming
    // interfaces other drivers own (support's `netlend`).
    Subsystem {
        name: "netlend",
        prefixes: &[
            "netdev_rx_handler_",
            "netdev_is_rx_handler_busy",
            "netdev_get_by_name",
            "register_netdevice_notifier",
            "unregister_netdevice_notifier",
            "dev_uc_",
        ],
    },
    Subsystem {
        name: "netdev",
        prefixes: &[
            "alloc_etherdev",
            "register_netdev",
            "unregister_netdev",
            "free_netdev",
            "netif_",
            "__netif_",
            "ethtool_",
            "eth_",
            "rtnl_",
            "dev_queue_xmit",
            "__dev_queue_xmit",
            "dev_get_stats",
            "netdev_",
        ],
    },
];

/// Which subsystems each product module must not reference.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("beluga_dax", &["pci", "napi", "netdev", "netlend"]),
    (
        "mchannel_sched",
        &["dax", "pci", "napi", "netdev", "netlend"],
    ),
    ("cxlnic_drv", &["dax", "netlend"]),
    ("drack_netdev", &["dax", "pci"]),
];

/// The subsystem `symbol` belongs to, of those named in [`SUBSYSTEMS`].
fn subsystem_of(symbol: &str) -> Option<&'static str> {
    SUBSYSTEMS
        .iter()
        .find(|s| s.prefixes.iter().any(|p| symbol.starts_with(p)))
        .map(|s| s.name)
}

/// The symbols of `undefined` (one per line, as `nm -u` prints them)
/// that module `module` must not reference, with their subsystem.
fn violations(module: &str, undefined: &str) -> Vec<(String, &'static str)> {
    let Some((_, forbidden)) = FORBIDDEN.iter().find(|(m, _)| *m == module) else {
        return Vec::new();
    };
    undefined
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter_map(|sym| {
            let sub = subsystem_of(sym)?;
            forbidden.contains(&sub).then(|| (sym.to_string(), sub))
        })
        .collect()
}

/// `nm -u` of `ko`.
fn undefined_symbols(ko: &Path) -> Result<String> {
    let out = Command::new("nm")
        .arg("-u")
        .arg(ko)
        .output()
        .with_context(|| format!("cannot run nm -u {}", ko.display()))?;
    if !out.status.success() {
        bail!(
            "nm -u {}: {}",
            ko.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Checks every built product module against [`FORBIDDEN`].
pub fn check() -> Result<()> {
    let mut failures = Vec::new();
    for module in modules::all().iter().filter(|m| m.kind == Kind::Product) {
        if !FORBIDDEN.iter().any(|(m, _)| *m == module.name) {
            failures.push(format!("{}: no rule in linkcheck.rs", module.name));
            continue;
        }
        let undefined = undefined_symbols(&modules::ko_path(module))?;
        for (sym, sub) in violations(&module.name, &undefined) {
            failures.push(format!("{}: references {sym} ({sub})", module.name));
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("    {f}");
        }
        bail!("{} forbidden reference(s)", failures.len());
    }
    eprintln!("modules: each links only its subsystems (nm -u)");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forbidden_symbol_is_reported() {
        let nm = "                 U __pci_register_driver\n                 U _printk\n";
        assert_eq!(
            violations("mchannel_sched", nm),
            vec![("__pci_register_driver".to_string(), "pci")]
        );
        assert!(violations("cxlnic_drv", nm).is_empty());
    }

    #[test]
    fn claiming_a_lent_interface_is_netlend_not_netdev() {
        let nm = "                 U netdev_rx_handler_register
                 U netdev_put
";
        assert_eq!(
            violations("cxlnic_drv", nm),
            vec![("netdev_rx_handler_register".to_string(), "netlend")]
        );
        assert!(violations("drack_netdev", nm).is_empty());
    }

    #[test]
    fn every_named_subsystem_exists() {
        for (module, subs) in FORBIDDEN {
            for sub in *subs {
                assert!(SUBSYSTEMS.iter().any(|s| s.name == *sub), "{module}: {sub}");
            }
        }
    }

    #[test]
    fn every_product_module_has_a_rule() {
        for name in modules::names(Kind::Product) {
            assert!(FORBIDDEN.iter().any(|(m, _)| *m == name), "{name}");
        }
    }
}
