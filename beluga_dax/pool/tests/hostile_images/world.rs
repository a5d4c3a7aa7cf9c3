//! The pool and its hosts under a case: applies mutations and actions
//! and checks every errno a caller sees.

use super::*;

pub(crate) fn check_errno(e: Errno) -> Result<(), TestCaseError> {
    prop_assert!(
        (1..=Errno::MAX).contains(&e.0),
        "errno {} out of range",
        e.0
    );
    prop_assert!(e.to_kernel() < 0 && e.to_kernel() >= -4095);
    Ok(())
}

pub(crate) struct World<'p, 'b> {
    pub(crate) pool: &'p SliceMemory<'b>,
    /// The geometry the mutations aim at (the base image's).
    pub(crate) g: Geometry,
    pub(crate) hosts: Vec<Option<Host>>,
    /// Boot id of each host's current incarnation.
    pub(crate) boots: Vec<[u8; 16]>,
    pub(crate) outstanding: Vec<Option<u64>>,
    pub(crate) now: u64,
}

impl World<'_, '_> {
    fn mutate(&self, m: &Mutation) {
        let g = &self.g;
        let _ = match m {
            Mutation::Raw { at, bytes } => self.pool.write(*at, bytes),
            Mutation::Entry { index, entry } => {
                let at = g.object_entry_offset(*index).unwrap();
                self.pool.write(at, &Slot::Live(*entry).encode())
            }
            Mutation::FreeEntry { index } => {
                let at = g.object_entry_offset(*index).unwrap();
                self.pool.write(at, &Slot::Free.encode())
            }
            Mutation::Slot { host, slot } => {
                let at = g.host_slot_offset(*host).unwrap();
                self.pool.write(at, &slot.encode()[..64])
            }
            Mutation::Request { host, request } => {
                let at = g.host_slot_offset(*host).unwrap() + REQUEST_OFF;
                self.pool.write(at, &request.encode())
            }
            Mutation::Ask { host, request } => {
                let at = g.host_slot_offset(*host).unwrap() + REQUEST_OFF;
                let request = Request {
                    boot_id: self.boots[*host as usize],
                    ..*request
                };
                self.pool.write(at, &request.encode())
            }
            Mutation::Reply { host, reply } => {
                let at = g.host_slot_offset(*host).unwrap() + REPLY_OFF;
                self.pool.write(at, &reply.encode())
            }
            Mutation::Section {
                section,
                owner,
                serial,
            } => {
                let at = g.section_entry_offset(*section % g.section_count).unwrap();
                let mut e = [0u8; 16];
                e[..4].copy_from_slice(&owner.to_le_bytes());
                e[8..].copy_from_slice(&serial.to_le_bytes());
                self.pool.write(at, &e)
            }
            Mutation::Superblock(edit) => {
                let mut raw = [0u8; SUPERBLOCK_BYTES];
                self.pool.read(0, &mut raw).unwrap();
                let mut sb = match Superblock::decode(&raw, POOL) {
                    Ok(sb) => sb,
                    Err(_) => Superblock::new(g, [7; 16], 5),
                };
                if let Some(v) = edit.pool_size {
                    sb.pool_size = v;
                }
                if let Some((sections, hosts, objects)) = edit.counts {
                    sb.section_count = sections;
                    sb.max_hosts = hosts;
                    sb.max_objects = objects;
                }
                if let Some((h, s, o, d)) = edit.offsets {
                    sb.host_table_off = h;
                    sb.section_table_off = s;
                    sb.object_table_off = o;
                    sb.data_off = d;
                }
                if let Some(v) = edit.generation {
                    sb.generation = v;
                }
                if let Some((version, bytes, section_size, flags)) = edit.misc {
                    sb.version = version;
                    sb.superblock_bytes = bytes;
                    sb.section_size = section_size;
                    sb.flags = flags;
                }
                sb.checksum = crc32c(&sb.encode()[..SUPERBLOCK_BYTES - 4]);
                self.pool.write(0, &sb.encode())
            }
        };
    }

