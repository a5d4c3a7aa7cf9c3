# drack_netdev under faults from outside the protocol (run after 48,
# which leaves drack unloaded on both hosts).
#
# Corrupted references, racing the destination: while host 1 sends host
# 0 a checksummed TCP transfer, it flips a byte in every entry host 0 has
# not read yet (cxlf-contract drack-scribble, root mapping the drack
# region as a stray writer could). Host 0 drops and counts those it
# reads broken (rx_bad_crc_entries) and refuses each by position on the
# return ring; host 1 takes back exactly as many buffers as host 0
# refused, none stays out, the transfer arrives intact (TCP resends what
# was dropped) and ping works after.
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
. /multihost/drack.inc
trap "drack_debug 'drack\\|beluga'" EXIT
# The numbers, for the run's results log (block drack-faults).
note() { echo "$*" >> /tmp/drack-faults.report; }
: > /tmp/drack-faults.report

# Corrupted references, racing the destination: host 1 sends host 0 a
# checksummed TCP transfer while it flips a byte in every entry host 0
# has not read yet.
drack_up 2000
flag $((72 + h)) cr-up-$h
await $((73 - h)) cr-up-$p
if [ "$h" = 0 ]; then
	bad=$(stat rx_bad_crc_entries)
	nicbench serve --port 7021 &
	srv=$!
	flag 74 cr-serving
	await 75 cr-sent
	kill $srv
	wait $srv 2>/dev/null || true
	# Some entries were read broken: dropped, counted, refused.
	above rx_bad_crc_entries "$bad"
	note "host 0: $(($(stat rx_bad_crc_entries) - bad)) entries with a bad CRC, $(stat rx_refused_entries) refused"
	# Its count, ended by a dot (flags compare as prefixes).
	flag 76 "cr-refused-$(stat rx_refused_entries)."
	await 77 cr-done-1
	ping -c 3 -W 5 "$peer" >/dev/null
else
	await 74 cr-serving
	wait_until 100 nicbench tcp --to "$peer:7021" --bytes 1000 >/dev/null 2>&1
	cxlf-contract drack-scribble --src 1 --dst 0 --for-ms $((3000 * slow)) > /tmp/scribble.out &
	scribbler=$!
	# TCP carries the transfer intact through the dropped frames (the
	# client checks the server's hash against its own).
	nicbench tcp --to "$peer:7021" --bytes $((2 << 20)) --seed 21
	wait $scribbler
	note "host 1: $(cat /tmp/scribble.out)"
	flag 75 cr-sent
	# Every entry host 0 refused gave its buffer back here, and none
	# stays out.
	test "$(stat tx_refused_entries)" -gt 0
	same_count() {
		daxio wait "$shm" --offset $((base + 76 * 256)) \
			--text "cr-refused-$(stat tx_refused_entries)." --timeout 1 >/dev/null 2>&1
	}
	wait_until 100 same_count
	all_back() { test "$(stat peer0_tx_buffers_out)" = 0; }
	wait_until 100 all_back
	note "host 1: $(stat tx_refused_entries) buffers back by refusal"
	flag 77 cr-done-1
	ping -c 3 -W 5 "$peer" >/dev/null
fi
rmmod drack_netdev

# beluga unbind under lent pages.
flag $((78 + h)) ub-unloaded-$h
await $((79 - h)) ub-unloaded-$p
drack_up 2000
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
	note "host 1: $(dmesg | grep 'beluga0.0: unbound with' | tail -n 1)"
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
{
	echo "@@ BEGIN drack-faults host$h"
	sed 's/^/@|/' /tmp/drack-faults.report
	echo "@@ END"
} > /dev/ttyS1
trap - EXIT
