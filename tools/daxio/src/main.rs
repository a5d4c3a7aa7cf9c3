//! `daxio`: write, check and wait for bytes in shared memory (a device-dax
//! instance such as `/dev/dax0.0`, or an ivshmem BAR through
//! `/sys/bus/pci/devices/<bdf>/resource2`). Used by the multi-host
//! scenarios to show that two hosts see one pool.

mod bench;
mod map;
mod pattern;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use map::Window;
use pattern::Pattern;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "daxio",
    version,
    about = "Bytes in a shared-memory device, with flushes"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a text at an offset.
    Write {
        path: String,
        #[arg(long)]
        offset: u64,
        #[arg(long)]
        text: String,
    },
    /// Fill a range with the pattern of a seed.
    Fill {
        path: String,
        #[arg(long)]
        offset: u64,
        #[arg(long)]
        len: usize,
        #[arg(long)]
        seed: u64,
    },
    /// Check that a range holds the pattern of a seed.
    Verify {
        path: String,
        #[arg(long)]
        offset: u64,
        #[arg(long)]
        len: usize,
        #[arg(long)]
        seed: u64,
    },
    /// Poll until a text appears at an offset.
    Wait {
        path: String,
        #[arg(long)]
        offset: u64,
        #[arg(long)]
        text: String,
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// Print the resource2 file of the ivshmem-plain pool device.
    Ivshmem,
    /// Sequential 8-byte store (with write-back) and load throughput over a
    /// range; `anon` measures anonymous guest RAM, the anchor. Prints one
    /// `BENCH {json}` line.
    Bench {
        /// A device path, or `anon`.
        path: String,
        #[arg(long, default_value_t = 0)]
        offset: u64,
        #[arg(long, default_value_t = 4 << 20)]
        len: usize,
        /// Repeat until at least this long has passed.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// Name of the benchmark series in the output.
        #[arg(long)]
        label: String,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::Write { path, offset, text } => {
            Window::map(&path, offset, text.len())?.write(text.as_bytes())
        }
        Cmd::Fill {
            path,
            offset,
            len,
            seed,
        } => {
            let mut data = vec![0; len];
            Pattern::fill(seed, &mut data);
            Window::map(&path, offset, len)?.write(&data);
        }
        Cmd::Verify {
            path,
            offset,
            len,
            seed,
        } => {
            let data = Window::map(&path, offset, len)?.read();
            if let Some(at) = Pattern::first_mismatch(seed, &data) {
                bail!(
                    "{path}: byte {:#x} differs from the pattern of seed {seed}",
                    offset + at as u64
                );
            }
            println!("{path}: {len} bytes at {offset:#x} match seed {seed}");
        }
        Cmd::Wait {
            path,
            offset,
            text,
            timeout,
        } => {
            let window = Window::map(&path, offset, text.len())?;
            let start = Instant::now();
            while window.read() != text.as_bytes() {
                if start.elapsed() > Duration::from_secs(timeout) {
                    bail!("{path}: '{text}' did not appear at {offset:#x} within {timeout} s");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            println!(
                "{path}: '{text}' seen at {offset:#x} after {:.1} s",
                start.elapsed().as_secs_f64()
            );
        }
        Cmd::Ivshmem => println!("{}", beluga::ivshmem_pool_path()?.display()),
        Cmd::Bench {
            path,
            offset,
            len,
            seconds,
            label,
        } => {
            let window = if path == "anon" {
                Window::anonymous(len)?
            } else {
                Window::map(&path, offset, len)?
            };
            let (write, read) = bench::run(&window, Duration::from_secs_f64(seconds));
            println!(
                "BENCH {{\"label\":\"{label}\",\"path\":\"{path}\",\"bytes\":{len},\"write_bytes_per_s\":{write:.0},\"read_bytes_per_s\":{read:.0}}}"
            );
        }
    }
    Ok(())
}
