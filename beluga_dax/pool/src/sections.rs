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

/// A run of sections `[first, first + count)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub first: u32,
    pub count: u32,
}

impl Extent {
    pub fn end(&self) -> u32 {
        self.first + self.count
    }

    pub fn overlaps(&self, other: &Extent) -> bool {
        self.first < other.end() && other.first < self.end()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocError {
    /// Zero sections, or an object index the table cannot encode.
    Invalid,
    /// No free run of the requested length (`largest` is the longest one).
    NoSpace { largest: u32 },
    /// The extent is out of range or not wholly owned by the object.
    NotOwner,
    /// A table entry names an object beyond the object table.
    Corrupt { section: u32 },
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
                section: bad as u32,
            });
        }
        Ok(SectionMap { slots, max_objects })
    }

    pub fn len(&self) -> u32 {
        self.slots.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The object owning a section, if any.
    pub fn owner(&self, section: u32) -> Option<u32> {
        match self.slots.get(section as usize) {
            Some(&s) if s != FREE => Some(s - 1),
            _ => None,
        }
    }

    /// Free runs, in order.
    pub fn free_runs(&self) -> impl Iterator<Item = Extent> + '_ {
        let mut i = 0usize;
        core::iter::from_fn(move || {
            while i < self.slots.len() && self.slots[i] != FREE {
                i += 1;
            }
            if i >= self.slots.len() {
                return None;
            }
            let first = i;
            while i < self.slots.len() && self.slots[i] == FREE {
                i += 1;
            }
            Some(Extent {
                first: first as u32,
                count: (i - first) as u32,
            })
        })
    }

    pub fn free_sections(&self) -> u32 {
        self.slots.iter().filter(|&&s| s == FREE).count() as u32
    }

    pub fn largest_free_run(&self) -> u32 {
        self.free_runs().map(|r| r.count).max().unwrap_or(0)
    }

    /// External fragmentation in per mille: 0 when all free space is one
    /// run, approaching 1000 as it splinters.
    pub fn fragmentation_permille(&self) -> u32 {
        let free = self.free_sections();
        if free == 0 {
            return 0;
        }
        1000 - (self.largest_free_run() as u64 * 1000 / free as u64) as u32
    }

    /// Gives `count` contiguous sections to `object` (first fit).
    pub fn allocate(&mut self, count: u32, object: u32) -> Result<Extent, AllocError> {
        if count == 0 || object >= self.max_objects {
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
        self.slots[extent.first as usize..extent.end() as usize].fill(object + 1);
        Ok(extent)
    }

    /// Returns an extent of `object` to the free space; refuses (changing
    /// nothing) unless every section in it belongs to `object`.
    pub fn free(&mut self, extent: Extent, object: u32) -> Result<(), AllocError> {
        let range =
            extent.first as usize..(extent.first as usize).saturating_add(extent.count as usize);
        let Some(slots) = self.slots.get_mut(range) else {
            return Err(AllocError::NotOwner);
        };
        if extent.count == 0 || slots.iter().any(|&s| s != object + 1) {
            return Err(AllocError::NotOwner);
        }
        slots.fill(FREE);
        Ok(())
    }

    /// Frees every section of `object` (reclaiming a dead host's objects);
    /// returns how many sections were freed.
    pub fn free_object(&mut self, object: u32) -> u32 {
        let mut freed = 0;
        for slot in self.slots.iter_mut().filter(|s| **s == object + 1) {
            *slot = FREE;
            freed += 1;
        }
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_and_merge() {
        let mut table = [0u32; 8];
        let mut map = SectionMap::new(&mut table, 16).unwrap();
        let a = map.allocate(3, 0).unwrap();
        let b = map.allocate(2, 1).unwrap();
        let c = map.allocate(3, 2).unwrap();
        assert_eq!((a.first, b.first, c.first), (0, 3, 5));
        assert_eq!(map.allocate(1, 3), Err(AllocError::NoSpace { largest: 0 }));
        map.free(a, 0).unwrap();
        map.free(c, 2).unwrap();
        assert_eq!(map.largest_free_run(), 3);
        assert_eq!(map.fragmentation_permille(), 500);
        map.free(b, 1).unwrap();
        assert_eq!(map.largest_free_run(), 8);
        assert_eq!(map.fragmentation_permille(), 0);
    }

    #[test]
    fn frees_that_do_not_match_ownership_change_nothing() {
        let mut table = [0u32; 8];
        let mut map = SectionMap::new(&mut table, 16).unwrap();
        let a = map.allocate(4, 5).unwrap();
        assert_eq!(map.free(a, 6), Err(AllocError::NotOwner));
        assert_eq!(
            map.free(Extent { first: 2, count: 4 }, 5),
            Err(AllocError::NotOwner)
        );
        assert_eq!(
            map.free(
                Extent {
                    first: 7,
                    count: u32::MAX
                },
                5
            ),
            Err(AllocError::NotOwner)
        );
        assert_eq!(
            map.free(Extent { first: 0, count: 0 }, 5),
            Err(AllocError::NotOwner)
        );
        assert_eq!(map.free_sections(), 4);
        map.free(a, 5).unwrap();
        assert_eq!(map.free(a, 5), Err(AllocError::NotOwner), "double free");
    }

    #[test]
    fn corrupt_table_is_refused() {
        let mut table = [0, 3, 17, 0];
        assert_eq!(
            SectionMap::new(&mut table, 16).err(),
            Some(AllocError::Corrupt { section: 2 })
        );
    }

    #[test]
    fn object_index_must_fit_the_table() {
        let mut table = [0u32; 4];
        let mut map = SectionMap::new(&mut table, 16).unwrap();
        assert_eq!(map.allocate(1, 16), Err(AllocError::Invalid));
        assert_eq!(map.allocate(0, 1), Err(AllocError::Invalid));
    }
}
