# The CXL-NIC testbed: the harness's device model serves two ports as
# ivshmem-doorbell devices (MSI-X in BAR1), each with the NIC's header
# at the start of BAR2; the ivshmem-plain pool (no BAR1) is not one.
set -e
. /lib/cxlfabric/lib.sh
n=0
for d in /sys/bus/pci/devices/*; do
	[ "$(cat $d/vendor)" = 0x1af4 ] && [ "$(cat $d/device)" = 0x1110 ] || continue
	if [ -e $d/resource1 ]; then
		daxio wait $d/resource2 --offset 0 --text CXLNIC --timeout 10
		n=$((n + 1))
	else
		test "$(daxio ivshmem)" = $d/resource2
	fi
done
test $n = 2

