# A transmit never meets a full TX ring (Documentation/networking/
# driver.rst): the driver stops the stack's TX queue after the post that
# leaves no room for one more maximal frame, and its NAPI poll wakes the
# queue once the device has freed a batch. With the smallest rings (8
# entries) flooded by UDP streams and a TCP transfer, at MTU 1500 and
# with maximal frames at MTU 9000, and in pcie mode (doorbells held for a
# burst): the queues stop and wake (ethtool -S tx_queue_stops,
# tx_queue_wakes), no transmit takes the NETDEV_TX_BUSY path (tx_busy
# stays 0), nothing is dropped, every stopped queue wakes again once the
# flood ends, and the transfers arrive whole. Then channel and ring
# changes during a flood over several TX queues: transmits find their
# queue pair while queue pairs are torn down and started (the kernel log
# stays clean, the harness checks), the transfer arrives whole, and the
# UDP streams end (a TX queue whose qdisc held their frames while the
# rings restarted is woken, not only started: else its senders, their
# send buffers full, wait for good).
set -e
. /lib/cxlfabric/lib.sh
to=10.11.0.2:7001

# UDP streams of $1-byte datagrams alongside a TCP transfer of $2 bytes
# (whose checksum the server verifies).
flood() { # size bytes
	mark
	nicbench udp-stream --to $to --size $1 --secs 2 > /dev/null 2>&1 &
	u1=$!
	nicbench udp-stream --to $to --size $1 --secs 2 > /dev/null 2>&1 &
	u2=$!
	nicbench tcp --to $to --bytes $2
	# A stream's closing query may go unanswered in the flood.
	wait $u1 || true
	wait $u2 || true
}

# The counters a flood is judged by, as it starts: they count for the
# port's life (a restart of the rings keeps them).
mark() {
	for c in tx_queue_stops tx_queue_wakes tx_busy tx_dropped tx_bytes tx_packets; do
		eval "${c}0=$(nic_stat $nic_a $c)"
	done
}
since() { # counter: its growth since `mark`
	eval "echo \$((\$(nic_stat $nic_a $1) - ${1}0))"
}

queues_awake() {
	test "$(since tx_queue_stops)" = "$(since tx_queue_wakes)"
}

# What every flood leaves.
flooded() {
	ethtool -S $nic_a | grep -E '_tx_(busy|dropped|queue_stops|queue_wakes):'
	test "$(since tx_queue_stops)" -gt 0
	test "$(since tx_queue_wakes)" -gt 0
	test "$(since tx_busy)" = 0
	test "$(since tx_dropped)" = 0
	# The device drains the rings: every stopped queue wakes.
	wait_until 50 queues_awake
	wait_until 50 ping -c 1 -W 1 10.11.0.2
}

for mode in type1 pcie; do
	echo "== $mode"
	nic_pair $mode
	trap nic_debug EXIT
	ethtool -G $nic_a rx 8 tx 8
	wait_until 50 carrier_is $nic_a 1
	peer nicbench serve --port 7001 &
	server=$!
	wait_until 50 nicbench tcp --to $to --bytes 1000
	flood 1400 20000000
	flooded
	if [ $mode = type1 ]; then
		echo "== $mode: channel and ring changes under a flood"
		nicbench tcp --to $to --bytes 30000000 &
		xfer=$!
		streams=
		for i in 1 2 3; do
			nicbench udp-stream --to $to --size 1400 --secs 4 > /dev/null 2>&1 &
			streams="$streams $!"
		done
		for c in "-L combined 4" "-G tx 16" "-L combined 1" "-L combined 3" \
			"-G tx 8" "-L combined 2"; do
			sleep 0.3
			set -- $c
			opt=$1
			shift
			ethtool $opt $nic_a "$@"
		done
		wait $xfer
		for s in $streams; do wait $s || true; done
		wait_until 50 carrier_is $nic_a 1
		flood 1400 5000000
		flooded
		! dmesg | grep -q NETDEV_TX_BUSY || exit 1

		echo "== $mode: maximal frames"
		ip link set $nic_a mtu 9000
		peer ip link set $nic_b mtu 9000
		wait_until 50 carrier_is $nic_a 1
		wait_until 50 peer_carrier_is $nic_b 1
		wait_until 50 ping -c 1 -W 1 -s 8972 10.11.0.2
		flood 8972 20000000
		flooded
		# In frames of the MTU (9014 bytes) nearly all.
		test $(($(since tx_bytes) / $(since tx_packets))) -gt 8000
	fi
	ip -s link show $nic_a
	kill $server
	wait $server || true
	trap - EXIT
	nic_unpair
done
