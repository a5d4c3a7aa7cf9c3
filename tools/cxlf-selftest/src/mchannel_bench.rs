//! mchannel_sched benchmarks (`tests/vm/bench/3*_mchannel_*.sh`), each
//! against the kernel's own primitive in the same VM, printed as `BENCH`
//! series (the first is the anchor) and a summary line:
//!
//! - overhead: a streaming thread unattached (anchor) vs attached with
//!   T_R = T_W, at T_W = 100 us and 1 ms;
//! - accuracy: target vs achieved run fraction from 10 % to 90 %, for
//!   SCHED_DEADLINE at a 100 us period (anchor), mchannel at T_W = 100 us,
//!   and CFS `cpu.max` at its 1 ms minimum period;
//! - scale: N streaming threads (1, 64, 1024) unattached (anchor) and
//!   attached, aggregate progress and the module's cost per window.

use crate::mchannel_checks::{stream_for, Progress, Stream};
use anyhow::{bail, Context, Result};
use mchannel::{channel_spec, Mchannel};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};
use uapi::mchannel as abi;

/// The emulated meter: bytes per microsecond of running.
const METER: u64 = 100;
const TARGETS: [u32; 5] = [10, 30, 50, 70, 90];

fn series(label: &str, metrics: &[(String, f64)]) {
    let mut m = serde_json::Map::new();
    m.insert("label".into(), label.into());
    for (k, v) in metrics {
        m.insert(k.clone(), (*v).into());
    }
    println!("BENCH {}", serde_json::Value::Object(m));
}

/// A component of `capacity` B/s and a channel through it; returns the
/// channel id. `meter` 0: the channel is never limited (T_R = T_W).
fn channel(m: &Mchannel, tag: &str, capacity: u64, t_w_us: u64, meter: u64) -> Result<u32> {
    let pid = std::process::id();
    let comp = m
        .register_component(&format!("b-{tag}-{pid}"), abi::COMPONENT_SWITCH, capacity)
        .context("register")?;
    let spec = channel_spec(
        &format!("b-{tag}-{pid}"),
        1,
        &[comp],
        t_w_us * 1000,
        meter,
        false,
    )?;
    Ok(m.create_channel(&spec).context("create")?.id)
}

/// One thread streaming for `secs` (after `warmup`), attached to
/// `channel` if given, with `setup` run on the thread first.
fn one(
    dev: &Path,
    channel: Option<u32>,
    warmup: f64,
    secs: f64,
    setup: impl FnOnce() -> Result<()> + Send,
) -> Result<Progress> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<Progress> {
            setup()?;
            if let Some(c) = channel {
                Mchannel::open(dev)?.attach(c, 0, false)?;
            }
            let p = stream_for(
                Duration::from_secs_f64(warmup),
                Duration::from_secs_f64(secs),
            );
            if channel.is_some() {
                Mchannel::open(dev)?.detach(0, false)?;
            }
            Ok(p)
        })
        .join()
        .expect("stream thread")
    })
}

pub fn overhead(dev: &Path, secs: f64) -> Result<()> {
    let m = Mchannel::open(dev)?;
    let base1 = one(dev, None, 0.3, secs, || Ok(()))?;
    let mut attached = vec![];
    for t_w in [100u64, 1000] {
        let c = channel(&m, &format!("ovh{t_w}"), 1 << 40, t_w, 0)?;
        attached.push((t_w, one(dev, Some(c), 0.3, secs, || Ok(()))?));
        m.destroy_channel(c)?;
    }
    let base2 = one(dev, None, 0.3, secs, || Ok(()))?;
    let base = (base1.bytes_per_s + base2.bytes_per_s) / 2.0;
    series("unattached", &[("bytes_per_s".into(), base)]);
    for (t_w, p) in &attached {
        series(
            &format!("attached T_W={t_w}us"),
            &[("bytes_per_s".into(), p.bytes_per_s)],
        );
        println!(
            "overhead at T_W = {t_w} us: {:.2} % (attached, T_R = T_W, vs unattached; unattached runs differed by {:.2} %)",
            (1.0 - p.bytes_per_s / base) * 100.0,
            ((base1.bytes_per_s - base2.bytes_per_s) / base).abs() * 100.0
        );
    }
    Ok(())
}

