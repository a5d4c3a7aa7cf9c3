# Every product module loads and unloads cleanly, twice, without a kernel
# warning.
set -e
for round in 1 2; do
	for m in beluga_dax mchannel_sched cxlnic_drv drack_netdev; do
		insmod /lib/cxlfabric/$m.ko
		grep -q "^$m " /proc/modules
	done
	for m in drack_netdev cxlnic_drv mchannel_sched beluga_dax; do
		rmmod $m
		! grep -q "^$m " /proc/modules
	done
done
! dmesg | grep -E 'Oops|BUG:|WARNING:|Call Trace'
