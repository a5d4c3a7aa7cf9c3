# mchannel_sched on two hosts sharing one fabric component through slots
# in the beluga pool (bound and formatted by 40): each host streams in a
# channel of weight 1 through switch "cxl-sw"; together they may use the
# switch's capacity (one thread's demand), so each runs half of the time.
# Host 0 owns the switch. Host 1's death (scenario 50) hands host 0 the
# whole switch after the lease.
set -e
. /multihost/flags.inc
mch=/sys/class/misc/mchannel

# Host 0 loads first, so the fabric region (a named object, which stays
# counted to the host that allocated it) is host 0's: scenario 50 counts
# host 1's sections after its death.
[ "$h" = 0 ] || await 20 mchannel-loaded-0
insmod /lib/cxlfabric/mchannel_sched.ko pool=beluga0.0 host_index=$h lease_ms=$((1000 * slow))
[ "$h" = 1 ] || flag 20 mchannel-loaded-0
c=$(mchannel component --name cxl-sw --kind switch --capacity 100000000)
ch=$(mchannel create --name stream-$h --path "$c" --meter 100 --t-w-us 1000)
flag $((14 + h)) mchannel-$h
await $((15 - h)) mchannel-$((1 - h))
# Each sees the other, and both agree on the owner.
wait_until 100 reads $mch/components/cxl-sw/peers = 1
test "$(cat $mch/components/cxl-sw/owner)" = 0

out=$(mchannel run --channel "$ch" -- cxlf-contract mchannel-stream --threads 1 --seconds 6)
echo "$out"
f=$(echo "$out" | sed -n 's/^thread 0: run fraction \([0-9.]*\),.*/\1/p')
# Half of the switch each, within 0.12 (TCG timers, and the hosts start
# their streams up to a poll interval apart).
awk -v f="$f" 'BEGIN { exit !(f > 0.38 && f < 0.62) }'
echo "host $h: run fraction $f of the shared switch (computed 0.5)"
flag $((16 + h)) streamed-$h
await $((17 - h)) streamed-$((1 - h))
