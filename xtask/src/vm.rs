//! Boots the emulated CXL machine under QEMU (TCG) and collects what the
//! guest reports. The topology is described in
//! `Documentation/cxlfabric/testbed.rst`.

use crate::guest::GuestReport;
use crate::kernel::KernelTree;
use crate::modules::{self, ko_path};
use crate::nicmodel::NicModel;
use crate::util::{out_dir, repo_root, run};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// isa-debug-exit status for "init finished": byte 0x10 -> (0x10 << 1) | 1.
pub const EXIT_FINISHED: i32 = 33;
/// Size of each emulated type-3 device (volatile memory).
pub const CXL_DEVICE_BYTES: u64 = 256 << 20;
/// Size of the RAM-backed shared region (ivshmem BAR2; a power of two).
pub const IVSHMEM_BYTES: u64 = 64 << 20;
/// The shared NVDIMMs: a spacer (region0, left as it boots) and the
/// RAM-speed pool (region1). The spacer exists for a name: a dax device
/// is named after its region, and region0's would be `dax0.0`, the name
/// the CXL region's dax device takes.
const NVDIMM_BYTES: [u64; 2] = [128 << 20, 512 << 20];
/// Room for the NVDIMMs above the boot RAM (`-m ...,maxmem=`).
const MAXMEM: &str = "2G";

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Test,
    Selftest,
    Multihost,
    Bench,
    Demo,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Test => "test",
            Mode::Selftest => "selftest",
            Mode::Multihost => "multihost",
            Mode::Bench => "bench",
            Mode::Demo => "demo",
        }
    }
}

pub struct VmOptions {
    pub mode: Mode,
    pub hosts: usize,
    pub timeout: Duration,
    /// Run only the benchmarks (bench mode), scenarios (test mode) or
    /// demo part (demo mode) that this selects: a part of the name, or
    /// (for scenarios) the directory's name.
    pub only: Option<String>,
}

impl VmOptions {
    pub fn new(mode: Mode, hosts: usize, timeout: Duration) -> VmOptions {
        VmOptions {
            mode,
            hosts,
            timeout,
            only: None,
        }
    }
}

pub struct HostRun {
    pub host: usize,
    pub exit_code: Option<i32>,
    pub report: GuestReport,
    pub console: PathBuf,
    /// Killed by the host because a scenario asked for it.
    pub killed_on_request: bool,
}

impl HostRun {
    /// The guest ran its init to the end and said so through isa-debug-exit.
    pub fn finished(&self) -> bool {
        self.exit_code == Some(EXIT_FINISHED) && self.report.done || self.killed_on_request
    }

    pub fn describe_exit(&self) -> String {
        if self.killed_on_request {
            return "killed mid-run, as a scenario asked".into();
        }
        match self.exit_code {
            Some(EXIT_FINISHED) if !self.report.done => "exit 33 but no DONE line".into(),
            Some(EXIT_FINISHED) => "finished".into(),
            Some(35) => "init failed before finishing (exit 35)".into(),
            Some(124) | Some(137) => "timed out".into(),
            Some(0) => "QEMU exited 0: the guest panicked or powered off early".into(),
            Some(c) => format!("QEMU exit status {c}"),
            None => "killed by a signal".into(),
        }
    }
}

/// What every boot needs, each step done only if still missing: setup,
/// the cached kernel, the modules and the initramfs.
pub fn prepare(
    phases: &mut crate::util::Phases,
    flavor: crate::kernel::Flavor,
) -> Result<(KernelTree, PathBuf)> {
    phases.time("setup", crate::setup::setup)?;
    let tree = phases.time("kernel", || crate::kernel::ensure(flavor))?;
    phases.time("module build", || crate::modules::build(&tree, false))?;
    let initramfs = phases.time("initramfs", build_initramfs)?;
    phases.time("device model", crate::nicmodel::build)?;
    Ok((tree, initramfs))
}

/// Host tools that also run in the guest, linked statically.
const GUEST_TOOLS: &[&str] = &[
    "cxlctl",
    "daxio",
    "cxlf-contract",
    "beluga",
    "mchannel",
    "cxlnic",
    "nicbench",
    "drack",
];

