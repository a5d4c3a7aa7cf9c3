# The work a thread gets done at target fractions 10 % to 90 %, against
# an unattached thread in the same round: SCHED_DEADLINE with a 100 us
# period (anchor), mchannel at T_W = 100 us, CFS cpu.max. Host 0 only.
set -e
. /bench/lib.inc
test "$h" = 0 || exit 0
mchannel_load
cxlf-contract mchannel-bench progress --seconds 1
# What a park cost the parked thread's CPU (moving average), and the least
# run (and park) windows gave for it.
sys=/sys/class/misc/mchannel
echo "park cost $(cat $sys/park_cost_ns) ns, least run $(cat $sys/min_run_ns) ns"
rmmod mchannel_sched
