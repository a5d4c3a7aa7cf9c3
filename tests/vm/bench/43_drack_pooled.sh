# drack_netdev's pooled NICs (#28), on the RAM-speed pool of 42: host 1
# lends its hub NIC; host 0 reaches the server in namespace `ext` (behind
# host 0's own third NIC, so that it outlives host 1's pauses) by its own
# hub NIC and by the vNIC drackv1n0, which leaves by host 1's hub NIC.
# Both hub NICs are shaped alike (TBF, $rate Mbit/s) far below what TCG
# moves, so that the NICs limit, not the CPU.
#
# Series (every round runs each once, their order alternating by round;
# medians over $rounds rounds):
# - own-nic (the anchor): plain TCP over host 0's own shaped hub NIC,
#   and UDP 64 B request/response to ext by that NIC;
# - mptcp-own+vnic: one MPTCP connection over the own NIC and the vNIC
#   (its throughput against the anchor's is the aggregation), each
#   subflow's share of the acked bytes and its rate;
# - vnic: the UDP request/response by the vNIC alone (against the
#   anchor's: what lending costs a round trip);
# - owner-paused: $pauses times, host 0's MPTCP transfer runs over both
#   NICs and the harness stops host 1's VM ($pause_ms ms, SIGSTOP; longer
#   than drack's lease of $lease_ms ms, shorter than beluga's 2 s): the
#   receiver's stalls in received bytes (nicbench serve lists the gaps
#   between reads of 100 ms or more): the longest while the vNIC was
#   down (the failover) and the longest after it came back (the return),
#   when host 0 saw host 1's lease expire and the vNIC's carrier go, how
#   long the carrier was off, and whether it came back after host 1
#   rejoined; host 1 reports how long its heartbeat lapsed. The longest
#   stall compares with the anchor's and the MPTCP series' (no pause).
# Lines starting "warning:" name figures that cannot be trusted (the
# table shows them).
set -e
. /bench/lib.inc
. /bench/drack.inc
rounds=5
pauses=5
rate=10
bytes=$((6 << 20))
fbytes=$((8 << 20))
lease_ms=400
pause_ms=1200
vnic=drackv1n0
dst=10.0.8.200  # host 0's namespace ext (ext_ip on host 0)
tport=7044
mport=7043
hub=$(hub_nic)
shape() { tc qdisc add dev "$hub" root tbf rate ${rate}mbit burst 32kb latency 50ms; }

# The RAM pool as 42 leaves it, or made here when 43 runs alone.
beluga_load host_index=$h lease_ms=2000
if [ "$h" = 0 ]; then
	ram_pool_create
	flag 80 pooled-ram-dax
	if [ ! -e /dev/beluga1.0 ]; then
		beluga_bind dax1.0
		beluga --dev /dev/beluga1.0 format --hosts 2 --objects 64 > /dev/null
	fi
	beluga --dev /dev/beluga1.0 wait
	flag 81 pooled-ram-pool
else
	await 80 pooled-ram-dax
	ram_pool_probe
	await 81 pooled-ram-pool
	[ -e /dev/beluga1.0 ] || beluga_bind dax1.0
	beluga --dev /dev/beluga1.0 wait
fi
drack_up beluga1.0 pooled $lease_ms

if [ "$h" = 1 ]; then
	drack lend "$hub"
	shape
	nics=/sys/class/net/drack0/nics/0
	flag 82 pooled-lent
	rejoins() { dmesg | grep -c 'rejoining in epoch' || true; }
	rejoined() { test "$(rejoins)" -gt "$before"; }
	for k in $(seq $pauses); do
		await 83 "pause-$k"
		before=$(rejoins)
		n0=$(cat $nics/to_nic_frames) d0=$(cat $nics/to_nic_dropped) f0=$(cat $nics/from_nic_dropped)
		echo "@@ PAUSE-ME $pause_ms" > /dev/ttyS1
		# Stopped within the harness's 200 ms poll; after it, our
		# heartbeat pass sees the lapse and rejoins.
		wait_until 150 rejoined
		# How long our heartbeat lapsed, as the module saw it.
		lapse=$(dmesg | sed -n 's/.*heartbeat lapsed for \([0-9]*\) ms.*/\1/p' | tail -n 1)
		# The lent NIC's counters from the request to a second after
		# the return (the vNIC's subflow carrying again).
		sleep 1
		echo "pause $k: host 1's heartbeat lapsed ${lapse:-?} ms; its lent NIC: to_nic_frames +$(($(cat $nics/to_nic_frames) - n0)), to_nic_dropped +$(($(cat $nics/to_nic_dropped) - d0)), from_nic_dropped +$(($(cat $nics/from_nic_dropped) - f0))"
		if [ -n "$lapse" ]; then
			echo "BENCH {\"label\":\"owner-paused\",\"owner_heartbeat_lapse_ns\":$((lapse * 1000000))}"
		fi
		flag 84 "back-$k"
	done
	await 85 pooled-done
	tc qdisc del dev "$hub" root
	drack unlend "$hub"
	ip link set drack0 down
	rmmod drack_netdev
	exit 0
