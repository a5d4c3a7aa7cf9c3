# Bulk copies of 16 KiB into and out of shared anonymous memory, per copy
# path: the first version's byte-at-a-time copy with a clflush per line
# (the anchor), then every path this CPU supports (the one mappings use
# first), then memcpy without cache maintenance. Host 0 only.
set -e
[ "$CXLFABRIC_HOST" = 0 ] || exit 0
beluga bench copy --block 16384 --mib 16 --seconds 0.5
