//! The object and section tables: loading and validating them, writing
//! entries, and what they say (usage, names).

use super::super::layout::SECTION_ENTRY_BYTES;
use super::super::objects::{check_tables, Name, ObjectEntry, ObjectError, Slot, ENTRY_BYTES};
use super::super::sections::SectionMap;
use super::{Engine, Errno, Memory, Peer, HOSTS, READ_TRIES};

/// Pool usage, from the manager's tables or a validated read of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub sections: u32,
    pub free_sections: u32,
    pub largest_free_run: u32,
    pub fragmentation_permille: u32,
    pub objects: u32,
    /// Sections of the objects each host owns.
    pub used_by_host: [u32; HOSTS],
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
                Slot::Live(e) => Some((i as u32, e)),
                Slot::Free => None,
            })
    }

    pub(super) fn find_name(&self, name: &Name) -> Option<(u32, ObjectEntry)> {
        self.live()
            .find(|(_, e)| e.name.as_ref() == Some(name))
            .map(|(i, e)| (i, *e))
    }

    pub(super) fn write_object<M: Memory>(&self, mem: &M, index: u32) -> Result<(), Errno> {
        let at = self.geometry.object_table_off + index as u64 * ENTRY_BYTES as u64;
        mem.write(at, &self.objects[index as usize].encode())?;
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
        let mut buf = [0u8; 32 * SECTION_ENTRY_BYTES as usize];
        let entry_bytes = SECTION_ENTRY_BYTES as usize;
        let mut done = 0;
        while done < count {
            let n = (count - done).min(32);
            for i in 0..n {
                let section = first + done + i;
                let owner = self.sections[section as usize];
                let serial = match owner
                    .checked_sub(1)
                    .and_then(|o| self.objects.get(o as usize))
                {
                    Some(Slot::Live(e)) => e.serial,
                    _ => 0,
                };
                let e = &mut buf[i as usize * entry_bytes..(i as usize + 1) * entry_bytes];
                e[0..4].copy_from_slice(&owner.to_le_bytes());
                e[4..8].fill(0);
                e[8..16].copy_from_slice(&serial.to_le_bytes());
            }
            let at = self.geometry.section_table_off + (first + done) as u64 * SECTION_ENTRY_BYTES;
            mem.write(at, &buf[..n as usize * entry_bytes])?;
            done += n;
        }
        Ok(())
    }

    /// Reads and validates the object table into the lent storage and
    /// rebuilds the section index from it.
    pub(super) fn load_tables<M: Memory>(&mut self, mem: &M) -> Result<(), &'static str> {
        let mut chunk = [0u8; 8 * ENTRY_BYTES];
        let max_objects = self.geometry.max_objects;
        let mut index = 0;
        while index < max_objects {
            let n = (max_objects - index).min(8);
            let at = self.geometry.object_table_off + index as u64 * ENTRY_BYTES as u64;
            let bytes = &mut chunk[..n as usize * ENTRY_BYTES];
            let mut tries = 0;
            loop {
                if mem.read(at, bytes).is_err() {
                    return Err("object table outside the pool");
                }
                let mut torn = false;
                for (i, raw) in bytes.chunks(ENTRY_BYTES).enumerate() {
                    let slot = &mut self.objects[index as usize + i];
                    match Slot::decode(raw, self.geometry.section_count, self.geometry.max_hosts) {
                        Ok(decoded) => *slot = decoded,
                        Err(ObjectError::BadChecksum) => torn = true,
                        Err(ObjectError::Invalid(why)) => return Err(why),
                    }
                }
                tries += 1;
                if !torn {
                    break;
                }
                if tries == READ_TRIES {
                    return Err("object entry fails its checksum");
                }
            }
            index += n;
        }
        self.sections.fill(0);
        let mut next_serial = 1;
        for i in 0..max_objects as usize {
            let Slot::Live(e) = self.objects[i] else {
                continue;
            };
            let cells = &mut self.sections[e.extent.first as usize..e.extent.end() as usize];
            if cells.iter().any(|&c| c != 0) {
                return Err("two objects claim one section");
            }
            cells.fill(i as u32 + 1);
            next_serial = next_serial.max(e.serial + 1);
        }
        let map = SectionMap::new(&mut self.sections, max_objects).map_err(|_| "section index")?;
        check_tables(&map, &self.objects).map_err(|_| "tables disagree")?;
        self.next_serial = self.next_serial.max(next_serial);
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

    pub fn stats(&mut self) -> Stats {
        let max_objects = self.geometry.max_objects;
        let mut used_by_host = [0u32; HOSTS];
        let mut objects = 0;
        for (_, e) in self.live() {
            objects += 1;
            if let Some(used) = used_by_host.get_mut(e.owner_host as usize) {
                *used += e.extent.count;
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
