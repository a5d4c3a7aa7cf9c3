//! mchannel_sched from user space: a streaming workload that reports how
//! much of the wall time each of its threads ran, and the ioctl contract
//! (every bad argument gets its errno; unprivileged callers only what the
//! renice rule allows).

use crate::beluga_checks::{expect_errno, in_child};
use anyhow::{ensure, Context, Result};
use mchannel::{channel_spec, Mchannel, Meter};
use nix::errno::Errno;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use uapi::mchannel as abi;

/// The calling thread's CPU time.
fn thread_cpu() -> Duration {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("CLOCK_THREAD_CPUTIME_ID");
    Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32)
}

/// The calling thread's CPU time in the kernel (sampled at the timer
/// tick: a diagnostic, not a measure to judge by).
fn thread_system() -> Duration {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD)
        .map(|u| {
            let t = u.system_time();
            Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
        })
        .unwrap_or_default()
}

/// One thread of the workload: what it ran and moved.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub run_fraction: f64,
    /// The part of `run_fraction` the thread spent in the kernel.
    pub system_fraction: f64,
    pub bytes_per_s: f64,
}

/// A buffer (4 MiB unless asked) that a streaming thread writes one word
/// of every cache line of, again and again.
pub(crate) struct Stream {
    buf: Vec<u64>,
    v: u64,
}

impl Stream {
    pub(crate) fn new() -> Stream {
        Stream::with_bytes(4 << 20)
    }

    pub(crate) fn with_bytes(bytes: usize) -> Stream {
        Stream {
            buf: vec![0u64; bytes / 8],
            v: 1,
        }
    }

    /// One pass; returns the bytes it covered.
    pub(crate) fn pass(&mut self) -> u64 {
        for x in self.buf.iter_mut().step_by(8) {
            *x = x.wrapping_add(self.v);
        }
        self.v = self.v.wrapping_add(1);
        std::hint::black_box(&self.buf);
        (self.buf.len() * 8) as u64
    }

    /// Streams while `go` says so, then reports.
    pub(crate) fn measure(&mut self, mut go: impl FnMut(Instant) -> bool) -> Progress {
        let (t0, c0, s0) = (Instant::now(), thread_cpu(), thread_system());
        let mut bytes = 0u64;
        while go(t0) {
            bytes += self.pass();
        }
        let wall = t0.elapsed().as_secs_f64();
        Progress {
            run_fraction: (thread_cpu() - c0).as_secs_f64() / wall,
            system_fraction: thread_system().saturating_sub(s0).as_secs_f64() / wall,
            bytes_per_s: bytes as f64 / wall,
        }
    }
}

/// Streams until `stop`, then reports.
fn stream(stop: &AtomicBool, start_barrier: &std::sync::Barrier) -> Progress {
    let mut s = Stream::new();
    start_barrier.wait();
    s.measure(|_| !stop.load(Ordering::Relaxed))
}

/// Runs `threads` streaming threads for `seconds` (after attaching this
/// process to `channel`, if given; with `late`, the threads are created
/// after the attach, so only the fork probe can cover them) and prints
/// one line per thread.
pub fn stream_cmd(
    dev: &Path,
    channel: Option<u32>,
    threads: usize,
    seconds: f64,
) -> Result<Vec<Progress>> {
    if let Some(c) = channel {
        Mchannel::open(dev)?
            .attach(c, 0, true)
            .context("attach this process")?;
    }
    let stop = AtomicBool::new(false);
    let barrier = std::sync::Barrier::new(threads + 1);
    let out = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| stream(&stop, &barrier)))
            .collect();
        barrier.wait();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        hs.into_iter()
            .map(|h| h.join().expect("stream thread"))
            .collect::<Vec<_>>()
    });
    for (i, p) in out.iter().enumerate() {
        println!(
            "thread {i}: run fraction {:.3}, {:.0} MB/s",
            p.run_fraction,
            p.bytes_per_s / 1e6
        );
    }
    Ok(out)
}

/// The ioctl contract, as root: every bad argument is refused with its
/// errno and nothing is left behind; then as uid 1000 in a child:
/// privileged operations are EPERM, attaching its own threads works,
/// attaching root's does not.
pub fn errnos(dev: &Path) -> Result<()> {
    let m = Mchannel::open(dev)?;
    let comp = component_errnos(&m)?;
    let good = channel_spec("errno-ch", 1, &[comp], 0, 10, false)?;
    for (what, errno, spoil) in SPEC_ERRNOS {
        let mut bad = good;
        spoil(&mut bad);
        expect_errno(what, m.create_channel(&bad), *errno)?;
    }
    meter_errnos(&m, &good)?;
    let ch = m.create_channel(&good).context("create")?;
    expect_errno("same channel name", m.create_channel(&good), Errno::EEXIST)?;
    ensure!(
        ch.t_w_ns == abi::T_W_DEFAULT_NS,
        "default T_W: {}",
        ch.t_w_ns
    );
    lookup_errnos(&m, ch.id, comp)?;
    groups(&m, comp, ch.id)?;
    m.attach(ch.id, 0, false).context("attach self")?;
    expect_errno("attach twice", m.attach(ch.id, 0, false), Errno::EBUSY)?;
    expect_errno("destroy busy", m.destroy_channel(ch.id), Errno::EBUSY)?;
    ensure!(m.query(ch.id)?.threads == 1, "one thread attached");
    unprivileged(dev, ch.id, comp)?;
    perf_needs_perfmon(dev, comp)?;
    m.detach(0, false).context("detach self")?;
    m.destroy_channel(ch.id).context("destroy")?;
    expect_errno("destroy twice", m.destroy_channel(ch.id), Errno::ENOENT)?;
    println!("mchannel errnos: every bad argument refused with its errno");
    Ok(())
}

/// Registers the component the errno checks use, after the bad
/// registrations are refused.
fn component_errnos(m: &Mchannel) -> Result<u32> {
    let comp = m
        .register_component("errno-port", abi::COMPONENT_HOST_PORT, 1_000_000_000)
        .context("register")?;
    expect_errno(
        "same component name",
        m.register_component("errno-port", abi::COMPONENT_HOST_PORT, 1),
        Errno::EEXIST,
    )?;
    expect_errno(
        "capacity 0",
        m.register_component("zero", abi::COMPONENT_SWITCH, 0),
        Errno::EINVAL,
    )?;
    expect_errno(
        "unknown kind",
        m.register_component("kind", 99, 1),
        Errno::EINVAL,
    )?;
    Ok(comp)
}

