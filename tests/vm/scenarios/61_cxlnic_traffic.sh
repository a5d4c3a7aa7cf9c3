# Traffic between the two linked ports of the CXL-NIC device model, one
# of them in a network namespace, in each of the three queue modes.
set -e
. /lib/cxlfabric/lib.sh
for mode in type1 type2 pcie; do
	echo "== $mode"
	nic_pair $mode
	dmesg | grep -q "$nic_a: MTU 1500, $mode mode, 2 queue pairs"
	ping -c 3 -W 2 10.11.0.2
	peer nicbench serve --port 7001 &
	server=$!
	wait_until 50 nicbench tcp --to 10.11.0.2:7001 --bytes 1000
	nicbench tcp --to 10.11.0.2:7001 --bytes 4000000
	nicbench udp-rr --to 10.11.0.2:7001 --count 200
	kill $server
	ip -s link show "$nic_a"
	nic_unpair
done
