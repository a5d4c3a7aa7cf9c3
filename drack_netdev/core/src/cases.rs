//! placeholder
#![allow(clippy::arithmetic_side_effects)]
