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
# RAM-speed pool (ivshmem) is not a dax device beluga can bind.
set -e
. /bench/lib.inc
pool_up
rounds=3
me=10.0.9.$((11 + h))
peer=10.0.9.12

drack_up() {
	[ "$h" = 0 ] || await 70 drack-formatted
	insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 region=drack.bench host_index=$h hosts=2 lease_ms=2000
	[ "$h" = 1 ] || flag 70 drack-formatted
	ip addr add $me/24 dev drack0
	ip link set drack0 up
	wait_until 100 carrier_is drack0 1
}

field() { # json name
	echo "$1" | sed "s/.*\"$2\":\([0-9.e+-]*\).*/\1/"
}

# Busy and total jiffies of all CPUs, from /proc/stat.
jiffies() {
	awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}

measure() { # label address
	wait_until 100 nicbench tcp --to $2:7001 --bytes 1000 > /dev/null 2>&1
	rr64=$(nicbench --json udp-rr --to $2:7001 --size 64 --count 2000)
	rr1400=$(nicbench --json udp-rr --to $2:7001 --size 1400 --count 1000)
	set -- "$1" "$2" $(jiffies)
	tcp=$(nicbench --json tcp --to $2:7001 --bytes 16000000)
	set -- "$@" $(jiffies)
	# USER_HZ is 100: a jiffy is 10 ms.
	awk -v l="$1" -v a="$(field "$rr64" p50_us)" -v b="$(field "$rr64" p99_us)" \
		-v c="$(field "$rr1400" p50_us)" -v d="$(field "$rr1400" p99_us)" \
		-v f="$(field "$tcp" mbit_s)" -v n="$(field "$tcp" bytes)" \
		-v busy=$(($5 - $3)) 'BEGIN {
		printf "BENCH {\"label\":\"%s\",\"rr64_p50_ns\":%.0f,\"rr64_p99_ns\":%.0f,\"rr1400_p50_ns\":%.0f,\"rr1400_p99_ns\":%.0f,\"tcp_bytes_per_s\":%.0f,\"tcp_sender_cpu_per_kib_ns\":%.0f}\n",
			l, a * 1000, b * 1000, c * 1000, d * 1000, f * 1e6 / 8, busy * 1e7 * 1024 / (n > 0 ? n : 1) }'
}

# The first packet after 2 s idle, five times: the median round trip.
first_after_idle() { # label address
	med=$(for i in 1 2 3 4 5; do
		sleep 2
		field "$(nicbench --json udp-rr --to $2:7001 --size 64 --count 1)" p50_us
	done | sort -n | sed -n 3p)
	awk -v l="$1" -v m="$med" 'BEGIN {
		printf "BENCH {\"label\":\"%s\",\"first_rr_after_idle_ns\":%.0f}\n", l, m * 1000 }'
}

# Host 0's busy fraction of its CPUs over 5 s of nothing.
idle_cost() { # label
	set -- "$1" $(jiffies)
	p0=$(cat /sys/class/net/drack0/statistics/rx_packets 2>/dev/null || echo 0)
	polls0=$(ethtool -S drack0 2>/dev/null | awk '$1 == "polls:" { print $2 }')
	sleep 5
	set -- "$@" $(jiffies)
	polls1=$(ethtool -S drack0 2>/dev/null | awk '$1 == "polls:" { print $2 }')
	awk -v l="$1" -v b=$(($4 - $2)) -v t=$(($5 - $3)) -v p0="${polls0:-0}" -v p1="${polls1:-0}" 'BEGIN {
		printf "BENCH {\"label\":\"%s\",\"idle_busy_pct\":%.2f,\"idle_polls_per_s\":%.0f}\n",
			l, 100 * b / (t > 0 ? t : 1), (p1 - p0) / 5 }'
}

if [ "$h" = 1 ]; then
	drack_up
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
	drack_up
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
