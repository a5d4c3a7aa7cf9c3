# The cost of clearing sections before they change owner (the manager
# zeroes them through the pages' direct map). Anchor: one 2 MiB
# alloc+free pair on the manager host, clearing included; then the part
# of it spent clearing, from the driver's counters over the same run.
set -e
. /bench/lib.inc
pool_up
sys=/sys/class/misc/beluga0.0
if [ "$h" = 0 ]; then
	b0=$(cat $sys/cleared_bytes); n0=$(cat $sys/clear_ns)
	pair_ns=$(beluga bench alloc-free --seconds 3 | sed -n 's/.*"label":"local"[^}]*"call_ns":\([0-9.]*\).*/\1/p')
	b1=$(cat $sys/cleared_bytes); n1=$(cat $sys/clear_ns)
	test -n "$pair_ns"
	sections=$(((b1 - b0) / (2 << 20)))
	test "$sections" -gt 0
	echo "BENCH {\"label\":\"alloc+free 2MiB\",\"section_ns\":$(awk "BEGIN{print $pair_ns * 2}")}"
	echo "BENCH {\"label\":\"clear 2MiB\",\"section_ns\":$(((n1 - n0) / sections))}"
	flag 3 clear-done
else
	await 3 clear-done
fi
