//! drack_netdev faults a hostile or faulty peer causes through the pool,
//! done from user space on one host (root maps the drack region like any
//! object of its own): what scenario 49 makes the other host's driver
//! face.

use anyhow::{bail, ensure, Context, Result};
use beluga::Pool;
use drack_core::layout::{DstLine, Header, SrcLine, DST_LINE_AT, LINE, SRC_LINE_AT};
use std::path::Path;

fn line(m: &beluga::Mapping, at: u64) -> Result<[u8; LINE as usize]> {
    let mut b = [0u8; LINE as usize];
    let at = usize::try_from(at)?;
    m.invalidate(at, b.len())?;
    m.read(at, &mut b)?;
    Ok(b)
}

/// Breaks the CRC of every entry of pair (`src`, `dst`) that `dst` has
/// not read yet (from its published head to `src`'s published tail) by
/// flipping one byte of its buffer index, as a torn write or a stray
/// writer would; prints how many. Fails if none is waiting (the
/// destination read them first): the caller tries again.
pub fn scribble(dev: &Path, region: &str, src: u32, dst: u32) -> Result<()> {
    let pool = Pool::open(dev)?;
    pool.wait_ready()?;
    let h = pool
        .open_object(region)
        .with_context(|| format!("open region {region}"))?;
    let m = pool.map(&h)?;
    let geom = Header::decode(&line(&m, 0)?, m.len() as u64)
        .map_err(|e| anyhow::anyhow!("region {region}: header refused: {e:?}"))?;
    let pair = geom.pair(src, dst).with_context(|| {
        format!(
            "no pair ({src}, {dst}) in a region of {} hosts",
            geom.hosts()
        )
    })?;
    let ctl = geom.ctl(pair).context("pair out of the layout")?;
    let s = SrcLine::decode(&line(&m, ctl + SRC_LINE_AT)?).context("source line not written")?;
    let d =
        DstLine::decode(&line(&m, ctl + DST_LINE_AT)?).context("destination line not written")?;
    let waiting = s.tail.wrapping_sub(d.head);
    ensure!(
        waiting <= geom.ref_slots(),
        "head {} and tail {} are more than a ring apart",
        d.head,
        s.tail
    );
    if waiting == 0 {
        bail!(
            "nothing waiting in pair ({src}, {dst}): head = tail = {}",
            s.tail
        );
    }
    for i in 0..waiting {
        let pos = d.head.wrapping_add(i);
        let slot = pos & (geom.ref_slots() - 1);
        let at = geom
            .ref_entry(pair, slot)
            .context("slot out of the layout")?;
        // Byte 14: the low byte of the buffer index (covered by the CRC).
        let at = usize::try_from(at + 14)?;
        let mut b = [0u8; 1];
        m.read(at, &mut b)?;
        m.write(at, &[b[0] ^ 0xa5])?;
        m.write_back(at, 1)?;
    }
    println!(
        "scribbled {waiting} entries of pair ({src}, {dst}) at positions {}..{}",
        d.head, s.tail
    );
    Ok(())
}
