# drack_netdev's pooled NICs (#28) on both hosts, over the L2 hub
# (35's testbed), with drack0 on the RAM-speed pool (the NVDIMM as
# beluga1.0: fresh whatever earlier scenarios left): host 1 lends its hub NIC to the rack (`drack lend`),
# after refusing one a macvlan holds and a caller without CAP_NET_ADMIN;
# host 0 gets the vNIC drackv1n0 (its MAC 02:44:56:01:00:00), pings the
# server in host 1's namespace `ext` through it and sends it a checksummed
# TCP transfer, which the vNIC's and the lent NIC's counters account for
# (host 1 sent more than 1000 of the vNIC's frames on its NIC and
# passed the ACKs back); one MPTCP connection then runs over host 0's own hub NIC
# and the vNIC, both shaped alike, with a real share of the bytes on each;
# hostile frames on the vNIC ports (below); a lent dummy NIC deleted
# under traffic gives its slot back and host 0's vNIC on it goes; host 1
# gives its NIC back and host 0's vNIC goes.
#
# Hostile frames: drack0's region (drack3) is laid out for three hosts, and
# `cxlf-contract drack-forge` plays host 2 (no module runs as it) with
# the core's own source end: every entry well-formed (CRC, sequence,
# epoch, a buffer of its own), only its port or its frame hostile, sent
# one by one, each buffer required back as a return (not a refusal).
# Host 0 gets frames from host 2's "NIC" 0 and 3 (it lends none): no
# vNIC takes them (rx_no_vnic_frames +2). Host 1 gets frames for its
# NICs 1..3, which it does not lend (rx_unlent_nic_frames +3); for its
# lent NIC 0 under the NIC's own address and under host 0's vNIC's
# (to_nic_dropped +2, to_nic_frames and the NIC's tx_packets unmoved),
# then, the control, under host 2's own vNIC address (sent:
# to_nic_frames +1, tx_packets moves); and on ports 0x85, 0x7f, 5, 0x80
# and 0xff (rx_bad_port_entries +5, no refusal). No page of host 2's
# stays lent, and drack0 and the vNIC carry after.
set -e
. /multihost/flags.inc
. /multihost/drack.inc
hub=$(hub_nic)
rate=20
port=7040
mport=7041
vnic=drackv1n0
note() { echo "$*" >> /tmp/pooled.report; }
rm -f /tmp/pooled.report
nics=/sys/class/net/drack0/nics
# A counter of the lent NIC in slot $1 (host 1).
nic_stat() { cat $nics/$1/$2; }
# A vNIC's counter from `ip -s link` (sysfs statistics).
vstat() { cat /sys/class/net/$1/statistics/$2; }
trap 'drack_debug "drack\|lend\|vNIC"' EXIT

# The RAM-speed pool: host 0 writes the dax info block and formats the
# beluga pool on it, and drack0's region; host 1 joins each after it.
DRACK_POOL=beluga1.0
# Host 2 is the forger's, in a region of its own (50 formats drack0
# for two hosts on this pool).
DRACK_HOSTS=3
region=drack3
forge() { cxlf-contract drack-forge --dev /dev/beluga1.0 --region $region --as-host 2 "$@"; }
lent_pages_2() { cat /sys/class/net/drack0/peers/2/lent_pages; }
grep -q "^beluga_dax " /proc/modules || insmod /lib/cxlfabric/beluga_dax.ko host_index=$h lease_ms=$((2000 * slow))
if [ "$h" = 0 ]; then
	ram_pool_create
	flag 110 ram-dax
	beluga_bind dax1.0
	beluga --dev /dev/beluga1.0 format --hosts 2 --objects 64 > /dev/null
	beluga --dev /dev/beluga1.0 wait
	drack_load 2000 region=$region
	flag 111 drack-up
	drack_link_up
else
	await 110 ram-dax
	ram_pool_probe
	await 111 drack-up
	beluga_bind dax1.0
	beluga --dev /dev/beluga1.0 wait
	drack_up 2000 region=$region
