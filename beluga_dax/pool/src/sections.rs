//! The section allocator: which object owns each 2 MiB section.
//!
//! The section table holds, per section, `0` (free) or `object index + 1`.
//! Objects are contiguous runs of sections (an extent), so that a 2 MiB
//! aligned object can be mapped with PMD mappings. Allocation is first fit;
//! freeing returns the sections to the table, and adjacent free runs merge
//! by construction (there is no separate free list to fragment).
//!
//! Only the pool manager writes the table (see the protocol in
//! `Documentation/cxlfabric/beluga.rst`); this code is its decision logic,
//! over a table it has validated.

#![deny(clippy::arithmetic_side_effects)]

/// A run of sections `[first, first + count)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Index of the first section.
    pub first: u32,
    /// Number of sections.
    pub count: u32,
}

impl Extent {
    /// One past the last section. Saturates: extents read from the pool
    /// are checked (`first + count <= section_count`) before use, and an
    /// unchecked one that would pass `u32::MAX` ends there.
    pub fn end(&self) -> u32 {
        self.first.saturating_add(self.count)
    }

    /// The section indices of the extent, as a range for `get` on a table
    /// (a range past any table when it does not fit `usize`).
    pub fn indices(&self) -> core::ops::Range<usize> {
        let first = usize::try_from(self.first).unwrap_or(usize::MAX);
        let count = usize::try_from(self.count).unwrap_or(usize::MAX);
        first..first.saturating_add(count)
    }

    /// Whether the two extents share a section (exact for any integers).
    pub fn overlaps(&self, other: &Extent) -> bool {
        // Two u32 sums fit a u64: nothing saturates here.
        let end = |e: &Extent| u64::from(e.first).saturating_add(u64::from(e.count));
        u64::from(self.first) < end(other) && u64::from(other.first) < end(self)
    }
}

/// Why the allocator refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocError {
    /// Zero sections, or an object index the table cannot encode.
    Invalid,
    /// No free run of the requested length (`largest` is the longest one).
    NoSpace {
        /// Length of the longest free run, in sections.
        largest: u32,
    },
    /// The extent is out of range or not wholly owned by the object.
    NotOwner,
    /// A table entry names an object beyond the object table.
    Corrupt {
        /// Index of the first section whose entry is out of range.
        section: u32,
    },
}

/// An allocator over a section table of `u32` entries.
pub struct SectionMap<'a> {
    slots: &'a mut [u32],
    max_objects: u32,
}

const FREE: u32 = 0;

impl<'a> SectionMap<'a> {
    /// Wraps a table after checking every entry names a possible object.
    pub fn new(slots: &'a mut [u32], max_objects: u32) -> Result<SectionMap<'a>, AllocError> {
        if let Some(bad) = slots.iter().position(|&s| s > max_objects) {
            return Err(AllocError::Corrupt {
                section: count_u32(bad),
            });
        }
        Ok(SectionMap { slots, max_objects })
    }

    /// Number of sections in the table.
    pub fn len(&self) -> u32 {
        count_u32(self.slots.len())
    }

    /// Whether the table has no sections.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The object owning a section, if any.
    pub fn owner(&self, section: u32) -> Option<u32> {
        match self.slots.get(section as usize) {
            Some(&s) => s.checked_sub(1),
            _ => None,
        }
    }

    /// Free runs, in order.
    pub fn free_runs(&self) -> impl Iterator<Item = Extent> + '_ {
        let mut rest: &[u32] = &*self.slots;
        let mut first = 0u32;
        core::iter::from_fn(move || {
            let used = rest.iter().take_while(|&&s| s != FREE).count();
            let free = rest.get(used..)?.iter().take_while(|&&s| s == FREE).count();
            let run = Extent {
                first: first.saturating_add(count_u32(used)),
                count: count_u32(free),
            };
            let next = used.saturating_add(free);
            rest = rest.get(next..).unwrap_or(&[]);
            first = first.saturating_add(count_u32(next));
            (free > 0).then_some(run)
        })
    }

    /// Number of free sections.
    pub fn free_sections(&self) -> u32 {
        count_u32(self.slots.iter().filter(|&&s| s == FREE).count())
    }

    /// Length of the longest free run, in sections (0 if none is free).
    pub fn largest_free_run(&self) -> u32 {
        self.free_runs().map(|r| r.count).max().unwrap_or(0)
    }

    /// External fragmentation in per mille: 0 when all free space is one
    /// run, approaching 1000 as it splinters.
    pub fn fragmentation_permille(&self) -> u32 {
        let free = self.free_sections();
        // The largest run is at most `free`: the quotient is at most 1000.
        let kept = u64::from(self.largest_free_run())
            .saturating_mul(1000)
            .checked_div(u64::from(free))
            .unwrap_or(1000);
        1000u32.saturating_sub(u32::try_from(kept).unwrap_or(1000))
    }

    /// Gives `count` contiguous sections to `object` (first fit).
    pub fn allocate(&mut self, count: u32, object: u32) -> Result<Extent, AllocError> {
        let Some(owner) = object.checked_add(1).filter(|_| object < self.max_objects) else {
            return Err(AllocError::Invalid);
        };
        if count == 0 {
            return Err(AllocError::Invalid);
        }
        let run = self.free_runs().find(|r| r.count >= count);
        let Some(run) = run else {
            return Err(AllocError::NoSpace {
                largest: self.largest_free_run(),
            });
        };
        let extent = Extent {
            first: run.first,
            count,
        };
        let cells = self
            .slots
            .get_mut(extent.indices())
            .ok_or(AllocError::Invalid)?;
        cells.fill(owner);
        Ok(extent)
    }

    /// Returns an extent of `object` to the free space; refuses (changing
    /// nothing) unless every section in it belongs to `object`.
    pub fn free(&mut self, extent: Extent, object: u32) -> Result<(), AllocError> {
        let owner = object.checked_add(1).ok_or(AllocError::NotOwner)?;
        let Some(slots) = self.slots.get_mut(extent.indices()) else {
            return Err(AllocError::NotOwner);
        };
        if extent.count == 0 || slots.iter().any(|&s| s != owner) {
            return Err(AllocError::NotOwner);
        }
        slots.fill(FREE);
        Ok(())
    }

    /// Frees every section of `object` (reclaiming a dead host's objects);
    /// returns how many sections were freed.
    pub fn free_object(&mut self, object: u32) -> u32 {
        let Some(owner) = object.checked_add(1) else {
            return 0;
        };
        let mut freed = 0u32;
        for slot in self.slots.iter_mut().filter(|s| **s == owner) {
            *slot = FREE;
            freed = freed.saturating_add(1);
        }
        freed
    }
}

/// A count of table cells as `u32` (tables have at most `u32::MAX` cells:
/// `section_count` is a `u32`).
fn count_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