/// Static host tools that go into the initramfs.
fn build_guest_tools() -> Result<Vec<PathBuf>> {
    let target = "x86_64-unknown-linux-gnu";
    run(Command::new("cargo")
        .current_dir(repo_root())
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .args(["build", "--quiet", "--release", "--target", target])
        .args(GUEST_TOOLS.iter().flat_map(|t| ["-p", t])))?;
    Ok(GUEST_TOOLS
        .iter()
        .map(|t| repo_root().join(format!("target/{target}/release/{t}")))
        .collect())
}

/// Debian's networking tools in the guest, with the libraries they link
/// (`/usr/sbin` comes first in the guest's PATH, before busybox's
/// applets of the same names).
const GUEST_DYNAMIC_TOOLS: &[&str] = &["/usr/sbin/ip", "/usr/sbin/ethtool", "/usr/sbin/tc"];

/// Copies a dynamically linked `binary` to the same path under `stage`,
/// with every library `ldd` lists and the loader, at their paths.
fn copy_dynamic(binary: &Path, stage: &Path) -> Result<()> {
    if !binary.exists() {
        bail!("{} is missing: run `cargo xtask setup`", binary.display());
    }
    let libs = crate::util::output(Command::new("ldd").arg(binary))?;
    let mut files = vec![binary.to_path_buf()];
    for line in libs.lines() {
        // "libx.so.1 => /lib/.../libx.so.1 (0x...)" or "/lib64/ld-... (0x...)"
        let path = line
            .split("=>")
            .last()
            .and_then(|r| r.split_whitespace().next())
            .filter(|p| p.starts_with('/'));
        if let Some(p) = path {
            files.push(PathBuf::from(p));
        }
    }
    for f in files {
        let rel = f.strip_prefix("/").unwrap_or(&f);
        let dest = stage.join(rel);
        fs::create_dir_all(dest.parent().unwrap())?;
        // Follow symlinks: the guest gets the file under the name asked for.
        fs::copy(&f, &dest).with_context(|| format!("copy {}", f.display()))?;
    }
    Ok(())
}

fn copy_into(src: &Path, dir: &Path) -> Result<()> {
    fs::create_dir_all(dir)?;
    let dest = dir.join(src.file_name().unwrap());
    fs::copy(src, &dest)
        .with_context(|| format!("copy {} -> {}", src.display(), dest.display()))?;
    Ok(())
}

/// Builds the initramfs: busybox, init, scenarios, modules and tools.
pub fn build_initramfs() -> Result<PathBuf> {
    let tools = build_guest_tools()?;
    let stage = out_dir().join("initramfs");
    if stage.exists() {
        fs::remove_dir_all(&stage)?;
    }
    for dir in [
        "bin",
        "sbin",
        "proc",
        "sys",
        "dev",
        "tmp",
        "run",
        "lib/cxlfabric",
    ] {
        fs::create_dir_all(stage.join(dir))?;
    }
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        bail!("/bin/busybox is missing: run `cargo xtask setup` (busybox-static)");
    }
    copy_into(busybox, &stage.join("bin"))?;
    let vm_dir = repo_root().join("tests/vm");
    fs::copy(vm_dir.join("init"), stage.join("init"))?;
    // The demo's parts (`demo-<module>.sh`), run by the init's demo mode.
    for entry in fs::read_dir(&vm_dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with("demo-") && name.ends_with(".sh") {
            copy_into(&path, &stage)?;
        }
    }
    fs::copy(vm_dir.join("lib.sh"), stage.join("lib/cxlfabric/lib.sh"))?;
    for sub in ["scenarios", "selftest", "multihost", "bench"] {
        let dest = stage.join(sub);
        fs::create_dir_all(&dest)?;
        for entry in fs::read_dir(vm_dir.join(sub))? {
            copy_into(&entry?.path(), &dest)?;
        }
    }
    for module in modules::all() {
        copy_into(&ko_path(module), &stage.join("lib/cxlfabric"))?;
    }
    // What the init loads, by kind, from the Kbuild files.
    fs::write(
        stage.join("lib/cxlfabric/modules.list"),
        modules::guest_list(),
    )?;
    for tool in tools {
        copy_into(&tool, &stage.join("bin"))?;
    }
    for tool in GUEST_DYNAMIC_TOOLS {
        copy_dynamic(Path::new(tool), &stage)?;
    }
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&stage))?;
    run(Command::new("chmod").arg("755").arg(stage.join("init")))?;
    let image = out_dir().join("initramfs.cpio.gz");
    run(Command::new("sh")
        .current_dir(&stage)
        .arg("-c")
        .arg(format!(
            "find . | cpio --quiet -o -H newc -R 0:0 | gzip -1 > {}",
            image.display()
        )))?;
    Ok(image)
}

