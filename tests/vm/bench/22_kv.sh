# KV block store (16 KiB blocks): put and get throughput in RAM-backed
# shared memory (ivshmem, the anchor) and in a beluga object on the CXL
# pool. Host 0 only.
set -e
[ "$CXLFABRIC_HOST" = 0 ] || exit 0
beluga bench kv --ivshmem --seconds 2 --label ivshmem
beluga bench kv --seconds 2 --label cxl-pool
