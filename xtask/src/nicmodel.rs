//! The CXL-NIC device model next to the VMs (`tools/cxlnic-model`): two
//! ports linked to each other, both in host 0 when one VM boots, one per
//! host when two do. Each guest's RAM is a shared file in `/dev/shm`, so
//! that the model reaches it in type1 and pcie modes.

use crate::util::{repo_root, run};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Guest RAM (QEMU's `-m`), backed by a shared file.
pub const GUEST_RAM: &str = "1G";
const GUEST_RAM_BYTES: u64 = 1 << 30;
/// BAR2 of each NIC, MiB (a power of two).
const BAR_MIB: u32 = 16;
/// How long the model may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Builds the model (a host tool).
pub fn build() -> Result<PathBuf> {
    run(Command::new("cargo").current_dir(repo_root()).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "cxlnic-model",
    ]))?;
    Ok(repo_root().join("target/release/cxlnic-model"))
}

/// One NIC port: the host whose VM has it, its socket.
pub struct NicPort {
    pub host: usize,
    pub socket: PathBuf,
}

/// The running model and the files it shares with the VMs; dropping it
/// stops the model and removes them.
pub struct NicModel {
    child: Child,
    pub ports: Vec<NicPort>,
    pub control: PathBuf,
    rams: Vec<PathBuf>,
}

/// The file backing host `host`'s RAM: in /dev/shm (RAM, never written
/// back to disk), named by the run directory's mode and a hash of its
/// full path, so that two checkouts running VMs at once never share one.
pub fn ram_path(run_dir: &Path, host: usize) -> PathBuf {
    use sha2::{Digest, Sha256};
    let mode = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("vm")
        .to_string();
    let full = run_dir
        .canonicalize()
        .unwrap_or_else(|_| run_dir.to_path_buf());
    let digest = Sha256::digest(full.as_os_str().as_encoded_bytes());
    let tag: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    PathBuf::from(format!("/dev/shm/cxlfabric-{mode}-{tag}-ram{host}"))
}

impl NicModel {
    /// Creates the guests' RAM files and starts the model; fails with the
    /// model's own words if it does not come up.
    pub fn start(run_dir: &Path, hosts: usize) -> Result<NicModel> {
        let binary = repo_root().join("target/release/cxlnic-model");
        if !binary.exists() {
            bail!(
                "{} is missing (the harness builds it first)",
                binary.display()
            );
        }
        let mut rams = vec![];
        for host in 0..hosts {
            let path = ram_path(run_dir, host);
            let f = fs::File::create(&path).with_context(|| format!("{}", path.display()))?;
            f.set_len(GUEST_RAM_BYTES)?;
            rams.push(path);
        }
        let ports: Vec<NicPort> = (0..2)
            .map(|i| NicPort {
                host: if hosts > 1 { i } else { 0 },
                socket: run_dir.join(format!("cxlnic{i}.sock")),
            })
            .collect();
        let control = run_dir.join("cxlnic.ctl");
        let ready = run_dir.join("cxlnic.ready");
        let _ = fs::remove_file(&ready);
        let log = fs::File::create(run_dir.join("cxlnic-model.log"))?;
        let mut cmd = Command::new(&binary);
        cmd.arg("serve")
            .arg("--control")
            .arg(&control)
            .arg("--ready-file")
            .arg(&ready);
        for (i, p) in ports.iter().enumerate() {
            cmd.arg("--port").arg(format!(
                "socket={},ram={},link={},bar-mib={BAR_MIB},mac=52:54:00:c1:00:{:02x}",
                p.socket.display(),
                rams[p.host].display(),
                1 - i,
                i + 1
            ));
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start cxlnic-model")?;
        let mut model = NicModel {
            child,
            ports,
            control,
            rams,
        };
        let start = Instant::now();
        while !ready.exists() {
            if let Some(status) = model.child.try_wait()? {
                bail!(
                    "the CXL-NIC device model exited ({status}) before it listened:\n{}",
                    fs::read_to_string(run_dir.join("cxlnic-model.log")).unwrap_or_default()
                );
            }
            if start.elapsed() > START_TIMEOUT {
                bail!(
                    "the CXL-NIC device model did not listen within {} s",
                    START_TIMEOUT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(model)
    }

    /// QEMU arguments for `host`: RAM from the shared file, and its NICs.
    pub fn qemu_args(&self, run_dir: &Path, host: usize) -> Vec<String> {
        let mut args = vec![
            "-object".to_string(),
            format!(
                "memory-backend-file,id=ram0,share=on,mem-path={},size={GUEST_RAM}",
                ram_path(run_dir, host).display()
            ),
            "-machine".to_string(),
            "memory-backend=ram0".to_string(),
        ];
        for (i, p) in self
            .ports
            .iter()
            .enumerate()
            .filter(|(_, p)| p.host == host)
        {
            args.push("-chardev".into());
            args.push(format!("socket,id=cxlnic{i},path={}", p.socket.display()));
            args.push("-device".into());
            args.push(format!(
                "ivshmem-doorbell,chardev=cxlnic{i},vectors={},bus=pcie.0",
                cxlnic_ring::device::VECTORS
            ));
        }
        args
    }

    /// Relays a scenario's `@@ NIC` command (`stop`, `start`, `inject
    /// <port> <fault>`, `poll <idle-max-us>`) to the model's control
    /// socket.
    pub fn command(&self, words: &str) -> Result<()> {
        use std::io::{BufRead, BufReader, Write};
        let w: Vec<&str> = words.split_whitespace().collect();
        let json = match w.as_slice() {
            ["stop"] => "\"stop\"".to_string(),
            ["start"] => "\"start\"".to_string(),
            ["inject", port, fault] => {
                let port: usize = port.parse().context("NIC inject: port")?;
                serde_json::json!({ "inject": { "port": port, "fault": fault } }).to_string()
            }
            ["poll", us] => {
                let us: u64 = us.parse().context("NIC poll: microseconds")?;
                serde_json::json!({ "poll": { "idle_max_us": us } }).to_string()
            }
            _ => bail!("unknown NIC command {words:?}"),
        };
        let mut s = std::os::unix::net::UnixStream::connect(&self.control)
            .with_context(|| format!("connect {}", self.control.display()))?;
        writeln!(s, "{json}")?;
        let mut answer = String::new();
        BufReader::new(&s).read_line(&mut answer)?;
        if answer.contains("\"error\"") {
            bail!("NIC {words}: {}", answer.trim());
        }
        Ok(())
    }

    /// Whether the model still runs (a crashed model fails the run).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for NicModel {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        for r in &self.rams {
            let _ = fs::remove_file(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ram_files_are_per_checkout() {
        let a = ram_path(Path::new("/src/one/target/xtask/vm-test"), 0);
        let b = ram_path(Path::new("/src/two/target/xtask/vm-test"), 0);
        assert_ne!(a, b);
        assert_eq!(a, ram_path(Path::new("/src/one/target/xtask/vm-test"), 0));
        assert_ne!(a, ram_path(Path::new("/src/one/target/xtask/vm-test"), 1));
        assert!(a.starts_with("/dev/shm"));
    }
}