/// A change that makes a good channel spec bad.
type Spoil = fn(&mut abi::ChannelSpec);

/// A name for a spoiled spec (the literals below are printable and short).
fn bad_name(name: &str) -> [u8; abi::NAME_BYTES] {
    mchannel::name(name).expect("a printable short literal")
}

/// CREATE_CHANNEL's argument checks: what is wrong, the errno, and how a
/// good spec (one component in its path) is spoiled.
const SPEC_ERRNOS: &[(&str, Errno, Spoil)] = &[
    ("weight 0", Errno::EINVAL, |s| s.weight = 0),
    ("weight above max", Errno::EINVAL, |s| {
        s.weight = abi::WEIGHT_MAX + 1
    }),
    ("T_W below min", Errno::EINVAL, |s| {
        s.t_w_ns = abi::T_W_MIN_NS - 1
    }),
    ("T_W above max", Errno::EINVAL, |s| {
        s.t_w_ns = abi::T_W_MAX_NS + 1
    }),
    ("unknown component", Errno::ENOENT, |s| s.path[0] = 999),
    ("path too long", Errno::EINVAL, |s| {
        s.path_len = abi::PATH_MAX as u32 + 1
    }),
    ("component twice", Errno::EINVAL, |s| {
        s.path_len = 2;
        s.path[1] = s.path[0];
    }),
    ("unknown flags", Errno::EINVAL, |s| s.flags = 0x80),
    ("unterminated name", Errno::EINVAL, |s| {
        s.name = [b'x'; abi::NAME_BYTES]
    }),
    ("'/' in a name", Errno::EINVAL, |s| s.name = bad_name("a/b")),
    ("name '..'", Errno::EINVAL, |s| s.name = bad_name("..")),
];

/// Ids that name nothing, arguments out of range, ioctls in the wrong
/// state, and an unknown ioctl, against channel `ch` on component `comp`.
fn lookup_errnos(m: &Mchannel, ch: u32, comp: u32) -> Result<()> {
    expect_errno(
        "attach unknown pid",
        m.attach(ch, 999_999, false),
        Errno::ESRCH,
    )?;
    expect_errno(
        "attach negative pid",
        m.attach(ch, -5, false),
        Errno::EINVAL,
    )?;
    expect_errno(
        "attach kernel thread",
        m.attach(ch, 2, false),
        Errno::EINVAL,
    )?;
    expect_errno(
        "attach to no channel",
        m.attach(999, 0, false),
        Errno::ENOENT,
    )?;
    expect_errno("detach unattached", m.detach(0, false), Errno::ENOENT)?;
    expect_errno("query unknown", m.query(12345), Errno::ENOENT)?;
    expect_errno("inject unknown", m.inject(777, 5), Errno::ENOENT)?;
    expect_errno("inject > 1e6 ppm", m.inject(comp, 1_000_001), Errno::EINVAL)?;
    let mut both = abi::CongestionArgs {
        component: comp,
        signal_ppm: 5,
        model_capacity: 1_000,
    };
    expect_errno(
        "inject a signal and a model",
        m.raw_ioctl(abi::INJECT, &mut both),
        Errno::EINVAL,
    )?;
    expect_errno("report unattached", m.report(64), Errno::EINVAL)?;
    m.attach(ch, 0, false).context("attach self")?;
    expect_errno("report to an emulated meter", m.report(64), Errno::EINVAL)?;
    m.detach(0, false).context("detach self")?;
    let mut garbage = [0xffu8; 64];
    expect_errno(
        "unknown ioctl",
        m.raw_ioctl(
            uapi::ioctl::iowr::<[u8; 64]>(abi::IOC_TYPE, 99),
            &mut garbage,
        ),
        Errno::ENOTTY,
    )
}

/// Groups: a group runs no threads, children take their parent's path,
/// only groups are parents, three levels at most, and a group with
/// children stays.
fn groups(m: &Mchannel, comp: u32, channel: u32) -> Result<()> {
    let group = |name: &str, parent: u32| -> Result<abi::ChannelSpec> {
        let path: &[u32] = if parent == abi::NO_PARENT {
            &[comp]
        } else {
            &[]
        };
        let mut g = channel_spec(name, 1, path, 0, 0, false)?;
        g.flags = abi::CHANNEL_GROUP;
        g.parent = parent;
        Ok(g)
    };
    let mut bad = group("g-meter", abi::NO_PARENT)?;
    Meter::Emulated(5).apply(&mut bad);
    expect_errno("group with a meter", m.create_channel(&bad), Errno::EINVAL)?;
    let tenant = m.create_channel(&group("tenant", abi::NO_PARENT)?)?.id;
    expect_errno(
        "attach to a group",
        m.attach(tenant, 0, false),
        Errno::EINVAL,
    )?;
    let mut bad = group("g-path", tenant)?;
    bad.path_len = 1;
    bad.path[0] = comp;
    expect_errno("child with a path", m.create_channel(&bad), Errno::EINVAL)?;
    expect_errno(
        "parent not a group",
        m.create_channel(&group("g-under-channel", channel)?),
        Errno::EINVAL,
    )?;
    expect_errno(
        "unknown parent",
        m.create_channel(&group("g-orphan", 4321)?),
        Errno::ENOENT,
    )?;
    let app = m.create_channel(&group("app", tenant)?)?.id;
    let mut leaf = channel_spec("leaf", 2, &[], 0, 10, false)?;
    leaf.parent = app;
    let leaf = m.create_channel(&leaf)?.id;
    expect_errno(
        "a group on the third level",
        m.create_channel(&group("too-deep", app)?),
        Errno::EINVAL,
    )?;
    expect_errno("destroy a parent", m.destroy_channel(tenant), Errno::EBUSY)?;
    let parent_of = |name: &str| -> Result<String> {
        let f = format!("{}/channels/{name}/parent", abi::SYSFS_ROOT);
        Ok(std::fs::read_to_string(&f).context(f)?.trim().to_string())
    };
    ensure!(
        parent_of("leaf")? == app.to_string(),
        "leaf's parent in sysfs"
    );
    for id in [leaf, app, tenant] {
        m.destroy_channel(id).context("destroy child first")?;
    }
    Ok(())
}

