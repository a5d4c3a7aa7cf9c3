//! A port's host backend: a TAP interface, so that a port's frames reach
//! the host's network stack (a bridge, an address, tcpdump) instead of
//! another port of the model.
//!
//! The model holds the TAP's file descriptor, non-blocking, and moves
//! frames in its one loop: what the port sent is written to it, and what
//! the host sent is read from it, at most [`TAP_BUDGET`] frames a pass.
//! Nothing here ever waits: a write the TAP cannot take now and a frame
//! the port cannot take are dropped and counted, as a NIC does.
//!
//! A TAP that fails otherwise (deleted under the model, say) does not
//! stop the model: the error is counted and logged once, the port loses
//! carrier, and frames are dropped until the TAP works again. The TAP's
//! own carrier follows the port's link, so the host sees the guest's
//! interface go down.

use anyhow::{Context, Result};
use cxlnic_ring::layout::{FRAME_MAX, FRAME_MIN};
use nix::libc;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

/// Frames read from a TAP per pass: the other ports get their turn.
pub const TAP_BUDGET: u32 = 64;
/// The clone device every TAP is made or attached through.
pub const TUN_PATH: &str = "/dev/net/tun";
/// A read buffer larger than anything a TAP hands out (a 64 KiB MTU
/// plus headers), so that a read's length is the whole frame's and an
/// oversized frame is seen as such, not cut.
const READ_BYTES: usize = 128 << 10;

/// The ioctl, in a module of its own because the macro makes it `pub`
/// and it is no part of this crate's interface.
mod ioctl {
    use nix::libc;

    nix::ioctl_write_ptr_bad!(
        /// TUNSETIFF, <linux/if_tun.h>: `_IOW('T', 202, int)`, though
        /// it takes a `struct ifreq` (hence "bad": the size is not the
        /// argument's). Makes the fd the TAP's, creating the TAP.
        tun_set_iff,
        nix::request_code_write!(b'T', 202, std::mem::size_of::<libc::c_int>()),
        libc::ifreq
    );

    nix::ioctl_write_ptr!(
        /// TUNSETCARRIER, <linux/if_tun.h>: `_IOW('T', 226, int)`, the
        /// TAP's carrier on (non-zero) or off (Linux 4.19 and later).
        tun_set_carrier,
        b'T',
        226,
        libc::c_int
    );
}

/// A TAP backend's counters (`stats`: a port's `tap`). "To host": frames
/// the port sent, written to the TAP; "from host": frames read from it.
/// Missing fields read as 0, so that an older or newer answer parses.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TapStats {
    /// Frames written to the TAP.
    pub frames_to_host: u64,
    /// Their bytes.
    pub bytes_to_host: u64,
    /// Frames the port sent that the TAP did not take: it was full
    /// (the write would block) or down, or the frame was out of bounds.
    pub dropped_to_host: u64,
    /// Frames read from the TAP and handed to the port.
    pub frames_from_host: u64,
    /// Their bytes.
    pub bytes_from_host: u64,
    /// Frames read from the TAP and dropped: shorter than an Ethernet
    /// header, longer than the layout's `FRAME_MAX`, or arriving while
    /// the port has no config.
    pub dropped_from_host: u64,
    /// Reads and writes that failed for another reason than those above
    /// (at most one a pass each way); the frame, if any, was dropped.
    pub errors: u64,
}

/// An open TAP interface and what went through it.
pub struct Tap {
    name: String,
    file: File,
    buf: Vec<u8>,
    stats: TapStats,
    /// The last read or write failed with this: no carrier for the port.
    failing: Option<String>,
    /// What TUNSETCARRIER was last asked (`None`: not yet, or refused).
    carrier: Option<bool>,
}

