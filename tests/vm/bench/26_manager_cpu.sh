# The CPU the pool costs the manager's host, from the module's count of
# its periodic work (sysfs work_ns: tick, polling between ticks, reaper;
# time running, sleeps excluded: a lower bound, since the wakeups between
# polls are not in it), as a percentage of one core: over 5 s
# with host 1 attached and idle (the anchor), then over 3 s while host 1
# allocates and frees through its mailbox. (/proc/stat cannot say: its
# accounting samples at the timer tick, and the pool's work runs right
# after one.)
set -e
. /bench/lib.inc
pool_up
# window SECONDS LABEL: the work's share of one core over the window.
window() {
	w0=$(cat $sys/work_ns)
	sleep "$1"
	w1=$(cat $sys/work_ns)
	echo "BENCH {\"label\":\"$2\",\"cpu_pct\":$(awk "BEGIN{printf \"%.3f\", ($w1 - $w0) / $1 / 1e7}")}"
}
if [ "$h" = 0 ]; then
	await 30 cpu-joined
	sleep 1
	window 5 "pool idle"
	flag 31 cpu-load
	await 33 cpu-loading
	sleep 0.3
	window 3 "pool serving"
	await 32 cpu-load-done
else
	flag 30 cpu-joined
	await 31 cpu-load
	flag 33 cpu-loading
	beluga bench alloc-free --seconds 4 > /dev/null
	flag 32 cpu-load-done
fi
