//! Shared cases of staggered windows (`window::stagger_phase`,
//! `bottleneck`, `place` and `RunWindow::run_phase`, and
//! `RunState::set_phase`): suites `mchannel_core_window` and
//! `mchannel_core_thread`.

use super::super::outcome::Outcome;
use super::super::thread::{OnCpu, RunState};
use super::super::window::{bottleneck, place, stagger_phase, Budget, RunWindow};

const US: u64 = 1_000;

pub fn staggered_phases_are_evenly_spaced() -> Outcome {
    const Q: u32 = 1 << 30;
    // Thread 0 of each channel: the channels evenly spaced.
    for (i, want) in [0, Q, 2 * Q, 3 * Q].into_iter().enumerate() {
        check_eq!(stagger_phase(i as u64, 4, 0), want);
    }
    check_eq!(stagger_phase(5, 4, 0), Q, "modulo the channels");
    check_eq!(stagger_phase(1, 3, 0), 1_431_655_765);
    check_eq!(stagger_phase(2, 3, 0), 2_863_311_530);
    check_eq!(stagger_phase(7, 0, 0), 0);
    check_eq!(stagger_phase(7, 1, 0), 0);
    check_eq!(stagger_phase(u64::MAX - 1, u64::MAX, 0), u32::MAX);
    // One channel's threads: frac(rank phi) (0.618, 0.236, 0.854, 0.472
    // of the window).
    let golden = [
        2_654_435_769u32,
        1_013_904_242,
        3_668_340_012,
        2_027_808_485,
    ];
    for (rank, g) in (1u64..).zip(golden) {
        check_eq!(stagger_phase(0, 1, rank), g);
    }
    // Of four channels, rank steps of s_4 = (1 + 1 / phi) / 4 (0.4045;
    // floor(4 / phi^2) = 1) past the channel's start, modulo the window:
    // 0.4045, 0.8090, 0.2135 of it (in 10^-7 of the window).
    for (rank, want) in (1u64..).zip([4_045_085i64, 8_090_170, 2_135_255]) {
        let got = stagger_phase(3, 4, rank).wrapping_sub(3 * Q);
        let want = want * (1 << 32) / 10_000_000;
        check!(
            (i64::from(got) - want).abs() < 50_000,
            "rank {}: {}",
            rank,
            got
        );
    }
    // Spaced by 2^32 / n (floor) for any n, increasing with the channel.
    for n in [2u64, 5, 7, 1024, 1 << 31] {
        let (a, b) = (stagger_phase(0, n, 0), stagger_phase(1, n, 0));
        check!(u64::from(b - a) == (1u64 << 32) / n, "n = {}", n);
        check!(
            stagger_phase(n - 1, n, 0) > stagger_phase(n - 2, n, 0),
            "n = {}",
            n
        );
    }
    Ok(())
}

pub fn a_new_phase_moves_the_next_window_onto_it() -> Outcome {
    // A thread attached at 0 (phase 0) runs 50 us of every 100; moved to
    // slot 1 of 4 (25 us past multiples of 100 us), the window at 100 us
    // runs on to 225 us with 5/4 of the budget, then 100 us windows again.
    let mut s = RunState::new(0, 100 * US, 50 * US);
    s.set_phase(stagger_phase(1, 4, 0));
    s.switch_in(0);
    check_eq!(s.check(0), OnCpu::Budget(50 * US));
    check_eq!(s.window_end_ns(), 100 * US, "the current window stays");
    s.switch_out(50 * US);
    s.switch_in(100 * US);
    check_eq!(s.window_end_ns(), 225 * US);
    check_eq!(s.budget_ns(), 62_500);
    s.switch_out(100 * US + 62_500);
    s.switch_in(225 * US);
    check_eq!(s.window_end_ns(), 325 * US);
    check_eq!(s.budget_ns(), 50 * US);
    // The same phase again: the windows stay.
    s.set_phase(stagger_phase(5, 4, 0));
    s.switch_out(275 * US);
    s.switch_in(325 * US);
    check_eq!(s.window_end_ns(), 425 * US);
    // A new length starts on the grid too: 200 us windows at 50 us past
    // multiples of 200 us (the window at 425 us runs on to 650 us).
    s.set_window(200 * US);
    s.switch_out(375 * US);
    s.switch_in(425 * US);
    check_eq!(s.window_end_ns(), 650 * US);
    Ok(())
}

