# The demo's drack_netdev part (two hosts, both run it): drack0 between
# the hosts over one beluga pool, host 0 the client, host 1 the server
# (nicbench). For each mode (by reference, by value, both hosts alike):
# TCP throughput 0 -> 1, UDP 64 B request/response latency, and what the
# TCP transfer copied per frame on each side (ethtool -S); then host 1
# unloads drack_netdev and loads it again (peer down, rejoin); then pooled
# NICs: host 1 lends its hub NIC, and host 0 sends one MPTCP connection to
# a server behind the hub over its own hub NIC and the vNIC drackv1n0
# (both shaped alike), against plain TCP over its own NIC. Host 0 prints
# the report; host 1 hands its counters over eth0 (busybox httpd), so the
# drack0 counters see only the measured traffic.
set -e
. /multihost/flags.inc
me=10.0.9.$((11 + h))
peer=10.0.9.$((12 - h))
stat() { ethtool -S drack0 | awk -v n="$1:" '$1 == n { print $2 }'; }
debug() {
	echo "== host $h: drack0 counters and log at exit"
	ethtool -S drack0 2>/dev/null | grep -v ': 0$'
	dmesg | grep -i -e drack -e beluga | tail -n 20
}
trap 'debug' EXIT

# The pool: the init loaded beluga_dax; host 0 formats, host 1 attaches.
echo dax0.0 > $dax/device_dax/unbind
if [ "$h" = 0 ]; then
	echo dax0.0 > $dax/beluga_dax/bind
	beluga format --hosts 4 --objects 256 >/dev/null
	beluga wait
	flag 0 formatted
else
	await 0 formatted >/dev/null
	echo dax0.0 > $dax/beluga_dax/bind
	beluga wait
fi
# The init loaded drack_netdev without a pool (no interface): reload it.
rmmod drack_netdev 2>/dev/null || true
[ "$h" = 0 ] || await 1 drack-loaded-0 >/dev/null
insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 host_index=$h hosts=2 lease_ms=2000
[ "$h" = 1 ] || flag 1 drack-loaded-0
ip addr add $me/24 dev drack0
ip link set drack0 up
wait_until 100 carrier_is drack0 1

modes="by-reference by-value"
# The pooled NICs' shaping, Mbit/s: far below what drack0 moves on the
# CXL window, so that the NICs limit.
rate=5
if [ "$h" = 1 ]; then
	mkdir -p /tmp/www
	httpd -p 10.0.0.2:8000 -h /tmp/www
	nicbench serve --port 7009 &
	srv=$!
	for m in $modes; do
		await 2 "set-$m" >/dev/null
		ethtool --set-priv-flags drack0 by-value $([ $m = by-value ] && echo on || echo off)
		ethtool -S drack0 > /tmp/www/$m.0
		flag 3 "ready-$m"
		await 4 "done-$m" >/dev/null
		# The sockets have let go: every lent page is back.
		wait_until 100 prints 0 stat peer0_lent_pages || true
		ethtool -S drack0 > /tmp/www/$m.1
		flag 5 "dumped-$m"
	done
	await 6 finished >/dev/null
	kill $srv
	wait $srv 2>/dev/null || true
	# Peer down and rejoin: unloaded, then loaded again (a new epoch).
	await 7 go-down >/dev/null
	rmmod drack_netdev
	flag 8 unloaded
	await 9 seen-dead >/dev/null
	insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 host_index=$h hosts=2 lease_ms=2000
	ip addr add $me/24 dev drack0
	ip link set drack0 up
	flag 10 loaded-again
	await 11 demo-done >/dev/null
	# Pooled NICs: the hub NIC lent, shaped like host 0's.
	wait_until 100 carrier_is drack0 1
	hub=$(hub_nic)
	drack lend "$hub" >/dev/null
	tc qdisc add dev "$hub" root tbf rate ${rate}mbit burst 32kb latency 50ms
	nics=/sys/class/net/drack0/nics/0
	flag 12 lent
	await 13 pooled-sent >/dev/null
	echo "$hub $(cat $nics/to_nic_frames) $(cat $nics/to_nic_bytes) $(cat $nics/from_nic_frames)" > /tmp/www/nic0
	flag 14 pooled-counted
	await 15 pooled-done >/dev/null
	tc qdisc del dev "$hub" root
	drack unlend "$hub" >/dev/null
	trap - EXIT
	exit 0
fi

