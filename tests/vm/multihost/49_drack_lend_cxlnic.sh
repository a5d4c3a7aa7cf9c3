# drack_netdev's pooled NICs (#28) with the project's own NIC: host 1
# lends its CXL-NIC (cxlnic_drv) to the rack, drack0 on the CXL window
# pool as 48 and 49_drack_faults have it (run after 49_drack_faults,
# which leaves drack unloaded and beluga0.0 bound on both hosts).
#
# The two hosts' CXL-NIC ports are wired to each other. Host 0 moves its
# own port into network namespace `peer` (10.11.0.100, the far end of the
# wire) and reaches it through drackv1n0 only: its frames go through the
# pool to host 1, which sends them on its CXL-NIC; the answers come back
# by host 1's rx_handler. cxlnic_drv has no unicast filter (the device
# delivers every frame), so the vNIC addresses' filter entries put it in
# promiscuous mode while lent (the kernel's fallback); GRO is off while
# lent; both come back when it is given back. Ping and a checksummed TCP
# transfer; the slot's counters on host 1 (nics/0/to_nic_*, from_nic_*)
# and the CXL-NIC's own (ethtool -S) on both hosts account for the
# frames. Host 1 gives the NIC back (host 0's vNIC goes), lends it again
# and unloads cxlnic_drv under it: the unregister gives the slot back.
# No pool page stays lent; both hosts unload drack_netdev and
# cxlnic_drv, leaving beluga0.0 bound for 49_drack_pooled_nics.
set -e
. /multihost/flags.inc
. /multihost/drack.inc
note() { echo "$*" >> /tmp/lend-cxlnic.report; }
rm -f /tmp/lend-cxlnic.report
nics=/sys/class/net/drack0/nics
vnic=drackv1n0
port=7050
far=10.11.0.100
# A counter of the lent NIC in slot $1 (host 1).
slot_stat() { cat $nics/$1/$2; }
# A vNIC's counter (sysfs statistics).
vstat() { cat /sys/class/net/$1/statistics/$2; }
# The fewest ACKs a 2 MiB transfer has: the far end's GRO merges
# segments, so one ACK may cover up to 64 KiB (183 and 378 in two runs).
acks=32
gro() { ethtool -k "$1" | sed -n 's/^generic-receive-offload: \([a-z]*\).*/\1/p'; }
promiscuity() { ip -d link show "$1" | sed -n 's/.* promiscuity \([0-9]*\) .*/\1/p'; }
# What a failed run shows; its server, namespace and both modules go,
# so that 49_drack_pooled_nics starts as it expects.
lc_debug() {
	drack_debug "drack\|lend\|vNIC\|cxlnic"
	# The CXL-NIC's counters, wherever it is.
	{ ethtool -S "$nic" || peer ethtool -S "$nic"; } 2>/dev/null | grep -v ': 0$' || true
	kill $(jobs -p) 2>/dev/null || true
	rmmod cxlnic_drv 2>/dev/null || true
	ip netns del peer 2>/dev/null || true
	ip link set drack0 down 2>/dev/null || true
	rmmod drack_netdev 2>/dev/null || true
}
trap lc_debug EXIT

drack_up 2000
flag $((126 + h)) lc-up-$h
await $((127 - h)) lc-up-$p
insmod /lib/cxlfabric/cxlnic_drv.ko
nic=$(ls /sys/bus/pci/drivers/cxlnic_drv/0000:*/net)
if [ "$h" = 1 ]; then
	ip link set "$nic" up
	test "$(promiscuity "$nic")" = 0
	test "$(gro "$nic")" = on
	drack lend "$nic"
	test "$(slot_stat 0 ifname)" = "$nic"
	# One vNIC address in a NIC without a unicast filter; GRO off (the
	# rx_handler sees frames as they were on the wire).
	test "$(promiscuity "$nic")" = 1
	test "$(gro "$nic")" = off
	flag 128 lc-lent
	# The NIC's carrier (host 0's port up) reaches the slot's record.
	wait_until 300 reads $nics/0/carrier = 1
	tx0=$(nic_stat "$nic" tx_packets)
	rx0=$(nic_stat "$nic" rx_packets)
	await 129 lc-tcp-done
	# Every frame host 0 sent went out on the CXL-NIC, and the answers
	# came back from it into the pool.
	to=$(slot_stat 0 to_nic_frames)
	from=$(slot_stat 0 from_nic_frames)
	tx=$(($(nic_stat "$nic" tx_packets) - tx0))
	rx=$(($(nic_stat "$nic" rx_packets) - rx0))
	note "host 1 NIC 0 ($nic): $(drack status | tr '\n' ' ')"
	note "host 1 $nic: tx_packets +$tx rx_packets +$rx; to_nic $to (dropped $(slot_stat 0 to_nic_dropped)), from_nic $from (dropped $(slot_stat 0 from_nic_dropped))"
	test "$to" -gt 1000
	test "$from" -gt $acks
	test "$tx" -ge 1000
	test "$rx" -gt $acks
	# Counted on the NIC since the lend: at least what drack sent and
	# passed on (the NIC also carries its own stack's frames).
	test "$(nic_stat "$nic" tx_packets)" -ge "$to"
	test "$(nic_stat "$nic" rx_packets)" -ge "$from"
	drack unlend "$nic"
	test -z "$(slot_stat 0 ifname)"
	test "$(promiscuity "$nic")" = 0
	test "$(gro "$nic")" = on
	flag 130 lc-unlent
	await 131 lc-vnic-gone
	# Lent again, then the driver unloaded under it.
	drack lend "$nic"
	test "$(slot_stat 0 ifname)" = "$nic"
	flag 132 lc-relent
	await 133 lc-vnic-back
	rmmod cxlnic_drv
	test -z "$(slot_stat 0 ifname)"
	dmesg_has "\"$nic\" is going away"
	flag 134 lc-removed
