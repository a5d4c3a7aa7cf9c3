# KV block store put and get throughput for 4 KiB, 16 KiB and 256 KiB
# blocks, with CRC-32 checksums and without, each set against the raw
# bandwidth of the same memory in the same run: the first line (label
# "raw", the anchor) stores a constant to every 8-byte word of 1 MiB and
# writes the lines back, then invalidates and loads them (the method of
# 10_pool_throughput); "copy" is a bulk Mapping::write and read of 1 MiB;
# then one line per block size and checksum (kv-16k-crc32, kv-16k-none,
# ...). The metrics are named after the memory, so each ratio to the
# anchor is over raw on that memory: ivshmem_* in the ivshmem BAR
# (RAM-backed shared memory, from 8 MiB), cxl_* in a beluga object on the
# CXL pool. The other lines also carry the ratios (*_of_raw). Host 0 only.
set -e
. /bench/lib.inc
pool_up
[ "$h" = 0 ] || exit 0
beluga bench kv --on ivshmem,cxl --blocks 4096,16384,262144 --mib 16 --seconds 1