/// As uid 1000 in a child process.
/// Drops capabilities `caps` from the calling thread's effective set.
fn drop_effective(caps: &[u32]) -> Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: a version-3 header and two data words, as capget(2) wants.
    let r = unsafe { nix::libc::syscall(nix::libc::SYS_capget, &mut h, d.as_mut_ptr()) };
    ensure!(r == 0, "capget: {}", std::io::Error::last_os_error());
    for &c in caps {
        d[(c / 32) as usize].effective &= !(1 << (c % 32));
    }
    // SAFETY: as above, for capset(2).
    let r = unsafe { nix::libc::syscall(nix::libc::SYS_capset, &mut h, d.as_ptr()) };
    ensure!(r == 0, "capset: {}", std::io::Error::last_os_error());
    Ok(())
}

/// A CAP_SYS_NICE caller without CAP_PERFMON and CAP_SYS_ADMIN may not
/// make a perf meter (its counts are world-readable in sysfs), but may
/// make any other.
fn perf_needs_perfmon(dev: &Path, comp: u32) -> Result<()> {
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_PERFMON: u32 = 38;
    checks_in_child("without CAP_PERFMON", || {
        drop_effective(&[CAP_SYS_ADMIN, CAP_PERFMON])?;
        let m = Mchannel::open(dev)?;
        let mut spec = channel_spec("no-perfmon", 1, &[comp], 0, 0, false)?;
        Meter::Perf {
            type_: abi::PERF_TYPE_SOFTWARE,
            config: abi::PERF_COUNT_SW_TASK_CLOCK,
            bytes_per_event: 1,
        }
        .apply(&mut spec);
        expect_errno(
            "perf meter without CAP_PERFMON",
            m.create_channel(&spec),
            Errno::EPERM,
        )?;
        Meter::Emulated(10).apply(&mut spec);
        let ch = m
            .create_channel(&spec)
            .context("emulated meter with CAP_SYS_NICE")?;
        m.destroy_channel(ch.id)?;
        Ok(())
    })
}

/// The per-user quota of unprivileged attaches, as the module was loaded.
fn user_threads() -> Result<usize> {
    let path = "/sys/module/mchannel_sched/parameters/user_threads";
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    text.trim()
        .parse()
        .with_context(|| format!("{path}: {text:?}"))
}

