//! The base image: a formatted pool in use, built once, and the host
//! calls that build it.

use super::*;

pub(crate) fn attach(pool: &SliceMemory<'_>, index: u32, boot: u8, now: u64) -> Option<Host> {
    let sb = engine::read_superblock(pool, POOL).ok()?;
    try_attach(pool, sb, index, boot, now).ok()
}

pub(crate) fn name(n: &str) -> Option<Name> {
    Some(Name::new(n.as_bytes()).unwrap())
}

/// Runs `c` from host `h` to its answer, ticking every host; an ALLOC is
/// followed by what the driver does: clear the sections, PUBLISH.
pub(crate) fn call(pool: &SliceMemory<'_>, hosts: &mut [Host], h: usize, c: Call, now: &mut u64) {
    let seq = hosts[h].submit(pool, c, false, *now).unwrap();
    for _ in 0..100 {
        if let Some(r) = hosts[h].poll(pool, seq) {
            let handle = r.unwrap();
            if matches!(c, Call::Alloc { .. }) {
                let g = *hosts[h].geometry();
                let (offset, len) = g
                    .sections_span(handle.extent.first, handle.extent.count)
                    .unwrap();
                pool.zero(offset, len).unwrap();
                let publish = Call::Publish {
                    object: handle.object,
                    serial: handle.serial,
                };
                call(pool, hosts, h, publish, now);
            }
            return;
        }
        *now += MS;
        for host in hosts.iter_mut() {
            host.tick(pool, *now);
        }
    }
    panic!("{c:?} unanswered");
}

/// A pool in use: three hosts, objects in every state, a request left in
/// a mailbox. Built once.
pub(crate) fn base_image() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let mut bytes = vec![0x5a; POOL as usize];
        let pool = SliceMemory::new(&mut bytes);
        engine::format(&pool, POOL, HOSTS, OBJECTS, [7; 16], 5).unwrap();
        let mut now = 0;
        let mut hosts: Vec<Host> = (0..HOSTS)
            .map(|i| attach(&pool, i, i as u8 + 1, now).unwrap())
            .collect();
        for _ in 0..200 {
            now += MS;
            for h in hosts.iter_mut() {
                h.tick(&pool, now);
            }
        }
        let alloc = |sections, flags, n: Option<&str>| Call::Alloc {
            sections,
            flags,
            uid: 1000,
            mode: 0o644,
            name: n.and_then(name),
        };
        call(&pool, &mut hosts, 1, alloc(1, 0, None), &mut now);
        call(
            &pool,
            &mut hosts,
            1,
            alloc(2, FLAG_SHARED, Some("kv.0")),
            &mut now,
        );
        let open = |n: &str| Call::Open {
            name: name(n).unwrap(),
            uid: 1000,
        };
        call(&pool, &mut hosts, 0, open("kv.0"), &mut now);
        call(&pool, &mut hosts, 2, open("kv.0"), &mut now);
        call(&pool, &mut hosts, 2, alloc(1, 0, Some("p")), &mut now);
        call(
            &pool,
            &mut hosts,
            0,
            alloc(1, FLAG_SHARED, Some("s")),
            &mut now,
        );
        let s = hosts[0]
            .held_by_me()
            .find(|h| h.extent.count == 1 && h.flags & FLAG_SHARED != 0)
            .unwrap();
        let unlink = Call::Free {
            object: s.object,
            serial: s.serial,
            uid: 1000,
        };
        call(&pool, &mut hosts, 0, unlink, &mut now);
        // Left unanswered in host 2's mailbox.
        hosts[2]
            .submit(&pool, alloc(1, 0, None), false, now)
            .unwrap();
        drop(hosts);
        bytes
    })
}
