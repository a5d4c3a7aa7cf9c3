# beluga_dax binds a dax instance moved from device_dax, claims its range
# (visible in /proc/iomem), reads the superblock through the shared-memory
# accessor and reports what it finds: an unformatted pool, a formatted one
# (superblock written through device_dax with the same pool crate), and a
# corrupted one (one bit flipped), refused with the reason. Unbinding
# releases the range and the instance works under device_dax again.
set -e
dax=/sys/bus/dax/drivers
test -c /dev/dax0.0 || cxlctl create-region --ways 2 --size 512M
size=$(cat /sys/bus/dax/devices/dax0.0/size)
grep -q '^beluga_dax ' /proc/modules || insmod /lib/cxlfabric/beluga_dax.ko
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
}
to_device_dax() {
	echo dax0.0 > $dax/beluga_dax/unbind
	! grep -q beluga_dax /proc/iomem
	echo dax0.0 > $dax/device_dax/bind
	test -c /dev/dax0.0
}

to_beluga
since_bind | grep -q "beluga_dax: dax0: not formatted ($size bytes"
to_device_dax
since_bind | grep -q "beluga_dax: dax0: released (unformatted pool)"

cxlf-selftest write-superblock --size "$size"
to_beluga
since_bind | grep -q "beluga_dax: dax0: pool generation 1, 255 sections of 2 MiB, up to 8 hosts"
to_device_dax

# Bit 200 lies in the uuid: the checksum no longer matches.
cxlf-selftest write-superblock --size "$size" --flip-bit 200
to_beluga
since_bind | grep -q "beluga_dax: dax0: superblock refused: BadChecksum"
to_device_dax

daxio fill /dev/dax0.0 --offset 0 --len 4096 --seed 3
daxio verify /dev/dax0.0 --offset 0 --len 4096 --seed 3
rmmod beluga_dax