# Host 0: the client and the report.
stat_of() { awk -v n="$2:" '$1 == n { print $2 }' "$1"; }
per() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.0f", y ? x / y : 0 }'; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", y ? x / y : 0 }'; }
field() { echo "$2" | sed "s/.*\"$1\":\([0-9.]*\).*/\1/"; }
fetch() { wget -q -O "$2" "http://10.0.0.2:8000/$1"; }
wait_until 50 nicbench tcp --to $peer:7009 --bytes 1000 >/dev/null 2>&1

echo "drack0 between two VMs sharing one beluga pool: host 0 ($me) sends, host 1 ($peer) serves (nicbench)"
printf '%-12s %6s %12s   %-18s %-28s %s\n' "" TCP "UDP 64 B rr" "bytes copied per TCP frame 0 -> 1:" "" "per frame:"
printf '%-12s %6s %12s   %-18s %-28s %s\n' mode Mbit/s "p50/p99 us" "host 0 sender" "host 1 receiver" "lent by host 1,"
printf '%-12s %6s %12s   %-18s %-28s %s\n' "" "" "" "(placed+by value)" "(headers+fallback+by value)" "returned to host 0"
for m in $modes; do
	flag 2 "set-$m"
	ethtool --set-priv-flags drack0 by-value $([ $m = by-value ] && echo on || echo off)
	await 3 "ready-$m" >/dev/null
	ethtool -S drack0 > /tmp/$m.0
	tcp=$(field mbit_s "$(nicbench --json tcp --to $peer:7009 --bytes 16000000)")
	sleep 0.2
	ethtool -S drack0 > /tmp/$m.1
	flag 4 "done-$m"
	await 5 "dumped-$m" >/dev/null
	fetch $m.0 /tmp/peer.$m.0
	fetch $m.1 /tmp/peer.$m.1
	rr=$(nicbench --json udp-rr --to $peer:7009 --size 64 --count 1000)
	d() { echo $(($(stat_of "$1.1" "$2") - $(stat_of "$1.0" "$2"))); }
	tx=$(d /tmp/$m tx_frames)
	rx=$(d /tmp/peer.$m rx_frames)
	placed=$(d /tmp/$m tx_placed_bytes)
	txval=$(d /tmp/$m tx_by_value_bytes)
	hdr=$(d /tmp/peer.$m rx_header_bytes)
	fb=$(d /tmp/peer.$m rx_fallback_copy_bytes)
	rxval=$(d /tmp/peer.$m rx_by_value_bytes)
	printf '%-12s %6.0f %5.0f / %-5.0f   %-18s %-28s %s, %s\n' \
		$m "$tcp" "$(field p50_us "$rr")" "$(field p99_us "$rr")" \
		"$(per $placed $tx) + $(per $txval $tx)" \
		"$(per $hdr $rx) + $(per $fb $rx) + $(per $rxval $rx)" \
		"$(ratio "$(d /tmp/peer.$m rx_lent_frames)" $rx)" \
		"$(ratio "$(d /tmp/$m tx_returned_buffers)" $tx)"
	copied=$(($(per $placed $tx) + $(per $txval $tx) + $(per $hdr $rx) + $(per $fb $rx) + $(per $rxval $rx)))
	stops="$stops $m $(d /tmp/$m tx_queue_stops) stops / $(d /tmp/$m tx_dropped_full_frames) dropped;"
	case $m in
	by-reference)
		byref=$copied
		fbpct=$(per $((100 * $(d /tmp/peer.$m rx_fallback_copy_frames))) $rx)
		busy=$(d /tmp/peer.$m rx_page_busy_frames) ;;
	*) byval=$copied ;;
	esac
done
flag 6 finished

