# drack_netdev on both hosts over the beluga pool bound and formatted by
# 40: a foreign header is refused (host 0) and an unformatted region is
# not formatted by host 1; then each loads drack0 (host 0 formats the drack region, host 1 checks
# its header), addresses 10.0.9.1x; then ping both ways, a checksummed
# TCP transfer each way at once (nicbench: the server hashes what
# arrived, the client compares it with its own) by reference and then
# by value, with the copy counters each mode must show (by reference:
# the placement on TX, headers only on RX, the lent pages all back
# afterwards; by value: one more copy on each side), MTU 9000 with an
# 8972-byte ping, the peer's own TX queue stopped and woken for room
# instead of frames dropped, a reload of host 1's module while its stack
# holds lent pages (adopted, never written over), rmmod under traffic
# on host 1 (host 0 sees the carrier go after the lease and unloads
# too), and a stall of host 1 past its lease (its VM stopped): it rejoins
# by itself. (Corrupted references and beluga unbind under lent pages:
# 49.)
set -e
. /multihost/flags.inc
. /multihost/drack.inc
# The numbers, for the run's results log (scenario output is shown only
# on failure).
note() { echo "$*" >> /tmp/drack.report; }
rm -f /tmp/drack.report
trap 'drack_debug drack' EXIT

# A region whose header is not drack's (another kernel user's data: root,
# mode 600, as beluga_dax takes only such objects for a kernel region) is
# refused, not formatted over; one a user made under the name is refused
# as not the kernel's; a host other than 0 does not format a fresh one
# (host 0 makes the objects: they stay counted to it, and 50 counts
# host 1's).
if [ "$h" = 0 ]; then
	cxlf-contract beluga-share --name drack.user --size $((4 << 20)) --seed 4 --hold /tmp/hold.user >/dev/null &
	wait_until 600 test -e /tmp/hold.user
	refute insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 region=drack.user host_index=0 hosts=2
	dmesg | grep -q 'region "drack.user" refused: the object is owned by uid 0 mode 644'
	rm /tmp/hold.user
	wait
	beluga free drack.user
	cxlf-contract beluga-share --name drack.bad --size $((4 << 20)) --seed 3 --mode 600 --hold /tmp/hold.bad >/dev/null &
	wait_until 600 test -e /tmp/hold.bad
	refute insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 region=drack.bad host_index=0 hosts=2
	dmesg | grep -q 'region "drack.bad": header refused'
	rm /tmp/hold.bad
	wait
	beluga free drack.bad
	beluga alloc --size 4M --name drack.fresh --shared >/dev/null
	flag 48 fresh-made
	await 49 fresh-checked
	beluga free drack.fresh
else
	await 48 fresh-made
	refute insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 region=drack.fresh host_index=1 hosts=2
	dmesg | grep -q 'region "drack.fresh" is not formatted yet'
	flag 49 fresh-checked
fi
refute test -e /sys/class/net/drack0

# Host 1 waits for host 0's format.
[ "$h" = 0 ] || await 30 drack-loaded-0
insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 host_index=$h hosts=2 lease_ms=$((2000 * slow))
[ "$h" = 1 ] || flag 30 drack-loaded-0
ethtool -i drack0 | grep -q '^driver: drack_netdev'
ethtool -g drack0 | grep -q 'RX:.*128'
ethtool -l drack0 >/dev/null
test "$(ethtool -c drack0 | awk '$1 == "rx-usecs:" { print $2 }')" = 50
ip addr add $me/24 dev drack0
ip link set drack0 up
wait_until 100 carrier_is drack0 1
flag $((31 + h)) drack-up-$h
await $((32 - h)) drack-up-$p
# The peer's state in sysfs as in ethtool -S.
peerdir=/sys/class/net/drack0/peers/$p
wait_until 50 reads $peerdir/tx_session = up
reads $peerdir/rx_session = up
# Alive from the first heartbeat pass (a quarter lease) on.
wait_until 50 reads $peerdir/alive = 1
test "$(cat $peerdir/epoch)" -gt 0

ping -c 3 -W 5 "$peer"
nicbench serve --port 7009 &
srv=$!
flag $((33 + h)) serving-$h
await $((34 - h)) serving-$p
# The peer's server listens once a small transfer gets through (its
# flag only says it was started).
wait_until 100 nicbench tcp --to "$peer:7009" --bytes 1000 >/dev/null 2>&1