/// Threads that wait until this is dropped, and their thread ids.
struct IdleThreads {
    stop: Option<std::sync::mpsc::Sender<()>>,
    tids: Vec<i32>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl IdleThreads {
    fn spawn(n: usize) -> Result<IdleThreads> {
        let (stop, stop_rx) = std::sync::mpsc::channel::<()>();
        let stop_rx = std::sync::Arc::new(std::sync::Mutex::new(stop_rx));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let mut idle = IdleThreads {
            stop: Some(stop),
            tids: Vec::with_capacity(n),
            handles: Vec::with_capacity(n),
        };
        for _ in 0..n {
            let (tid_tx, stop_rx) = (tid_tx.clone(), stop_rx.clone());
            idle.handles
                .push(
                    std::thread::Builder::new()
                        .stack_size(64 << 10)
                        .spawn(move || {
                            let _ = tid_tx.send(nix::unistd::gettid().as_raw());
                            // Each waits on the lock or the channel until the
                            // sender goes.
                            let _ = stop_rx.lock().map(|rx| rx.recv());
                        })?,
                );
        }
        for _ in 0..n {
            idle.tids.push(tid_rx.recv().context("a thread's id")?);
        }
        Ok(idle)
    }
}

impl Drop for IdleThreads {
    fn drop(&mut self) {
        self.stop = None;
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// As uid 1000: privileged operations are EPERM; attaching to a channel
/// it does not own (root's) is EPERM, to one it owns works; its own
/// threads only; past its quota EDQUOT, and an ATTACH_PROCESS that
/// crosses the quota attaches nothing.
fn unprivileged(dev: &Path, ch: u32, comp: u32) -> Result<()> {
    use nix::unistd::{setuid, Uid};
    let root_tid = nix::unistd::gettid().as_raw();
    let root = Mchannel::open(dev)?;
    let mut spec = channel_spec("user-1000", 1, &[comp], 0, 10, false)?;
    spec.flags |= abi::CHANNEL_OWNER;
    spec.owner_uid = 1000;
    let owned = root.create_channel(&spec).context("create user-1000")?.id;
    let quota = user_threads()?;
    let result = checks_in_child("unprivileged", || {
        setuid(Uid::from_raw(1000)).context("setuid")?;
        let m = Mchannel::open(dev)?;
        expect_errno(
            "unprivileged register",
            m.register_component("u", abi::COMPONENT_SWITCH, 1),
            Errno::EPERM,
        )?;
        let spec = channel_spec("u", 1, &[comp], 0, 0, false)?;
        expect_errno("unprivileged create", m.create_channel(&spec), Errno::EPERM)?;
        expect_errno("unprivileged inject", m.inject(comp, 1), Errno::EPERM)?;
        expect_errno("unprivileged destroy", m.destroy_channel(ch), Errno::EPERM)?;
        expect_errno(
            "attach root's thread",
            m.attach(owned, root_tid, false),
            Errno::EPERM,
        )?;
        expect_errno(
            "detach root's thread",
            m.detach(root_tid, false),
            Errno::EPERM,
        )?;
        expect_errno(
            "attach own thread to root's channel",
            m.attach(ch, 0, false),
            Errno::EPERM,
        )?;
        ensure!(
            m.query(ch)?.threads == 1,
            "root's channel kept its one thread"
        );
        m.attach(owned, 0, false)
            .context("attach own thread to own channel")?;
        ensure!(m.query(owned)?.threads == 1, "one thread attached");
        m.detach(0, false).context("detach own thread")?;
        quota_checks(&m, owned, quota)
    });
    let gone = root.destroy_channel(owned).context("destroy user-1000");
    result.and(gone)
}

/// uid 1000's quota of `quota` threads on its channel `owned`.
fn quota_checks(m: &Mchannel, owned: u32, quota: usize) -> Result<()> {
    let idle = IdleThreads::spawn(quota)?;
    let tids = &idle.tids;
    // The process has quota + 1 threads: all of it is past the quota,
    // and nothing stays attached.
    expect_errno(
        "ATTACH_PROCESS past the quota",
        m.attach(owned, 0, true),
        Errno::EDQUOT,
    )?;
    ensure!(
        m.query(owned)?.threads == 0,
        "a refused ATTACH_PROCESS left {} threads attached",
        m.query(owned)?.threads
    );
    for (i, &tid) in tids.iter().enumerate() {
        m.attach(owned, tid, false)
            .with_context(|| format!("attach thread {} of a quota of {quota}", i + 1))?;
    }
    expect_errno(
        "attach past the quota",
        m.attach(owned, 0, false),
        Errno::EDQUOT,
    )?;
    ensure!(m.query(owned)?.threads as usize == quota, "quota attached");
    // Detaching one gives its place back.
    m.detach(tids[0], false).context("detach one")?;
    m.attach(owned, 0, false).context("attach after a detach")?;
    drop(idle);
    m.detach(0, false).context("detach self")?;
    Ok(())
}

/// Runs `checks` in a forked child (one that changes its credentials
/// without touching the caller's); fails with `what` if they fail.
fn checks_in_child(what: &str, checks: impl FnOnce() -> Result<()>) -> Result<()> {
    let status = in_child(|| match checks() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{what}: {e:#}");
            1
        }
    })?;
    match status {
        nix::sys::wait::WaitStatus::Exited(_, 0) => Ok(()),
        s => anyhow::bail!("{what}: checks failed: {s:?}"),
    }
}

/// The meter's contract: each kind with its own fields only, bounds, and
/// a perf event this machine has (a hardware event needs a PMU; TCG has
/// none, and says so with ENOENT).
fn meter_errnos(m: &Mchannel, good: &abi::ChannelSpec) -> Result<()> {
    let perf = |bytes_per_event, type_, config| Meter::Perf {
        type_,
        config,
        bytes_per_event,
    };
    let cases: [(&str, Errno, Spoil); 10] = [
        ("emulated meter overflow", Errno::EINVAL, |s| {
            s.meter_scale = u64::MAX
        }),
        ("unknown meter", Errno::EINVAL, |s| s.meter = 9),
        ("no meter with a scale", Errno::EINVAL, |s| {
            s.meter = abi::METER_NONE
        }),
        ("reported meter with a scale", Errno::EINVAL, |s| {
            s.meter = abi::METER_REPORTED
        }),
        ("perf fields on an emulated meter", Errno::EINVAL, |s| {
            s.perf_config = 3
        }),
        ("owner without CHANNEL_OWNER", Errno::EINVAL, |s| {
            s.owner_uid = 1
        }),
        ("perf of 0 bytes per event", Errno::EINVAL, |s| {
            Meter::Perf {
                type_: 1,
                config: 1,
                bytes_per_event: 0,
            }
            .apply(s)
        }),
        ("perf bytes per event above max", Errno::EINVAL, |s| {
            Meter::Perf {
                type_: 1,
                config: 1,
                bytes_per_event: abi::PERF_BYTES_MAX + 1,
            }
            .apply(s)
        }),
        ("perf dynamic PMU type", Errno::EINVAL, |s| {
            Meter::Perf {
                type_: 9,
                config: 0,
                bytes_per_event: 64,
            }
            .apply(s)
        }),
        ("perf unknown software event", Errno::ENOENT, |s| {
            Meter::Perf {
                type_: 1,
                config: 0xffff,
                bytes_per_event: 64,
            }
            .apply(s)
        }),
    ];
    for (what, errno, spoil) in cases {
        let mut bad = *good;
        spoil(&mut bad);
        expect_errno(what, m.create_channel(&bad), errno)?;
    }
    let mut hw = *good;
    hw.name = mchannel::name("errno-llc")?;
    let (type_, config) = mchannel::perf_event("llc-misses").expect("named event");
    perf(64, type_, config).apply(&mut hw);
    if Path::new("/sys/bus/event_source/devices/cpu").exists() {
        let ch = m.create_channel(&hw).context("LLC misses with a PMU")?;
        m.destroy_channel(ch.id)?;
    } else {
        expect_errno(
            "LLC misses without a PMU",
            m.create_channel(&hw),
            Errno::ENOENT,
        )?;
    }
    let mut sw = *good;
    sw.name = mchannel::name("errno-clock")?;
    perf(1, abi::PERF_TYPE_SOFTWARE, abi::PERF_COUNT_SW_TASK_CLOCK).apply(&mut sw);
    let ch = m.create_channel(&sw).context("task-clock is everywhere")?;
    m.destroy_channel(ch.id)?;
    Ok(())
}

/// Keeps the streaming threads of a share test in step: all measure over
/// the same period, and none detaches before all have measured. (A
/// thread parked across the end of its warmup, as a debug kernel's
/// overruns make likely, would otherwise measure later than the others,
/// partly after they detached and left it the whole component.)
pub(crate) struct Lockstep {
    /// The streaming threads and the caller, at the end of the warmup.
    start: std::sync::Barrier,
    done: AtomicUsize,
    threads: usize,
}

impl Lockstep {
    /// For `threads` streaming threads; the caller waits in
    /// [`Lockstep::started`].
    pub(crate) fn new(threads: usize) -> Lockstep {
        Lockstep {
            start: std::sync::Barrier::new(threads + 1),
            done: AtomicUsize::new(0),
            threads,
        }
    }

    /// Returns when every thread has warmed up and starts measuring.
    pub(crate) fn started(&self) {
        self.start.wait();
    }

