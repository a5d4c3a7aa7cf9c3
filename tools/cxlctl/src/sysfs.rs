//! Access to a sysfs tree rooted anywhere (the live `/sys`, or a recorded
//! tree in tests), with errors that name the file and the errno.

use anyhow::{anyhow, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Sysfs {
    root: PathBuf,
}

fn errno_name(err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(raw) => format!("{} ({})", nix::errno::Errno::from_raw(raw), err),
        None => err.to_string(),
    }
}

impl Sysfs {
    pub fn new(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `bus/cxl/devices/<name>` and the like, relative to the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// The attribute's value, trimmed; `None` if it does not exist or cannot
    /// be read (sysfs hides attributes a device type does not have).
    pub fn read_opt(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.path(rel))
            .ok()
            .map(|s| s.trim().to_string())
    }

    pub fn read(&self, rel: &str) -> Result<String> {
        fs::read_to_string(self.path(rel))
            .map(|s| s.trim().to_string())
            .map_err(|e| anyhow!("reading {}: {}", self.path(rel).display(), errno_name(&e)))
    }

    pub fn write(&self, rel: &str, value: &str) -> Result<()> {
        fs::write(self.path(rel), value).map_err(|e| {
            anyhow!(
                "writing '{value}' to {}: {}",
                self.path(rel).display(),
                errno_name(&e)
            )
        })
    }

    /// Names in a directory, sorted naturally (`decoder2.10` after `decoder2.9`).
    pub fn list(&self, rel: &str) -> Result<Vec<String>> {
        let dir = self.path(rel);
        let mut names: Vec<String> = fs::read_dir(&dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_by_key(|a| natural_key(a));
        Ok(names)
    }

    /// The canonical location of `rel` below the root, as a relative path
    /// with `/` separators (sysfs bus entries are symlinks into `devices/`).
    pub fn canonical(&self, rel: &str) -> Result<String> {
        let root = fs::canonicalize(&self.root)?;
        let full = fs::canonicalize(self.path(rel))
            .with_context(|| format!("resolving {}", self.path(rel).display()))?;
        Ok(full
            .strip_prefix(&root)
            .unwrap_or(&full)
            .to_string_lossy()
            .into_owned())
    }

    /// The last component of a symlink's target, e.g. `uport` -> `mem0`.
    pub fn link_name(&self, rel: &str) -> Option<String> {
        fs::read_link(self.path(rel))
            .ok()
            .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()))
    }
}

/// Splits a name into text and number runs so that numbers sort by value.
pub fn natural_key(name: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let mut n = c.to_digit(10).unwrap() as u64;
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(d as u64);
                chars.next();
            }
            key.push((std::mem::take(&mut text), n));
        } else {
            text.push(c);
        }
    }
    key.push((text, 0));
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut v = vec!["decoder2.10", "decoder2.9", "decoder10.0", "decoder2.0"];
        v.sort_by_key(|a| natural_key(a));
        assert_eq!(
            v,
            vec!["decoder2.0", "decoder2.9", "decoder2.10", "decoder10.0"]
        );
    }

    #[test]
    fn write_error_names_file_and_errno() {
        let s = Sysfs::new("/nonexistent-cxlctl-root");
        let err = s.write("bus/cxl/x", "1").unwrap_err().to_string();
        assert!(err.contains("/nonexistent-cxlctl-root/bus/cxl/x"), "{err}");
        assert!(err.contains("ENOENT"), "{err}");
    }
}
