// SPDX-License-Identifier: GPL-2.0

//! Pages filled before anyone else can see them, and reference-counted
//! pages that belong to someone else (ZONE_DEVICE pages of a beluga
//! region, lent to the network stack). No upstream counterpart: upstream's
//! `Page` (6.12 and later) owns the page it allocated and has `write_raw`
//! and `fill_zero_raw`, as 6.12's does; a page reached through another
//! owner is [`SharedPage`] behind `ARef`, as upstream counts other
//! objects (`AlwaysRefCounted`).

use crate::helpers;
use core::ptr::NonNull;
use kernel::alloc::flags::GFP_KERNEL;
use kernel::bindings;
use kernel::page::{Page, PAGE_SIZE};
use kernel::prelude::*;
use kernel::types::{ARef, AlwaysRefCounted, Opaque};

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

/// A `struct page` someone else owns, reached by reference count:
/// `ARef<SharedPage>` is one reference (`get_page`), dropped with
/// `put_page`.
///
/// # Invariants
///
/// A `&SharedPage` is a live `struct page` whose memory map stays valid
/// while any reference to the page is held.
#[repr(transparent)]
pub struct SharedPage(Opaque<bindings::page>);

// SAFETY: page reference counts are atomic; a page may be got and put
// from any thread.
unsafe impl Send for SharedPage {}
// SAFETY: `&SharedPage` only reads the count or takes a reference.
unsafe impl Sync for SharedPage {}

// SAFETY: `get_page` and `put_page` take and drop one reference, and the
// page stays valid while one is held (invariant).
unsafe impl AlwaysRefCounted for SharedPage {
    fn inc_ref(&self) {
        // SAFETY: the page is live (invariant).
        unsafe { helpers::cxlf_get_page(self.0.get()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives up a reference it holds, so the page is
        // live until this drops it.
        unsafe { helpers::cxlf_put_page(obj.as_ptr().cast()) };
    }
}

impl SharedPage {
    /// Takes a reference on the page of frame `pfn`.
    ///
    /// # Safety
    ///
    /// `pfn` has a `struct page` (its memory map is live) for the call,
    /// and whoever owns the memory keeps the map valid while a reference
    /// to the page is held.
    pub unsafe fn get_pfn(pfn: usize) -> ARef<SharedPage> {
        // SAFETY: the caller guarantees the frame has a live struct page.
        let page = unsafe { helpers::cxlf_pfn_to_page(pfn as _) };
        // SAFETY: `SharedPage` is a transparent `struct page`, live for the
        // call; the reference taken here keeps it valid (the caller's
        // guarantee).
        let page = unsafe { &*page.cast::<SharedPage>() };
        // INVARIANT: a live page, kept valid by the reference this takes.
        ARef::from(page)
    }

    /// The reference count of the page of frame `pfn`, read in place
    /// without taking a reference (which would be a pair of atomics on
    /// a shared cache line).
    ///
    /// # Safety
    ///
    /// `pfn` has a `struct page` whose memory map stays live for the
    /// call.
    pub unsafe fn ref_count_pfn(pfn: usize) -> i32 {
        // SAFETY: the caller guarantees the frame has a `struct page`,
        // live for the call; reading its count needs no reference.
        unsafe { helpers::cxlf_page_ref_count(helpers::cxlf_pfn_to_page(pfn as _)) }
    }

    /// The raw `struct page` (for an sk_buff fragment).
    pub fn as_ptr(&self) -> *mut bindings::page {
        self.0.get()
    }

    /// The page's reference count (`page_ref_count`).
    pub fn ref_count(&self) -> i32 {
        // SAFETY: the page is live (invariant).
        unsafe { helpers::cxlf_page_ref_count(self.0.get()) }
    }
}