transfer() { # mode
	placed0=$(stat tx_placed_bytes)
	value0=$(stat tx_by_value_bytes)
	lent0=$(stat rx_lent_frames)
	rxval0=$(stat rx_by_value_bytes)
	# A failed transfer fails here, with nicbench's reason (inside
	# note's argument its status would be lost).
	out=$(nicbench tcp --to "$peer:7009" --bytes $((4 << 20)) --seed $((h + 7)) \
		--answer-secs $((30 * slow)) 2>&1) || { echo "host $h ($1): $out"; return 1; }
	note "$out"
	note "host $h ($1): tx_placed_bytes +$(($(stat tx_placed_bytes) - placed0))" \
		"tx_by_value_bytes +$(($(stat tx_by_value_bytes) - value0))" \
		"rx_lent_frames +$(($(stat rx_lent_frames) - lent0))" \
		"rx_by_value_bytes +$(($(stat rx_by_value_bytes) - rxval0))"
}

# By reference, both ways at once.
transfer by-reference
flag $((35 + h)) byref-$h
await $((36 - h)) byref-$p
# This host's frames were placed once; the peer's were lent, headers
# copied; nothing was copied by value.
above tx_placed_bytes $((4 << 20))
above rx_lent_frames 1000
above rx_header_bytes 0
test "$(stat tx_by_value_bytes)" = 0
test "$(stat rx_by_value_bytes)" = 0
# ip -s link has the same frames.
test "$(ip -s link show drack0 | awk '/RX:/ { getline; print $2; exit }')" -gt 2000
test "$(ip -s link show drack0 | awk '/TX:/ { getline; print $2; exit }')" -gt 2000
# Every lent page comes back once the sockets let go.
wait_until 100 prints 0 stat peer${p}_lent_pages
note "host $h after by-reference, lent pages back to 0:"
note "$(ethtool -S drack0 | grep -v ': 0$')"

# By value, both ways at once.
ethtool --set-priv-flags drack0 by-value on
ethtool --show-priv-flags drack0 | grep -q 'by-value *: on'
flag $((37 + h)) byval-set-$h
await $((38 - h)) byval-set-$p
transfer by-value
flag $((39 + h)) byval-$h
await $((40 - h)) byval-$p
above tx_by_value_bytes $((4 << 20))
above rx_by_value_bytes $((4 << 20))
note "host $h after by-value:"
note "$(ethtool -S drack0 | grep -E 'by_value|placed|lent_frames|header|fallback')"
ethtool --set-priv-flags drack0 by-value off

# No entry the peer wrote was refused.
for c in crc dst src epoch seq index len frag; do
	test "$(stat rx_bad_${c}_entries)" = 0
done
test "$(stat rx_dup_lent_entries)" = 0
test "$(stat tx_bad_return_entries)" = 0
# Our transmit sets no checksum hints, so none was ignored.
test "$(stat rx_csum_hint_ignored_frames)" = 0
# A UDP flood each way, faster than the peer's poll takes frames in.
nicbench udp-stream --to "$peer:7009" --size 1400 --secs 2 >/dev/null 2>&1 || true
flag $((68 + h)) flooded-$h
await $((69 - h)) flooded-$p
# A full destination stops its peer's TX queue (the stack holds the
# frames) instead of dropping them: the transfers stopped it, the poll
# woke it every time, and no frame to the peer was dropped for room (a
# broadcast may be: it never stops a queue).
note "host $h: $(ethtool -S drack0 | grep -E 'tx_queue_|tx_busy|tx_dropped_full')"
# (On the debug kernel the sender can be slower than the peer's poll:
# the queue may never fill there.)
[ "$slow" -gt 1 ] || above tx_queue_stops 0
wait_until 50 prints 0 stat peer${p}_tx_queue_stopped
test "$(stat tx_queue_wakes)" = "$(stat tx_queue_stops)"
test "$(stat tx_dropped_full_frames)" -le 2

# A reload while the stack holds lent pages: host 0 sends a transfer to
# a server on host 1 that reads nothing yet (its frames stay in lent
# pages in the socket); host 1 unloads and loads drack_netdev again; the
# new load finds those pages still referenced and adopts their buffers,
# so host 0 keeps them reserved while 2 MiB more go through every other
# buffer; then the server reads, and the held bytes are intact.
if [ "$h" = 1 ]; then
	rm -f /tmp/go
	nicbench serve --port 7010 --hold-until /tmp/go &
	held_srv=$!
	# Listening (port 7010 is 0x1B62) before host 0 connects.
	wait_until 50 grep -q ':1B62 00000000:0000 0A' /proc/net/tcp
	flag 60 holding
	wait_until 100 above peer0_lent_pages 4
	note "host 1: $(stat peer0_lent_pages) pages lent to the unread socket before rmmod"
	rmmod drack_netdev
	# A lend cap of 24: the unread socket (a slow reader) holds most of
	# it, so the next transfer's frames fall back to counted copies.
	insmod /lib/cxlfabric/drack_netdev.ko pool=beluga0.0 host_index=1 hosts=2 lease_ms=$((2000 * slow)) lend_cap=24
	note "host 1: $(dmesg | grep 'host 0: the stack still holds' | tail -n 1)"
	dmesg | grep -q 'host 0: the stack still holds [0-9]* of its buffers'
	test "$(stat peer0_lent_pages)" -gt 0
	ip addr add $me/24 dev drack0
	ip link set drack0 up
	wait_until 100 carrier_is drack0 1
	flag 61 reloaded
	await 62 sent-more
	above rx_fallback_copy_frames 0
	note "host 1 with the slow reader: $(stat rx_lent_frames) frames lent, $(stat rx_fallback_copy_frames) copied (lend cap 24)"
	touch /tmp/go
	await 63 held-checked
	kill $held_srv
	wait $held_srv 2>/dev/null || true
	# The socket let go: every adopted buffer went back.
	wait_until 100 prints 0 stat peer0_lent_pages