    /// Streams with `s`, calling `tick` after each pass: `warmup`, then
    /// (in step with the others) `measure`, which it reports, then on
    /// until every thread has measured.
    pub(crate) fn run(
        &self,
        s: &mut Stream,
        warmup: Duration,
        measure: Duration,
        mut tick: impl FnMut(),
    ) -> Progress {
        s.measure(|t| {
            tick();
            t.elapsed() < warmup
        });
        self.start.wait();
        let p = s.measure(|t| {
            tick();
            t.elapsed() < measure
        });
        self.done.fetch_add(1, Ordering::AcqRel);
        s.measure(|_| {
            tick();
            self.done.load(Ordering::Acquire) < self.threads
        });
        p
    }
}

/// Streams on the calling thread: `warmup` first, then measures for
/// `measure`.
pub(crate) fn stream_for(warmup: Duration, measure: Duration) -> Progress {
    let mut s = Stream::new();
    s.measure(|t| t.elapsed() < warmup);
    s.measure(|t| t.elapsed() < measure)
}

/// How a share test's channel is metered: all count the same bytes per
/// microsecond of running, by the emulated meter, a perf event (on-CPU
/// nanoseconds, a software event every kernel has) or the thread's own
/// reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeMeter {
    #[default]
    Emulated,
    Perf,
    Reported,
}

/// A group or channel of a share test: `name=weight`, `name=weight@parent`
/// for a child, a trailing `/` on a group's name (`A/=1`), and
/// `:perf` or `:reported` after the weight for a channel not metered by
/// the emulated meter (`b=1:perf`).
#[derive(Debug, Clone, PartialEq)]
pub struct ShareNode {
    pub name: String,
    pub weight: u32,
    pub parent: Option<String>,
    pub group: bool,
    pub meter: NodeMeter,
}

impl std::str::FromStr for ShareNode {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<ShareNode> {
        let (name, rest) = s.split_once('=').context("name=weight[@parent]")?;
        let (weight, parent) = match rest.split_once('@') {
            Some((w, p)) => (w, Some(p.to_string())),
            None => (rest, None),
        };
        let (name, group) = match name.strip_suffix('/') {
            Some(n) => (n, true),
            None => (name, false),
        };
        let (weight, meter) = match weight.split_once(':') {
            None => (weight, NodeMeter::Emulated),
            Some((w, "perf")) => (w, NodeMeter::Perf),
            Some((w, "reported")) => (w, NodeMeter::Reported),
            Some((_, m)) => anyhow::bail!("meter is perf or reported, not {m:?}"),
        };
        Ok(ShareNode {
            name: name.to_string(),
            weight: weight.parse().context("weight")?,
            parent,
            group,
            meter,
        })
    }
}

/// Each channel's weighted max-min share of one component when every
/// channel wants all of it: its parent's share times its weight over its
/// siblings'. Parents come before their children.
pub fn tree_shares(nodes: &[ShareNode]) -> Result<Vec<f64>> {
    let mut share = vec![0.0; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        let siblings: u32 = nodes
            .iter()
            .filter(|m| m.parent == n.parent)
            .map(|m| m.weight)
            .sum();
        let above = match &n.parent {
            None => 1.0,
            Some(p) => {
                let k = nodes[..i]
                    .iter()
                    .position(|m| &m.name == p && m.group)
                    .with_context(|| format!("{}: no group {p} before it", n.name))?;
                share[k]
            }
        };
        share[i] = above * f64::from(n.weight) / f64::from(siblings);
    }
    Ok(share)
}

/// Groups and channels (`nodes`) on one component whose capacity is one
/// thread's demand (the emulated meter: `meter` bytes per us of running),
/// one streaming thread in each channel. Each must run its weighted
/// max-min share (Eq. 2, through the hierarchy: `tree_shares`) within
/// `tolerance`; after detaching, each runs unthrottled again.
pub fn share(
    dev: &Path,
    nodes: &[ShareNode],
    t_w_us: u64,
    meter: u64,
    seconds: f64,
    tolerance: f64,
) -> Result<()> {
    let want_all = tree_shares(nodes)?;
    let m = Mchannel::open(dev)?;
    let all_ids = create_share_tree(&m, nodes, t_w_us, meter)?;
    let leaves: Vec<usize> = (0..nodes.len()).filter(|&i| !nodes[i].group).collect();
    let ids: Vec<u32> = leaves.iter().map(|&i| all_ids[i]).collect();
    let want: Vec<f64> = leaves.iter().map(|&i| want_all[i]).collect();
    let run = ShareRun {
        dev,
        meter,
        seconds,
        warmup: Duration::from_secs_f64(seconds / 2.0),
        measure: Duration::from_secs_f64(seconds),
    };
    let kinds: Vec<NodeMeter> = leaves.iter().map(|&i| nodes[i].meter).collect();
    let out = run.streams(&m, &ids, &kinds)?;
    // Children before their parents.
    for &id in all_ids.iter().rev() {
        m.destroy_channel(id).context("destroy")?;
    }
    for (k, &leaf) in leaves.iter().enumerate() {
        print_share_channel(&nodes[leaf], want[k], &out, k);
    }
    let ran: Vec<f64> = out.attached.iter().map(|p| p.run_fraction).collect();
    let used: Vec<f64> = out
        .stats
        .iter()
        .map(|s| s.run_ns as f64 / s.granted_ns.max(1) as f64)
        .collect();
    let baseline = out.baseline;
    println!(
        "the component carried {:.3} of its capacity; never attached, the threads ran {baseline:.3} CPUs together (just before and after the detached phase: {:.3}, {:.3})",
        ran.iter().sum::<f64>(),
        out.baselines.0,
        out.baselines.1
    );
    let user: Vec<f64> = out
        .attached
        .iter()
        .map(|p| (p.run_fraction - p.system_fraction).max(0.0))
        .collect();
    judge_shares(&want, &ran, &user, &used, tolerance)?;
    // Detached, nothing holds the threads back: together they run as much
    // as as many threads never attached do (what this machine gives them:
    // on a debug kernel, less than a CPU each), measured just before and
    // just after them, so that a slow phase of the host or of the kernel's
    // own work hits both alike. The bar is the lower of the two, less
    // the tolerance: on a debug kernel the two differ by up to 7 %, and
    // a thread left throttled would run its share (here at most two
    // thirds of what it runs free), far below either.
    let total: f64 = out.after.iter().map(|a| a.run_fraction).sum();
    let low = out.baselines.0.min(out.baselines.1);
    ensure!(
        total >= low * (1.0 - tolerance),
        "detached, {} threads ran {total:.3} CPUs together, {baseline:.3} never attached (the mean of {:.3} just before and {:.3} just after)",
        out.after.len(),
        out.baselines.0,
        out.baselines.1
    );
    Ok(())
}

/// Registers the share test's component (its capacity one thread's
/// demand: `meter` bytes per us) and creates `nodes` under it, parents
/// first; returns the channels' ids in the order of `nodes`.
fn create_share_tree(
    m: &Mchannel,
    nodes: &[ShareNode],
    t_w_us: u64,
    meter: u64,
) -> Result<Vec<u32>> {
    let pid = std::process::id();
    let comp = m
        .register_component(
            &format!("share-{pid}"),
            abi::COMPONENT_ENDPOINT,
            meter * 1_000_000,
        )
        .context("register")?;
    let mut all_ids: Vec<u32> = vec![];
    for n in nodes {
        let parent = n.parent.as_ref().map(|p| {
            let k = nodes.iter().position(|m| &m.name == p).unwrap();
            all_ids[k]
        });
        let path = if parent.is_some() { vec![] } else { vec![comp] };
        let mut spec = channel_spec(
            &format!("share-{pid}-{}", n.name),
            n.weight,
            &path,
            t_w_us * 1000,
            if n.group { 0 } else { meter },
            false,
        )?;
        apply_node_meter(n, meter, &mut spec)?;
        if let Some(p) = parent {
            spec.parent = p;
        }
        if n.group {
            spec.flags |= abi::CHANNEL_GROUP;
        }
        all_ids.push(m.create_channel(&spec).context("create")?.id);
    }
    Ok(all_ids)
}

/// The meter of a share test's channel (groups have none).
fn apply_node_meter(n: &ShareNode, meter: u64, spec: &mut abi::ChannelSpec) -> Result<()> {
    match n.meter {
        _ if n.group => {}
        NodeMeter::Emulated => {}
        NodeMeter::Perf => {
            ensure!(
                meter.is_multiple_of(1000),
                "a perf meter counts ns: --meter must be whole bytes per ns"
            );
            Meter::Perf {
                type_: abi::PERF_TYPE_SOFTWARE,
                config: abi::PERF_COUNT_SW_TASK_CLOCK,
                bytes_per_event: meter / 1000,
            }
            .apply(spec);
        }
        NodeMeter::Reported => Meter::Reported.apply(spec),
    }
    Ok(())
}

/// How a share test streams: the device, the meter's bytes per us, and
/// its phases.
struct ShareRun<'a> {
    dev: &'a Path,
    meter: u64,
    seconds: f64,
    warmup: Duration,
    measure: Duration,
}

