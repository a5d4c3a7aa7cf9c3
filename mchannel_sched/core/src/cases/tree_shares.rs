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
