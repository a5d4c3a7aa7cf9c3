//! The control core and the user-space ABI each define the limits they
//! check (the core has no dependencies; the ABI is what tools see): they
//! must agree.

use mchannel_core::window::WEIGHT_MAX;
use uapi::mchannel as abi;

#[test]
fn weights_have_one_limit() {
    assert_eq!(WEIGHT_MAX, abi::WEIGHT_MAX);
}

#[test]
fn the_path_fits_a_tree_node_index() {
    // Tree nodes are indexed by u16 (`tree::ROOT` is u16::MAX); a path is
    // at most `PATH_MAX` components.
    assert!(abi::PATH_MAX < usize::from(mchannel_core::tree::ROOT));
}