fi
if [ "$h" = 1 ]; then
	ext=$(ext_nic)
	# Refused: a NIC a macvlan holds, and a caller without CAP_NET_ADMIN.
	ip link add mv0 link "$ext" type macvlan
	refute drack lend "$ext"
	dmesg_has "lend \"$ext\": it is a macvlan's lower device"
	ip link del mv0
	mkdir -p /etc
	grep -q '^netuser:' /etc/passwd 2>/dev/null ||
		echo 'netuser:x:1001:1001::/tmp:/bin/sh' >> /etc/passwd
	refute su netuser -c "echo $hub > $nics/lend"
	test -z "$(cat $nics/0/ifname)"
	drack lend "$hub"
	test "$(cat $nics/0/ifname)" = "$hub"
	test "$(cat $nics/0/generation)" -gt 0
	# The server behind the hub, in namespace ext.
	mkdir -p /var/run/netns
	ip netns add ext
	ip link set "$ext" netns ext
	ip netns exec ext ip addr add 10.0.8.100/24 dev "$ext"
	ip netns exec ext ip link set "$ext" up
	ip netns exec ext nicbench serve --port $port > /tmp/ext.out 2>&1 &
	srv=$!
	ip netns exec ext nicbench mptcp-serve --port $mport > /tmp/mptcp.out 2>&1 &
	msrv=$!
	tc qdisc add dev "$hub" root tbf rate ${rate}mbit burst 64kb latency 50ms
	flag 100 lent
	await 101 tcp-done
	# Every frame of host 0's vNIC went out on the NIC; counted here.
	note "host 1 NIC 0: $(drack status | tr '\n' ' ')"
	test "$(nic_stat 0 to_nic_frames)" -gt 1000
	test "$(nic_stat 0 from_nic_frames)" -gt 300
	await 103 mptcp-done
	# Hostile frames from host 2 (the forger), after host 0's.
	await 112 hostile-0
	hubtx() { cat /sys/class/net/$hub/statistics/tx_packets; }
	# For NICs not lent here (only 0 is).
	un=$(stat rx_unlent_nic_frames)
	sent=$(nic_stat 0 to_nic_frames)
	forge --dst 1 --frame to:1 --frame to:2 --frame to:3 > /tmp/forge.out
	note "host 1, to NICs not lent: $(tr '\n' '|' < /tmp/forge.out)"
	test "$(stat rx_unlent_nic_frames)" = $((un + 3))
	test "$(nic_stat 0 to_nic_frames)" = "$sent"
	dmesg_has "host 2's frame for NIC 3 dropped: this host does not lend one there"
	# For the lent NIC under the NIC's own address and host 0's vNIC's.
	dropped=$(nic_stat 0 to_nic_dropped)
	tx=$(hubtx)
	forge --dst 1 --frame "to:0/$(cat /sys/class/net/$hub/address)" \
		--frame to:0/02:44:56:01:00:00 > /tmp/forge.out
	note "host 1, spoofed on NIC 0: $(tr '\n' '|' < /tmp/forge.out)"
	# Time for a transmit that should not be.
	sleep 1
	test "$(nic_stat 0 to_nic_dropped)" = $((dropped + 2))
	test "$(nic_stat 0 to_nic_frames)" = "$sent"
	test "$(hubtx)" = "$tx"
	dmesg_has "host 2's frame for NIC 0 not sent: its source address is not that host's vNIC's"
	# The control: under host 2's own vNIC address it goes out.
	forge --dst 1 --frame to:0 > /tmp/forge.out
	note "host 1, control on NIC 0: $(tr '\n' '|' < /tmp/forge.out)"
	test "$(nic_stat 0 to_nic_frames)" = $((sent + 1))
	test "$(nic_stat 0 to_nic_dropped)" = $((dropped + 2))
	hub_sent() { test "$(hubtx)" -gt "$tx"; }
	wait_until 50 hub_sent
	# Ports this version does not know.
	bad=$(stat rx_bad_port_entries)
	refused=$(stat rx_refused_entries)
	forge --dst 1 --frame raw:0x85 --frame raw:0x7f --frame raw:5 \
		--frame raw:0x80 --frame raw:0xff > /tmp/forge.out
	note "host 1, unknown ports: $(tr '\n' '|' < /tmp/forge.out)"
	test "$(stat rx_bad_port_entries)" = $((bad + 5))
	test "$(stat rx_refused_entries)" = "$refused"
	test "$(lent_pages_2)" = 0
	ping -c 3 -W 5 "$peer" >/dev/null
	note "host 1: rx_unlent_nic_frames +3, to_nic_dropped +2 (hub tx unmoved), control sent, rx_bad_port_entries +5"
	flag 113 hostile-1
	await 114 hostile-checked
	# A dummy NIC lent, then deleted with host 0 sending through it.
	ip link add dum0 type dummy
	ip link set dum0 up
	drack lend dum0
	test "$(cat $nics/1/ifname)" = dum0
	flag 104 dummy-lent
	await 105 dummy-busy
	ip link del dum0
	slot1_free() { test -z "$(cat $nics/1/ifname)"; }
	wait_until 50 slot1_free
	dmesg_has "NIC 1 (\"dum0\") is no longer lent"
	flag 106 dummy-gone
	await 107 dummy-seen
	# The NIC given back: host 0's vNIC goes.
	tc qdisc del dev "$hub" root
	drack unlend "$hub"
	test -z "$(cat $nics/0/ifname)"
	flag 108 unlent
	await 109 done
	# The servers go, then the namespace. Its NIC comes back to the root
	# namespace when the namespace dies, which here took longer than
	# 30 s (35 sees it within 10 s): nothing after needs it.
	kill $srv $msrv 2>/dev/null || true
	wait $srv $msrv 2>/dev/null || true
	# Down first: a namespace can linger, its address still answering.
	ip netns exec ext ip link set "$ext" down
	ip netns del ext
