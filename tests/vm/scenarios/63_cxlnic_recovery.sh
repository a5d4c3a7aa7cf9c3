# The CXL-NIC interface gets over a device that went wrong while it ran,
# by itself. A forged head inside what was posted (TX, then RX) parts the
# driver's and the device's ring positions for good; the driver's watch
# sees the queue stall (a TX head stuck with entries waiting, RX faults
# that keep rising) and restarts the rings, counted and logged, and
# traffic returns within seconds without `ip link set down/up`. Then a
# device that hangs mid-pass while the interface goes down: the driver
# holds the rings it lent until the device answers, and frees them then.
set -e
. /lib/cxlfabric/lib.sh
nic_pair type1
trap nic_debug EXIT
# One queue pair each: every frame meets the fault.
ethtool -L $nic_a combined 1
peer ethtool -L $nic_b combined 1
wait_until 50 carrier_is $nic_a 1
wait_until 50 peer_carrier_is $nic_b 1
peer nicbench serve --port 7001 &
server=$!
to=10.11.0.2:7001
wait_until 50 nicbench tcp --to $to --bytes 1000

# A counter of the port itself (not per queue) in ethtool -S.
port_stat() { # name
	ethtool -S $nic_a | awk -v n="$1" '$1 == n ":" { print $2 }'
}
port_stat_above() { # name value
	test "$(port_stat $1)" -gt "$2"
}
dmesg_has() { # pattern
	dmesg | grep -q "$1"
}
# Traffic the fault meets, until killed.
pings() {
	while :; do
		ping -c 1 -W 1 10.11.0.2 > /dev/null 2>&1 || true
		sleep 0.1
	done
}

for f in tx-head-forged:resets_tx_stuck rx-head-forged:resets_faults; do
	echo "== ${f%:*}: traffic returns by itself"
	resets=$(port_stat queue_resets) why=$(port_stat ${f#*:})
	packets=$(nic_stat $nic_a tx_packets)
	nic_model inject 0 ${f%:*}
	pings &
	pinger=$!
	# The fault, the stall it leaves and the restart, in seconds.
	wait_until 100 port_stat_above queue_resets $resets
	kill $pinger
	wait $pinger || true
	port_stat_above ${f#*:} $why
	# No counter goes back: what the torn-down rings counted stays.
	test "$(nic_stat $nic_a tx_packets)" -ge "$packets"
	test "$(cat /sys/class/net/$nic_a/statistics/tx_packets)" -ge "$packets"
	wait_until 50 ping -c 1 -W 1 10.11.0.2
	nicbench tcp --to $to --bytes 2000000
	dmesg_has "$nic_a: queue 0: .*: restarting the rings of every queue pair"
done
# Said why, once per restart.
dmesg_has "$nic_a: queue 0: TX head stuck for 1000 ms with entries waiting"
dmesg_has "$nic_a: queue 0: RX faults keep rising"

echo "== a device that hangs mid-pass while the interface goes down"
held="$nic_a: the device has not let go of its rings (no answer, no heartbeat)"
freed="$nic_a: the device let go of its rings: [0-9]* KiB freed"
held_before=$(dmesg | grep -c "$held" || true)
freed_before=$(dmesg | grep -c "$freed" || true)
nic_model inject 0 hang
pings &
pinger=$!
# It hangs at the next frame for it: no heartbeat.
wait_until 50 carrier_is $nic_a 0
kill $pinger
wait $pinger || true
# No answer to "off", no heartbeat: the rings are held, not freed.
ip link set $nic_a down
test "$(dmesg | grep -c "$held")" -gt "$held_before"
test "$(dmesg | grep -c "$freed")" = "$freed_before"
# It resumes (and drops the write it had started: the config changed),
# answers, and the driver frees what it held.
ip link set $nic_a up
wait_until 100 carrier_is $nic_a 1
test "$(dmesg | grep -c "$freed")" -gt "$freed_before"
wait_until 50 ping -c 1 -W 1 10.11.0.2
nicbench tcp --to $to --bytes 1000000

kill $server
wait $server || true
ip netns del peer
rmmod cxlnic_drv
trap - EXIT
