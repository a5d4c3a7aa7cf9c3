# Allocate+free through the ioctl path, per call: a no-op ioctl is the
# anchor; host 0 (the manager) allocates locally; host 1 goes through its
# mailbox to the manager on host 0.
set -e
. /bench/lib.inc
if [ "$h" = 0 ]; then
	beluga bench alloc-free --seconds 3
	flag 1 local-done
	await 2 remote-done
else
	await 1 local-done
	beluga bench alloc-free --seconds 3 | grep -v noop-ioctl
	flag 2 remote-done
fi