/// Whether a TAP's kernel side accepts a name: 1 to 15 bytes (IFNAMSIZ
/// with its NUL), none of them a separator, a slash or a NUL; checked
/// before anything is opened so a typo is reported as one.
pub fn check_name(name: &str) -> Result<()> {
    anyhow::ensure!(
        !name.is_empty() && name.len() < libc::IFNAMSIZ,
        "TAP name {name:?}: 1 to {} bytes",
        libc::IFNAMSIZ - 1
    );
    anyhow::ensure!(
        !name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace()),
        "TAP name {name:?}: no '/', ':', NUL or white space"
    );
    anyhow::ensure!(name != "." && name != "..", "TAP name {name:?}");
    Ok(())
}

/// The request TUNSETIFF takes: the name and the flags (a TAP, frames
/// without the packet-information prefix).
fn tap_request(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain data (a name and a union of integers,
    // addresses and a pointer); all zeroes is a valid value of each.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    req
}

/// Whether a write error means "drop this frame" rather than a broken
/// backend: the TAP is full (would block) or down (`EIO`), or the kernel
/// refused this frame or had no memory for it.
fn drops_frame(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::WouldBlock
        || matches!(
            e.raw_os_error(),
            Some(libc::EIO | libc::EINVAL | libc::EMSGSIZE | libc::ENOBUFS | libc::ENOMEM)
        )
}

/// Whether `len` bytes make a frame the rings carry.
fn fits(len: usize) -> bool {
    (FRAME_MIN as usize..=FRAME_MAX as usize).contains(&len)
}

impl Tap {
    /// Creates TAP interface `name`, or attaches to it if it exists (a
    /// persistent one, `ip tuntap add`), non-blocking. Needs
    /// CAP_NET_ADMIN unless the interface exists and belongs to this
    /// user (`ip tuntap add NAME mode tap user USER`). The interface goes
    /// when the model exits unless persistent.
    pub fn open(name: &str) -> Result<Tap> {
        check_name(name)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(TUN_PATH)
            .with_context(|| format!("TAP {name}: open {TUN_PATH}"))?;
        let req = tap_request(name);
        // SAFETY: the fd is open; TUNSETIFF reads (and writes back the
        // name into) the ifreq, which lives across the call.
        unsafe { ioctl::tun_set_iff(file.as_raw_fd(), &req) }
            .with_context(|| format!("TAP {name}: TUNSETIFF (making a TAP needs CAP_NET_ADMIN)"))?;
        Ok(Tap {
            name: name.to_string(),
            file,
            buf: vec![0; READ_BYTES],
            stats: TapStats::default(),
            failing: None,
            carrier: None,
        })
    }

    /// Whether the TAP works: its last read or write did not fail.
    pub fn healthy(&self) -> bool {
        self.failing.is_none()
    }

    /// Sets the TAP's carrier to the port's link. A kernel without
    /// TUNSETCARRIER leaves it on, which is logged once.
    pub fn set_carrier(&mut self, up: bool) {
        if self.carrier == Some(up) {
            return;
        }
        let on = libc::c_int::from(up);
        // SAFETY: the fd is open; TUNSETCARRIER reads the int, which
        // lives across the call.
        match unsafe { ioctl::tun_set_carrier(self.file.as_raw_fd(), &on) } {
            Ok(_) => self.carrier = Some(up),
            Err(e) if self.carrier.is_some() || up => {
                eprintln!("cxlnic-model: TAP {}: TUNSETCARRIER: {e}", self.name);
                // Once: the next change is not retried.
                self.carrier = Some(up);
            }
            Err(_) => {}
        }
    }

    /// Counts a failed read or write and logs it when the TAP was
    /// working (so a TAP that keeps failing logs once).
    fn failed(&mut self, what: &str, e: &std::io::Error) {
        self.stats.errors += 1;
        if self.failing.is_none() {
            eprintln!(
                "cxlnic-model: TAP {}: {what}: {e}; dropping frames (no carrier) until it works",
                self.name
            );
        }
        self.failing = Some(format!("{what}: {e}"));
    }

    /// Notes a read or write that worked, logging a recovery.
    fn worked(&mut self) {
        if let Some(was) = self.failing.take() {
            eprintln!("cxlnic-model: TAP {}: works again (was {was})", self.name);
        }
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What went through the TAP so far.
    pub fn stats(&self) -> TapStats {
        self.stats
    }

    /// Writes every frame the port sent to the host; a frame the TAP
    /// cannot take is dropped and counted. After a write failed for
    /// another reason, the rest of the batch is dropped too. Returns the
    /// frames written.
    pub fn send(&mut self, frames: impl IntoIterator<Item = Vec<u8>>) -> u32 {
        let mut sent = 0;
        let mut failed = false;
        for frame in frames {
            if failed || !fits(frame.len()) {
                self.stats.dropped_to_host += 1;
                continue;
            }
            match self.send_one(&frame) {
                Ok(true) => sent += 1,
                Ok(false) => self.stats.dropped_to_host += 1,
                Err(e) => {
                    self.failed("write", &e);
                    self.stats.dropped_to_host += 1;
                    failed = true;
                }
            }
        }
        sent
    }

    /// Writes one frame: whether it went (a TAP write is a whole frame
    /// or nothing), or the error that is not a dropped frame.
    fn send_one(&mut self, frame: &[u8]) -> std::io::Result<bool> {
        match self.file.write(frame) {
            Ok(n) if n == frame.len() => {
                self.worked();
                self.stats.frames_to_host += 1;
                self.stats.bytes_to_host += n as u64;
                Ok(true)
            }
            Ok(_) => Ok(false),
            Err(e) if drops_frame(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads up to [`TAP_BUDGET`] frames the host sent, without waiting,
    /// and hands each that fits to `deliver`, which says whether the port
    /// took it (it has a config). A failed read ends the pass. Returns
    /// the frames read.
    pub fn receive(&mut self, mut deliver: impl FnMut(Vec<u8>) -> bool) -> u32 {
        let mut read = 0;
        while read < TAP_BUDGET {
            let len = match self.read_one() {
                Ok(Some(len)) => len,
                // Nothing waits: the TAP works.
                Ok(None) => {
                    self.worked();
                    break;
                }
                Err(e) => {
                    self.failed("read", &e);
                    break;
                }
            };
            self.worked();
            read += 1;
            if !fits(len) {
                self.stats.dropped_from_host += 1;
                continue;
            }
            if deliver(self.buf[..len].to_vec()) {
                self.stats.frames_from_host += 1;
                self.stats.bytes_from_host += len as u64;
            } else {
                self.stats.dropped_from_host += 1;
            }
        }
        read
    }

    /// Reads one frame into the buffer: its length, or `None` when none
    /// waits (or a signal came first: the next pass reads it).
    fn read_one(&mut self) -> std::io::Result<Option<usize>> {
        match self.file.read(&mut self.buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kernel_would_refuse_are_refused_here() {
        for good in ["tap0", "cxlnic-t.1", "a23456789012345"] {
            check_name(good).unwrap();
        }
        for bad in ["", "a234567890123456", "a/b", "a b", "a:1", "..", "a\0"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_request_carries_the_name_and_tap_flags() {
        let req = tap_request("tap7");
        let name: Vec<u8> = req.ifr_name.iter().map(|&c| c as u8).collect();
        assert_eq!(&name[..5], b"tap7\0");
        // SAFETY: tap_request set the flags member.
        let flags = unsafe { req.ifr_ifru.ifru_flags };
        assert_eq!(i32::from(flags), libc::IFF_TAP | libc::IFF_NO_PI);
    }

    #[test]
    fn only_frames_the_rings_carry_fit() {
        assert!(!fits(FRAME_MIN as usize - 1));
        assert!(fits(FRAME_MIN as usize));
        assert!(fits(FRAME_MAX as usize));
        assert!(!fits(FRAME_MAX as usize + 1));
    }
}
