# beluga_dax tried as an attacker would: random ioctls (numbers, arguments,
# bad pointers) and random mmap/munmap/mremap/mprotect/madvise of pool
# mappings from racing threads, first as an unprivileged uid, then as
# root (never FORMAT or FORCE_RECLAIM there). The harness then checks the
# kernel log (no oops, BUG or WARNING); the pool must still work, hold
# nothing the fuzzers left, and the module must unload cleanly.
set -e
. /lib/cxlfabric/lib.sh
beluga_fresh
chmod 666 /dev/beluga0.0

cxlf-contract beluga-fuzz --dev /dev/beluga0.0 --seconds 10 --seed 1 --threads 4 --uid 1000
cxlf-contract beluga-fuzz --dev /dev/beluga0.0 --seconds 10 --seed 2 --threads 4

wait_until 50 pool_attr_is objects 0
cxlf-contract beluga-contract --dev /dev/beluga0.0
beluga_done
