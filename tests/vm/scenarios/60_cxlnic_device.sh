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

# cxlnic_drv binds both NICs and declines the pool; unloading unbinds.
# Binding rings each NIC's own vector 0 and waits for it: MSI-X works.
insmod /lib/cxlfabric/cxlnic_drv.ko
drv=/sys/bus/pci/drivers/cxlnic_drv
test "$(ls $drv | grep -c '^0000:')" = 2
test "$(grep -c ' cxlnic_drv$' /proc/interrupts)" = 2
for n in $(grep ' cxlnic_drv$' /proc/interrupts | awk '{ print $2 + $3 }'); do
	test "$n" -ge 1
done
pool=$(dirname "$(daxio ivshmem)")
test ! -e $pool/driver
test "$(dmesg | grep -c 'CXL-NIC v1, 8 queue pairs')" -ge 2
# Unbound and bound again by hand, as an operator would.
nic=$(ls $drv | grep '^0000:' | head -n 1)
echo $nic > $drv/unbind
test ! -e $drv/$nic
echo $nic > $drv/bind
test -e $drv/$nic
rmmod cxlnic_drv
test ! -e $drv

# Each NIC is a network interface with the device's MAC, an MTU range up
# to 9000, no carrier until the device's link is up, and goes at unbind.
insmod /lib/cxlfabric/cxlnic_drv.ko
ifs=$(for d in $drv/0000:*; do ls $d/net; done)
test "$(echo $ifs | wc -w)" = 2
for i in $ifs; do
	grep -q '^52:54:00:c1:00:0[12]$' /sys/class/net/$i/address
	test "$(cat /sys/class/net/$i/mtu)" = 1500
	ip link set $i mtu 9000
	test "$(cat /sys/class/net/$i/mtu)" = 9000
	refute ip link set $i mtu 9001 2>/dev/null
	ip link set $i up
	test "$(cat /sys/class/net/$i/carrier)" = 0
	ip link set $i down
done
rmmod cxlnic_drv
for i in $ifs; do test ! -e /sys/class/net/$i; done

# The operator's tools: iproute2 and ethtool (not busybox applets).
ip -V | grep -q iproute2
insmod /lib/cxlfabric/cxlnic_drv.ko
for d in $drv/0000:*; do
	i=$(ls $d/net)
	ethtool -i $i | grep -q '^driver: cxlnic_drv$'
	ethtool -i $i | grep -q "^bus-info: $(basename $d)\$"
	ip -d link show $i | grep -q 'maxmtu 9000'
done
rmmod cxlnic_drv
