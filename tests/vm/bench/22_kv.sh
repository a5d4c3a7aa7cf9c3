# KV block store put and get throughput for 4 KiB, 16 KiB and 256 KiB
# blocks, each set against the raw bandwidth of the same memory in the same
# run: the first line (label "raw", the anchor) is a bulk Mapping::write and
# read of the store's mapping, 1 MiB per copy, with the same flush
# discipline; then one line per block size (kv-4k, kv-16k, kv-256k). The
# metrics are named after the memory, so each ratio to the anchor is KV over
# raw on that memory: ivshmem_* in the ivshmem BAR (RAM-backed shared
# memory, from 8 MiB), cxl_* in a beluga object on the CXL pool. The KV
# lines also carry the ratios (*_of_raw). Host 0 only.
set -e
[ "$CXLFABRIC_HOST" = 0 ] || exit 0
beluga bench kv --on ivshmem,cxl --blocks 4096,16384,262144 --mib 16 --seconds 1
