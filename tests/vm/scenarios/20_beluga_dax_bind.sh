# beluga_dax binds a dax instance moved from device_dax, claims its range
# (visible in /proc/iomem) and judges the superblock through the
# shared-memory accessor: an unformatted pool (formatted from the kernel
# with `beluga format`), a formatted one (recognised after a rebind), and
# a corrupted one (one bit flipped), refused with the reason until an
# administrator formats it again. Unbinding releases the range and the
# instance works under device_dax again.
set -e
. /lib/cxlfabric/lib.sh
region
size=$(cat /sys/bus/dax/devices/dax0.0/size)
beluga_load lease_ms=1000
test -d $dax/beluga_dax
# Loading took nothing from device_dax.
test "$(basename "$(readlink /sys/bus/dax/devices/dax0.0/driver)")" = device_dax

# Kernel log lines since the last bind (never cleared: the harness checks
# the whole log for oopses at the end).
mark=0
since_bind() { dmesg | tail -n +$((mark + 1)); }
to_beluga() {
	echo dax0.0 > $dax/device_dax/unbind
	mark=$(dmesg | wc -l)
	echo dax0.0 > $dax/beluga_dax/bind
	grep -q beluga_dax /proc/iomem
	test -c /dev/beluga0.0
}
to_device_dax() {
	echo dax0.0 > $dax/beluga_dax/unbind
	refute grep -q beluga_dax /proc/iomem
	refute test -e /dev/beluga0.0
	echo dax0.0 > $dax/device_dax/bind
	test -c /dev/dax0.0
}
state() { beluga status --json | sed -n 's/.*"state": "\(.*\)".*/\1/p'; }

# Whatever an earlier run left: start from an unformatted pool.
daxio fill /dev/dax0.0 --offset 0 --len 4096 --seed 9
to_beluga
since_bind | grep -q "beluga_dax: beluga0.0: not formatted ($size bytes"
test "$(state)" = unformatted
test "$(cat /sys/class/misc/beluga0.0/state)" = unformatted
refute beluga alloc --size 2M 2>/dev/null

beluga format --hosts 8 --objects 1024
since_bind | grep -q "beluga_dax: beluga0.0: formatted: generation 1, 255 sections, 8 hosts, 1024 objects"
since_bind | grep -q "beluga_dax: beluga0.0: attached as host 0: generation 1"
beluga wait
test "$(state)" = ready
since_bind | grep -q "beluga_dax: beluga0.0: host 0 manages the pool"
to_device_dax
since_bind | grep -q "beluga_dax: beluga0.0: released"

# Formatted: recognised at the next bind.
to_beluga
since_bind | grep -q "beluga_dax: beluga0.0: attached as host 0: generation 1, 255 sections of 2 MiB, up to 8 hosts"
beluga wait
to_device_dax

# A damaged object table (the format's defaults: 8 hosts, 1024 objects;
# the pool core computes where the table starts) is refused by the host
# that would manage it: no allocation is served, the state says why, and
# formatting recovers.
to_beluga
beluga wait
beluga alloc --size 2M --name victim > /dev/null
to_device_dax
eval "$(cxlf-contract pool-layout --size "$size" --hosts 8 --objects 1024)"
daxio write /dev/dax0.0 --offset $((object_table_off + 8)) --text garbage
to_beluga
n=0
until [ "$(cat /sys/class/misc/beluga0.0/state)" = corrupt ]; do
	sleep 0.2; n=$((n + 1)); test $n -lt 100
done
since_bind | grep -q "beluga_dax: beluga0.0: pool tables refused (object entry fails its checksum); not managing"
refute beluga alloc --size 2M 2>/dev/null
beluga format
beluga wait
test "$(state)" = ready
to_device_dax

# Bit 200 lies in the uuid: the checksum no longer matches.
cxlf-contract write-superblock --size "$size" --flip-bit 200
to_beluga
since_bind | grep -q "beluga_dax: beluga0.0: superblock refused: BadChecksum"
test "$(state)" = refused
# An administrator can format it again.
beluga format
beluga wait
test "$(state)" = ready
to_device_dax

daxio fill /dev/dax0.0 --offset 0 --len 4096 --seed 3
daxio verify /dev/dax0.0 --offset 0 --len 4096 --seed 3
rmmod beluga_dax