fi

# Host 0: ext behind its own third NIC, the vNIC, both NICs shaped.
ext_ns
ip netns exec ext nicbench serve --port $tport > /tmp/pooled.tcp 2>&1 &
tsrv=$!
ip netns exec ext nicbench mptcp-serve --port $mport > /tmp/pooled.mptcp 2>&1 &
msrv=$!
await 82 pooled-lent
vnic_up $vnic 10.0.8.11
shape
mptcp_endpoints "$hub" $vnic
# What leaves for ext without a device of its own goes by the own NIC
# (plain TCP, MPTCP's first subflow); via() moves it.
via() { ip route replace $dst/32 dev "$1" src "$2"; }
via "$hub" 10.0.8.1
wait_until 100 nicbench tcp --to $dst:$tport --bytes 1000 > /dev/null 2>&1
wait_until 100 nicbench mptcp --to $dst:$mport --bytes 1000 > /dev/null 2>&1

# The receiver's longest stall of the last transfer in server log $1, ns.
stall_ns() { sed -n 's/.*longest stall \([0-9]*\) ms.*/\1/p' "$1" | awk '{ v = $1 } END { printf "%.0f\n", v * 1000000 }'; }
rr() { # label
	r=$(nicbench --json udp-rr --to $dst:$tport --size 64 --count 1000)
	echo "\"rr64_p50_ns\":$(awk -v x="$(field "$r" p50_us)" 'BEGIN { printf "%.0f", x * 1000 }'),\"rr64_p99_ns\":$(awk -v x="$(field "$r" p99_us)" 'BEGIN { printf "%.0f", x * 1000 }')"
}
# Per subflow of an `nicbench --json mptcp` result: interface, acked
# bytes (one line each).
subflows() { echo "$1" | tr '{' '\n' | sed -n 's/^"id".*"interface":"\([^"]*\)".*"bytes_acked":\([0-9]*\).*/\1 \2/p'; }
# The acked bytes of subflows on interface $2.
acked_on() { subflows "$1" | awk -v i="$2" '$1 == i { s += $2 } END { print s + 0 }'; }

own_tcp() {
	t=$(nicbench --json tcp --to $dst:$tport --bytes $bytes)
	echo "$(field "$t" mbit_s)" >> /tmp/pooled.one
	tcp_json="\"tcp_bit_per_s\":$(awk -v x="$(field "$t" mbit_s)" 'BEGIN { printf "%.0f", x * 1e6 }'),\"longest_stall_ns\":$(stall_ns /tmp/pooled.tcp)"
}
two_nics() {
	m=$(nicbench --json mptcp --to $dst:$mport --bytes $bytes --seed 43)
	secs=$(field "$m" secs)
	a=$(acked_on "$m" "$hub")
	v=$(acked_on "$m" $vnic)
	n=$(subflows "$m" | wc -l)
	echo "$(field "$m" mbit_s) $n $a $v" >> /tmp/pooled.two
	awk -v l=mptcp-own+vnic -v f="$(field "$m" mbit_s)" -v a="$a" -v v="$v" -v s="$secs" \
		-v st="$(stall_ns /tmp/pooled.mptcp)" 'BEGIN {
		t = a + v; if (t == 0) t = 1
		printf "BENCH {\"label\":\"%s\",\"tcp_bit_per_s\":%.0f,\"own_nic_share_pct\":%.1f,\"vnic_share_pct\":%.1f,\"own_nic_subflow_bit_per_s\":%.0f,\"vnic_subflow_bit_per_s\":%.0f,\"longest_stall_ns\":%.0f}\n",
			l, f * 1e6, 100 * a / t, 100 * v / t, a * 8 / s, v * 8 / s, st }'
}

