//! Shared cases of the mailbox records (`mailbox.rs`) and the engine
//! (`engine/`): two hosts on one pool in memory.

use super::super::checksum::crc32c;
use super::super::engine::{self, Call, Engine, Peer, SliceMemory};
use super::super::mailbox::{Op, RecordError, Reply, Request, REPLY_COVERED, REQUEST_COVERED};
use super::super::objects::{Name, Slot, FLAG_SHARED};
use super::super::outcome::{Failure, Outcome};
use super::super::sections::Extent;
use super::{MS, POOL_BYTES};

fn request() -> Result<Request, Failure> {
    Ok(Request {
        op: Op::Alloc,
        seq: 7,
        boot_id: [3; 16],
        object: 0,
        sections: 4,
        serial: 0,
        flags: FLAG_SHARED,
        uid: 1000,
        mode: 0o640,
        name: Some(ok!(Name::new(b"kv.cache-0"))),
    })
}

pub fn mailbox_request_bit_flips_are_refused() -> Outcome {
    let req = request()?;
    let bytes = req.encode();
    check_eq!(Request::decode(&bytes), Ok(req));
    for bit in 0..(REQUEST_COVERED + 4) * 8 {
        let mut bad = bytes;
        bad[bit / 8] ^= 1 << (bit % 8);
        check!(Request::decode(&bad).is_err(), "bit {} accepted", bit);
    }
    Ok(())
}

pub fn mailbox_reply_bit_flips_are_refused() -> Outcome {
    let reply = Reply {
        seq: 9,
        boot_tag: [1, 2, 3, 4, 5, 6, 7, 8],
        status: 0,
        object: 5,
        extent: Extent { first: 3, count: 2 },
        flags: 1,
        serial: 77,
        uid: 1000,
        mode: 0o600,
    };
    let bytes = reply.encode();
    check_eq!(Reply::decode(&bytes), Ok(reply));
    for bit in 0..(REPLY_COVERED + 4) * 8 {
        let mut bad = bytes;
        bad[bit / 8] ^= 1 << (bit % 8);
        check!(Reply::decode(&bad).is_err(), "bit {} accepted", bit);
    }
    Ok(())
}

pub fn hostile_requests_are_refused() -> Outcome {
    let mut bytes = request()?.encode();
    bytes[64] = b'/';
    let crc = crc32c(&bytes[..REQUEST_COVERED]);
    bytes[REQUEST_COVERED..REQUEST_COVERED + 4].copy_from_slice(&crc.to_le_bytes());
    check_eq!(Request::decode(&bytes), Err(RecordError::Invalid("name")));
    check_eq!(Request::decode(&[0u8; 128]), Err(RecordError::Empty));
    check!(Request::decode(&[0u8; 10]).is_err());
    Ok(())
}

/// Two hosts on one pool in memory: the manager serves the other host's
/// request through its mailbox, then reclaims its object once its lease
/// has expired.
pub fn engine_serves_remote_requests_and_reclaims(pool: &mut [u8]) -> Outcome {
    check!(pool.len() >= POOL_BYTES);
    let mem = SliceMemory::new(pool);
    let size = POOL_BYTES as u64;
    let sb = ok!(engine::format(&mem, size, 2, 8, [7; 16], 1));
    check_eq!(sb.section_count, 4);
    let (mut objects_a, mut sections_a, mut peers_a) =
        ([Slot::Free; 8], [0u32; 4], [Peer::default(); 2]);
    let (mut objects_b, mut sections_b, mut peers_b) =
        ([Slot::Free; 8], [0u32; 4], [Peer::default(); 2]);
    let mut now = 0;
    let mut a = ok!(Engine::attach(
        &mem,
        sb,
        0,
        [1; 16],
        100,
        now,
        &mut objects_a[..],
        &mut sections_a[..],
        &mut peers_a[..],
    ));
    let mut b = ok!(Engine::attach(
        &mem,
        sb,
        1,
        [2; 16],
        100,
        now,
        &mut objects_b[..],
        &mut sections_b[..],
        &mut peers_b[..],
    ));
    for _ in 0..200 {
        now += MS;
        a.tick(&mem, now);
        b.tick(&mem, now);
    }
    check!(a.is_managing() && !b.is_managing() && b.is_ready());
    let call = Call::Alloc {
        sections: 3,
        flags: 0,
        uid: 0,
        mode: 0o600,
        name: None,
    };
    let seq = ok!(b.submit(&mem, call, false, now));
    let mut answer = None;
    for _ in 0..50 {
        now += MS;
        a.tick(&mem, now);
        b.tick(&mem, now);
        answer = b.poll(&mem, seq);
        if answer.is_some() {
            break;
        }
    }
    let handle = ok!(ok!(answer));
    check_eq!(handle.extent.count, 3);
    check_eq!(a.stats().used_by_host[1], 3);
    // Host 1 stops: after 1.5 leases host 0 reclaims its sections.
    let mut reclaimed = 0;
    for _ in 0..200 {
        now += MS;
        reclaimed += a.tick(&mem, now).reclaimed;
    }
    check_eq!(reclaimed, 1);
    check_eq!(a.stats().free_sections, 4);
    Ok(())
}
