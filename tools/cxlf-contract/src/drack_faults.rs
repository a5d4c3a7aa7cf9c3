//! drack_netdev faults a hostile or faulty writer causes through the
//! pool, done from user space on one host (root maps the drack region
//! like any object of its own): what scenario 49 makes the other host's
//! driver face.

use anyhow::{ensure, Context, Result};
use beluga::Pool;
use drack_core::layout::{DstLine, Header, SrcLine, DST_LINE_AT, LINE, SRC_LINE_AT};
use std::path::Path;
use std::time::{Duration, Instant};

fn line(m: &beluga::Mapping, at: u64) -> Result<[u8; LINE as usize]> {
    let mut b = [0u8; LINE as usize];
    let at = usize::try_from(at)?;
    m.invalidate(at, b.len())?;
    m.read(at, &mut b)?;
    Ok(b)
}

/// Breaks the CRC of entries of pair (`src`, `dst`) that `dst` has not
/// read yet, for `for_ms` milliseconds while traffic flows: each time the
/// source's published tail is ahead of the destination's published head,
/// one byte of the buffer index of every entry in between not flipped yet
/// is flipped (a torn write or a stray writer; flipping twice would mend
/// it). Races the destination's poll: some entries it reads first, some
/// it reads broken. Prints how many were flipped; fails if none.
pub fn scribble(dev: &Path, region: &str, src: u32, dst: u32, for_ms: u64) -> Result<()> {
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
    let end = Instant::now() + Duration::from_millis(for_ms);
    let mut next: Option<u32> = None;
    let mut flipped = 0u64;
    while Instant::now() < end {
        let s =
            SrcLine::decode(&line(&m, ctl + SRC_LINE_AT)?).context("source line not written")?;
        let d = DstLine::decode(&line(&m, ctl + DST_LINE_AT)?)
            .context("destination line not written")?;
        // From the head, or past what was flipped already.
        let from = match next {
            Some(n) if n.wrapping_sub(d.head) <= geom.ref_slots() => n,
            _ => d.head,
        };
        let waiting = s.tail.wrapping_sub(from);
        if waiting == 0 || waiting > geom.ref_slots() {
            continue;
        }
        for i in 0..waiting {
            let pos = from.wrapping_add(i);
            let slot = pos & (geom.ref_slots() - 1);
            let at = geom
                .ref_entry(pair, slot)
                .context("slot out of the layout")?;
            // Byte 14: the low byte of the buffer index (under the CRC).
            let at = usize::try_from(at + 14)?;
            let mut b = [0u8; 1];
            m.read(at, &mut b)?;
            m.write(at, &[b[0] ^ 0xa5])?;
            m.write_back(at, 1)?;
        }
        flipped += u64::from(waiting);
        next = Some(s.tail);
    }
    ensure!(
        flipped > 0,
        "no entry of pair ({src}, {dst}) was waiting in {for_ms} ms"
    );
    println!("scribbled {flipped} entries of pair ({src}, {dst})");
    Ok(())
}
