# Request/response round trips from host 1 to host 0 at queue depths 1 and
# 32, 64-byte messages: TCP over the VMs' virtio-net link (the anchor),
# CXL-RPC in a shared beluga object on the CXL pool, and CXL-RPC in
# RAM-backed shared memory (ivshmem).
set -e
. /bench/lib.inc
pool_up
n=10
for t in tcp pool ivshmem; do
	n=$((n + 1))
	if [ "$h" = 0 ]; then
		beluga bench rpc-server --transport $t --seconds 20 &
		server=$!
		flag $n serving-$t
		await $((n + 10)) done-$t
		wait $server
	else
		await $n serving-$t
		beluga bench rpc-client --transport $t --depth 1 --seconds 3 --label $t-qd1
		beluga bench rpc-client --transport $t --depth 32 --seconds 3 --label $t-qd32
		flag $((n + 10)) done-$t
	fi
done