# Peer down and rejoin.
uptime_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
secs() { if [ "$1" -lt 10 ]; then echo "under 0.1 s"; else echo "$(($1 / 100)).$(($1 % 100 / 10)) s"; fi; }
epoch0=$(cat /sys/class/net/drack0/peers/1/epoch)
flag 7 go-down
await 8 unloaded >/dev/null
t0=$(uptime_cs)
wait_until 100 carrier_is drack0 0
dead=$(($(uptime_cs) - t0))
flag 9 seen-dead
await 10 loaded-again >/dev/null
t0=$(uptime_cs)
wait_until 100 carrier_is drack0 1
back=$(($(uptime_cs) - t0))
ping -c 1 -W 5 $peer >/dev/null
# The heartbeat pass (a quarter lease) sees the new epoch.
new_epoch() { test "$(cat /sys/class/net/drack0/peers/1/epoch)" != "$epoch0"; }
wait_until 50 new_epoch || true
epoch=$(cat /sys/class/net/drack0/peers/1/epoch)
flag 11 demo-done
echo "in all per frame: by reference $byref B copied, by value $byval B ($(ratio $byref $byval) of by value); by reference host 1 copied $fbpct% of the frames whole (fallback: lend cap reached, or the page still held; $busy page-busy)"
echo "host 0's TX queue to host 1 when host 1 had no room:$stops (a full peer stops only its own queue; the stack holds its frames)"
echo "lent pages host 1 still holds after the runs: $(stat_of /tmp/peer.by-reference.1 peer0_lent_pages) by reference, $(stat_of /tmp/peer.by-value.1 peer0_lent_pages) by value (0: every page came back)"
echo "peer down and rejoin: host 1 unloaded drack_netdev; host 0 saw it dead and took drack0's carrier down after $(secs $dead) (lease 2 s); host 1 loaded it again: carrier up $(secs $back) later, host 1 rejoined in epoch $epoch (was $epoch0), ping answered, no reload on host 0"
echo "TCG emulates every copy alike and slowly, so the Mbit/s and latencies say little about CXL hardware: the bytes copied per frame, and their ratio between modes, are the point."

# Pooled NICs: host 1's hub NIC lent; host 0's transfer to ext (behind
# its own third NIC) by its own hub NIC alone, then by it and the vNIC.
vnic=drackv1n0
hub=$(hub_nic)
dst=$(ext_ip)
ext_ns
ip netns exec ext nicbench mptcp-serve --port 7045 >/dev/null 2>&1 &
msrv=$!
await 12 lent >/dev/null
vnic_up $vnic 10.0.8.11
tc qdisc add dev "$hub" root tbf rate ${rate}mbit burst 32kb latency 50ms
mptcp_endpoints "$hub" $vnic
ip route add $dst/32 dev "$hub" src 10.0.8.1
wait_until 100 nicbench tcp --to $dst:7045 --bytes 1000 >/dev/null 2>&1
size=$((3 << 20))
one=$(field mbit_s "$(nicbench --json tcp --to $dst:7045 --bytes $size)")
m=$(nicbench --json mptcp --to $dst:7045 --bytes $size --seed 45)
flag 13 pooled-sent
await 14 pooled-counted >/dev/null
fetch nic0 /tmp/nic0
flag 15 pooled-done
kill $msrv 2>/dev/null || true
mptcp_endpoints_clear
ip route del $dst/32
tc qdisc del dev "$hub" root
secs=$(field secs "$m")
two=$(field mbit_s "$m")
set -- $(cat /tmp/nic0)
echo
echo "pooled NICs: host 1 lent its hub NIC ($1) to the rack (drack lend); host 0 got the vNIC $vnic ($(cat /sys/class/net/$vnic/address)), whose frames leave by host 1's $1"
echo "host 0 sends $size bytes to a server behind the hub (namespace ext, $dst), each hub NIC shaped to $rate Mbit/s (TBF):"
printf '  %-40s %5.1f Mbit/s\n' "plain TCP, host 0's own $hub only:" "$one"
printf '  %-40s %5.1f Mbit/s (%sx of one NIC), checksum %s\n' "one MPTCP connection, $hub + $vnic:" "$two" \
	"$(ratio "$two" "$one")" "$(echo "$m" | grep -q '"hash_ok":true' && echo matches || echo DIFFERS)"
echo "$m" | tr '{' '\n' | sed -n 's/^"id".*"local":"\([^"]*\)".*"interface":"\([^"]*\)".*"bytes_acked":\([0-9]*\).*"share_pct":\([0-9.]*\).*/\1 \2 \3 \4/p' |
	while read -r local dev acked share; do
		case $dev in
		$vnic) what="vNIC, out by host 1's $1" ;;
		*) what="host 0's own NIC" ;;
		esac
		printf '    subflow from %-16s %-40s %8s bytes acked (%4.1f %%), %4.1f Mbit/s\n' \
			"$local" "($dev, $what)" "$acked" "$share" "$(awk -v b="$acked" -v s="$secs" 'BEGIN { printf "%.1f", (s > 0 ? b * 8 / s / 1e6 : 0) }')"
	done
echo "  host 1's $1 sent $2 frames ($3 bytes) for host 0's vNIC and passed $4 it received back through the pool (drack0/nics/0 counters)"
echo "  (the NICs are shaped far below what TCG moves, so these rates are the NICs'; the aggregation ratio, not the Mbit/s, is the point)"
trap - EXIT
