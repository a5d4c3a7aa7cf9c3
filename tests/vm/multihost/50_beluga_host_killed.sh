# Host 1 dies without warning (the harness kills its VM). After its lease
# runs out, host 0 reclaims host 1's private sections (an object it
# allocates here), while the shared
# object host 0 also holds survives with its data; and host 0's mchannel
# stream, which shared switch cxl-sw with host 1's (scenario 47), gets
# the whole switch. Then a corrupted superblock is refused with a clear
# message.
#
# drack_netdev's failover (#28): host 1 lends its hub NIC and dies with
# host 0's MPTCP transfer running over host 0's own hub NIC and the vNIC
# drackv1n0 (to a server in namespace ext behind host 0's third NIC, so
# that it outlives host 1). The transfer finishes on the remaining
# subflow with the checksum intact, the vNIC loses its carrier at the
# lease's expiry, and the receiver's longest stall (the failover's cost
# to the application) goes to the report block `drack-failover`.
set -e
. /multihost/flags.inc
. /multihost/drack.inc
# The server, in host 0's namespace ext.
srvip=10.0.8.200
mch=/sys/class/misc/mchannel
DRACK_POOL=beluga1.0
vnic=drackv1n0
mport=7050
rate=10
hub=$(hub_nic)
shape() { tc qdisc add dev "$hub" root tbf rate ${rate}mbit burst 32kb latency 50ms; }
# drack0 on the RAM pool 49 formatted (dax1.0), host 0 first: its
# region drack0 is new (49's is drack3), host 0 formats it.
# (Whatever a failed 49 left: its drack0, the device still beluga's.)
drack_unload_leftover
test -e /dev/beluga1.0 || beluga_bind dax1.0
beluga --dev /dev/beluga1.0 wait
drack_up_in_turn 141 2000

if [ "$CXLFABRIC_HOST" = 1 ]; then
	# The NIC host 0's second subflow leaves by, shaped like host 0's.
	drack lend "$hub"
	shape
	flag 142 lent
	# A private object of this incarnation for host 0 to reclaim (49
	# rebound host 1's device: what it held before went then).
	beluga alloc --size 2M --name h1.private >/dev/null
	# Dies streaming, its slot still beating.
	ch=$(cat $mch/channels/stream-1/id)
	mchannel run --channel "$ch" -- cxlf-contract mchannel-stream --threads 1 --seconds 600 >/dev/null &
	flag 18 streaming-1
	await 19 shared-0
	flag 7 dying
	# The kernel log so far, then ask to be killed.
	{
		echo "@@ BEGIN dmesg kernel"
		dmesg | sed 's/^/@|/'
		echo "@@ END"
		echo "@@ KILL-ME"
	} > /dev/ttyS1
	sleep 600
	exit 1
fi

# The server behind host 0's own third NIC, and the vNIC on host 1's.
ext_ns
ip netns exec ext nicbench mptcp-serve --port $mport > /tmp/failover.srv 2>&1 &
msrv=$!
await 142 lent
vnic_up $vnic 10.0.8.11
shape
mptcp_endpoints "$hub" $vnic
wait_until 100 nicbench tcp --to $srvip:$mport --bytes 1000 > /dev/null 2>&1

