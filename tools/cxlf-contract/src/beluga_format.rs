//! beluga's pool format from user space: `cxlf-contract pool-layout` prints
//! where the tables lie for a size, `cxlf-contract write-superblock` writes
//! a superblock (optionally damaged) for beluga_dax's probe to judge.

use anyhow::{ensure, Context, Result};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::fs::OpenOptions;
use std::num::NonZeroUsize;

pub(crate) fn pool_layout(size: u64, hosts: u32, objects: u32) -> Result<()> {
    let g = beluga_pool::layout::Geometry::new(size, hosts, objects)
        .map_err(|e| anyhow::anyhow!("no layout: {e:?}"))?;
    println!("host_table_off={}", g.host_table_off);
    println!("object_table_off={}", g.object_table_off);
    println!("slot_bytes={}", beluga_pool::leases::SLOT_BYTES);
    println!("data_off={}", g.data_off);
    Ok(())
}

pub(crate) fn write_superblock(
    device: &str,
    size: u64,
    max_hosts: u32,
    max_objects: u32,
    flip_bit: Option<usize>,
) -> Result<()> {
    use beluga_pool::layout::{Geometry, Superblock, SUPERBLOCK_BYTES};
    let geometry =
        Geometry::new(size, max_hosts, max_objects).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut bytes = Superblock::new(&geometry, *b"cxlf-contract-01", 1).encode();
    if let Some(bit) = flip_bit {
        ensure!(
            bit < SUPERBLOCK_BYTES * 8,
            "bit {bit} is outside the superblock"
        );
        bytes[bit / 8] ^= 1 << (bit % 8);
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
        .with_context(|| format!("opening {device}"))?;
    // device-dax maps in 2 MiB units.
    let len = 2 << 20;
    // SAFETY: a fresh shared read-write mapping of the device at an
    // address the kernel chooses.
    let p = unsafe {
        mmap(
            None,
            NonZeroUsize::new(len).unwrap(),
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_SHARED,
            &file,
            0,
        )
    }
    .context("mmap")?
    .cast::<u8>();
    for (i, byte) in bytes.iter().enumerate() {
        // SAFETY: `i < 128 < len`, inside the mapping.
        unsafe { p.as_ptr().add(i).write_volatile(*byte) };
    }
    // SAFETY: unmapping the mapping made above; nothing refers to it after.
    unsafe { munmap(p.cast(), len)? };
    println!(
        "superblock written to {device}{}",
        flip_bit
            .map(|b| format!(" with bit {b} flipped"))
            .unwrap_or_default()
    );
    Ok(())
}
