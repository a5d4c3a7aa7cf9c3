# 41's request/response and TCP measurements again, with drack's pool on
# RAM instead of the emulated CXL window: a shared NVDIMM (one backing
# file for both QEMUs) as a devdax instance that beluga binds
# (`ram_pool_create`/`ram_pool_probe` in lib.sh). Under TCG a pool access
# here costs what any RAM access costs, as virtio-net's buffers do, so
# the ratios to virtio-net say what drack's protocol costs, not what the
# window costs; the two modes on the same pool compare their copies.
# virtio-net between the same two VMs is the anchor, measured in the
# same rounds. Idle cost and first packet after idle do not depend on the
# pool: 41 has them.
set -e
. /bench/lib.inc
. /bench/drack.inc
rounds=3

beluga_load host_index=$h lease_ms=2000
if [ "$h" = 0 ]; then
	ram_pool_create
	flag 75 ram-dax-made
	beluga_bind dax1.0
	beluga --dev /dev/beluga1.0 format --hosts 2 --objects 64 > /dev/null
	beluga --dev /dev/beluga1.0 wait
	flag 76 ram-pool-ready
else
	await 75 ram-dax-made
	ram_pool_probe
	await 76 ram-pool-ready
	beluga_bind dax1.0
	beluga --dev /dev/beluga1.0 wait
fi

if [ "$h" = 1 ]; then
	drack_up beluga1.0 ram
	nicbench serve --port 7001 &
	server=$!
	flag 71 ram-serving
	for r in $(seq $rounds); do
		for m in by-reference by-value; do
			await 72 "ram-set-$m-$r"
			ethtool --set-priv-flags drack0 by-value $([ $m = by-value ] && echo on || echo off)
			flag 73 "ram-ready-$m-$r"
		done
	done
	await 74 ram-done
	kill $server
	wait $server 2>/dev/null || true
else
	drack_up beluga1.0 ram
	await 71 ram-serving
	for r in $(seq $rounds); do
		measure virtio-net 10.0.0.2
		for m in by-reference by-value; do
			flag 72 "ram-set-$m-$r"
			ethtool --set-priv-flags drack0 by-value $([ $m = by-value ] && echo on || echo off)
			await 73 "ram-ready-$m-$r"
			measure drack-$m $peer
		done
	done
	# What drack's path costs per byte on this pool, beside the window's.
	echo "pool: RAM (NVDIMM devdax $(cat /sys/bus/dax/devices/dax1.0/size) bytes)"
	flag 74 ram-done
fi
ip link set drack0 down
rmmod drack_netdev