else
	await 100 lent
	# The vNIC appears with its own address, and carries.
	vnic_up $vnic 10.0.8.11
	test "$(cat /sys/class/net/$vnic/address)" = 02:44:56:01:00:00
	ping -c 3 -W 5 -I $vnic 10.0.8.100
	# A transfer through the vNIC only (a route of its own).
	ip route add 10.0.8.100/32 dev $vnic src 10.0.8.11
	wait_until 100 nicbench tcp --to 10.0.8.100:$port --bytes 1000 > /dev/null 2>&1
	tx0=$(vstat $vnic tx_packets)
	note "host 0 via $vnic: $(nicbench tcp --to 10.0.8.100:$port --bytes $((4 << 20)) --seed 7)"
	# Segments out, ACKs (fewer) back.
	test $(($(vstat $vnic tx_packets) - tx0)) -gt 1000
	test "$(vstat $vnic rx_packets)" -gt 300
	flag 101 tcp-done
	ip route del 10.0.8.100/32 dev $vnic
	# MPTCP over the own hub NIC and the vNIC, both shaped alike.
	tc qdisc add dev "$hub" root tbf rate ${rate}mbit burst 64kb latency 50ms
	mptcp_endpoints "$hub" $vnic
	nicbench mptcp --to 10.0.8.100:$mport --bytes $((8 << 20)) --seed 8 > /tmp/two.out
	note "MPTCP via $hub and $vnic: $(tr '\n' '|' < /tmp/two.out)"
	test "$(grep -c '^subflow ' /tmp/two.out)" = 2
	grep -q "^subflow .* ($vnic) " /tmp/two.out
	awk '/^subflow / { s = substr($12, 2) + 0; if (s < 25) bad = 1 } END { exit bad }' /tmp/two.out
	mptcp_endpoints_clear
	tc qdisc del dev "$hub" root
	flag 103 mptcp-done
	# Hostile frames from host 2's NICs 0 and 3 (it lends none).
	none=$(stat rx_no_vnic_frames)
	dropped=$(stat rx_dropped_frames)
	forge --dst 0 --frame from:0 --frame from:3 > /tmp/forge.out
	note "host 0, from NICs without a vNIC: $(tr '\n' '|' < /tmp/forge.out)"
	test "$(stat rx_no_vnic_frames)" = $((none + 2))
	test "$(stat rx_dropped_frames)" = $((dropped + 2))
	test "$(lent_pages_2)" = 0
	dmesg_has "host 2's frame from its NIC 3 dropped: this host has no vNIC of it"
	note "host 0: rx_no_vnic_frames +2"
	flag 112 hostile-0
	await 113 hostile-1
	# Healthy after: drack0 and the vNIC carry.
	ping -c 3 -W 5 "$peer" >/dev/null
	ping -c 3 -W 5 -I $vnic 10.0.8.100 >/dev/null
	flag 114 hostile-checked
	# The dummy's vNIC appears; pings into it while host 1 deletes it.
	await 104 dummy-lent
	wait_until 100 test -e /sys/class/net/drackv1n1
	ip link set drackv1n1 up
	ping -c 200 -i 0.01 -I drackv1n1 10.0.7.1 > /dev/null 2>&1 &
	pinger=$!
	flag 105 dummy-busy
	await 106 dummy-gone
	wait_until 50 test ! -e /sys/class/net/drackv1n1
	kill $pinger 2>/dev/null || true
	wait $pinger 2>/dev/null || true
	flag 107 dummy-seen
	await 108 unlent
	wait_until 50 test ! -e /sys/class/net/$vnic
	flag 109 done
fi
ip link set drack0 down
rmmod drack_netdev
# beluga_dax stays loaded for 50 (beluga0.0 is bound still).
echo dax1.0 > $dax/beluga_dax/unbind
echo dax1.0 > $dax/device_dax/bind
{
	echo "@@ BEGIN drack-pooled host$h"
	sed 's/^/@|/' /tmp/pooled.report 2>/dev/null
	echo "@@ END"
} > /dev/ttyS1
trap - EXIT
