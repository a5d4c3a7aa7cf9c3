//! Checks on the guest scripts that no shell catches by itself.

use anyhow::Result;
use std::fs;
use std::path::Path;

/// Directories of guest scripts whose lines run under `set -e`.
const SCRIPT_DIRS: [&str; 3] = ["tests/vm/scenarios", "tests/vm/multihost", "tests/vm/bench"];

/// Whether `line` is a negative check that cannot fail its script:
/// `set -e` ignores a pipeline that begins with `!` (POSIX), so a bare
/// `! cmd` is a no-op unless something after it acts on the status.
fn is_bare_negation(line: &str) -> bool {
    let code = line.trim_start();
    code.starts_with("! ") && !code.contains("||") && !code.ends_with("&&")
}

/// `file:line: text` of every bare negative check in `text`.
fn bare_negations_in(name: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| is_bare_negation(line))
        .map(|(i, line)| format!("{name}:{}: {}", i + 1, line.trim()))
        .collect()
}

/// Every bare negative check in the guest scripts under `root`.
pub fn bare_negations(root: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for dir in SCRIPT_DIRS {
        let Ok(entries) = fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        {
            let name = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            found.extend(bare_negations_in(&name, &fs::read_to_string(path)?));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_bare_negations_only() {
        let script = "set -e\n! test -e /x\n\t! grep -q a b\n! cmd || exit 1\nrefute cmd\n# ! comment\nif ! cmd; then :; fi\n";
        let found = bare_negations_in("s.sh", script);
        assert_eq!(found, ["s.sh:2: ! test -e /x", "s.sh:3: ! grep -q a b"]);
    }
}
