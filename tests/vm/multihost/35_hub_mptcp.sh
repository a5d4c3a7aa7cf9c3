# The testbed for pooled NICs (#28), with ordinary interfaces: the L2 hub
# xtask relays between the VMs (xtask/src/hub.rs), tc, and MPTCP.
# (a) Host 1 moves its second hub NIC into namespace `ext` (10.0.8.100)
# and serves there; host 0 pings it and sends it a checksummed transfer
# through its own hub NIC. (b) A TBF shaper on host 0's hub NIC holds a
# transfer to its rate, which the same transfer unshaped exceeds. (c) One
# MPTCP connection from host 0 to host 1 over both of host 0's NICs (eth0
# and the hub NIC, each shaped to the rate; mptcp_endpoints): two
# subflows, one per NIC, each with a real share of the bytes, the data
# intact. The numbers, and the aggregate against one NIC (not asserted:
# TCG), go to the results log (a hub-report block).
set -e
. /multihost/flags.inc
rate=20
hub=$(hub_nic)
ext_port=7020
mptcp_port=7030
note() { echo "$*" >> /tmp/hub.report; }
rm -f /tmp/hub.report
# Whether decimal $1 is below decimal $2.
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
# Mbit/s of a checksummed TCP transfer of $2 bytes to $1.
tcp_mbit() { # addr:port bytes
	nicbench --json tcp --to "$1" --bytes "$2" | sed -n 's/.*"mbit_s":\([0-9.]*\).*/\1/p'
}
# The NICs are where the testbed documents them: eth0 is still the VM
# link, the hub NIC has its address.
test "$(cat /sys/class/net/eth0/address)" = "52:54:00:cf:00:0$((h + 1))"
ip -4 -o addr show dev "$hub" | grep -q " 10.0.8.$((h + 1))/24 "
note "host $h: $(ip -o link show | awk '{ print $2, $(NF - 2) }' | tr '\n' ' ')"

if [ "$h" = 1 ]; then
	cleanup() {
		set +x
		kill $ext_srv $mptcp_srv 2>/dev/null || true
		wait 2>/dev/null || true
		# The NIC back first: a namespace ends (and hands its NICs back)
		# only once nothing holds it, e.g. a closed TCP socket that is
		# still finishing.
		ip netns exec ext ip link set "$ext" netns 1 2>/dev/null || true
		ip netns del ext 2>/dev/null || true
	}
	trap cleanup EXIT
	ext=$(ext_nic)
	mkdir -p /var/run/netns
	ip netns add ext
	ip link set "$ext" netns ext
	ip netns exec ext ip addr add 10.0.8.100/24 dev "$ext"
	ip netns exec ext ip link set "$ext" up
	ip netns exec ext ip link set lo up
	ip netns exec ext nicbench serve --port $ext_port > /tmp/ext.out 2>&1 &
	ext_srv=$!
	nicbench mptcp-serve --port $mptcp_port > /tmp/mptcp.out 2>&1 &
	mptcp_srv=$!
	flag 90 hub-ready
	await 91 hub-done
	note "host 1, namespace ext: $(cat /tmp/ext.out | tr '\n' ' ')"
	note "host 1, mptcp-serve: $(cat /tmp/mptcp.out | tr '\n' ' ')"
	# The server saw the MPTCP connection's two subflows (it says so
	# once it has answered).
	wait_until 50 grep -q 'MPTCP, .* 2 in all' /tmp/mptcp.out
	cleanup
	trap - EXIT
	test "$(ext_nic)" = "$ext"
