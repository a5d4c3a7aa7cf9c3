# 2 MiB page-fault throughput: map 64 MiB, touch every 4 KiB, unmap, again.
# Anchor: device_dax mapping the same device; then a beluga object of the
# same size (PMD mappings in both). Host 0 measures, then leaves the pool
# formatted for the next benchmarks; host 1 joins it.
set -e
. /bench/lib.inc
insmod /lib/cxlfabric/beluga_dax.ko host_index=$h lease_ms=2000
if [ "$h" = 0 ]; then
	beluga bench fault --devdax /dev/dax0.0 --mib 64 --seconds 3 --label device-dax
	echo dax0.0 > $dax/device_dax/unbind
	echo dax0.0 > $dax/beluga_dax/bind
	beluga format --hosts 4 --objects 256 > /dev/null
	beluga wait
	beluga bench fault --mib 64 --seconds 3 --label beluga
	flag 0 pool-ready
else
	await 0 pool-ready
	echo dax0.0 > $dax/device_dax/unbind
	echo dax0.0 > $dax/beluga_dax/bind
	beluga wait
fi
