// SPDX-License-Identifier: GPL-2.0

//! cxlfabric kernel support layer.
//!
//! Every module compiles this directory in with
//! `#[path = "../support/mod.rs"] mod support;`. It holds the project's
//! `unsafe` code: safe wrappers over the raw 6.12 bindings, shaped like their
//! upstream (6.13-6.15) counterparts, so that moving to a newer kernel means
//! deleting a wrapper and switching the `use` lines.
//!
//! | wrapper          | upstream counterpart                    |
//! |------------------|-----------------------------------------|
//! | [`kunit`]        | `kernel::kunit` (`#[kunit_tests]`, 6.15) |

// Each module uses a subset of the layer; the rest is not dead code.
#![allow(dead_code)]

pub(crate) mod kunit;