else
	cleanup() {
		set +x
		tc qdisc del dev "$hub" root 2>/dev/null || true
		tc qdisc del dev eth0 root 2>/dev/null || true
		ip route del 10.0.0.2/32 dev eth0 2>/dev/null || true
		ip route del 10.0.0.2/32 via 10.0.8.2 dev "$hub" 2>/dev/null || true
		mptcp_endpoints_clear || true
		flag 91 hub-done
	}
	trap cleanup EXIT
	await 90 hub-ready
	# (a) Through the hub to namespace ext on host 1, and to host 1's
	# own hub NIC.
	ping -c 3 -W 5 10.0.8.100
	ping -c 1 -W 5 10.0.8.2
	wait_until 100 nicbench tcp --to 10.0.8.100:$ext_port --bytes 1000 >/dev/null 2>&1
	note "host 0 -> ext: $(nicbench tcp --to 10.0.8.100:$ext_port --bytes $((4 << 20)) --seed 3)"
	# (b) The same transfer unshaped, then shaped.
	free=$(tcp_mbit 10.0.8.100:$ext_port $((4 << 20)))
	tc qdisc add dev "$hub" root tbf rate ${rate}mbit burst 64kb latency 50ms
	shaped=$(tcp_mbit 10.0.8.100:$ext_port $((4 << 20)))
	note "host 0 -> ext: unshaped $free Mbit/s, tbf ${rate}mbit $shaped Mbit/s"
	note "$(tc -s qdisc show dev "$hub" | tr '\n' ' ')"
	test -n "$free"
	test -n "$shaped"
	lt "$shaped" $((rate * 12 / 10))
	# The shaper is what limits: unshaped is faster than the cap (a
	# debug kernel moves less than the cap unshaped: only the cap's
	# bound above is checked there).
	[ "$slow" -gt 1 ] || lt $((rate * 12 / 10)) "$free"
	# (c) Both NICs shaped alike; one MPTCP subflow over eth0 first.
	tc qdisc add dev eth0 root tbf rate ${rate}mbit burst 64kb latency 50ms
	wait_until 100 nicbench mptcp --to 10.0.0.2:$mptcp_port --bytes 1000 >/dev/null 2>&1
	nicbench mptcp --to 10.0.0.2:$mptcp_port --bytes $((8 << 20)) --seed 5 > /tmp/one.out
	note "one NIC: $(tr '\n' ' ' < /tmp/one.out)"
	test "$(grep -c '^subflow ' /tmp/one.out)" = 1
	# A subflow endpoint on each NIC. The hub NIC's subflow, bound to
	# it, reaches host 1's eth0 address through host 1's hub NIC (a /32
	# route of its own, which only a lookup for that device matches);
	# everything else keeps to eth0.
	mptcp_endpoints eth0 "$hub"
	ip route add 10.0.0.2/32 dev eth0
	ip route add 10.0.0.2/32 via 10.0.8.2 dev "$hub" metric 100
	note "endpoints: $(ip mptcp endpoint show | tr '\n' ' ') limits: $(ip mptcp limits show)"
	nicbench mptcp --to 10.0.0.2:$mptcp_port --bytes $((8 << 20)) --seed 6 --report-ms 500 > /tmp/two.out
	note "two NICs: $(tr '\n' '|' < /tmp/two.out)"
	# Two subflows, one per NIC, each at least a quarter of the bytes.
	test "$(grep -c '^subflow ' /tmp/two.out)" = 2
	grep -q '^subflow .* (eth0) ' /tmp/two.out
	grep -q "^subflow .* ($hub) " /tmp/two.out
	awk '/^subflow / { s = substr($12, 2) + 0; if (s < 25) bad = 1 } END { exit bad }' /tmp/two.out
	one=$(awk '/^mptcp:/ { print $7 }' /tmp/one.out)
	two=$(awk '/^mptcp:/ { print $7 }' /tmp/two.out)
	note "MPTCP over two NICs shaped to ${rate}mbit each: $two Mbit/s against $one Mbit/s over one: $(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.2fx", a / b }')"
	cleanup
	trap - EXIT
	# Nothing left behind.
	test -z "$(ip mptcp endpoint show)"
	test -z "$(ip route show 10.0.0.2/32)"
	test -z "$(tc qdisc show dev eth0 | grep tbf)"
fi
{
	echo "@@ BEGIN hub-report host$h"
	sed 's/^/@|/' /tmp/hub.report
	echo "@@ END"
} > /dev/ttyS1