: > /tmp/pooled.one
: > /tmp/pooled.two
for r in $(seq $rounds); do
	rr_own=$(rr)
	via $vnic 10.0.8.11
	# A first request may wait for ARP by the new way.
	nicbench udp-rr --to $dst:$tport --size 64 --count 3 > /dev/null 2>&1 || true
	rr_vnic=$(rr)
	via "$hub" 10.0.8.1
	# Which transfer goes first alternates: drift hits both alike.
	if [ $((r % 2)) = 1 ]; then
		own_tcp
		two=$(two_nics)
	else
		two=$(two_nics)
		own_tcp
	fi
	echo "BENCH {\"label\":\"own-nic\",$tcp_json,$rr_own}"
	echo "$two"
	echo "BENCH {\"label\":\"vnic\",$rr_vnic}"
done
median() { # [printf format]
	sort -n | awk -v f="${1:-%.1f}" '{ v[NR] = $1 } END {
		printf f "\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
one=$(median < /tmp/pooled.one)
twom=$(awk '{ print $1 }' /tmp/pooled.two | median)
echo "egress to ext, $rate Mbit/s TBF on each hub NIC, $bytes bytes, medians of $rounds rounds: plain TCP over host 0's own NIC $one Mbit/s; MPTCP over it and $vnic (host 1's NIC) $twom Mbit/s ($(awk -v a="$twom" -v b="$one" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')x)"
awk -v r="$rate" -v o="$one" 'BEGIN { if (o < 0.8 * r) printf "warning: plain TCP over one %s Mbit/s NIC moved %s Mbit/s: something other than the NIC (TCG CPU?) limits it, so the MPTCP ratio is not aggregation alone\n", r, o }'
awk -v r="$rate" '$2 < 2 || $4 * 10 < $3 + $4 { bad++ } END { if (bad) printf "warning: %d of %d MPTCP transfers had under 2 subflows or under 10 %% of the bytes on the vNIC: their throughput is not two NICs'"'"'\n", bad, NR }' /tmp/pooled.two

# Failover: the owner stops while host 0's MPTCP transfer runs on its
# vNIC. Host 0 samples every 10 ms, from the request (the harness stops
# the VM up to 200 ms later), host 1's lease (alive) and the vNIC's
# carrier until it is back. The receiver lists every gap of 100 ms or
# more between reads (ms after its first byte, which is within a few ms
# of the client's start): one that begins before the carrier is back is
# the failover's stall; one after, the return's (the vNIC's subflow
# carrying again).
pd=/sys/class/net/drack0/peers/1
now_ms() { read -r u _ < /proc/uptime; echo "${u%.*}${u#*.}0"; }
watch_owner() { # limit_ms
	t0=$(now_ms)
	dead='' down='' alive='' up=''
	while :; do
		read -r up_s _ < /proc/uptime
		el=$((${up_s%.*}${up_s#*.}0 - t0))
		read -r a < $pd/alive
		read -r c < /sys/class/net/$vnic/carrier
		[ -n "$dead" ] || [ "$a" != 0 ] || dead=$el
		[ -n "$down" ] || [ "$c" != 0 ] || down=$el
		if [ -n "$dead" ] && [ -z "$alive" ] && [ "$a" = 1 ]; then alive=$el; fi
		if [ -n "$down" ] && [ -z "$up" ] && [ "$c" = 1 ]; then up=$el; fi
		if [ -n "$up" ] || [ "$el" -gt "$1" ]; then break; fi
		sleep 0.01
	done
}
# The longest listed gap of server log $1 that begins, relative to the
# request at $2 ms into the transfer, before ($3 = before) or after
# ($3 = after) $4 ms; 0 if none.
gap_ms() { # log req_ms before|after at_ms
	sed -n 's/.*(start+length, ms after the first byte):\(.*\)/\1/p' "$1" | tail -n 1 |
		tr ' ' '\n' | awk -F+ -v r="$2" -v w="$3" -v at="$4" 'NF == 2 {
		rel = $1 - r
		if (w == "before" ? (rel < at && rel + $2 > 0) : rel >= at) { if ($2 > m) m = $2 }
	} END { print m + 0 }'
}
back=0
: > /tmp/pooled.stalls
: > /tmp/pooled.returns
for k in $(seq $pauses); do
	wait_until 100 carrier_is $vnic 1
	vtx=$(cat /sys/class/net/$vnic/statistics/tx_packets)
	vdrop=$(cat /sys/class/net/$vnic/statistics/tx_dropped)
	t_start=$(now_ms)
	nicbench --json mptcp --to $dst:$mport --bytes $fbytes --seed $((50 + k)) > /tmp/pooled.fo 2>&1 &
	client=$!
	vnic_busy() { test $(($(cat /sys/class/net/$vnic/statistics/tx_packets) - vtx)) -gt 300; }
	wait_until 300 vnic_busy
	t_req=$(($(now_ms) - t_start))
	flag 83 "pause-$k"
	watch_owner 20000
	ok=0
	wait $client || ok=$?
	await 84 "back-$k"
	m=$(cat /tmp/pooled.fo)
	st=$(stall_ns /tmp/pooled.mptcp)
	came=no
	if [ -n "$up" ]; then
		came=yes
		back=$((back + 1))
	fi
	fail=$(gap_ms /tmp/pooled.mptcp "$t_req" before "${up:-999999}")
	ret=0
	[ -z "$up" ] || ret=$(gap_ms /tmp/pooled.mptcp "$t_req" after "$up")
	echo "$fail" >> /tmp/pooled.stalls
	echo "$ret" >> /tmp/pooled.returns
	gaps=$(sed -n 's/.*(start+length, ms after the first byte):\(.*\)/\1/p' /tmp/pooled.mptcp | tail -n 1)
	echo "pause $k: requested ${t_req} ms into the transfer; host 0 saw host 1's lease expire at +${dead:-never} ms and the vNIC's carrier go at +${down:-never} ms; the carrier back at +${up:-never} ms (came back: $came; host 1 alive again at +${alive:-(not seen first)} ms); vNIC frames dropped $(($(cat /sys/class/net/$vnic/statistics/tx_dropped) - vdrop)); transfer exit $ok, $(field "$m" mbit_s) Mbit/s, $(subflows "$m" | tr '\n' ' ')bytes acked by subflow; the receiver's gaps of 100 ms or more (ms after its first byte, +length):${gaps}: failover stall ${fail} ms, after the return ${ret} ms"
	awk -v l=owner-paused -v st="$st" -v f="$fail" -v r="$ret" -v d="${dead:-}" -v u="${up:-}" -v dn="${down:-}" 'BEGIN {
		printf "BENCH {\"label\":\"%s\",\"longest_stall_ns\":%.0f,\"failover_stall_ns\":%.0f", l, st, f * 1e6
		if (u != "") printf ",\"return_stall_ns\":%.0f", r * 1e6
		if (d != "") printf ",\"lease_expiry_seen_after_request_ns\":%.0f", d * 1e6
		if (u != "" && dn != "") printf ",\"vnic_carrier_off_ns\":%.0f", (u - dn) * 1e6
		printf "}\n" }'
	if [ "$ok" != 0 ]; then
		echo "warning: pause $k: the MPTCP transfer failed (exit $ok): $(tr '\n' ' ' < /tmp/pooled.fo)"
	fi
	if [ "$came" = no ]; then
		echo "warning: pause $k: the vNIC's carrier did not come back within 20 s of the request"
	fi
	if [ "$fail" = 0 ]; then
		echo "warning: pause $k: no gap of 100 ms or more during the outage: its failover stall is under 100 ms, counted as 0"
	fi
	if [ -n "$up" ] && [ "$ret" = 0 ]; then
		echo "warning: pause $k: no gap of 100 ms or more after the vNIC came back: its return stall is under 100 ms, counted as 0"
	fi
	# A stall as long as the pause is the pause itself: MPTCP did not
	# move the data before the owner returned.
	if [ "$fail" -ge $((pause_ms - 100)) ]; then
		echo "warning: pause $k: the failover stall ($fail ms) is as long as the $pause_ms ms pause: it bounds the failover, it does not measure it"
	fi
	sleep 1
done
echo "failover over $pauses pauses of host 1 ($pause_ms ms, drack lease $lease_ms ms): the receiver's stall during the outage median $(median %.0f < /tmp/pooled.stalls) ms, worst $(sort -n /tmp/pooled.stalls | tail -n 1) ms; after the owner's return median $(median %.0f < /tmp/pooled.returns) ms, worst $(sort -n /tmp/pooled.returns | tail -n 1) ms; the vNIC came back after $back of $pauses"
flag 85 pooled-done
kill $tsrv $msrv 2>/dev/null || true
wait $tsrv $msrv 2>/dev/null || true
mptcp_endpoints_clear
ip route del $dst/32 2>/dev/null || true
tc qdisc del dev "$hub" root
ip link set drack0 down
rmmod drack_netdev
