//! The object and section tables: loading and validating them, writing
//! entries, and what they say (usage, names).

#![deny(clippy::arithmetic_side_effects)]

use super::super::layout::SECTION_ENTRY_BYTES;
use super::super::objects::host_bit;
use super::super::objects::{check_tables, Name, ObjectEntry, ObjectError, Slot, ENTRY_BYTES};
use super::super::sections::{Extent, SectionMap};
use super::{Engine, Errno, Fault, Handle, Memory, Peer, HOSTS, READ_TRIES};

/// Pool usage, from the manager's tables or a validated read of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Sections in the data area.
    pub sections: u32,
    /// Sections no object owns.
    pub free_sections: u32,
    /// Length of the longest free run, in sections.
    pub largest_free_run: u32,
    /// External fragmentation, in per mille (0: all free space is one
    /// run).
    pub fragmentation_permille: u32,
    /// Live objects.
    pub objects: u32,
    /// Sections of the objects each host owns.
    pub used_by_host: [u32; HOSTS],
}

/// Section table entries written per pool write.
const SECTION_RUN: usize = 32;
/// Object entries read per pool read.
const ENTRY_RUN: usize = 8;

/// A section table entry: the owner (object index + 1, 0 when free), 4
/// reserved bytes, the owner's serial.
fn section_entry(owner: u32, serial: u64) -> [u8; SECTION_ENTRY_BYTES as usize] {
    let mut e = [0u8; SECTION_ENTRY_BYTES as usize];
    let (owner_field, rest) = e.split_at_mut(4);
    owner_field.copy_from_slice(&owner.to_le_bytes());
    if let Some(serial_field) = rest.get_mut(4..12) {
        serial_field.copy_from_slice(&serial.to_le_bytes());
    }
    e
}

