# The CXL-NIC interface under what operators and faults do to it: link
# down and up, jumbo MTU, ring and channel changes under traffic, timer
# polling, faults the device model injects, a device that stops and comes
# back, and unloading under traffic.
set -e
. /lib/cxlfabric/lib.sh
nic_pair type1
trap nic_debug EXIT
# `! cmd` would not stop `set -e`.
fails() { # cmd...
	if "$@"; then return 1; fi
}
peer nicbench serve --port 7001 &
server=$!
to=10.11.0.2:7001
wait_until 50 nicbench tcp --to $to --bytes 1000

echo "== link down and up"
peer ip link set $nic_b down
wait_until 30 carrier_is $nic_a 0
peer ip link set $nic_b up
wait_until 30 carrier_is $nic_a 1
wait_until 50 ping -c 1 -W 1 10.11.0.2

echo "== jumbo frames"
ip link set $nic_a mtu 9000
peer ip link set $nic_b mtu 9000
wait_until 30 carrier_is $nic_a 1
wait_until 30 peer_carrier_is $nic_b 1
wait_until 50 ping -c 1 -W 1 -s 8900 10.11.0.2
bytes=$(nic_stat $nic_a tx_bytes) packets=$(nic_stat $nic_a tx_packets)
nicbench tcp --to $to --bytes 8000000
# The transfer went in frames far above 1500 bytes.
bytes=$(($(nic_stat $nic_a tx_bytes) - bytes))
packets=$(($(nic_stat $nic_a tx_packets) - packets))
test $((bytes / packets)) -gt 4000
ip link set $nic_a mtu 1500
peer ip link set $nic_b mtu 1500
wait_until 30 carrier_is $nic_a 1
wait_until 30 peer_carrier_is $nic_b 1

echo "== rings and channels under traffic"
nicbench tcp --to $to --bytes 30000000 &
xfer=$!
sleep 0.5
ethtool -G $nic_a rx 512 tx 128
peer ethtool -G $nic_b rx 64 tx 1024
ethtool -L $nic_a combined 4
wait $xfer
ethtool -g $nic_a | grep -A4 '^Current' | grep -q '^RX:[[:space:]]*512$'
ethtool -l $nic_a | grep -A4 '^Current' | grep -q '^Combined:[[:space:]]*4$'
ethtool -l $nic_a | grep -A4 '^Pre-set' | grep -q '^Combined:[[:space:]]*8$'
# Sizes the rings cannot have are refused, saying why.
fails ethtool -G $nic_a rx 100 2>/dev/null
fails ethtool -G $nic_a rx 4096 2>/dev/null
dmesg | tail -n 5 | grep -q "rings of 128/4096 entries at MTU 1500"
fails ethtool -L $nic_a combined 9 2>/dev/null
wait_until 50 ping -c 1 -W 1 10.11.0.2

echo "== timer polling instead of interrupts"
ethtool -C $nic_a rx-usecs 200 rx-frames 16
ethtool -c $nic_a | grep -q '^rx-usecs:[[:space:]]*200$'
wait_until 30 carrier_is $nic_a 1
# The device raises no interrupt for this port while its timer polls.
sleep 0.1
irqs=$(nic_stat $nic_a dev_interrupts) polls=$(nic_stat $nic_a polls)
nicbench udp-rr --to $to --count 200
nicbench tcp --to $to --bytes 2000000
sleep 0.1
test "$(nic_stat $nic_a dev_interrupts)" = "$irqs"
test "$(nic_stat $nic_a polls)" -gt $((polls + 200))
ethtool -C $nic_a rx-usecs 0 rx-frames 8
wait_until 30 carrier_is $nic_a 1

echo "== the mode is chosen while down"
fails ethtool --set-priv-flags $nic_a type2 on 2>/dev/null
ethtool --show-priv-flags $nic_a | grep -q '^type2[[:space:]]*: off$'

echo "== injected faults are dropped and counted"
# Port 0 of the model is $nic_a's device. Traffic flows until the fault
# has happened (the harness relays the request in its own time); then
# the link still works.
fault_counted() { # counter was
	ping -c 1 -W 1 10.11.0.2 > /dev/null 2>&1 || true
	stat_above $nic_a $1 $2
}
for f in tx-head:tx_bad_head completion-length:rx_bad_completion \
	completion-tag:rx_bad_completion rx-head:rx_bad_head; do
	was=$(nic_stat $nic_a ${f#*:})
	nic_model inject 0 ${f%:*}
	wait_until 100 fault_counted ${f#*:} $was
	wait_until 50 ping -c 1 -W 1 10.11.0.2
done
# A bad RX head holds the frames behind it until the device stores its
# next one: a few flows reach every queue again.
for i in 1 2 3 4 5 6 7 8; do ping -c 1 -W 1 10.11.0.2 > /dev/null || true; done
nicbench tcp --to $to --bytes 1000000
ip -s link show $nic_a | grep -A1 'RX:' | tail -n 1 | awk '{ exit !($3 > 0) }'

echo "== the device stops and comes back"
nic_model stop
wait_until 30 carrier_is $nic_a 0
dmesg | grep -q "$nic_a: the device's heartbeat stood still for 500 ms"
nic_model start
wait_until 50 carrier_is $nic_a 1
wait_until 50 peer_carrier_is $nic_b 1
wait_until 50 ping -c 1 -W 1 10.11.0.2
nicbench tcp --to $to --bytes 2000000

echo "== unloading under traffic"
nicbench tcp --to $to --bytes 500000000 2>/dev/null &
xfer=$!
sleep 1
rmmod cxlnic_drv
kill $xfer
wait $xfer || true
kill $server
wait $server || true
ip netns del peer
trap - EXIT
test ! -e /sys/class/net/$nic_a
