// SPDX-License-Identifier: GPL-2.0

//! Pages filled before anyone else can see them. No upstream counterpart
//! (upstream's `Page` has `write_raw` and `fill_zero_raw`, as 6.12's does).

use kernel::alloc::flags::GFP_KERNEL;
use kernel::page::{Page, PAGE_SIZE};
use kernel::prelude::*;

/// Allocates a page and sets byte `i` to `fill(i)`.
pub fn alloc_filled_page(fill: impl Fn(usize) -> u8) -> Result<Page> {
    let page = Page::alloc_page(GFP_KERNEL)?;
    let mut chunk = [0u8; 64];
    for start in (0..PAGE_SIZE).step_by(chunk.len()) {
        for (i, byte) in chunk.iter_mut().enumerate() {
            *byte = fill(start + i);
        }
        // SAFETY: `chunk` is valid for its length; the page was just
        // allocated and no other reference to it exists, so nothing races
        // with this write; `start + 64 <= PAGE_SIZE`.
        unsafe { page.write_raw(chunk.as_ptr(), start, chunk.len())? };
    }
    Ok(page)
}