/// What a share test saw of each leaf channel: the kernel's counters near
/// the end of the measured phase, the run fraction the kernel counted over
/// most of it, and the thread's own view attached and after detaching.
struct ShareOutcome {
    stats: Vec<mchannel::ChannelStat>,
    counted: Vec<f64>,
    attached: Vec<Progress>,
    after: Vec<Progress>,
    /// The CPUs as many never-attached threads used together, just before
    /// and just after the detached phase, and their mean.
    baselines: (f64, f64),
    baseline: f64,
}

/// The detached phase of a share test, between two baselines: each
/// thread, once detached (or failed), waits for `go`, then all measure in
/// step.
struct Detached {
    /// Threads detached (or failed) and waiting.
    ready: AtomicUsize,
    go: AtomicBool,
    step: Lockstep,
}

impl Detached {
    fn new(threads: usize) -> Detached {
        Detached {
            ready: AtomicUsize::new(0),
            go: AtomicBool::new(false),
            step: Lockstep::new(threads),
        }
    }

    /// A streaming thread, detached: waits (asleep, so that the baseline
    /// before has the CPUs to itself), then streams in step with the
    /// others for `measure`.
    fn run(&self, measure: Duration) -> Progress {
        let mut s = Stream::new();
        self.ready.fetch_add(1, Ordering::AcqRel);
        while !self.go.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.step
            .run(&mut s, Duration::from_millis(300), measure, || {})
    }

    /// The caller: when every thread is waiting, runs `before`, lets them
    /// go and returns when they started measuring.
    fn release<T>(&self, threads: usize, before: impl FnOnce() -> T) -> T {
        while self.ready.load(Ordering::Acquire) < threads {
            std::thread::sleep(Duration::from_millis(5));
        }
        let r = before();
        self.go.store(true, Ordering::Release);
        self.step.started();
        r
    }
}

impl ShareRun<'_> {
    /// One streaming thread in each channel of `ids` (metered as `kinds`
    /// says), in lockstep, while this thread reads the kernel's view.
    fn streams(&self, m: &Mchannel, ids: &[u32], kinds: &[NodeMeter]) -> Result<ShareOutcome> {
        let step = Lockstep::new(ids.len());
        let detached = Detached::new(ids.len());
        let n = ids.len();
        let phase = self.seconds / 2.0;
        std::thread::scope(|s| -> Result<_> {
            let (step, detached) = (&step, &detached);
            let hs: Vec<_> = ids
                .iter()
                .zip(kinds)
                .map(|(&id, &kind)| s.spawn(move || self.stream_in(id, kind, step, detached)))
                .collect();
            let view = self.kernel_view(m, ids, step);
            // Baselines by threads never attached, just before and just
            // after the detached threads measure (none streams meanwhile).
            let before = detached.release(n, || baseline(n, phase));
            let mut results = vec![];
            for h in hs {
                results.push(h.join().expect("stream thread"));
            }
            let after_b = baseline(n, phase);
            let (stats, counted) = view?;
            let mut attached = vec![];
            let mut after = vec![];
            for r in results {
                let (p, q) = r?;
                attached.push(p);
                after.push(q);
            }
            Ok(ShareOutcome {
                stats,
                counted,
                attached,
                after,
                baselines: (before, after_b),
                baseline: (before + after_b) / 2.0,
            })
        })
    }

    /// A streaming thread: attached to channel `id` for the measured
    /// phases, then detached for a while.
    fn stream_in(
        &self,
        id: u32,
        kind: NodeMeter,
        step: &Lockstep,
        detached: &Detached,
    ) -> Result<(Progress, Progress)> {
        // Whatever happened attached, the detached phase waits for every
        // thread.
        let p = self.attached_phase(id, kind, step);
        let q = detached.run(Duration::from_secs_f64(self.seconds / 2.0));
        Ok((p?, q))
    }

    /// Attached to channel `id`, streams in step with the others, then
    /// detaches.
    fn attached_phase(&self, id: u32, kind: NodeMeter, step: &Lockstep) -> Result<Progress> {
        let attached = Mchannel::open(self.dev).context("open").and_then(|m| {
            m.attach(id, 0, false).context("attach")?;
            Ok(m)
        });
        let m = match attached {
            Ok(m) => m,
            Err(e) => {
                // The others wait for this thread at the start.
                step.start.wait();
                step.done.fetch_add(1, Ordering::AcqRel);
                return Err(e);
            }
        };
        let p = if kind == NodeMeter::Reported {
            stream_reporting(&m, self.meter, step, self.warmup, self.measure)?
        } else {
            step.run(&mut Stream::new(), self.warmup, self.measure, || {})
        };
        m.detach(0, false).context("detach")?;
        Ok(p)
    }

    /// The kernel's view near the end of the measured phase: each
    /// channel's counters, and what it counted as run over most of it.
    fn kernel_view(
        &self,
        m: &Mchannel,
        ids: &[u32],
        step: &Lockstep,
    ) -> Result<(Vec<mchannel::ChannelStat>, Vec<f64>)> {
        step.started();
        let t0 = std::time::Instant::now();
        let mut first = vec![];
        for &id in ids {
            first.push(m.query(id)?.run_ns);
        }
        std::thread::sleep(self.measure.mul_f64(0.9));
        let span = t0.elapsed().as_nanos() as f64;
        let (mut stats, mut counted) = (vec![], vec![]);
        for (k, &id) in ids.iter().enumerate() {
            let s = m.query(id)?;
            counted.push(s.run_ns.saturating_sub(first[k]) as f64 / span);
            stats.push(s);
        }
        Ok((stats, counted))
    }
}

