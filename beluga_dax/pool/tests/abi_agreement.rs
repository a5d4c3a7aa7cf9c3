//! The ABI (`uapi`) and the pool core agree on sizes, limits, flags and
//! errno values (the C library's here). The module checks the same at
//! compile time against the kernel's errno values (`beluga_dax/agreement.rs`);
//! this test checks it through the two crates.

use beluga_pool as pool;
use uapi::beluga as abi;

#[test]
fn the_abi_repeats_the_pool_format() {
    assert_eq!(abi::NAME_BYTES, pool::objects::NAME_BYTES);
    assert_eq!(abi::MAX_HOSTS, pool::layout::MAX_HOSTS as usize);
    assert_eq!(abi::SECTION_SIZE, pool::layout::SECTION_SIZE);
}

#[test]
fn the_abi_object_flags_are_the_pool_s() {
    assert_eq!(abi::FLAG_SHARED, pool::objects::FLAG_SHARED);
    assert_eq!(abi::FLAG_UNLINKED, pool::objects::FLAG_UNLINKED);
    assert_eq!(abi::FLAG_CLEARING, pool::objects::FLAG_CLEARING);
}

/// The C library's value of errno `name`, for the names the pool core uses.
fn libc_errno(name: &str) -> Option<i32> {
    Some(match name {
        "EPERM" => libc::EPERM,
        "ENOENT" => libc::ENOENT,
        "EIO" => libc::EIO,
        "EAGAIN" => libc::EAGAIN,
        "ENOMEM" => libc::ENOMEM,
        "EACCES" => libc::EACCES,
        "EBUSY" => libc::EBUSY,
        "EEXIST" => libc::EEXIST,
        "EINVAL" => libc::EINVAL,
        "ENOSPC" => libc::ENOSPC,
        "EOVERFLOW" => libc::EOVERFLOW,
        "ESTALE" => libc::ESTALE,
        "EUCLEAN" => libc::EUCLEAN,
        _ => return None,
    })
}

#[test]
fn the_named_errnos_are_the_os_values() {
    for (name, e) in pool::engine::Errno::NAMED {
        let os = libc_errno(name).unwrap_or_else(|| panic!("{name}: not checked here"));
        assert_eq!(
            i64::from(e.0),
            i64::from(os),
            "Errno::{name} is not the OS's value"
        );
    }
}

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