impl<O, S, P> Engine<O, S, P>
where
    O: core::ops::DerefMut<Target = [Slot]>,
    S: core::ops::DerefMut<Target = [u32]>,
    P: core::ops::DerefMut<Target = [Peer]>,
{
    pub(super) fn live(&self) -> impl Iterator<Item = (u32, &ObjectEntry)> + '_ {
        self.objects
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Slot::Live(e) => Some((u32::try_from(i).ok()?, e)),
                Slot::Free => None,
            })
    }

    /// Object `index`, if it is live.
    pub(super) fn object(&self, index: u32) -> Option<ObjectEntry> {
        match self.objects.get(usize::try_from(index).ok()?) {
            Some(Slot::Live(e)) => Some(*e),
            _ => None,
        }
    }

    /// The object OPEN finds by `name` (unlinked ones keep their name
    /// for display only).
    pub(super) fn find_name(&self, name: &Name) -> Option<(u32, ObjectEntry)> {
        self.live()
            .find(|(_, e)| e.visible_name() == Some(name))
            .map(|(i, e)| (i, *e))
    }

    /// The objects this host holds, from the manager's live tables or the
    /// last `refresh`: what a driver reconciles its own records with after
    /// an abandoned call (a hold it has no record of is to be released).
    pub fn held_by_me(&self) -> impl Iterator<Item = Handle> + '_ {
        let bit = host_bit(self.index);
        self.live()
            .filter(move |(_, e)| e.holders & bit != 0)
            .map(|(i, e)| Handle::of(i, e))
    }

    /// Sets entry `index` in this host's copy only.
    pub(super) fn set_object(&mut self, index: u32, slot: Slot) -> Result<(), Errno> {
        let cell = usize::try_from(index)
            .ok()
            .and_then(|i| self.objects.get_mut(i))
            .ok_or(Errno::EIO)?;
        *cell = slot;
        Ok(())
    }

    /// Sets entry `index` and writes it to the pool.
    pub(super) fn store_object<M: Memory>(
        &mut self,
        mem: &M,
        index: u32,
        slot: Slot,
    ) -> Result<(), Errno> {
        self.set_object(index, slot)?;
        self.write_object(mem, index)
    }

    pub(super) fn write_object<M: Memory>(&self, mem: &M, index: u32) -> Result<(), Errno> {
        let at = self.geometry.object_entry_offset(index).ok_or(Fault)?;
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| self.objects.get(i))
            .ok_or(Errno::EIO)?;
        mem.write(at, &slot.encode())?;
        Ok(())
    }

    /// Writes the section index entries `[first, first + count)`: owner
    /// (object + 1, 0 when free) and the owner's serial.
    pub(super) fn write_sections<M: Memory>(
        &self,
        mem: &M,
        first: u32,
        count: u32,
    ) -> Result<(), Errno> {
        let extent = Extent { first, count };
        let owners = self.sections.get(extent.indices()).ok_or(Errno::EIO)?;
        let mut buf = [0u8; SECTION_RUN * SECTION_ENTRY_BYTES as usize];
        let mut section = first;
        for run in owners.chunks(SECTION_RUN) {
            let mut len = 0usize;
            for (&owner, e) in run
                .iter()
                .zip(buf.chunks_exact_mut(SECTION_ENTRY_BYTES as usize))
            {
                let serial = match owner.checked_sub(1).and_then(|o| self.object(o)) {
                    Some(entry) => entry.serial,
                    None => 0,
                };
                e.copy_from_slice(&section_entry(owner, serial));
                len = len.saturating_add(e.len());
            }
            let at = self.geometry.section_entry_offset(section).ok_or(Fault)?;
            mem.write(at, buf.get(..len).ok_or(Errno::EIO)?)?;
            section = section.saturating_add(u32::try_from(run.len()).unwrap_or(u32::MAX));
        }
        Ok(())
    }

    /// Reads and validates the object table into the lent storage and
    /// rebuilds the section index from it.
    pub(super) fn load_tables<M: Memory>(&mut self, mem: &M) -> Result<(), &'static str> {
        let geometry = self.geometry;
        if self.objects.len() != geometry.max_objects as usize
            || self.sections.len() != geometry.section_count as usize
        {
            return Err("table storage does not match the geometry");
        }
        let mut chunk = [0u8; ENTRY_RUN * ENTRY_BYTES];
        let mut index = 0u32;
        for slots in self.objects.chunks_mut(ENTRY_RUN) {
            let at = geometry
                .object_entry_offset(index)
                .ok_or("object table outside the pool")?;
            let len = slots.len().saturating_mul(ENTRY_BYTES);
            let bytes = chunk.get_mut(..len).ok_or("object table read")?;
            let mut tries = 0;
            loop {
                if mem.read(at, bytes).is_err() {
                    return Err("object table outside the pool");
                }
                let mut torn = false;
                for (raw, slot) in bytes.chunks(ENTRY_BYTES).zip(slots.iter_mut()) {
                    match Slot::decode(raw, geometry.section_count, geometry.max_hosts) {
                        Ok(decoded) => *slot = decoded,
                        Err(ObjectError::BadChecksum) => torn = true,
                        Err(ObjectError::Invalid(why)) => return Err(why),
                    }
                }
                tries = usize::saturating_add(tries, 1);
                if !torn {
                    break;
                }
                if tries >= READ_TRIES {
                    return Err("object entry fails its checksum");
                }
            }
            index = index.saturating_add(u32::try_from(slots.len()).unwrap_or(u32::MAX));
        }
        self.sections.fill(0);
        let mut highest_serial = 0u64;
        for (i, slot) in self.objects.iter().enumerate() {
            let Slot::Live(e) = slot else {
                continue;
            };
            let owner = u32::try_from(i)
                .ok()
                .and_then(|i| i.checked_add(1))
                .ok_or("object index")?;
            let cells = self
                .sections
                .get_mut(e.extent.indices())
                .ok_or("extent outside the data area")?;
            if cells.iter().any(|&c| c != 0) {
                return Err("two objects claim one section");
            }
            cells.fill(owner);
            highest_serial = highest_serial.max(e.serial);
        }
        let map = SectionMap::new(&mut self.sections, geometry.max_objects)
            .map_err(|_| "section index")?;
        check_tables(&map, &self.objects).map_err(|_| "tables disagree")?;
        // After `u64::MAX` no serial is left (`None`) until a format.
        self.next_serial = match (self.next_serial, highest_serial.checked_add(1)) {
            (Some(ours), Some(after_table)) => Some(ours.max(after_table)),
            _ => None,
        };
        Ok(())
    }

    /// Refreshes this host's copy of the tables from the pool (a manager's
    /// copy is the pool's already). Tolerates the manager writing
    /// meanwhile by reading again.
    pub fn refresh<M: Memory>(&mut self, mem: &M) -> Result<(), Errno> {
        if self.managing {
            return Ok(());
        }
        for _ in 0..READ_TRIES {
            if self.load_tables(mem).is_ok() {
                return Ok(());
            }
        }
        Err(Errno::EUCLEAN)
    }

    /// The tables as of the last `refresh` (or live, for the manager).
    pub fn objects(&self) -> &[Slot] {
        &self.objects
    }

    /// Pool usage by this host's copy of the tables (live for the manager,
    /// else as of the last `refresh`); no free space if the section index
    /// fails validation.
    pub fn stats(&mut self) -> Stats {
        let max_objects = self.geometry.max_objects;
        let mut used_by_host = [0u32; HOSTS];
        let mut objects = 0u32;
        for (_, e) in self.live() {
            objects = objects.saturating_add(1);
            if let Some(used) = used_by_host.get_mut(e.owner_host as usize) {
                *used = used.saturating_add(e.extent.count);
            }
        }
        let sections = self.geometry.section_count;
        match SectionMap::new(&mut self.sections, max_objects) {
            Ok(map) => Stats {
                sections,
                free_sections: map.free_sections(),
                largest_free_run: map.largest_free_run(),
                fragmentation_permille: map.fragmentation_permille(),
                objects,
                used_by_host,
            },
            Err(_) => Stats {
                sections,
                free_sections: 0,
                largest_free_run: 0,
                fragmentation_permille: 0,
                objects,
                used_by_host,
            },
        }
    }
}
