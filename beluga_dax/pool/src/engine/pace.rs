//! How often a host ticks, and when the manager looks at the mailboxes
//! between ticks.
//!
//! A tick reads the superblock, every host slot and the mailboxes: about
//! a dozen lines of pool memory, a few microseconds on CXL hardware and
//! tens of microseconds on the testbed's emulated window. While idle a
//! host ticks every [`IDLE_TICK_MS_MAX`] at most, and always at least four
//! times per scan bound (an eighth of the lease: how long a heartbeat must
//! stay intact before it counts, `leases::scan_bound_ns`); for
//! [`BUSY_WINDOW_NS`] after serving a request, every [`BUSY_TICK_MS`].
//!
//! No interrupt crosses hosts on a CXL pool: a request is seen only when
//! the manager polls for it, and every poll costs the manager's CPU and a
//! trip over the fabric per live host. Requests come in runs (a client's
//! next call; the publish that ends an allocation once the client has
//! cleared its sections), so after serving one the manager polls often at
//! first and less often the longer none comes: the pause is a sixteenth
//! of the time since the last request, so a request waits at most about
//! 6% longer than it would at a fixed fast poll, within the bounds below.
//! After [`HOT_WINDOW_NS`] without one, only the tick looks.

/// The longest pause between two ticks of an idle host.
pub const IDLE_TICK_MS_MAX: u32 = 10;
/// The pause between two ticks for a while after serving a request.
pub const BUSY_TICK_MS: u32 = 1;
/// How long after serving a request the host ticks every `BUSY_TICK_MS`.
pub const BUSY_WINDOW_NS: u64 = 200_000_000;

/// The pause between two ticks of an idle host with a lease of
/// `lease_ms`: [`IDLE_TICK_MS_MAX`], or a quarter of the scan bound if
/// that is shorter (leases under 320 ms), and never under 1 ms.
pub fn idle_tick_ms(lease_ms: u32) -> u32 {
    let quarter_bound_ms = super::super::leases::scan_bound_ns(lease_ms) / 4 / 1_000_000;
    let ms = quarter_bound_ms.clamp(1, u64::from(IDLE_TICK_MS_MAX));
    // Within u32 by the clamp.
    u32::try_from(ms).unwrap_or(IDLE_TICK_MS_MAX)
}

/// How long after the last request the manager keeps polling between ticks.
pub const HOT_WINDOW_NS: u64 = 100_000_000;
/// The shortest pause between two polls.
pub const HOT_POLL_MIN_US: u32 = 20;
/// The longest pause between two polls.
pub const HOT_POLL_MAX_US: u32 = 200;
/// While polling, the host takes a full step (lease, watching) after each
/// stretch this long, as often as it ticks while busy: well under a
/// quarter of the shortest lease, when heartbeats are due.
pub const HOT_SLICE_NS: u64 = BUSY_TICK_MS as u64 * 1_000_000;

const _: () = assert!(
    HOT_SLICE_NS
        < (*super::super::leases::LEASE_MS_RANGE.start() as u64).saturating_mul(1_000_000) / 4
);

/// The pause before the next poll, `since_ns` after the last request, or
/// `None` once the window is over.
pub fn hot_pause_us(since_ns: u64) -> Option<u32> {
    if since_ns > HOT_WINDOW_NS {
        return None;
    }
    let us = since_ns / 16 / 1000;
    let us = us.clamp(u64::from(HOT_POLL_MIN_US), u64::from(HOT_POLL_MAX_US));
    // Within u32 by the clamp.
    Some(u32::try_from(us).unwrap_or(HOT_POLL_MAX_US))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_ticks_stay_within_a_quarter_scan_bound() {
        use crate::leases::{scan_bound_ns, LEASE_MS_RANGE};
        assert_eq!(idle_tick_ms(2000), IDLE_TICK_MS_MAX);
        assert_eq!(idle_tick_ms(*LEASE_MS_RANGE.start()), 3);
        assert_eq!(idle_tick_ms(0), 1);
        for lease in [100, 101, 319, 320, 321, 1000, 600_000, u32::MAX] {
            let tick = idle_tick_ms(lease);
            assert!((1..=IDLE_TICK_MS_MAX).contains(&tick), "lease {lease}");
            if LEASE_MS_RANGE.contains(&lease) {
                assert!(
                    u64::from(tick) * 4_000_000 <= scan_bound_ns(lease),
                    "lease {lease}"
                );
            }
        }
    }

    #[test]
    fn pauses_grow_with_quiet_time_within_bounds() {
        assert_eq!(hot_pause_us(0), Some(HOT_POLL_MIN_US));
        assert_eq!(hot_pause_us(1_600_000), Some(100));
        assert_eq!(hot_pause_us(HOT_WINDOW_NS), Some(HOT_POLL_MAX_US));
        assert_eq!(hot_pause_us(HOT_WINDOW_NS + 1), None);
        assert_eq!(hot_pause_us(u64::MAX), None);
        let mut last = 0;
        for since in (0..=HOT_WINDOW_NS).step_by(7_919) {
            let p = hot_pause_us(since).unwrap();
            assert!(p >= last, "pauses shrink at {since}");
            assert!((HOT_POLL_MIN_US..=HOT_POLL_MAX_US).contains(&p));
            // A request arriving now waits at most a sixteenth of the
            // quiet time, or the shortest pause.
            assert!(u64::from(p) * 1000 <= (since / 16).max(u64::from(HOT_POLL_MIN_US) * 1000));
            last = p;
        }
    }
}
