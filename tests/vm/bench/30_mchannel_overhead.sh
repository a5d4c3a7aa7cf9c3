# mchannel_sched's cost on a thread it never throttles: one streaming
# thread unattached (anchor) vs attached with T_R = T_W, at T_W = 100 us
# and 1 ms. Host 0 only.
set -e
. /bench/lib.inc
test "$h" = 0 || exit 0
grep -q '^beluga_dax ' /proc/modules || insmod /lib/cxlfabric/beluga_dax.ko
rmmod mchannel_sched 2>/dev/null || true
insmod /lib/cxlfabric/mchannel_sched.ko
cxlf-selftest mchannel-bench overhead --seconds 18
rmmod mchannel_sched
