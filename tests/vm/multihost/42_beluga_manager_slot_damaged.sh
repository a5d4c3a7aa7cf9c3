# Damaged state is not evidence: while both hosts allocate and free, the
# harness (the QEMU host, outside both VMs) keeps zeroing the magic word
# of the live manager's host slot in the shared pool. Host 1 must never
# take the manager role (only an observed lease expiry may move it), and
# neither host may ever see its objects overwritten by the other (the
# stress stamps and checks what it owns).
set -e
. /multihost/flags.inc

mark=$(dmesg | wc -l)
test "$(cat $sys/manager)" = 0
if [ "$h" = 1 ]; then
	# Host 0's slot, as a byte offset into the region the harness pokes.
	size=$(cat /sys/bus/dax/devices/dax0.0/size)
	eval "$(cxlf-contract pool-layout --size "$size" --hosts 4 --objects 256)"
	dax_start=$(cat /sys/bus/dax/devices/dax0.0/resource)
	region_start=$(cat /sys/bus/cxl/devices/region0/resource)
	slot0=$((dax_start - region_start + host_table_off))
	# Every 0.3 s, longer than the pool's scan bound (an eighth of the
	# lease: 0.25 s), so the manager reads its slot back intact between
	# pokes; the lease scales on a slow kernel, and so does this.
	pause=$(awk -v s="$slow" 'BEGIN { print 0.3 * s }')
	(
		i=0
		while [ $i -lt 25 ]; do
			printf '@@ POKE %x 00000000\n' $slot0 > /dev/ttyS1
			sleep $pause
			i=$((i + 1))
		done
	) &
	poker=$!
fi
cxlf-contract beluga-stress --seconds 10 --keep 0 --seed $((h + 21))
[ "$h" = 1 ] && wait $poker
flag $((10 + h)) damaged-$h
await $((11 - h)) damaged-$((1 - h))
test "$(cat $sys/manager)" = 0
if dmesg | tail -n +$((mark + 1)) | grep -q "host 1 manages the pool"; then
	echo "host 1 took over the pool on a damaged manager slot" >&2
	exit 1
fi
grep -q '^0 live$' $sys/lease_state
