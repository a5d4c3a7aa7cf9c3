# drack_netdev unloaded under pooled-NIC traffic (#28), both sides, on
# the RAM-speed pool 49_drack_pooled_nics formatted. Host 1 lends its hub
# NIC; host 0 sends TCP and pings through its vNIC drackv1n0 to the
# server in namespace ext behind host 0's own third NIC, so every frame
# crosses host 1's NIC.
# - The owner unloads under that traffic: its NIC is free again at once
#   (a macvlan can take it, it carries host 1's own ping), host 0's vNIC
#   loses its carrier at the lease's expiry and drops what it is given.
# - The owner returns, lending the NIC at load (`lend=`): the same vNIC,
#   its address and route kept, carries again.
# - Host 0 unloads under its vNIC's traffic: the vNIC goes; host 1
#   gets every buffer it lent host 0 back once host 0's lease expires,
#   and unloads.
set -e
. /multihost/flags.inc
. /multihost/drack.inc
# The server, in host 0's namespace ext.
srvip=10.0.8.200
DRACK_POOL=beluga1.0
hub=$(hub_nic)
vnic=drackv1n0
port=7045
trap 'drack_debug "drack\|lend\|vNIC"' EXIT

beluga_bind dax1.0
beluga --dev /dev/beluga1.0 wait
drack_up_in_turn 143 2000

# TCP and pings through the vNIC until killed; their pids in $load.
vnic_load() {
	nicbench tcp --to $srvip:$port --bytes $((256 << 20)) > /dev/null 2>&1 &
	load=$!
	ping -q -i 0.02 -c 100000 -I $vnic $srvip > /dev/null 2>&1 &
	load="$load $!"
}
vnic_load_stop() {
	kill $load 2>/dev/null || true
	wait $load 2>/dev/null || true
}
# The vNIC addressed, routed and carrying.
vnic_ready() {
	vnic_up $vnic 10.0.8.11
	ip route replace $srvip/32 dev $vnic src 10.0.8.11
	wait_until 100 ping -c 1 -W 1 -I $vnic $srvip > /dev/null
	# Our server answers (a checksummed transfer).
	wait_until 100 nicbench tcp --to $srvip:$port --bytes 100000 > /dev/null 2>&1
}
vnic_carries() { wait_until $((100 + 50 * slow)) carrier_is $vnic 1; }
vtx() { cat /sys/class/net/$vnic/statistics/tx_packets; }
# Whether the vNIC sent more than 300 frames since it had sent $1.
vnic_sent() { test $(($(vtx) - $1)) -gt 300; }
# Whether peer 0's counter $1 reads $2 (now, each time it is called).
peer0_is() { test "$(stat peer0_$1)" = "$2"; }
# Whether the lent NIC (slot 0) sent more than $1 of the vNIC's frames.
to_nic_over() { test "$(cat /sys/class/net/drack0/nics/0/to_nic_frames)" -gt "$1"; }

if [ "$h" = 1 ]; then
	drack lend "$hub"
	flag 144 lent
	# The owner goes with host 0's frames on its NIC.
	await 145 busy
	wait_until 100 to_nic_over 200
	ip link set drack0 down
	rmmod drack_netdev
	# Its NIC is its own again: another rx_handler can take it, and it
	# carries this host's own traffic.
	ip link add mv0 link "$hub" type macvlan
	ip link del mv0
	ping -c 2 -W 5 -I "$hub" 10.0.8.1 > /dev/null
	flag 146 owner-gone
	# Back, and lending again.
	await 147 vnic-down
	# Lent at load (before the first beat): host 0 keeps its vNIC.
	drack_up 2000 lend="$hub"
	test "$(cat /sys/class/net/drack0/nics/0/ifname)" = "$hub"
	flag 148 relent
	await 149 busy-again
	await 150 borrower-gone
	# Host 0's lease expires; what it held of our buffers is unknown
	# until it returns (its held bitmap), and then all come back.
	wait_until $((100 + 50 * slow)) peer0_is tx_session 0
	flag 151 borrower-dead
	await 152 borrower-back
	wait_until $((100 + 50 * slow)) peer0_is tx_session 2
	wait_until 100 peer0_is tx_buffers_out 0
	drack unlend "$hub"
	flag 153 unlent
else
	ext_ns
	ip netns exec ext nicbench serve --port $port > /tmp/unload.srv 2>&1 &
	srv=$!
	await 144 lent
	vnic_ready
	ifindex=$(cat /sys/class/net/$vnic/ifindex)
	tx=$(vtx)
	vnic_load
	wait_until 100 vnic_sent $tx
	flag 145 busy
	await 146 owner-gone
	# Lease expiry: carrier down; what the vNIC is then given is dropped.
	wait_until $((100 + 50 * slow)) carrier_is $vnic 0
	vnic_load_stop
	dropped=$(cat /sys/class/net/$vnic/statistics/tx_dropped)
	ping -c 3 -W 1 -I $vnic $srvip > /dev/null 2>&1 && exit 1
	flag 147 vnic-down
	await 148 relent
	# The same vNIC comes back, its address and route still there.
	wait_until 100 dmesg_has "$vnic: host 1's NIC 0 is back"
	test "$(cat /sys/class/net/$vnic/ifindex)" = "$ifindex"
	vnic_carries
	wait_until 100 ping -c 1 -W 1 -I $vnic $srvip > /dev/null
	# It carries again; then this host unloads under its traffic.
	vnic_load
	tx=$(vtx)
	wait_until 100 vnic_sent $tx
	flag 149 busy-again
	ip link set drack0 down
	rmmod drack_netdev
	test ! -e /sys/class/net/$vnic
	vnic_load_stop
	flag 150 borrower-gone
	kill $srv 2>/dev/null || true
	wait $srv 2>/dev/null || true
	await 151 borrower-dead
	drack_up 2000
	flag 152 borrower-back
	await 153 unlent
	wait_until 50 test ! -e /sys/class/net/$vnic
	echo "@@ BEGIN drack-unload host0" > /dev/ttyS1
	echo "@|vNIC frames dropped while its owner was away: $dropped" > /dev/ttyS1
	echo "@@ END" > /dev/ttyS1
fi
ip link set drack0 down
rmmod drack_netdev
echo dax1.0 > $dax/beluga_dax/unbind
echo dax1.0 > $dax/device_dax/bind
trap - EXIT
