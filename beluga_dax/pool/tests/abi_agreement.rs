//! The ABI (`uapi`) and the pool core agree on sizes, limits, flags and
//! errno values (the C library's here). The checks are compile-time
//! assertions in `beluga_dax/agreement.rs`, the file the module compiles in
//! with the kernel's errno values: this test fails to build on a
//! divergence, as the module does.

use beluga_pool as pool;
use libc as os;
use uapi::beluga as abi;

#[path = "../../agreement.rs"]
mod agreement;

#[test]
fn the_named_errnos_are_distinct_and_valid() {
    let named = pool::engine::Errno::NAMED;
    for (i, (name, e)) in named.iter().enumerate() {
        assert!((1..=pool::engine::Errno::MAX).contains(&e.0), "{name}");
        assert!(
            named[..i].iter().all(|(_, other)| other != e),
            "{name} twice"
        );
    }
}