/// One line of a share test per leaf channel `k` (node `n`, computed
/// share `want`).
fn print_share_channel(n: &ShareNode, want: f64, out: &ShareOutcome, k: usize) {
    let (s, attached, after) = (&out.stats[k], &out.attached[k], &out.after[k]);
    println!(
        "channel {} (weight {}{}): run fraction {:.3} (in the kernel {:.3}, the kernel counted {:.3}; computed {:.3}, T_R/T_W {:.3}), {:.0} MB/s; detached {:.3}; rate {} MB/s, demand {} MB/s, alpha {} MB/s; {} windows, throttled {} ms, ran {:.3} of granted, overrun up to {} us",
        n.name,
        n.weight,
        n.parent.as_ref().map(|p| format!(" in {p}")).unwrap_or_default(),
        attached.run_fraction,
        attached.system_fraction,
        out.counted[k],
        want,
        s.t_r_ns as f64 / s.t_w_ns as f64,
        attached.bytes_per_s / 1e6,
        after.run_fraction,
        s.rate / 1_000_000,
        s.demand / 1_000_000,
        s.alpha / 1_000_000,
        s.windows,
        s.throttled_ns / 1_000_000,
        s.run_ns as f64 / s.granted_ns.max(1) as f64,
        s.max_overrun_ns / 1_000
    );
}

/// `stream_for`, reporting after each pass `bytes_per_us` for each
/// microsecond the thread ran (what the emulated meter would count).
fn stream_reporting(
    m: &Mchannel,
    bytes_per_us: u64,
    step: &Lockstep,
    warmup: Duration,
    measure: Duration,
) -> Result<Progress> {
    let mut s = Stream::new();
    let mut last = thread_cpu();
    let mut failed = None;
    let mut report = || {
        let now = thread_cpu();
        let us = (now - last).as_micros() as u64;
        last = now;
        if let Err(e) = m.report(us * bytes_per_us) {
            failed.get_or_insert(e);
        }
    };
    let p = step.run(&mut s, warmup, measure, &mut report);
    match failed {
        Some(e) => Err(e).context("REPORT"),
        None => Ok(p),
    }
}

/// Two channels of weight one, a streaming thread each (the emulated
/// meter: `meter` bytes per us of running, so one thread running all the
/// time moves D = `meter` MB/s), on a component configured for `over` D
/// whose congestion signal is the model of a device that delivers D
/// (`Congestion::Model`). Unregulated they would run a CPU each; AIMD
/// must bring the capacity estimate down to about D, and the channels
/// must share it: together they run at most D and at least half of it
/// (AIMD saw-tooths below the device; TCG adds noise), evenly.
pub fn model(dev: &Path, meter: u64, over: u64, seconds: f64) -> Result<()> {
    let m = Mchannel::open(dev)?;
    let pid = std::process::id();
    let name = format!("model-{pid}");
    let demand = meter * 1_000_000;
    let comp = m
        .register_component(&name, abi::COMPONENT_ENDPOINT, demand * over)
        .context("register")?;
    m.inject_model(comp, demand).context("INJECT a model")?;
    let mut ids = vec![];
    for i in 0..2 {
        let spec = channel_spec(&format!("{name}-{i}"), 1, &[comp], 1_000_000, meter, false)?;
        ids.push(m.create_channel(&spec).context("create")?.id);
    }
    let settle = Duration::from_secs_f64(seconds);
    let (ran, capacity) = std::thread::scope(|s| -> Result<_> {
        let hs: Vec<_> = ids
            .iter()
            .map(|&id| {
                s.spawn(move || -> Result<Progress> {
                    let m = Mchannel::open(dev)?;
                    m.attach(id, 0, false).context("attach")?;
                    let p = stream_for(settle, settle);
                    m.detach(0, false).context("detach")?;
                    Ok(p)
                })
            })
            .collect();
        std::thread::sleep(settle + settle.mul_f64(0.9));
        let comps = mchannel::sys_components(Path::new(abi::SYSFS_ROOT))?;
        let c = comps
            .iter()
            .find(|c| c.name == name)
            .context("component in sysfs")?;
        ensure!(
            c.get("model_capacity") == demand,
            "sysfs model_capacity {}",
            c.get("model_capacity")
        );
        let mut ran = vec![];
        for h in hs {
            ran.push(h.join().expect("stream thread")?.run_fraction);
        }
        Ok((ran, c.get("capacity")))
    })?;
    for &id in &ids {
        m.destroy_channel(id).context("destroy")?;
    }
    let total: f64 = ran.iter().sum();
    println!(
        "configured {} MB/s, the device model delivers {} MB/s: capacity estimate {} MB/s; the channels ran {:.3} and {:.3} of a CPU, {:.0} MB/s together ({:.2} of the device)",
        demand * over / 1_000_000,
        demand / 1_000_000,
        capacity / 1_000_000,
        ran[0],
        ran[1],
        total * meter as f64,
        total
    );
    ensure!(
        capacity * 100 <= demand * 115,
        "the capacity estimate stayed at {capacity}, the device delivers {demand}"
    );
    ensure!(
        (0.4..=1.1).contains(&total),
        "together the channels moved {total:.3} of what the device delivers"
    );
    ensure!(
        (ran[0] - ran[1]).abs() <= 0.15,
        "uneven split: {:.3} and {:.3}",
        ran[0],
        ran[1]
    );
    Ok(())
}

