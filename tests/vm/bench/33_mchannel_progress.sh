# The work a thread gets done at target fractions 10 % to 90 %, against
# an unattached thread in the same round: SCHED_DEADLINE with a 100 us
# period (anchor), mchannel at T_W = 100 us, CFS cpu.max. Host 0 only.
set -e
. /bench/lib.inc
test "$h" = 0 || exit 0
mchannel_load
cxlf-contract mchannel-bench progress --seconds 1
rmmod mchannel_sched