    pub(crate) fn act(&mut self, a: &Action) -> Result<(), TestCaseError> {
        let pool = self.pool;
        match a {
            Action::Mutate(m) => self.mutate(m),
            Action::Tick { ticks, step_ms } => {
                for _ in 0..*ticks {
                    self.now += step_ms * MS;
                    for host in self.hosts.iter_mut().flatten() {
                        let _ = host.tick(pool, self.now);
                    }
                }
            }
            Action::Submit { h, call, admin } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    match host.submit(pool, *call, *admin, self.now) {
                        Ok(seq) => self.outstanding[*h] = Some(seq),
                        Err(e) => check_errno(e)?,
                    }
                }
            }
            Action::Call { h, call, admin } => {
                self.act(&Action::Submit {
                    h: *h,
                    call: *call,
                    admin: *admin,
                })?;
                for _ in 0..30 {
                    if self.outstanding[*h].is_none() {
                        break;
                    }
                    self.act(&Action::Tick {
                        ticks: 1,
                        step_ms: 1,
                    })?;
                    self.act(&Action::Poll { h: *h })?;
                }
            }
            Action::OnObject {
                h,
                index,
                kind,
                uid,
            } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    let serial = match host.objects().get(*index as usize) {
                        Some(Slot::Live(e)) => e.serial,
                        _ => 0,
                    };
                    let (object, serial, uid) = (*index, serial, *uid);
                    let call = match kind {
                        0 => Call::Free {
                            object,
                            serial,
                            uid,
                        },
                        1 => Call::Release { object, serial },
                        2 => Call::Publish { object, serial },
                        _ => Call::Reclaim { host: object },
                    };
                    match host.submit(pool, call, *kind == 3, self.now) {
                        Ok(seq) => self.outstanding[*h] = Some(seq),
                        Err(e) => check_errno(e)?,
                    }
                }
            }
            Action::Poll { h } => {
                if let (Some(host), Some(seq)) = (self.hosts[*h].as_mut(), self.outstanding[*h]) {
                    match host.poll(pool, seq) {
                        Some(Ok(handle)) => {
                            let g = host.geometry();
                            if handle.extent.count > 0 {
                                prop_assert!(handle.object < g.max_objects);
                                prop_assert!(g
                                    .sections_span(handle.extent.first, handle.extent.count)
                                    .is_some());
                            }
                            self.outstanding[*h] = None;
                        }
                        Some(Err(e)) => {
                            check_errno(e)?;
                            self.outstanding[*h] = None;
                        }
                        None => {}
                    }
                }
            }
            Action::Refresh { h } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    if let Err(e) = host.refresh(pool) {
                        check_errno(e)?;
                    }
                }
            }
            Action::Query { h } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    let _ = host.objects().len();
                    let stats = host.stats();
                    prop_assert!(stats.free_sections <= stats.sections);
                    prop_assert!(stats.fragmentation_permille <= 1000);
                    let _ = host.held_by_me().count();
                    let _ = (host.liveness().len(), host.manager(), host.is_managing());
                    let _ = (
                        host.lease_valid(self.now),
                        host.is_ready(),
                        host.lease_lost(),
                    );
                }
            }
            Action::Forged { h, call, reply } => {
                self.act(&Action::Submit {
                    h: *h,
                    call: *call,
                    admin: false,
                })?;
                if let Some(seq) = self.outstanding[*h] {
                    let mut boot_tag = [0u8; 8];
                    boot_tag.copy_from_slice(&self.boots[*h][..8]);
                    let reply = Reply {
                        seq,
                        boot_tag,
                        ..*reply
                    };
                    let at = self.g.host_slot_offset(*h as u32).unwrap() + REPLY_OFF;
                    pool.write(at, &reply.encode()).unwrap();
                    self.act(&Action::Poll { h: *h })?;
                }
            }
            Action::Attach { h, boot } => {
                self.hosts[*h] = attach(pool, *h as u32, *boot, self.now);
                self.boots[*h] = [*boot; 16];
                self.outstanding[*h] = None;
            }
            Action::Reattach { h, boot } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    self.boots[*h] = [*boot; 16];
                    if let Err(e) = host.reattach(pool, [*boot; 16], self.now) {
                        check_errno(e)?;
                    }
                    self.outstanding[*h] = None;
                }
            }
            Action::Detach { h } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    if let Err(e) = host.detach(pool, self.now) {
                        check_errno(e)?;
                    }
                }
            }
            Action::Format {
                hosts,
                objects,
                generation,
            } => {
                match engine::format(pool, POOL, *hosts, *objects, [9; 16], *generation) {
                    Ok(sb) => {
                        prop_assert_eq!(engine::read_superblock(pool, POOL), Ok(sb));
                        // Mutations keep aiming at the base image's layout.
                        self.hosts.iter_mut().for_each(|h| *h = None);
                    }
                    Err(e) => check_errno(e)?,
                }
                if let Err(e) = engine::next_generation(*generation) {
                    check_errno(e)?;
                }
            }
            Action::Decode { device } => {
                let mut raw = [0u8; SUPERBLOCK_BYTES];
                pool.read(0, &mut raw).unwrap();
                if let Ok(sb) = Superblock::decode(&raw, *device) {
                    prop_assert!(sb.pool_size <= *device);
                    let g = sb.geometry();
                    prop_assert_eq!(
                        Geometry::new(sb.pool_size, sb.max_hosts, sb.max_objects),
                        Ok(g)
                    );
                }
                let _ = engine::read_superblock(pool, *device);
            }
        }
        Ok(())
    }
}
