# The CXL-NIC's key-value offload (#29) between the two linked ports of
# the device model: port A (this namespace) in type2 mode serves the
# store, a client in namespace `peer` on port B asks it. Hits and misses
# are answered by the device without A's stack (its RX counters stay
# put), misses from the host table, PUTs reach the host table through
# the log, the host's own updates and deletes reach the device, hostile
# requests are dropped and counted, other traffic takes the normal path,
# and an unprivileged user is refused.
set -e
. /lib/cxlfabric/lib.sh
trap nic_debug EXIT
nic_pair type2
srv=10.11.0.1:7878
# Refused outside type2 (the offload lives in device memory) is checked
# at the end; here: 20 pairs for a cache of 2 buckets (8 entries).
cxlnic kvs enable "$nic_a" --port 7878 --cache-buckets 2
for i in $(seq 0 19); do
	cxlnic kvs put "$nic_a" "k$i" "value-$i"
done
kstat() { # name: the device's KVS counter, from ethtool -S
	ethtool -S "$nic_a" | awk -v n="kvs_$1:" '$1 == n { print $2 }'
}
rx() { cat "/sys/class/net/$nic_a/statistics/rx_packets"; }
# ARP first, so the counted requests are all the stack could see.
peer ping -c 1 -W 2 10.11.0.1 > /dev/null
rx0=$(rx)

# A miss, then a hit, for the same key; each answer right.
peer nicbench kvs-get --server $srv k3 | tee /tmp/get1
grep -q 'GET k3: ok, "value-3"' /tmp/get1
test "$(kstat misses)" -ge 1
test "$(kstat installs)" -ge 1
hits0=$(kstat hits)
peer nicbench kvs-get --server $srv k3 | grep -q 'GET k3: ok, "value-3"'
test "$(kstat hits)" -eq $((hits0 + 1))
peer nicbench kvs-get --server $srv nosuchkey | grep -q 'GET nosuchkey: not found'

# Every key, twice over, through 8 cache entries: evictions, every
# answer right (kvs-load checks each against the values loaded above).
for i in $(seq 0 19); do
	peer nicbench kvs-get --server $srv "k$i" | grep -q "GET k$i: ok, \"value-$i\""
	peer nicbench kvs-get --server $srv "k$i" | grep -q "GET k$i: ok, \"value-$i\""
done
test "$(kstat evictions)" -ge 12
echo "device: hits $(kstat hits), misses $(kstat misses), host slot reads $(kstat host_reads), evictions $(kstat evictions)"

# Answered by the device: the stack of port A saw none of these requests.
rx1=$(rx)
echo "port A rx_packets: $rx0 -> $rx1 over $(kstat requests) requests"
test $((rx1 - rx0)) -le 2
test "$(kstat requests)" -ge 43

# A client's PUT reaches the host table (through the log).
peer nicbench kvs-put --server $srv k5 from-the-wire | grep -q 'PUT k5: ok'
peer nicbench kvs-get --server $srv k5 | grep -q 'GET k5: ok, "from-the-wire"'
cxlnic kvs get "$nic_a" k5 | grep -q 'from-the-wire'
peer nicbench kvs-put --server $srv newkey v | grep -q 'PUT newkey: not found'

# The host's update and delete reach the device, cached or not.
peer nicbench kvs-get --server $srv k7 > /dev/null
cxlnic kvs put "$nic_a" k7 from-the-host
peer nicbench kvs-get --server $srv k7 | grep -q 'GET k7: ok, "from-the-host"'
cxlnic kvs del "$nic_a" k7
peer nicbench kvs-get --server $srv k7 | grep -q 'GET k7: not found'
refute cxlnic kvs get "$nic_a" k7 2> /dev/null
cxlnic kvs put "$nic_a" k7 back
peer nicbench kvs-get --server $srv k7 | grep -q 'GET k7: ok, "back"'

# Hostile requests: dropped, counted by reason, never answered, never
# passed to the stack.
rx2=$(rx)
for reason in key length op; do
	before=$(kstat bad_$reason)
	peer nicbench kvs-raw --server $srv --bad $reason | grep -q 'no answer'
	test "$(kstat bad_$reason)" -eq $((before + 1))
done
test "$(rx)" -eq "$rx2"

# Other traffic to port A still takes the normal path.
nicbench serve --port 7001 &
server=$!
wait_until 50 peer nicbench tcp --to 10.11.0.1:7001 --bytes 1000
peer nicbench udp-rr --to 10.11.0.1:7001 --count 50
kill $server
test "$(rx)" -gt "$rx2"

# An unprivileged user may not change the store.
mkdir -p /etc
grep -q '^squatter:' /etc/passwd 2>/dev/null ||
	echo 'squatter:x:1000:1000::/tmp:/bin/sh' >> /etc/passwd
chmod 666 /dev/cxlnic
refute su squatter -c "cxlnic kvs put $nic_a k1 evil" 2> /tmp/eperm
grep -q -i 'permission\|EPERM' /tmp/eperm
chmod 600 /dev/cxlnic
cxlnic kvs get "$nic_a" k1 | grep -q 'value-1'

cxlnic kvs stats "$nic_a" --json | tr -d ' \n' | grep -q '"hits":'
# Disabled: the port is the stack's again (nothing listens: no answer).
cxlnic kvs disable "$nic_a"
refute peer nicbench kvs-get --server $srv k1 --timeout-ms 300 2> /dev/null
# Unload with pairs loaded and the offload used.
cxlnic kvs enable "$nic_a" --port 7878
peer nicbench kvs-get --server $srv k1 | grep -q 'ok'
trap - EXIT
nic_unpair

# Outside type2 there is no device memory for it: refused, saying why.
trap nic_debug EXIT
nic_pair type1
refute cxlnic kvs enable "$nic_a" 2> /dev/null
dmesg | tail -n 5 | grep -q 'type2'
trap - EXIT
nic_unpair