fn sparse_file(path: &Path, bytes: u64) -> Result<()> {
    // Truncating to zero first gives every run a zeroed pool.
    let file = fs::File::create(path)?;
    file.set_len(bytes)?;
    Ok(())
}

/// QEMU arguments for one host. All hosts share the pool backing files, so
/// they see one CXL pool (and one ivshmem region).
fn qemu_args(
    tree: &KernelTree,
    initramfs: &Path,
    run_dir: &Path,
    opts: &VmOptions,
    host: usize,
    nic: &NicModel,
    hub_ports: &[crate::hub::HubPort],
) -> Vec<String> {
    let pool = |i: usize| {
        run_dir
            .join(format!("cxl-pool{i}.raw"))
            .display()
            .to_string()
    };
    // la57=off: with 5-level paging, the KASAN kernel reports a
    // wild-memory-access in handle_edge_irq during start_kernel under TCG
    // (before init, in every few boots); 4-level paging boots clean.
    let mut args: Vec<String> = vec![
        "-accel",
        "tcg",
        "-cpu",
        "max,la57=off",
        "-M",
        "q35,cxl=on,nvdimm=on",
        "-smp",
        "2",
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot",
        "-monitor",
        "none",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let mut push = |a: &str, b: String| {
        args.push(a.to_string());
        args.push(b);
    };
    push(
        "-m",
        format!(
            "{},slots={},maxmem={MAXMEM}",
            crate::nicmodel::GUEST_RAM,
            NVDIMM_BYTES.len()
        ),
    );
    push(
        "-serial",
        format!(
            "file:{}",
            run_dir.join(format!("console{host}.log")).display()
        ),
    );
    push(
        "-serial",
        format!(
            "file:{}",
            run_dir.join(format!("results{host}.log")).display()
        ),
    );
    push("-kernel", tree.bzimage().display().to_string());
    push("-initrd", initramfs.display().to_string());
    let only = opts
        .only
        .as_ref()
        .map_or(String::new(), |o| format!(" cxlfabric.only={o}"));
    // KASAN and lockdep make everything several times slower: leases and
    // the waits built on them scale by this (`CXLFABRIC_SLOW` in the
    // guest). 4 was not enough: two debug guests (4 TCG vCPUs on 2
    // cores) moving drack traffic both ways starved one for over 8 s
    // (its own beluga lease lapsed: "lease lost", then drack stopped).
    let slow = match tree.flavor {
        crate::kernel::Flavor::Debug => " cxlfabric.slow=8",
        crate::kernel::Flavor::Default => "",
    };
    push(
        "-append",
        format!(
            "console=ttyS0 loglevel=4 panic=-1 oops=panic cxlfabric.mode={} cxlfabric.host={host} cxlfabric.hosts={}{only}{slow}",
            opts.mode.name(),
            opts.hosts
        ),
    );
    push("-device", "isa-debug-exit,iobase=0xf4,iosize=0x04".into());
    // Switched CXL topology: host bridge -> root port -> switch -> 2 x type-3.
    for i in 0..2 {
        push(
            "-object",
            format!(
                "memory-backend-file,id=cxl-mem{i},share=on,mem-path={},size={CXL_DEVICE_BYTES}",
                pool(i)
            ),
        );
    }
    push("-device", "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1".into());
    push(
        "-device",
        "cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2".into(),
    );
    push("-device", "cxl-upstream,bus=rp0,id=us0".into());
    for i in 0..2 {
        push(
            "-device",
            format!(
                "cxl-downstream,port={i},bus=us0,id=ds{i},chassis=0,slot={}",
                4 + i
            ),
        );
        push(
            "-device",
            format!(
                "cxl-type3,bus=ds{i},volatile-memdev=cxl-mem{i},id=cxl-vmem{i},sn={}",
                0x100 + i
            ),
        );
    }
    push(
        "-M",
        "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G,cxl-fmw.0.interleave-granularity=4k".into(),
    );
    // RAM-backed shared region: the CXL window is emulated MMIO and slow.
    push(
        "-object",
        format!(
            "memory-backend-file,id=shm0,share=on,mem-path={},size={IVSHMEM_BYTES}",
            run_dir.join("ivshmem.raw").display()
        ),
    );
    push("-device", "ivshmem-plain,memdev=shm0,bus=pcie.0".into());
    // RAM to QEMU as well, and a dax device beluga binds (ivshmem is not):
    // the RAM-speed pool (`ram_pool` in the guest's lib.sh).
    for (i, bytes) in NVDIMM_BYTES.iter().enumerate() {
        push(
            "-object",
            format!(
                "memory-backend-file,id=nvmem{i},share=on,mem-path={},size={bytes}",
                run_dir.join(format!("nvdimm{i}.raw")).display()
            ),
        );
        push("-device", format!("nvdimm,id=nvdimm{i},memdev=nvmem{i}"));
    }
    // RAM the NIC model reaches, and the NICs (ivshmem-doorbell).
    args.extend(nic.qemu_args(run_dir, host));
    let mut push = |a: &str, b: String| {
        args.push(a.to_string());
        args.push(b);
    };
    // Hosts talk over a virtio-net link (unix datagram sockets: symmetric,
    // so neither VM has to start first). 10.0.0.<host + 1>/24 in the guest.
    if opts.hosts > 1 {
        let sock = |h: usize| run_dir.join(format!("net{h}.sock")).display().to_string();
        push(
            "-netdev",
            format!(
                "dgram,id=net0,local.type=unix,local.path={},remote.type=unix,remote.path={}",
                sock(host),
                sock(1 - host)
            ),
        );
        push(
            "-device",
            format!(
                "virtio-net-pci,netdev=net0,bus=pcie.0,mac=52:54:00:cf:00:{:02x}",
                host + 1
            ),
        );
    }
    // The hub's NICs come after eth0 (PCI order), so eth0 stays the link.
    args.extend(crate::hub::qemu_args(run_dir, hub_ports, host));
    args
}

/// A guest that has not reached init by then is stuck in early boot
/// (`CXLFABRIC_INIT_DEADLINE` seconds overrides it, to exercise the retry).
fn init_deadline() -> Duration {
    let secs = std::env::var("CXLFABRIC_INIT_DEADLINE")
        .ok()
        .and_then(|v| v.parse().ok());
    Duration::from_secs(secs.unwrap_or(90))
}

/// Boots `opts.hosts` VMs on one shared pool and waits for all of them.
///
/// Under TCG on a loaded host, a guest kernel can stall in early boot (RCU
/// reports "timer wakeup didn't happen" for a vCPU and never recovers). If
/// any guest has not reached init within [`init_deadline`], or its QEMU
/// exited before, the boot is killed and tried again (three boots in
/// all), and this is reported; a hang that our own code causes hangs
/// again and fails.
pub fn boot(tree: &KernelTree, initramfs: &Path, opts: &VmOptions) -> Result<Vec<HostRun>> {
    let run_dir = out_dir().join(format!("vm-{}", opts.mode.name()));
    const ATTEMPTS: u32 = 3;
    for attempt in 1..=ATTEMPTS {
        match boot_once(tree, initramfs, opts, &run_dir)? {
            Some(runs) if attempt == 1 && runs.iter().any(tcg_patch_fault) => {
                let kept = run_dir.with_extension("tcg-int3");
                let _ = fs::remove_dir_all(&kept);
                let _ = fs::rename(&run_dir, &kept);
                eprintln!(
                    "vm: a guest died of an int3 while the kernel patched its code (a TCG \
                     fault under cross-vCPU code patching, seen at boot and at module \
                     unload; console kept in {}); booting again",
                    kept.display()
                );
            }
            Some(runs) => return Ok(runs),
            None if attempt < ATTEMPTS => eprintln!(
                "vm: a guest did not reach init within {} s, or its QEMU died first (early-boot failure); booting again",
                init_deadline().as_secs()
            ),
            None => {}
        }
    }
    bail!(
        "guests failed in early boot {ATTEMPTS} times (console: {})",
        run_dir.join("console0.log").display()
    )
}

/// Whether `run` died of TCG's cross-modifying-code fault: the guest
/// executed a breakpoint the kernel's code patching (`text_poke_bp`, for
/// jump labels and static calls) had already removed, which it only
/// survives on real CPUs. Nothing else in the guest uses int3.
fn tcg_patch_fault(run: &HostRun) -> bool {
    !run.finished()
        && fs::read_to_string(&run.console)
            .is_ok_and(|c| c.contains("Oops: int3") && c.contains("Fatal exception"))
}

/// One boot; `None` if a guest stalled or its QEMU died before init and
/// the boot was killed.
/// The testbed's region: 2-way, 4 KiB granularity (the window's), over
/// `cxl-pool0.raw` and `cxl-pool1.raw` in serial order.
const REGION_WAYS: u64 = 2;
const REGION_GRANULARITY: u64 = 4096;

/// Writes a scenario's `@@ POKE` into the pool's backing files, as a
/// device fault or a hostile peer would change pool memory.
fn apply_poke(run_dir: &Path, poke: &crate::guest::Poke) -> Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    for (device, dpa, bytes) in poke.locate(REGION_WAYS, REGION_GRANULARITY) {
        if dpa + bytes.len() as u64 > CXL_DEVICE_BYTES {
            bail!("POKE at {:#x} lies outside the pool", poke.offset);
        }
        let mut file = fs::OpenOptions::new()
            .write(true)
            .open(run_dir.join(format!("cxl-pool{device}.raw")))?;
        file.seek(SeekFrom::Start(dpa))?;
        file.write_all(&bytes)?;
    }
    Ok(())
}

