# drack0 between the two hosts over the beluga pool on the CXL window,
# by reference and by value, against virtio-net between the same two VMs
# (the anchor): UDP request/response p50/p99 at 64 and 1400 bytes, TCP
# throughput, and the sender's CPU time per KiB of TCP (all of host 0's
# CPUs, from /proc/stat, over the transfer). Then what the polling costs
# when idle: host 0's busy CPU fraction with drack0 up and idle against
# drack_netdev unloaded, and its polls per second; and the first packet
# after 2 s idle (the timer backed off to 1 ms) against virtio-net.
# Host 1 serves, host 0 measures; every series runs once per round, the
# anchor first, for $rounds rounds. The idle figures go in the series of
# the state they were taken in: virtio-net's with drack_netdev unloaded,
# drack-by-value's with drack0 up and idle (the last mode set), so their
# ratio is what drack0's polling costs.
#
# The pool here is beluga's, on the emulated CXL window (every access an
# MMIO exit under TCG): the absolute numbers say little, the ratios
# between the two modes (same pool, same copies counted) say more. A
# RAM-speed pool: 42_drack_ram.sh.
set -e
. /bench/lib.inc
pool_up
. /bench/drack.inc
rounds=3

if [ "$h" = 1 ]; then
	drack_up beluga0.0 cxl
	nicbench serve --port 7001 &
	server=$!
	flag 71 serving
	for r in $(seq $rounds); do
		for m in by-reference by-value; do
			await 72 "set-$m-$r"
			ethtool --set-priv-flags drack0 by-value $([ $m = by-value ] && echo on || echo off)
			flag 73 "ready-$m-$r"
		done
	done
	await 74 done
	kill $server
	wait $server 2>/dev/null || true
else
	# Printed after the anchor's first line: the table's ratios are to
	# virtio-net's series, which with drack_netdev unloaded is this.
	unloaded=$(idle_cost virtio-net)
	drack_up beluga0.0 cxl
	await 71 serving
	for r in $(seq $rounds); do
		measure virtio-net 10.0.0.2
		for m in by-reference by-value; do
			flag 72 "set-$m-$r"
			ethtool --set-priv-flags drack0 by-value $([ $m = by-value ] && echo on || echo off)
			await 73 "ready-$m-$r"
			measure drack-$m $peer
		done
	done
	echo "$unloaded"
	first_after_idle virtio-net 10.0.0.2
	first_after_idle drack-by-value $peer
	idle_cost drack-by-value
	flag 74 done
fi
ip link set drack0 down
rmmod drack_netdev
