# Both hosts create the same 2-way region over the shared type-3 backing
# files (cxlctl orders the interleave by serial number, so both interleave
# the pool identically).
set -e
cxlctl create-region --ways 2 --size 512M
test -c /dev/dax0.0
