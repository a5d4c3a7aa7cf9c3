# mchannel_sched's cost on a thread it never throttles: one streaming
# thread unattached (anchor) vs attached with T_R = T_W, at T_W = 100 us
# and 1 ms. Host 0 only.
set -e
. /bench/lib.inc
test "$h" = 0 || exit 0
mchannel_load
cxlf-contract mchannel-bench overhead --seconds 18
rmmod mchannel_sched