# Host 0 streams too: while host 1 lives, each has part of the switch.
await 18 streaming-1
ch=$(cat $mch/channels/stream-0/id)
mchannel run --channel "$ch" -- cxlf-contract mchannel-stream --threads 1 --seconds $((60 * slow)) >/dev/null &
stream=$!
half() { test "$(cat $mch/channels/stream-0/t_r_ns)" -lt $(($(cat $mch/channels/stream-0/t_w_ns) * 7 / 10)); }
wait_until 100 half
# 16 MiB at 2 x 10 Mbit/s: host 1 dies a few seconds into it, once the
# vNIC's subflow carries.
vtx=$(cat /sys/class/net/$vnic/statistics/tx_packets)
nicbench mptcp --to $srvip:$mport --bytes $((16 << 20)) --seed 9 > /tmp/failover.out 2>&1 &
client=$!
vnic_busy() { test $(($(cat /sys/class/net/$vnic/statistics/tx_packets) - vtx)) -gt 300; }
wait_until 300 vnic_busy
flag 19 shared-0
await 7 dying
# What host 1 holds in beluga0.0 before its lease runs out (checked
# below, after the drack part, by when it may be reclaimed already).
used1=$(sed -n 's/^1 //p' $sys/used_by_host)
# The vNIC's carrier goes with the owner's lease; the transfer ends on
# host 0's own NIC with every byte in order.
wait_until $((100 + 50 * slow)) carrier_is $vnic 0
wait $client
grep -q "checksum matches" /tmp/failover.out
grep -q "^subflow .* ($vnic) " /tmp/failover.out
grep -q "^subflow .* ($hub) " /tmp/failover.out
wait_until 50 grep -q "nicbench serve: tcp $((16 << 20)) bytes" /tmp/failover.srv
{
	echo "@@ BEGIN drack-failover host0"
	sed -n 's/^nicbench serve: /@|received: /p' /tmp/failover.srv
	sed 's/^/@|/' /tmp/failover.out
	echo "@@ END"
} > /dev/ttyS1
kill $msrv 2>/dev/null || true
wait $msrv 2>/dev/null || true
mptcp_endpoints_clear
tc qdisc del dev "$hub" root
# drack0 goes with its peer dead and the peer's vNIC still there.
ip link set drack0 down
rmmod drack_netdev
test ! -e /sys/class/net/$vnic
echo dax1.0 > $dax/beluga_dax/unbind
echo dax1.0 > $dax/device_dax/bind
# After host 1's lease, host 0 alone uses the switch: no peer, and its
# channel's budget is the whole window again.
wait_until 300 reads $mch/components/cxl-sw/peers = 0
wait_until 100 reads $mch/channels/stream-0/t_r_ns = "$(cat $mch/channels/stream-0/t_w_ns)"
# (It may have run its time out already.)
kill $stream 2>/dev/null || true
wait $stream || true
rmmod mchannel_sched
test "$used1" -gt 0
wait_until 600 grep -q '^1 expired$' $sys/lease_state
wait_until 300 prints 0 sed -n 's/^1 //p' $sys/used_by_host
dmesg | grep -q "beluga0.0: reclaimed [0-9]* objects of departed or expired hosts"
# The shared object lives on, held by host 0 only, data intact.
beluga list --json | tr -d ' \n' | grep -q '"name":"model.w",[^}]*"holders":\[0\]'
cxlf-contract beluga-share --name model.w --open --seed 11
# Nothing left to reclaim by hand.
beluga reclaim 1 --json | grep -q '"reclaimed": 0'
# Unlinked, it goes with its last user (host 0's holder process).
beluga free model.w
beluga list | grep -q 'model.w.*unlinked'
rm /tmp/hold.model
gone_from_list() { ! beluga list | grep -q "$1"; }
wait_until 50 gone_from_list model.w
test "$(cat $sys/objects)" = "$(beluga list --json | grep -c '"index"')"

# A corrupted superblock is refused with the reason.
echo dax0.0 > $dax/beluga_dax/unbind
echo dax0.0 > $dax/device_dax/bind
size=$(cat /sys/bus/dax/devices/dax0.0/size)
cxlf-contract write-superblock --size "$size" --flip-bit 300
echo dax0.0 > $dax/device_dax/unbind
echo dax0.0 > $dax/beluga_dax/bind
dmesg | tail -n 20 | grep -q "beluga0.0: superblock refused: BadChecksum"
test "$(cat $sys/state)" = refused
echo dax0.0 > $dax/beluga_dax/unbind
echo dax0.0 > $dax/device_dax/bind
rmmod beluga_dax
