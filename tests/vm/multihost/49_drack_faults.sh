# drack_netdev under faults from outside the protocol (run after 48,
# which leaves drack unloaded on both hosts).
#
# Corrupted references: host 0's VM stops (the harness, SIGSTOP, shorter
# than every lease) while host 1 sends to it; host 1 then flips a byte
# in each entry host 0 has not read (cxlf-contract drack-scribble, root
# mapping the drack region as a stray writer could). Host 0 wakes, drops
# and counts each (rx_bad_crc_entries), and tells host 1 which positions
# it refused, so host 1 gets those buffers back (none stays out); then
# traffic flows as before.
#
# beluga unbind while a socket holds lent pages: host 0 sends a transfer
# to a server on host 1 that reads nothing yet; host 1 unbinds its
# beluga device. The revoke stops drack0 (carrier down), the unbind
# returns with the pages still referenced (beluga keeps the memory
# claimed until they are let go), the socket then reads what it holds
# intact (the server's hash is the sender's), the pages go back and the
# pool is released; drack unloads, beluga binds again and mchannel
# shares scenario 47's switch again, for 50. (Host 1 comes back as a new
# incarnation: 50 gives it sections of its own to reclaim.)
set -e
. /multihost/flags.inc

me=10.0.9.$((11 + h))
peer=10.0.9.$((12 - h))
p=$((1 - h))
stat() { ethtool -S drack0 | awk -v n="$1:" '$1 == n { print $2 }'; }
above() { test "$(stat "$1")" -gt "$2"; }
dmesg_has() { dmesg | grep -q "$1"; }
debug() {
	set +x
	echo "== host $h at exit"
	ethtool -S drack0 2>/dev/null | grep -v ': 0$'
	dmesg | grep -i 'drack\|beluga' | tail -n 30
}
trap 'debug' EXIT

# Corrupted references. The stop (1.2 s) is shorter than beluga's lease
# (2 s) and drack's here (4 s): nobody is declared dead.
insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 host_index=$h hosts=2 lease_ms=$((4000 * slow))
ip addr add $me/24 dev drack0
ip link set drack0 up
wait_until 100 carrier_is drack0 1
flag $((72 + h)) cr-up-$h
await $((73 - h)) cr-up-$p
ping -c 2 -W 5 "$peer" >/dev/null
if [ "$h" = 0 ]; then
	bad=$(stat rx_bad_crc_entries)
	bad_rose() { test "$(stat rx_bad_crc_entries)" -gt "$bad"; }
	try=1
	while [ $try -le 3 ]; do
		flag 74 pause-$try
		await 75 ready-$try
		echo "@@ PAUSE-ME $((1200 * slow))" > /dev/ttyS1
		await 76 scribbled-$try
		if wait_until 30 bad_rose 2>/dev/null; then
			break
		fi
		try=$((try + 1))
	done
	bad_rose
	echo "host 0: $(($(stat rx_bad_crc_entries) - bad)) entries refused (bad CRC) at try $try"
	ping -c 3 -W 5 "$peer" >/dev/null
	flag 77 cr-done-0
else
	returned=$(stat tx_refused_entries)
	try=1
	n=0
	while [ $try -le 3 ]; do
		await 74 pause-$try
		flag 75 ready-$try
		# Host 0 asks the harness for the stop; it comes within the
		# harness's 200 ms poll.
		sleep "$(awk -v s="$slow" 'BEGIN { print 0.6 * s }')"
		# Echo requests into host 0's queue, which nobody reads now.
		ping -c 4 -i 0.05 -W 1 "$peer" >/dev/null 2>&1 &
		sleep 0.3
		if out=$(cxlf-contract drack-scribble --src 1 --dst 0); then
			echo "host 1: $out"
			n=$(echo "$out" | awk '{ print $2 }')
		fi
		wait || true
		flag 76 scribbled-$try
		[ "$n" -gt 0 ] && break
		try=$((try + 1))
	done
	test "$n" -gt 0
	# Every refused entry's buffer comes back, and none stays out.
	got_back() { test "$(stat tx_refused_entries)" -ge $((returned + n)); }
	wait_until 100 got_back
	wait_until 100 reads /sys/class/net/drack0/peers/0/tx_buffers_out = 0
	await 77 cr-done-0
	ping -c 3 -W 5 "$peer" >/dev/null
fi
rmmod drack_netdev

# beluga unbind under lent pages.
flag $((78 + h)) ub-unloaded-$h
await $((79 - h)) ub-unloaded-$p
insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 host_index=$h hosts=2 lease_ms=$((2000 * slow))
ip addr add $me/24 dev drack0
ip link set drack0 up
wait_until 100 carrier_is drack0 1
flag $((80 + h)) ub-up-$h
await $((81 - h)) ub-up-$p
if [ "$h" = 1 ]; then
	rm -f /tmp/go2
	nicbench serve --port 7011 --hold-until /tmp/go2 > /tmp/ub.srv 2>&1 &
	held_srv=$!
	# Listening (port 7011 is 0x1B63) before host 0 connects.
	wait_until 50 grep -q ':1B63 00000000:0000 0A' /proc/net/tcp
	flag 82 ub-holding
	wait_until 100 above peer0_lent_pages 4
	released=$(dmesg | grep -c "beluga0.0: released" || true)
	# mchannel_sched shares scenario 47's switch through the pool too:
	# it goes first and comes back as it was, for 50.
	rmmod mchannel_sched
	echo dax0.0 > $dax/beluga_dax/unbind
	wait_until 100 dmesg_has 'the pool region is being revoked: drack0 stops'
	wait_until 100 carrier_is drack0 0
	dmesg_has 'beluga0.0: unbound with [0-9]* pages still referenced'
	echo "host 1: $(dmesg | grep 'beluga0.0: unbound with' | tail -n 1)"
	touch /tmp/go2
	want=$(nicbench hash --bytes 20000 --seed 13)
	wait_until 100 grep -q "tcp 20000 bytes, hash $want" /tmp/ub.srv
	released_more() { test "$(dmesg | grep -c 'beluga0.0: released')" -gt "$released"; }
	wait_until 300 released_more
	kill $held_srv
	wait $held_srv 2>/dev/null || true
	rmmod drack_netdev
	echo dax0.0 > $dax/beluga_dax/bind
	beluga wait
	mch=/sys/class/misc/mchannel
	insmod /lib/cxlfabric/mchannel_sched.ko pool=beluga0.0 host_index=1 lease_ms=$((1000 * slow))
	c=$(mchannel component --name cxl-sw --kind switch --capacity 100000000)
	mchannel create --name stream-1 --path "$c" --meter 100 --t-w-us 1000 >/dev/null
	wait_until 100 reads $mch/components/cxl-sw/peers = 1
	flag 83 ub-done
else
	await 82 ub-holding
	# Its answer cannot come back (host 1's drack0 goes): host 1 checks.
	nicbench tcp --to "$peer:7011" --bytes 20000 --seed 13 --answer-secs 150 >/dev/null 2>&1 &
	held=$!
	await 83 ub-done
	kill $held 2>/dev/null || true
	wait $held 2>/dev/null || true
	rmmod drack_netdev
	wait_until 100 reads /sys/class/misc/mchannel/components/cxl-sw/peers = 1
fi
trap - EXIT
