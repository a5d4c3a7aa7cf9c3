//! The region's header line and the hosts' heartbeat lines: formatting,
//! attaching, beating and joining.

use crate::layout::{Geometry, GeometryError, Header, Heartbeat, LINE};
use crate::mem::{fetch, publish, OutOfBounds, PoolMem};
use crate::nic::NicTable;

/// Formats the region: writes `geom`'s header line (the region's other
/// lines must be zero).
pub fn format<M: PoolMem + ?Sized>(m: &M, geom: &Geometry) -> Result<(), GeometryError> {
    if geom.total_bytes() > m.len() {
        return Err(GeometryError::TooLarge);
    }
    publish(m, 0, &geom.header().encode()).map_err(|_| GeometryError::TooLarge)
}

/// The geometry of a formatted region.
pub fn attach<M: PoolMem + ?Sized>(m: &M) -> Result<Geometry, GeometryError> {
    let b: [u8; LINE as usize] = fetch(m, 0).map_err(|_| GeometryError::TooLarge)?;
    Header::decode(&b, m.len())
}

/// Host `host`'s heartbeat line, fresh.
pub fn heartbeat<M: PoolMem + ?Sized>(m: &M, geom: &Geometry, host: u32) -> Option<Heartbeat> {
    let at = geom.heartbeat(host)?;
    let b: [u8; LINE as usize] = fetch(m, at).ok()?;
    Heartbeat::decode(&b).filter(|h| h.host == host)
}

/// Writes host `me`'s heartbeat line: `beat` in `epoch`, for a lease of
/// `lease_ms`, with the NICs it lends.
pub fn beat<M: PoolMem + ?Sized>(
    m: &M,
    geom: &Geometry,
    me: u32,
    epoch: u32,
    beat: u64,
    lease_ms: u32,
    nics: &NicTable,
) -> Result<(), OutOfBounds> {
    let at = geom.heartbeat(me).ok_or(OutOfBounds)?;
    let h = Heartbeat {
        epoch,
        host: me,
        beat,
        lease_ms,
        nics: Some(*nics),
    };
    publish(m, at, &h.encode())
}

/// Host `me` joins: its next epoch (one more than its line says, never
/// 0), written to its heartbeat line.
pub fn join<M: PoolMem + ?Sized>(m: &M, geom: &Geometry, me: u32) -> Result<u32, OutOfBounds> {
    let last = heartbeat(m, geom, me).map_or(0, |h| h.epoch);
    let epoch = match last.wrapping_add(1) {
        0 => 1,
        e => e,
    };
    beat(m, geom, me, epoch, 0, 0, &NicTable::default())?;
    Ok(epoch)
}
