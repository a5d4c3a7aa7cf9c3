# The library's protocols across the two hosts, over the shared pool: the
# KV block store (host 0 keeps publishing new versions of 16 blocks while
# host 1 reads them; every block read must be whole), with CRC-32 checksums
# and without (the sequence numbers alone), and CXL-RPC (host 1 calls
# host 0 at queue depth 8; every answer must match its request).
set -e
. /multihost/flags.inc
flag $((8 + h)) kv-$h
await $((9 - h)) kv-$((1 - h))
if [ "$h" = 0 ]; then
	cxlf-contract beluga-kv --name kv.store --writer --seconds 8
	cxlf-contract beluga-kv --name kv.nosum --writer --seconds 8 --no-checksum
	cxlf-contract beluga-rpc --server
else
	cxlf-contract beluga-kv --name kv.store --seconds 5 | tee /tmp/kv.txt
	grep -q "checksum crc32" /tmp/kv.txt
	cxlf-contract beluga-kv --name kv.nosum --seconds 5 | tee /tmp/kv.txt
	grep -q "checksum none" /tmp/kv.txt
	cxlf-contract beluga-rpc --calls 2000 --depth 8
fi
