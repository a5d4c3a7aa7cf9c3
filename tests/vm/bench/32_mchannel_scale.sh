# 1, 64 and 1024 streaming threads, unattached (anchor) and attached with
# T_R = T_W at T_W = 100 us: aggregate progress and the module's cost per
# window. Host 0 only.
set -e
. /bench/lib.inc
test "$h" = 0 || exit 0
grep -q '^beluga_dax ' /proc/modules || insmod /lib/cxlfabric/beluga_dax.ko
rmmod mchannel_sched 2>/dev/null || true
insmod /lib/cxlfabric/mchannel_sched.ko max_threads=2048
cxlf-selftest mchannel-bench scale --seconds 2
rmmod mchannel_sched
