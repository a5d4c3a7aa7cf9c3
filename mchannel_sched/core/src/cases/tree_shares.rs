//! Shared cases of hierarchical shares (`tree`: shapes, tenants split
//! first, leaves the queue holds back): suite `mchannel_core_window`.

use super::super::component::{Component, Params};
use super::super::fixed::Q32;
use super::super::outcome::Outcome;
use super::super::tree::{self, Node, TreeError, ROOT};
use super::super::window::WEIGHT_MAX;
use super::{near, GB, MB};

pub fn tree_shapes_are_checked() -> Outcome {
    let mut ok = [Node::new(ROOT, 1), Node::new(0, 2), Node::new(0, 1)];
    check_eq!(tree::check(&mut ok), Ok(()));
    check!(ok[0].inner && !ok[1].inner);
    let mut forward = [Node::new(1, 1), Node::new(ROOT, 1)];
    check_eq!(tree::check(&mut forward), Err(TreeError::Parent(0)));
    let mut own = [Node::new(0, 1)];
    check_eq!(tree::check(&mut own), Err(TreeError::Parent(0)));
    let mut weight = [Node::new(ROOT, 0)];
    check_eq!(tree::check(&mut weight), Err(TreeError::Weight(0)));
    let mut heavy = [Node::new(ROOT, WEIGHT_MAX + 1)];
    check_eq!(tree::check(&mut heavy), Err(TreeError::Weight(0)));
    Ok(())
}

pub fn two_tenants_split_first_then_their_channels() -> Outcome {
    // 10 GB/s; tenant A (one channel) and tenant B (two channels), all
    // wanting 20 GB/s: A's channel 5, B's channels 2.5 each.
    let mut nodes = [
        Node::new(ROOT, 1),
        Node::new(0, 1),
        Node::new(ROOT, 1),
        Node::new(2, 1),
        Node::new(2, 1),
    ];
    ok!(tree::check(&mut nodes));
    let leaves = [1, 3, 4];
    for &l in &leaves {
        nodes[l].demand = 20 * GB;
    }
    let mut alpha = 10 * GB;
    for _ in 0..100 {
        for &l in &leaves {
            let n = &mut nodes[l];
            n.rate = tree::leaf_fraction(n).mul_u64(n.demand);
        }
        alpha = tree::update(&mut nodes, 10 * GB, alpha);
    }
    let got = |n: &Node| tree::leaf_fraction(n).mul_u64(n.demand);
    check!(
        near(got(&nodes[1]), 5 * GB, 5 * GB / 1000),
        "{}",
        got(&nodes[1])
    );
    check!(
        near(got(&nodes[3]), 2_500_000_000, 2_500_000),
        "{}",
        got(&nodes[3])
    );
    check!(near(got(&nodes[4]), 2_500_000_000, 2_500_000));
    check!(near(nodes[2].granted, 5 * GB, 5 * GB / 1000));
    Ok(())
}

pub fn a_leaf_held_back_by_the_queue_counts_at_its_share() -> Outcome {
    // The cxlsim 3 x 1 case: two leaves throttled to 352 MB/s, the third
    // unthrottled at 290 MB/s, on a link of 1 GB/s that marks.
    let leaf = |demand: u64, rate: u64| {
        let mut n = Node::new(ROOT, 1);
        n.demand = demand;
        n.rate = rate;
        n.alpha = 352 * MB;
        n
    };
    let light = leaf(290 * MB, 290 * MB);
    check_eq!(tree::counted_rate(&light, true), 352 * MB);
    check_eq!(tree::counted_rate(&light, false), 290 * MB, "no congestion");
    let small = leaf(200 * MB, 200 * MB);
    check_eq!(tree::counted_rate(&small, true), 200 * MB, "well under");
    let throttled = leaf(450 * MB, 352 * MB);
    check_eq!(tree::counted_rate(&throttled, true), 352 * MB);
    // Throttled elsewhere on its path, to less than 3/4 of the share here.
    let elsewhere = leaf(450 * MB, 250 * MB);
    check_eq!(tree::counted_rate(&elsewhere, true), 250 * MB);
    let mut weighted = leaf(600 * MB, 600 * MB);
    weighted.weight = 2;
    check_eq!(tree::counted_rate(&weighted, true), 704 * MB);
    // Counted while the measured rate is at most the capacity.
    check_eq!(tree::eq4_rate(994 * MB, 1056 * MB, GB), 1056 * MB);
    check_eq!(tree::eq4_rate(994 * MB, 990 * MB, GB), 994 * MB);
    check_eq!(tree::eq4_rate(994 * MB, 1056 * MB, 900 * MB), 994 * MB);
    // Eq. 4 divides by the counted rate (alpha falls towards C / 3
    // instead of rising by C / F); F stays the measured rate.
    let run = |signal_ppm: u32| {
        let mut c = ok!(Component::new(Params::default_for(GB)));
        // alpha = 352 MB/s (the cap) to start from.
        c.update_share(GB, 352 * MB);
        c.update_load(Q32::from_ppm(signal_ppm));
        let mut nodes = [
            leaf(450 * MB, 352 * MB),
            leaf(550 * MB, 352 * MB),
            leaf(290 * MB, 290 * MB),
        ];
        ok!(tree::check(&mut nodes));
        let alpha = c.update_tree(&mut nodes);
        Ok((alpha, c.rate()))
    };
    let (alpha, f) = run(50_000)?;
    check_eq!(f, 994 * MB);
    check!(near(alpha, 352 * MB * 1000 / 1056, MB), "{alpha}");
    let (alpha, _) = run(0)?;
    check!(near(alpha, 352 * MB * 1000 / 994, MB), "{alpha}");
    Ok(())
}

