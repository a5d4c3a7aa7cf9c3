# Checksum throughput on a 16 KiB block: the first version's bitwise
# CRC-32 (the anchor), crc32fast (the KV store's CRC-32), the pool core's
# bitwise CRC32C, the crc32c crate (SSE4.2) and xxHash64. Host 0 only.
set -e
[ "$CXLFABRIC_HOST" = 0 ] || exit 0
beluga bench crc --block 16384 --seconds 0.5
