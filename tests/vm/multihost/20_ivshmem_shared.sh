# The same handshake over the RAM-backed ivshmem region.
set -e
shm=$(daxio ivshmem)
if [ "$CXLFABRIC_HOST" = 0 ]; then
	daxio fill "$shm" --offset 4096 --len 65536 --seed 77
	daxio write "$shm" --offset 0 --text ready-from-0
	daxio wait "$shm" --offset 128 --text ack-from-1 --timeout 120
else
	daxio wait "$shm" --offset 0 --text ready-from-0 --timeout 120
	daxio verify "$shm" --offset 4096 --len 65536 --seed 77
	daxio write "$shm" --offset 128 --text ack-from-1
fi
