//! CXL-RPC (after the Beluga paper): fixed-size request and response slots
//! in one shared object. A client writes a request and then its ready flag;
//! the server polls the flags, runs the handler, writes the response and
//! then its flag; the client polls for that. No word has two writers, so
//! nothing needs cross-host atomics. Several slots give a queue depth.
//!
//! Layout (version 1, little-endian):
//!
//! ```text
//! 0      header, 64 bytes: magic "BELRPC01", slots, message size
//! 64     per slot, 128 + 2 * msg bytes:
//!          +0    request flag line (client): seq u64, len u64
//!          +64   response flag line (server): seq u64, len u64
//!          +128  request payload (msg bytes)
//!          +128+msg response payload (msg bytes)
//! ```
//!
//! A request is new when its sequence number differs from the last the
//! server answered in that slot; a response belongs to the request with
//! the same sequence number.

use crate::shared::Shared;
use std::io;

const MAGIC: u64 = u64::from_le_bytes(*b"BELRPC01");
const HEADER: usize = 64;
const FLAGS: usize = 128;

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// Bytes a channel of `slots` slots of `msg` bytes needs.
pub fn channel_bytes(slots: usize, msg: usize) -> usize {
    HEADER + slots * (FLAGS + 2 * msg)
}

#[derive(Clone, Copy)]
struct Layout {
    slots: usize,
    msg: usize,
}

impl Layout {
    fn read<M: Shared>(mem: &M) -> io::Result<Layout> {
        if mem.read_u64(0)? != MAGIC {
            return Err(invalid("not an RPC channel"));
        }
        let slots = usize::try_from(mem.read_u64(8)?).map_err(|_| invalid("slots"))?;
        let msg = usize::try_from(mem.read_u64(16)?).map_err(|_| invalid("message size"))?;
        let fits = msg
            .checked_mul(2)
            .and_then(|m| m.checked_add(FLAGS))
            .and_then(|s| s.checked_mul(slots))
            .and_then(|b| b.checked_add(HEADER))
            .is_some_and(|b| b <= mem.len());
        if slots == 0 || msg == 0 || !msg.is_multiple_of(8) || !fits {
            return Err(invalid("RPC header does not fit its region"));
        }
        Ok(Layout { slots, msg })
    }

    fn slot(&self, i: usize) -> usize {
        HEADER + i * (FLAGS + 2 * self.msg)
    }
}

/// Initialises a channel in `mem` (whoever creates it, once).
pub fn create<M: Shared>(mem: &M, slots: usize, msg: usize) -> io::Result<()> {
    if slots == 0 || msg == 0 || !msg.is_multiple_of(8) || channel_bytes(slots, msg) > mem.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "channel does not fit",
        ));
    }
    mem.write_u64(0, 0)?;
    let layout = Layout { slots, msg };
    for i in 0..slots {
        mem.write(layout.slot(i), &[0u8; FLAGS])?;
    }
    mem.write_u64(8, slots as u64)?;
    mem.write_u64(16, msg as u64)?;
    mem.write_u64(0, MAGIC)?;
    Ok(())
}

pub struct Server<M: Shared> {
    mem: M,
    layout: Layout,
    answered: Vec<u64>,
}

impl<M: Shared> Server<M> {
    pub fn open(mem: M) -> io::Result<Server<M>> {
        let layout = Layout::read(&mem)?;
        // Requests already answered (a restarted server) are not new.
        let answered = (0..layout.slots)
            .map(|i| mem.read_u64(layout.slot(i) + 64))
            .collect::<io::Result<_>>()?;
        Ok(Server {
            mem,
            layout,
            answered,
        })
    }

    /// Serves every slot with a new request once; returns how many.
    pub fn poll(
        &mut self,
        handler: &mut dyn FnMut(&[u8], &mut [u8]) -> usize,
    ) -> io::Result<usize> {
        let mut served = 0;
        let mut request = vec![0u8; self.layout.msg];
        let mut response = vec![0u8; self.layout.msg];
        for i in 0..self.layout.slots {
            let at = self.layout.slot(i);
            let seq = self.mem.read_u64(at)?;
            if seq == self.answered[i] {
                continue;
            }
            let len = (self.mem.read_u64(at + 8)? as usize).min(self.layout.msg);
            self.mem.read(at + FLAGS, &mut request[..len])?;
            let out = handler(&request[..len], &mut response).min(self.layout.msg);
            self.mem
                .write(at + FLAGS + self.layout.msg, &response[..out])?;
            self.mem.write_u64(at + 64 + 8, out as u64)?;
            self.mem.write_u64(at + 64, seq)?;
            self.answered[i] = seq;
            served += 1;
        }
        Ok(served)
    }
}

