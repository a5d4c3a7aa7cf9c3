# Shared-memory throughput in one run: anonymous guest RAM (the anchor, first
# line), the ivshmem BAR (RAM-backed shared region), and the CXL region
# through QEMU's emulated fixed memory window. 8-byte volatile stores with
# clflush write-back, and loads after clflush invalidation. Host 0 only
# (both hosts create the region, which the later benchmarks use).
set -e
. /lib/cxlfabric/lib.sh
region > /dev/null
[ "$CXLFABRIC_HOST" = 0 ] || exit 0
daxio bench anon --len $((4 << 20)) --seconds 1 --label guest-ram
daxio bench "$(daxio ivshmem)" --len $((4 << 20)) --seconds 1 --label ivshmem
daxio bench /dev/dax0.0 --len $((1 << 20)) --seconds 2 --label cxl-window
