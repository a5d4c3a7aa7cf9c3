//! Recording the part of sysfs that cxlctl reads, and laying a recording
//! out as a directory tree again, so the topology code can be tested on the
//! host against what a real (emulated) machine showed.

use crate::sysfs::Sysfs;
use crate::topology::{attributes, kind_of, links, CXL_DEVICES, DAX_DEVICES};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Serialize, Deserialize, Default, Debug)]
pub struct Snapshot {
    /// Symlinks, by path relative to the sysfs root, to their target text.
    pub links: BTreeMap<String, String>,
    /// Attribute files, by path, to their contents.
    pub files: BTreeMap<String, String>,
}

pub fn record(sys: &Sysfs) -> Result<Snapshot> {
    let mut snap = Snapshot::default();
    for bus in [CXL_DEVICES, DAX_DEVICES] {
        if !sys.exists(bus) {
            continue;
        }
        for name in sys.list(bus)? {
            let entry = format!("{bus}/{name}");
            let target = std::fs::read_link(sys.path(&entry))
                .with_context(|| format!("{entry} is not a link"))?;
            snap.links
                .insert(entry.clone(), target.to_string_lossy().into_owned());
            let dir = sys.canonical(&entry)?;
            let kind = kind_of(&name);
            for attr in attributes(kind) {
                if let Some(value) = sys.read_opt(&format!("{dir}/{attr}")) {
                    snap.files.insert(format!("{dir}/{attr}"), value);
                }
            }
            for link in links(kind) {
                if let Ok(t) = std::fs::read_link(sys.path(&format!("{dir}/{link}"))) {
                    snap.links
                        .insert(format!("{dir}/{link}"), t.to_string_lossy().into_owned());
                }
            }
            // Keep even attribute-less devices' directories.
            snap.files.entry(format!("{dir}/.cxlctl-dir")).or_default();
        }
    }
    Ok(snap)
}

/// Lays a snapshot out below `dir` (files, directories and symlinks).
pub fn materialize(snap: &Snapshot, dir: &Path) -> Result<()> {
    for (path, value) in &snap.files {
        let full = dir.join(path);
        std::fs::create_dir_all(full.parent().unwrap())?;
        std::fs::write(&full, format!("{value}\n"))?;
    }
    for (path, target) in &snap.links {
        let full = dir.join(path);
        std::fs::create_dir_all(full.parent().unwrap())?;
        std::os::unix::fs::symlink(target, &full)
            .with_context(|| format!("symlink {}", full.display()))?;
    }
    Ok(())
}
