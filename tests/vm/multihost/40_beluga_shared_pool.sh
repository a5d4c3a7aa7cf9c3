# Two hosts attach one beluga pool (host 0 formats it and manages it).
# Both allocate and free concurrently, each writing its id into what it
# owns and checking that nothing it holds is ever overwritten; then an
# object shared by name carries checksummed data from host 0 to host 1.
# Host 1 keeps two private (named) objects and a process holding the
# shared one for the scenario that kills it; host 0 keeps holding it too.
set -e
. /lib/cxlfabric/lib.sh
. /multihost/flags.inc

grep -q "^beluga_dax " /proc/modules || insmod /lib/cxlfabric/beluga_dax.ko host_index=$h lease_ms=$((2000 * slow))
echo dax0.0 > $dax/device_dax/unbind
if [ "$h" = 0 ]; then
	echo dax0.0 > $dax/beluga_dax/bind
	beluga format --hosts 4 --objects 256
	beluga wait
	flag 0 formatted
else
	await 0 formatted
	echo dax0.0 > $dax/beluga_dax/bind
	beluga wait
fi
test "$(cat $sys/manager)" = 0
flag $((1 + h)) attached-$h
await $((2 - h)) attached-$((1 - h))
grep -q '^0 live$' $sys/lease_state
grep -q '^1 live$' $sys/lease_state
# A live host cannot be reclaimed.
refute beluga reclaim $((1 - h)) 2>/dev/null

cxlf-contract beluga-stress --seconds 20 --keep 2 --seed $((h + 1))
flag $((3 + h)) stressed-$h
await $((4 - h)) stressed-$((1 - h))
# Each host owns exactly its two kept objects' sections.
test "$(sed -n "s/^$h //p" $sys/used_by_host)" -gt 0

# Objects live while used: a process on each host keeps model.w.
rm -f /tmp/hold.model
if [ "$h" = 0 ]; then
	cxlf-contract beluga-share --name model.w --size $((6 << 20)) --seed 11 --hold /tmp/hold.model &
	wait_until 600 test -e /tmp/hold.model
	flag 5 shared
	await 6 opened
	beluga list --json | tr -d ' \n' | grep -q '"name":"model.w","size":6291456,[^}]*"holders":\[0,1\]'
else
	await 5 shared
	cxlf-contract beluga-share --name model.w --open --seed 11 --hold /tmp/hold.model &
	wait_until 600 test -e /tmp/hold.model
	flag 6 opened
fi