/// The CPUs `n` streaming threads use together, unattached: at most the
/// CPUs there are. Each thread's fraction is its own CPU time over its own
/// span, and under TCG on a busy host the spans drift apart enough for
/// the sum to exceed the machine (2.22 CPUs of 2 was seen), a baseline the
/// same threads could never match again.
fn baseline(n: usize, seconds: f64) -> f64 {
    let sum: f64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| stream_for(Duration::from_millis(200), Duration::from_secs_f64(seconds)))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("stream thread").run_fraction)
            .sum()
    });
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    sum.min(cpus as f64)
}

/// A channel that ran less than this share of the budgets it was granted
/// was held back by itself (a slow machine, other work on its CPU), not by
/// its channel: max-min fairness gives what it leaves to the others.
const SELF_LIMITED: f64 = 0.95;

/// Whether the run fractions `ran` are the weighted max-min fair shares
/// `want` of one component whose capacity is one thread running all the
/// time: the component carries at most its capacity (the sum of `user`,
/// the fractions in user mode: the only running that moves the threads'
/// bytes; the module's own parking, which budgets do not count, is in
/// `ran` but not here),
/// no channel is held below its share unless it could not use it (`used`
/// < `SELF_LIMITED` of its budgets), and no channel's user-mode time
/// exceeds its share unless another left some unused (user-mode time,
/// because the parking budgets exempt grows with the kernel's own cost:
/// 0.26 of the time on the debug kernel). Each within `tolerance`.
pub fn judge_shares(
    want: &[f64],
    ran: &[f64],
    user: &[f64],
    used: &[f64],
    tolerance: f64,
) -> Result<()> {
    let load: f64 = user.iter().sum();
    ensure!(
        load <= 1.0 + tolerance,
        "the component carried {load:.3} of its capacity (user-mode time)"
    );
    let limited = |i: usize| used[i] < SELF_LIMITED;
    for i in 0..want.len() {
        ensure!(
            ran[i] >= want[i] - tolerance || limited(i),
            "channel {i}: ran {:.3} of the time, its share is {:.3} (tolerance {tolerance}), and it used {:.3} of its budgets",
            ran[i],
            want[i],
            used[i]
        );
        let spare = (0..want.len()).any(|j| j != i && limited(j));
        ensure!(
            user[i] <= want[i] + tolerance || spare,
            "channel {i}: ran {:.3} of the time in user mode, above its share {:.3} (tolerance {tolerance}), while every other channel used its budgets",
            user[i],
            want[i]
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{judge_shares, tree_shares, ShareNode};

    #[test]
    fn shares_are_judged_max_min() {
        let two_one = [2.0 / 3.0, 1.0 / 3.0];
        let ok = |want: &[f64], ran: &[f64], used: &[f64]| {
            judge_shares(want, ran, ran, used, 0.1).is_ok()
        };
        assert!(ok(&two_one, &[0.66, 0.34], &[0.98, 0.97]));
        assert!(!ok(&two_one, &[0.50, 0.50], &[0.98, 0.97]), "1:1 for 2:1");
        assert!(!ok(&[0.5, 0.5], &[0.30, 0.30], &[0.99, 0.99]), "held back");
        // The debug kernel: channel 0 could not use its budget; channel 1
        // took what it left.
        assert!(ok(&two_one, &[0.62, 0.44], &[0.86, 0.99]));
        assert!(!ok(&two_one, &[0.62, 0.44], &[0.99, 0.99]));
        assert!(!ok(&two_one, &[0.70, 0.45], &[0.86, 0.99]), "over capacity");
        assert!(
            ok(&[0.5, 0.5], &[0.20, 0.80], &[0.30, 0.99]),
            "self-limited"
        );
        // The debug kernel with parking exempt from budgets: 0.574 of a
        // CPU each, 0.22 of it parking; the load is what user mode ran.
        let (ran, used) = ([0.574, 0.581], [0.95, 0.95]);
        assert!(judge_shares(&[0.5, 0.5], &ran, &[0.354, 0.366], &used, 0.1).is_ok());
        assert!(judge_shares(&[0.5, 0.5], &ran, &ran, &used, 0.1).is_err());
        // 2:1 there: the heavier channel's parking puts its total above
        // its share; its user-mode time is within it, and is what counts.
        let (ran, used) = ([0.772, 0.397], [0.945, 0.969]);
        assert!(judge_shares(&two_one, &ran, &[0.512, 0.206], &used, 0.1).is_ok());
        assert!(judge_shares(&two_one, &ran, &[0.772, 0.206], &used, 0.1).is_err());
    }

    #[test]
    fn tree_shares_follow_the_hierarchy() {
        let parse =
            |v: &[&str]| -> Vec<ShareNode> { v.iter().map(|s| s.parse().unwrap()).collect() };
        let nodes = parse(&["A/=1", "B/=1", "a1=1@A", "a2=1@A", "b1=1@B"]);
        assert!(nodes[0].group && !nodes[2].group);
        let s = tree_shares(&nodes).unwrap();
        assert_eq!(s[2..], [0.25, 0.25, 0.5]);
        let s = tree_shares(&parse(&["x=2", "y=1"])).unwrap();
        assert!((s[0] - 2.0 / 3.0).abs() < 1e-12 && (s[1] - 1.0 / 3.0).abs() < 1e-12);
        assert!(tree_shares(&parse(&["c=1@Z"])).is_err(), "no such parent");
        assert!("nameonly".parse::<ShareNode>().is_err());
    }
}