pub fn shares_never_exceed_what_they_divide() -> Outcome {
    // Channels that use little of their shares (held back by their
    // CPU, or elsewhere on their path) make Eq. 4 raise alpha. A group's
    // stops at its grant and no child is allowed more than its parent
    // was granted: beyond, the windup is paid by the next period's
    // traffic as an overshoot (`tree::divide_down`).
    let mut nodes = [
        Node::new(ROOT, 1),
        Node::new(0, 1),
        Node::new(0, 1),
        Node::new(ROOT, 1),
        Node::new(3, 1),
    ];
    ok!(tree::check(&mut nodes));
    let leaves = [1, 2, 4];
    for &l in &leaves {
        nodes[l].demand = 2 * GB;
    }
    let mut alpha = GB;
    for _ in 0..50 {
        // Tenant A's channels move a tenth of what they may, tenant B's
        // all of it: B holds the component at its capacity.
        for &l in &leaves {
            let n = &mut nodes[l];
            let may = tree::leaf_fraction(n).mul_u64(n.demand);
            n.rate = if l == 4 { may } else { may / 10 };
        }
        alpha = tree::update(&mut nodes, GB, alpha);
        for &l in &leaves {
            let parent = nodes[usize::from(nodes[l].parent)];
            check!(
                nodes[l].alpha <= parent.granted,
                "leaf {l}: alpha {} above its tenant's grant {}",
                nodes[l].alpha,
                parent.granted
            );
        }
        for t in [0, 3] {
            check!(
                nodes[t].alpha <= nodes[t].granted,
                "tenant {t}: alpha {} above its grant {}",
                nodes[t].alpha,
                nodes[t].granted
            );
        }
    }
    Ok(())
}

pub fn with_groups_the_component_moves_half_way() -> Outcome {
    // 1 GB/s at alpha 250 MB/s. Flat, two channels of 1 GB/s demand
    // carry 500 MB/s and alpha goes to Eq. 4's 500 MB/s. One of them in
    // a group, the other gone: 250 MB/s carried, Eq. 4 says 1 GB/s and
    // alpha moves half-way, to 625 MB/s.
    let run = |grouped: bool| {
        let mut c = ok!(Component::new(Params::default_for(GB)));
        c.update_share(GB, 250 * MB);
        check_eq!(c.alpha(), 250 * MB);
        let mut nodes = [Node::new(ROOT, 1), Node::new(ROOT, 1)];
        if grouped {
            nodes[1].parent = 0;
        }
        ok!(tree::check(&mut nodes));
        for n in nodes.iter_mut().filter(|n| !n.inner) {
            n.demand = GB;
            n.rate = 250 * MB;
        }
        if !grouped {
            nodes[0].rate = 250 * MB;
        }
        Ok(c.update_tree(&mut nodes))
    };
    check_eq!(run(false)?, 500 * MB);
    check_eq!(run(true)?, 625 * MB);
    check_eq!(tree::damped(1, 1), 1);
    check_eq!(tree::damped(u64::MAX, u64::MAX), u64::MAX - 1);
    Ok(())
}
