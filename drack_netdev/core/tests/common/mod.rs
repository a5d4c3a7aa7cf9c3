//! What the property tests share: a two-host world over the non-coherent
//! model, frames that carry their number, and the payload check.

#![allow(dead_code)]

use drack_core::layout::Geometry;
use drack_core::mem::PoolMem;
use drack_core::model::Model;
use drack_core::peer::{attach, format, join, DstEnd, Frame, Session, SrcEnd};

/// A model's backing bytes for `geom` and two hosts.
pub fn backing(geom: &Geometry) -> Vec<u8> {
    vec![0u8; Model::bytes_needed(geom.total_bytes() as usize, 2)]
}

/// The model in `buf`, formatted by host 0.
pub fn world<'a>(buf: &'a mut [u8], geom: &Geometry) -> Model<'a> {
    let model = Model::new(buf, geom.total_bytes() as usize, 2).expect("room for the model");
    format(&model.host(0), geom).expect("format");
    assert_eq!(attach(&model.host(1)).expect("attach"), *geom);
    model
}

/// Host `h` joins: its end of pair (h, 1 - h) as a source or destination.
pub fn src(model: &Model<'_>, geom: &Geometry, start: u32) -> SrcEnd {
    let m = model.host(0);
    let e = join(&m, geom, 0).expect("join");
    let mut s = SrcEnd::new(*geom, 0, 1, e).expect("pair");
    s.set_start(start);
    s.start(&m).expect("start");
    s
}

/// Host 1 joins as the destination of pair (0, 1), lending at most `cap`.
pub fn dst(model: &Model<'_>, geom: &Geometry, cap: u32) -> DstEnd {
    dst_adopting(model, geom, cap, &[])
}

/// As [`dst`], after a reload of host 1's module whose stack still holds
/// the pages of buffers `held`.
pub fn dst_adopting(model: &Model<'_>, geom: &Geometry, cap: u32, held: &[u16]) -> DstEnd {
    let m = model.host(1);
    let e = join(&m, geom, 1).expect("join");
    let mut d = DstEnd::new(*geom, 1, 0, e, cap).expect("pair");
    for b in held {
        assert!(d.adopt(*b), "buffer {b} adopted twice");
    }
    d.start(&m).expect("start");
    d
}

/// Polls both until up.
pub fn connect(model: &Model<'_>, s: &mut SrcEnd, d: &mut DstEnd) {
    for _ in 0..4 {
        s.poll(&model.host(0));
        d.poll(&model.host(1));
    }
    assert_eq!((s.session(), d.session()), (Session::Up, Session::Up));
}

/// Frame `n`'s payload of `len` bytes: `n` in its first 4, then a
/// pattern of `n`.
pub fn payload(n: u32, len: usize) -> Vec<u8> {
    let mut p: Vec<u8> = (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(n) as u8)
        .collect();
    p[..4].copy_from_slice(&n.to_le_bytes());
    p
}

/// What host `m` reads of frame `f` (invalidating first, as the module).
pub fn read_frame<M: PoolMem>(m: &M, f: &Frame) -> Vec<u8> {
    let mut out = Vec::new();
    for (_, off, len) in f.parts() {
        out.extend_from_slice(&read_part(m, off, len));
    }
    out
}

/// What host `m` reads of `len` bytes at `off` (invalidating first).
pub fn read_part<M: PoolMem>(m: &M, off: u64, len: u16) -> Vec<u8> {
    let mut b = vec![0u8; usize::from(len)];
    m.invalidate(off, u64::from(len)).expect("in the pool");
    m.read(off, &mut b).expect("in the pool");
    b
}

/// The frame number in a payload, if the payload is that frame's.
pub fn number_of(p: &[u8]) -> Option<u32> {
    let n = u32::from_le_bytes(p.get(..4)?.try_into().ok()?);
    (payload(n, p.len()) == p).then_some(n)
}