fn boot_once(
    tree: &KernelTree,
    initramfs: &Path,
    opts: &VmOptions,
    run_dir: &Path,
) -> Result<Option<Vec<HostRun>>> {
    if run_dir.exists() {
        fs::remove_dir_all(run_dir)?;
    }
    fs::create_dir_all(run_dir)?;
    for i in 0..2 {
        sparse_file(&run_dir.join(format!("cxl-pool{i}.raw")), CXL_DEVICE_BYTES)?;
    }
    sparse_file(&run_dir.join("ivshmem.raw"), IVSHMEM_BYTES)?;
    for (i, bytes) in NVDIMM_BYTES.iter().enumerate() {
        sparse_file(&run_dir.join(format!("nvdimm{i}.raw")), *bytes)?;
    }
    // Before QEMU: ivshmem-doorbell waits for its server at start.
    let mut nic = NicModel::start(run_dir, opts.hosts)?;
    // Before QEMU too; it stops (threads joined, socket removed) when this
    // boot returns, whichever way.
    let hub_ports = crate::hub::ports(run_dir, opts.hosts);
    let _hub = if hub_ports.is_empty() {
        None
    } else {
        Some(crate::hub::Hub::start(run_dir, &hub_ports)?)
    };

    let mut children: Vec<(usize, Child)> = Vec::new();
    for host in 0..opts.hosts {
        let args = qemu_args(tree, initramfs, run_dir, opts, host, &nic, &hub_ports);
        fs::write(
            run_dir.join(format!("qemu{host}.cmd")),
            format!("qemu-system-x86_64 {}\n", args.join(" ")),
        )?;
        let stderr = fs::File::create(run_dir.join(format!("qemu{host}.stderr")))?;
        let child = Command::new("timeout")
            .args([
                "--kill-after=5",
                &opts.timeout.as_secs().to_string(),
                "qemu-system-x86_64",
            ])
            .args(&args)
            .stdin(Stdio::null())
            .stdout(stderr.try_clone()?)
            .stderr(stderr)
            .spawn()
            .context("cannot start qemu-system-x86_64 (run `cargo xtask setup`)")?;
        children.push((host, child));
    }

    let results_of = |host: usize| {
        fs::read_to_string(run_dir.join(format!("results{host}.log"))).unwrap_or_default()
    };
    let start = std::time::Instant::now();
    let mut statuses: Vec<Option<std::process::ExitStatus>> = vec![None; children.len()];
    let mut killed = vec![false; children.len()];
    let mut poked = vec![0usize; children.len()];
    let mut told = vec![0usize; children.len()];
    let mut paused = vec![0usize; children.len()];
    let mut resume: Vec<Option<std::time::Instant>> = vec![None; children.len()];
    loop {
        for (i, (host, child)) in children.iter_mut().enumerate() {
            // One read of what the guest asked for, every 200 ms: whole
            // lines only, since the guest may be mid-line (a command cut
            // short would be acted on as written so far).
            let text = results_of(*host);
            let report = GuestReport::parse(crate::guest::complete_lines(&text));
            if statuses[i].is_none() && !killed[i] && report.kill_requested {
                // `timeout` leads a process group with QEMU in it: kill
                // both at once, like a machine losing power.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                killed[i] = true;
            }
            // A stall without a crash: the whole group stops, QEMU's
            // clocks jump when it resumes (the guest sees the time pass).
            if resume[i].is_some_and(|t| std::time::Instant::now() >= t) {
                let _ = Command::new("kill")
                    .args(["-CONT", "--", &format!("-{}", child.id())])
                    .status();
                resume[i] = None;
            }
            if resume[i].is_none() && !killed[i] {
                if let Some(ms) = report.pauses.get(paused[i]) {
                    let _ = Command::new("kill")
                        .args(["-STOP", "--", &format!("-{}", child.id())])
                        .status();
                    resume[i] = Some(std::time::Instant::now() + Duration::from_millis(*ms));
                    paused[i] += 1;
                }
            }
            for poke in report.pokes.iter().skip(poked[i]) {
                apply_poke(run_dir, poke)?;
            }
            poked[i] = report.pokes.len();
            for c in report.nic.iter().skip(told[i]) {
                if let Err(e) = nic.command(c) {
                    eprintln!("vm: host {host}: {e:#}");
                }
            }
            told[i] = report.nic.len();
            if statuses[i].is_none() {
                statuses[i] = child.try_wait()?;
            }
        }
        if statuses.iter().all(Option::is_some) {
            break;
        }
        if !nic.alive() {
            for (_, child) in &children {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
            }
            bail!(
                "the CXL-NIC device model died mid-run:\n{}",
                fs::read_to_string(run_dir.join("cxlnic-model.log")).unwrap_or_default()
            );
        }
        let stalled = children.iter().zip(&statuses).any(|((host, _), status)| {
            status.is_none() && GuestReport::parse(&results_of(*host)).hello.is_none()
        });
        // QEMU itself can die before the guest says hello (an internal
        // assertion under TCG, `iotlb_to_section`, seen once): as a stall.
        let died = children.iter().zip(&statuses).find(|((host, _), status)| {
            status.is_some() && GuestReport::parse(&results_of(*host)).hello.is_none()
        });
        if let Some(((host, _), _)) = died {
            eprintln!("vm: host {host}: QEMU exited before the guest reached init:");
            crate::util::print_tail(&run_dir.join(format!("qemu{host}.stderr")), 5);
        }
        if died.is_some() || (stalled && start.elapsed() > init_deadline()) {
            for (_, child) in &children {
                // `timeout` passes SIGTERM on to QEMU.
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
            }
            for (_, child) in &mut children {
                let _ = child.wait();
            }
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(200));
    }

    let mut runs = Vec::new();
    for (((host, _), status), killed) in children.iter().zip(statuses).zip(killed) {
        let host = *host;
        let run = HostRun {
            host,
            exit_code: status.and_then(|s| s.code()),
            report: GuestReport::parse(&results_of(host)),
            console: run_dir.join(format!("console{host}.log")),
            killed_on_request: killed,
        };
        if !run.finished() {
            eprintln!(
                "vm: host {host}: {} (console: {})",
                run.describe_exit(),
                run.console.display()
            );
            crate::util::print_tail(&run.console, 40);
            crate::util::print_tail(&run_dir.join(format!("qemu{host}.stderr")), 10);
        }
        runs.push(run);
    }
    Ok(Some(runs))
}