else
	# The far end: this host's own port, in namespace `peer`.
	mkdir -p /var/run/netns
	ip netns add peer
	ip link set "$nic" netns peer
	peer ip link set lo up
	peer ip addr add $far/24 dev "$nic"
	peer ip link set "$nic" up
	# Not lib.sh's `ip` function: $! is then the server itself.
	/usr/sbin/ip netns exec peer nicbench serve --port $port > /tmp/lc.srv 2>&1 &
	srv=$!
	await 128 lc-lent
	wait_until 100 test -e /sys/class/net/$vnic
	test "$(cat /sys/class/net/$vnic/address)" = 02:44:56:01:00:00
	ip addr add 10.11.0.11/24 dev $vnic
	ip link set $vnic up
	wait_until 300 carrier_is $vnic 1
	ping -c 3 -W 5 -I $vnic $far
	wait_until 100 nicbench tcp --to $far:$port --bytes 1000 > /dev/null 2>&1
	vtx0=$(vstat $vnic tx_packets)
	vrx0=$(vstat $vnic rx_packets)
	ptx0=$(nic_stat "$nic" tx_packets peer)
	prx0=$(nic_stat "$nic" rx_packets peer)
	note "host 0 via $vnic: $(nicbench tcp --to $far:$port --bytes $((2 << 20)) --seed 9)"
	vtx=$(($(vstat $vnic tx_packets) - vtx0))
	vrx=$(($(vstat $vnic rx_packets) - vrx0))
	prx=$(($(nic_stat "$nic" rx_packets peer) - prx0))
	ptx=$(($(nic_stat "$nic" tx_packets peer) - ptx0))
	note "host 0 $vnic: tx_packets +$vtx rx_packets +$vrx; far end $nic: rx_packets +$prx tx_packets +$ptx"
	# Segments out (2 MiB is more than 1400 of them), ACKs (fewer) back,
	# on both the vNIC and the far end's CXL-NIC.
	test "$vtx" -gt 1000
	test "$vrx" -gt $acks
	test "$prx" -gt 1000
	test "$ptx" -gt $acks
	flag 129 lc-tcp-done
	await 130 lc-unlent
	wait_until 50 test ! -e /sys/class/net/$vnic
	flag 131 lc-vnic-gone
	await 132 lc-relent
	wait_until 100 test -e /sys/class/net/$vnic
	flag 133 lc-vnic-back
	await 134 lc-removed
	wait_until 50 test ! -e /sys/class/net/$vnic
	kill $srv
	wait $srv 2>/dev/null || true
	# Unregistered in its namespace, which then goes.
	rmmod cxlnic_drv
	ip netns del peer
fi
# Every page lent to this host's stack came back.
wait_until 100 prints 0 stat peer${p}_lent_pages
note "host $h at the end: $(ethtool -S drack0 | grep -v ': 0$' | tr -s ' \n' ' ')"
flag $((135 + h)) lc-done-$h
await $((136 - h)) lc-done-$p
ip link set drack0 down
rmmod drack_netdev
refute grep -q '^cxlnic_drv ' /proc/modules
{
	echo "@@ BEGIN drack-lend-cxlnic host$h"
	sed 's/^/@|/' /tmp/lend-cxlnic.report
	echo "@@ END"
} > /dev/ttyS1
trap - EXIT
