# Target vs achieved run fraction, 10 % to 90 %: SCHED_DEADLINE with a
# 100 us period (anchor), mchannel at T_W = 100 us, CFS cpu.max at its
# 1 ms minimum period. Host 0 only.
set -e
. /bench/lib.inc
test "$h" = 0 || exit 0
mchannel_load
cxlf-contract mchannel-bench accuracy --seconds 2
rmmod mchannel_sched