/// SCHED_DEADLINE for the calling thread: `runtime` of every `period`.
fn sched_deadline(runtime_ns: u64, period_ns: u64) -> Result<()> {
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
    }
    const SCHED_DEADLINE: u32 = 6;
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: SCHED_DEADLINE,
        flags: 0,
        nice: 0,
        priority: 0,
        runtime: runtime_ns,
        deadline: period_ns,
        period: period_ns,
    };
    // SAFETY: `attr` is a live, correctly sized sched_attr for the call;
    // pid 0 is the calling thread.
    let r = unsafe { nix::libc::syscall(nix::libc::SYS_sched_setattr, 0, &attr, 0) };
    if r != 0 {
        bail!("sched_setattr: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

const CGROUP: &str = "/sys/fs/cgroup";

/// Runs `f` with this process in a cgroup v2 group limited by
/// `cpu.max` to `quota_us` of every `period_us`.
fn in_cpu_max<T>(quota_us: u64, period_us: u64, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if !Path::new(CGROUP).join("cgroup.controllers").exists() {
        std::fs::create_dir_all(CGROUP)?;
        nix::mount::mount(
            Some("none"),
            CGROUP,
            Some("cgroup2"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .context("mount cgroup2")?;
    }
    std::fs::write(format!("{CGROUP}/cgroup.subtree_control"), "+cpu").context("enable cpu")?;
    let g = format!("{CGROUP}/mchannel-bench");
    let _ = std::fs::create_dir(&g);
    std::fs::write(format!("{g}/cpu.max"), format!("{quota_us} {period_us}")).context("cpu.max")?;
    let pid = std::process::id().to_string();
    std::fs::write(format!("{g}/cgroup.procs"), &pid).context("join")?;
    let r = f();
    std::fs::write(format!("{CGROUP}/cgroup.procs"), &pid).context("leave")?;
    let _ = std::fs::remove_dir(&g);
    r
}

pub fn accuracy(dev: &Path, secs: f64) -> Result<()> {
    let m = Mchannel::open(dev)?;
    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("SCHED_DEADLINE 100us", vec![]),
        ("mchannel T_W=100us", vec![]),
        ("cpu.max 1ms", vec![]),
    ];
    for &pct in &TARGETS {
        let f = f64::from(pct) / 100.0;
        let dl = one(dev, None, 0.5, secs, || {
            sched_deadline(u64::from(pct) * 1000, 100_000)
        })?;
        // One thread's demand is METER MB/s; capacity f of it.
        let c = channel(
            &m,
            &format!("acc{pct}"),
            METER * 10_000 * u64::from(pct),
            100,
            METER,
        )?;
        let mc = one(dev, Some(c), 1.0, secs, || Ok(()))?;
        m.destroy_channel(c)?;
        let cfs = in_cpu_max(u64::from(pct) * 10, 1000, || {
            one(dev, None, 0.5, secs, || Ok(()))
        })?;
        for (row, p) in rows.iter_mut().zip([dl, mc, cfs]) {
            row.1.push(p.run_fraction);
        }
        println!(
            "target {f:.2}: SCHED_DEADLINE {:.3}, mchannel {:.3}, cpu.max {:.3}",
            dl.run_fraction, mc.run_fraction, cfs.run_fraction
        );
    }
    for (label, got) in &rows {
        let mut metrics = vec![];
        let mut worst = 0.0f64;
        for (&pct, &g) in TARGETS.iter().zip(got) {
            let err = (g - f64::from(pct) / 100.0).abs();
            worst = worst.max(err);
            metrics.push((format!("err_at_{pct}pct_ns"), err * 1e9));
        }
        series(label, &metrics);
        println!("{label}: largest absolute error {worst:.3} of the time");
    }
    Ok(())
}

/// `n` threads streaming 64 KiB buffers for `secs`, attached to `channel`
/// if given (the whole process, so new threads are covered); returns the
/// aggregate bytes per second.
fn many(dev: &Path, n: usize, channel: Option<u32>, secs: f64) -> Result<f64> {
    if let Some(c) = channel {
        Mchannel::open(dev)?.attach(c, 0, true)?;
    }
    let stop = AtomicBool::new(false);
    let ready = Barrier::new(n + 1);
    let total = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    let mut st = Stream::with_bytes(64 << 10);
                    ready.wait();
                    st.measure(|_| !stop.load(Ordering::Relaxed)).bytes_per_s
                })
            })
            .collect();
        ready.wait();
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
        hs.into_iter()
            .map(|h| h.join().expect("stream"))
            .sum::<f64>()
    });
    if channel.is_some() {
        Mchannel::open(dev)?.detach(0, true)?;
    }
    Ok(total)
}

pub fn scale(dev: &Path, secs: f64) -> Result<()> {
    let m = Mchannel::open(dev)?;
    let mut free = vec![];
    let mut held = vec![];
    let mut cost = vec![];
    for n in [1usize, 64, 1024] {
        free.push(many(dev, n, None, secs)?);
        let c = channel(&m, &format!("scale{n}"), 1 << 40, 100, 0)?;
        let w0 = m.query(c)?.windows;
        let t0 = Instant::now();
        held.push(many(dev, n, Some(c), secs)?);
        let windows_per_s = (m.query(c)?.windows - w0) as f64 / t0.elapsed().as_secs_f64();
        m.destroy_channel(c)?;
        let (f, h) = (free[free.len() - 1], held[held.len() - 1]);
        let cpus = std::thread::available_parallelism()
            .map_or(1, |c| c.get())
            .min(n) as f64;
        // The CPU time the module took from the threads, per window.
        let per_window = (1.0 - h / f).max(0.0) * cpus * 1e9 / windows_per_s.max(1.0);
        cost.push(per_window);
        println!(
            "{n} threads: attached {:.3} of unattached progress, {windows_per_s:.0} windows/s, about {per_window:.0} ns per window",
            h / f
        );
    }
    let metrics = |v: &[f64]| -> Vec<(String, f64)> {
        [1, 64, 1024]
            .iter()
            .zip(v)
            .map(|(n, x)| (format!("bytes_{n}thr_per_s"), *x))
            .collect()
    };
    series("unattached", &metrics(&free));
    let mut m2 = metrics(&held);
    for (n, c) in [1, 64, 1024].iter().zip(&cost) {
        m2.push((format!("window_cost_{n}thr_ns"), *c));
    }
    series("attached", &m2);
    Ok(())
}