pub fn channels_are_placed_by_their_bottleneck() -> Outcome {
    // The least configured capacity on the path, the first of equals.
    check_eq!(bottleneck([10, 5, 7]), Some(1));
    check_eq!(bottleneck([5, 9, 5]), Some(0));
    check_eq!(bottleneck([u64::MAX]), Some(0));
    check_eq!(bottleneck(core::iter::empty()), None);
    // Channels 0, 2 and 4 share component 3, channel 3 is alone on
    // component 1, channels 1 and 5 have no threads (or are groups).
    let keys = [Some(3), None, Some(3), Some(1), Some(3), None];
    check_eq!(place(&keys, 0), (0, 3));
    check_eq!(place(&keys, 2), (1, 3));
    check_eq!(place(&keys, 4), (2, 3));
    check_eq!(place(&keys, 3), (0, 1));
    check_eq!(place(&keys, 1), (0, 1));
    check_eq!(place(&keys, 9), (0, 1), "out of range");
    // Channel 2 leaves: channel 4 moves up, channel 0 stays.
    let keys = [Some(3), None, None, Some(1), Some(3), None];
    check_eq!(place(&keys, 0), (0, 2));
    check_eq!(place(&keys, 4), (1, 2));
    // The places of one bottleneck are its channels' phases, evenly spaced.
    let keys = [Some(0), Some(0), Some(0), Some(0)];
    for (i, want) in [0u32, 1 << 30, 2 << 30, 3 << 30].into_iter().enumerate() {
        let (at, n) = place(&keys, i);
        check_eq!(stagger_phase(at, n, 0), want);
    }
    Ok(())
}

pub fn ranks_give_a_channels_threads_distinct_phases() -> Outcome {
    // The ranks a channel hands out (0, 1, 2, ...): no two threads of the
    // first 64 start their windows within a quarter of 1 % of the window
    // of each other, whatever the channel's place.
    let gap = (1u64 << 32) / 400;
    for (at, n) in [(0u64, 1u64), (1, 2), (3, 4)] {
        for a in 0..64u64 {
            for b in 0..a {
                let (pa, pb) = (stagger_phase(at, n, a), stagger_phase(at, n, b));
                let d = pa.wrapping_sub(pb).min(pb.wrapping_sub(pa));
                check!(u64::from(d) >= gap, "ranks {} and {}: {}", a, b, d);
            }
        }
    }
    Ok(())
}

/// `stagger_phase` of every rank below `ranks` of every channel of `n`,
/// into `out`; how many.
fn all_phases(n: u64, ranks: u64, out: &mut [u32]) -> usize {
    let mut len = 0;
    for c in 0..n {
        for r in 0..ranks {
            if let Some(slot) = out.get_mut(len) {
                *slot = stagger_phase(c, n, r);
                len += 1;
            }
        }
    }
    len
}

