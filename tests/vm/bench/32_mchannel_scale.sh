# 1, 64 and 1024 streaming threads, unattached (anchor) and attached with
# T_R = T_W at T_W = 100 us: aggregate progress and the module's cost per
# window. Host 0 only.
set -e
. /bench/lib.inc
test "$h" = 0 || exit 0
mchannel_load max_threads=2048
cxlf-contract mchannel-bench scale --seconds 2
rmmod mchannel_sched