else
	await 60 holding
	nicbench tcp --to "$peer:7010" --bytes 20000 --seed 11 --answer-secs 150 > /tmp/held.out 2>&1 &
	held=$!
	await 61 reloaded
	wait_until 100 nicbench tcp --to "$peer:7009" --bytes 1000 >/dev/null 2>&1
	nicbench tcp --to "$peer:7009" --bytes $((2 << 20)) --seed 12
	flag 62 sent-more
	wait $held || true
	note "host 0: held transfer: $(cat /tmp/held.out)"
	grep -q 'checksum matches' /tmp/held.out
	flag 63 held-checked
fi

# Jumbo frames: three buffers per frame.
ip link set drack0 mtu 9000
flag $((41 + h)) mtu-$h
await $((42 - h)) mtu-$p
rx0=$(stat rx_bytes)
note "$(ping -c 3 -W 5 -s 8972 "$peer" | tail -n 2)"
above rx_bytes $((rx0 + 3 * 9000))
note "host $h jumbo: rx_bytes +$(($(stat rx_bytes) - rx0))"
flag $((43 + h)) jumbo-$h
await $((44 - h)) jumbo-$p

# rmmod under traffic: host 0 streams to host 1, which unloads midway.
if [ "$h" = 0 ]; then
	nicbench tcp --to "$peer:7009" --bytes $((64 << 20)) >/dev/null 2>&1 &
	tcp=$!
	flag 45 streaming-0
	# Host 1's heartbeat stops: after the lease the carrier goes.
	wait_until 200 carrier_is drack0 0
	note "host 0: carrier down after host 1's rmmod: $(dmesg | grep 'drack_netdev: peer 1' | tail -n 1)"
	reads $peerdir/alive = 0
	reads $peerdir/tx_session = down
	kill $tcp 2>/dev/null || true
	wait $tcp 2>/dev/null || true
else
	await 45 streaming-0
	wait_until 50 above rx_frames 100
	kill $srv
	rmmod drack_netdev
	refute test -e /sys/class/net/drack0
fi
kill $srv 2>/dev/null || true
wait 2>/dev/null || true
[ "$h" = 1 ] || rmmod drack_netdev
# Both gone before both load again.
flag $((70 + h)) unloaded-$h
await $((71 - h)) unloaded-$p

# A stall past the lease without a crash: both load drack0 again with a
# 300 ms lease (beluga's stays 2 s, which the stall must not reach);
# the harness stops host 1's VM for 1.2 s (SIGSTOP); host 0 declares it
# dead; host 1 sees its own beats lapsed and rejoins in a new epoch by
# itself, and traffic flows again without a reload.
drack_up 300
flag $((64 + h)) short-up-$h
await $((65 - h)) short-up-$p
if [ "$h" = 1 ]; then
	echo "@@ PAUSE-ME $((1200 * slow))" > /dev/ttyS1
	# The harness stops the VM within its 200 ms poll; this spans it.
	sleep 1
	wait_until 100 dmesg_has 'rejoining in epoch'
	note "host 1: $(dmesg | grep 'rejoining in epoch' | tail -n 1)"
	wait_until 100 carrier_is drack0 1
	flag 66 rejoined-1
	await 67 pinged-0
else
	wait_until 100 dmesg_has "peer 1: no heartbeat for a lease ($((300 * slow)) ms): dead"
	await 66 rejoined-1
	wait_until 100 ping -c 1 -W 2 "$peer"
	ping -c 3 -W 5 "$peer"
	note "host 0: $(dmesg | grep 'drack_netdev: peer 1' | tail -n 2 | tr '\n' ' ')"
	flag 67 pinged-0
fi
rmmod drack_netdev
{
	echo "@@ BEGIN drack-report host$h"
	sed 's/^/@|/' /tmp/drack.report
	echo "@@ END"
} > /dev/ttyS1
flag $((46 + h)) drack-done-$h
await $((47 - h)) drack-done-$p
trap - EXIT