pub fn every_slot_holds_each_rank_at_its_golden_place() -> Outcome {
    // Modulo a slot of 1 / n of the window the channels coincide: each
    // slot holds one thread of each rank, at frac(rank phi) of the slot,
    // whatever n is (with the golden ratio as every n's step, at 3, 5, 8
    // and 13 channels the ranks crowded each slot's start).
    for n in [2u64, 3, 5, 8, 13, 111, 256, 1024] {
        for rank in 0..12u64 {
            let golden = (rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
            // The phase in slots, less the golden place, plus half a slot
            // (the phases are rounded down): its slot past the channel's,
            // and how far from the golden place (from half a slot).
            let off = |c: u64| {
                let p = u64::from(stagger_phase(c, n, rank)) * n;
                let t = (p + (n << 32) - u64::from(golden) + (1 << 31))
                    .checked_rem(n << 32)
                    .unwrap_or(0);
                let slot = ((t >> 32) + n - c).checked_rem(n).unwrap_or(n);
                (slot, (t & 0xFFFF_FFFF).abs_diff(1 << 31))
            };
            for c in 0..n {
                let (slot, d) = off(c);
                check!(slot == off(0).0, "n {} rank {} channel {}", n, rank, c);
                check!(d <= 2 * n + 2, "n {} rank {}: {}", n, rank, d);
            }
        }
    }
    // Hence all threads' starts are spread as one channel's golden-ratio
    // sequence is: for 2 to 8 ranks of 1 to 16 channels the closest two
    // are at least half the even spacing apart (with the golden ratio as
    // the step: 0.29 of it at 3 x 2, 0.11 at 8 x 2, 0.07 at 13 x 2).
    let mut phases = [0u32; 128];
    for n in 1..=16u64 {
        for ranks in 2..=8u64 {
            let len = all_phases(n, ranks, &mut phases);
            let p = phases.get(..len).unwrap_or(&[]);
            let even = (1u64 << 32) / (n * ranks);
            // The least distance from a start to the next one.
            let least = p
                .iter()
                .enumerate()
                .map(|(i, &a)| {
                    p.iter()
                        .enumerate()
                        .filter(|&(j, _)| j != i)
                        .map(|(_, &b)| b.wrapping_sub(a))
                        .min()
                        .unwrap_or(0)
                })
                .min()
                .unwrap_or(0);
            check!(
                u64::from(least) >= even / 2,
                "{} x {}: {} of {}",
                n,
                ranks,
                least,
                even
            );
        }
    }
    Ok(())
}

pub fn a_run_leads_its_place_by_an_eighth() -> Outcome {
    let w = RunWindow::new(100 * US, US, 10_000 * US);
    check!(w.is_some());
    let Some(w) = w else { return Ok(()) };
    let budget = |t_r_ns, t_w_ns| Budget { t_r_ns, t_w_ns };
    const Q: u32 = 1 << 30;
    // T_R 24 us of 100: the windows start 3 us (0.03 of 2^32, rounded
    // down) before the place.
    let lead = ((24u64 << 29) / 100) as u32;
    check_eq!(w.run_phase(Q, 3, budget(24 * US, 100 * US)), Q - lead);
    check_eq!(
        w.run_phase(0, 3, budget(24 * US, 100 * US)),
        0u32.wrapping_sub(lead)
    );
    check_eq!(w.run_phase(Q, 3, budget(0, 100 * US)), Q);
    // Just under the whole window: an eighth of it, not more.
    let most = w
        .run_phase(0, 3, budget(100 * US - 1, 100 * US))
        .wrapping_neg();
    check!(most < 1 << 29 && most > (1 << 29) - (1 << 16), "{}", most);
    // The whole window, or windows skipped (or stretched): at the place.
    check_eq!(w.run_phase(Q, 3, budget(100 * US, 100 * US)), Q);
    check_eq!(w.run_phase(Q, 3, budget(2 * US, 300 * US)), Q);
    check_eq!(w.run_phase(Q, 3, budget(280 * US, 300 * US)), Q);
    check_eq!(w.run_phase(Q, 3, budget(u64::MAX - 1, u64::MAX)), Q);
    // Up to 16 channels, not more.
    check_eq!(w.run_phase(Q, 16, budget(24 * US, 100 * US)), Q - lead);
    check_eq!(w.run_phase(Q, 17, budget(24 * US, 100 * US)), Q);
    Ok(())
}
