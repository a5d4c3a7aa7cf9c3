// SPDX-License-Identifier: GPL-2.0

//! Module parameters. The 6.12 `module!` macro has none, so a module
//! defines each in its own `helpers.c` with `CXLF_PARAM_UINT(name, default,
//! description)` (or `CXLF_PARAM_STRING(name, description)`) and reads it
//! with [`module_param_uint!`] (or [`module_param_string!`]), which defines
//! `fn name()` in the calling module.

/// Defines `fn $name() -> u32` returning the current value of the module
/// parameter `$name` (declared in the module's `helpers.c`).
#[macro_export]
macro_rules! module_param_uint {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        pub(crate) fn $name() -> u32 {
            extern "C" {
                #[link_name = concat!("cxlf_param_", stringify!($name))]
                fn read_param() -> u32;
            }
            // SAFETY: `CXLF_PARAM_UINT` defines this reader in the module's
            // own C object; it only reads the parameter.
            unsafe { read_param() }
        }
    };
}
pub use crate::module_param_uint;

/// Defines `fn $name() -> &'static CStr` returning the module parameter
/// `$name` (declared in the module's `helpers.c` with
/// `CXLF_PARAM_STRING`).
#[macro_export]
macro_rules! module_param_string {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        pub(crate) fn $name() -> &'static kernel::str::CStr {
            extern "C" {
                #[link_name = concat!("cxlf_param_", stringify!($name))]
                fn read_param() -> *const kernel::ffi::c_char;
            }
            // SAFETY: `CXLF_PARAM_STRING` defines this reader in the
            // module's own C object; it returns the parameter's static,
            // NUL-terminated buffer (module_param_string() keeps the NUL),
            // which is read-only after load (mode 0444) and lives as long
            // as the module.
            unsafe { kernel::str::CStr::from_char_ptr(read_param()) }
        }
    };
}
pub use crate::module_param_string;
