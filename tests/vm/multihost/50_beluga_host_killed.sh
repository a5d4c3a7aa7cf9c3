# Host 1 dies without warning (the harness kills its VM). After its lease
# runs out, host 0 reclaims host 1's private sections (an object it
# allocates here), while the shared
# object host 0 also holds survives with its data; and host 0's mchannel
# stream, which shared switch cxl-sw with host 1's (scenario 47), gets
# the whole switch. Then a corrupted superblock is refused with a clear
# message.
set -e
. /multihost/flags.inc
mch=/sys/class/misc/mchannel

if [ "$CXLFABRIC_HOST" = 1 ]; then
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

# Host 0 streams too: while host 1 lives, each has part of the switch.
await 18 streaming-1
ch=$(cat $mch/channels/stream-0/id)
mchannel run --channel "$ch" -- cxlf-contract mchannel-stream --threads 1 --seconds 60 >/dev/null &
stream=$!
half() { test "$(cat $mch/channels/stream-0/t_r_ns)" -lt $(($(cat $mch/channels/stream-0/t_w_ns) * 7 / 10)); }
wait_until 100 half
flag 19 shared-0
await 7 dying
# After host 1's lease, host 0 alone uses the switch: no peer, and its
# channel's budget is the whole window again.
wait_until 300 reads $mch/components/cxl-sw/peers = 0
wait_until 100 reads $mch/channels/stream-0/t_r_ns = "$(cat $mch/channels/stream-0/t_w_ns)"
kill $stream; wait $stream || true
rmmod mchannel_sched
test "$(sed -n 's/^1 //p' $sys/used_by_host)" -gt 0
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