pub struct Client<M: Shared> {
    mem: M,
    layout: Layout,
    next: Vec<u64>,
}

impl<M: Shared> Client<M> {
    /// Attaches to a channel; the client owns every slot's request side.
    pub fn open(mem: M) -> io::Result<Client<M>> {
        let layout = Layout::read(&mem)?;
        let next = (0..layout.slots)
            .map(|i| Ok(mem.read_u64(layout.slot(i))? + 1))
            .collect::<io::Result<_>>()?;
        Ok(Client { mem, layout, next })
    }

    pub fn slots(&self) -> usize {
        self.layout.slots
    }

    pub fn msg_size(&self) -> usize {
        self.layout.msg
    }

    /// Posts `request` in `slot`: payload first, then the flag.
    pub fn submit(&mut self, slot: usize, request: &[u8]) -> io::Result<u64> {
        if slot >= self.layout.slots || request.len() > self.layout.msg {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "slot or size"));
        }
        let at = self.layout.slot(slot);
        let seq = self.next[slot];
        self.next[slot] += 1;
        self.mem.write(at + FLAGS, request)?;
        self.mem.write_u64(at + 8, request.len() as u64)?;
        self.mem.write_u64(at, seq)?;
        Ok(seq)
    }

    /// The response to request `seq` in `slot`, if it has come.
    pub fn poll(&self, slot: usize, seq: u64, out: &mut [u8]) -> io::Result<Option<usize>> {
        let at = self.layout.slot(slot);
        if self.mem.read_u64(at + 64)? != seq {
            return Ok(None);
        }
        let len = (self.mem.read_u64(at + 72)? as usize)
            .min(self.layout.msg)
            .min(out.len());
        self.mem
            .read(at + FLAGS + self.layout.msg, &mut out[..len])?;
        Ok(Some(len))
    }

    /// Submits and waits (spinning) for the answer.
    pub fn call(&mut self, slot: usize, request: &[u8], out: &mut [u8]) -> io::Result<usize> {
        let seq = self.submit(slot, request)?;
        loop {
            if let Some(n) = self.poll(slot, seq, out)? {
                return Ok(n);
            }
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::HeapRegion;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn calls_are_answered_in_every_slot_across_threads() {
        let mem = Arc::new(HeapRegion::new(channel_bytes(4, 64)));
        create(&mem, 4, 64).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let server = {
            let (mem, stop) = (mem.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut server = Server::open(mem).unwrap();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += server
                        .poll(&mut |req, resp| {
                            for (o, i) in resp.iter_mut().zip(req) {
                                *o = i.wrapping_add(1);
                            }
                            req.len()
                        })
                        .unwrap();
                }
                n
            })
        };
        let mut client = Client::open(mem.clone()).unwrap();
        let mut out = [0u8; 64];
        for round in 0..200u32 {
            let slot = round as usize % 4;
            let req: Vec<u8> = (0..(round % 60) as u8 + 1)
                .map(|b| b ^ round as u8)
                .collect();
            let n = client.call(slot, &req, &mut out).unwrap();
            assert_eq!(n, req.len());
            assert!(out[..n]
                .iter()
                .zip(&req)
                .all(|(o, i)| *o == i.wrapping_add(1)));
        }
        // Depth 4: all slots in flight at once.
        let seqs: Vec<u64> = (0..4)
            .map(|s| client.submit(s, &[s as u8]).unwrap())
            .collect();
        for (s, seq) in seqs.iter().enumerate() {
            while client.poll(s, *seq, &mut out).unwrap().is_none() {}
            assert_eq!(out[0], s as u8 + 1);
        }
        stop.store(true, Ordering::Relaxed);
        assert_eq!(server.join().unwrap(), 204);
    }

    #[test]
    fn headers_are_validated() {
        let mem = HeapRegion::new(4096);
        assert!(Client::open(&mem).is_err());
        assert!(
            create(&mem, 100, 64).is_err(),
            "a channel larger than its region"
        );
        create(&mem, 2, 64).unwrap();
        mem.write_u64(16, 1 << 50).unwrap();
        assert!(Server::open(&mem).is_err());
    }
}
