# Allocate+free of a 2 MiB object through the ioctl path, per call: host 0
# (the manager) allocates locally (the anchor); host 1 goes through its
# mailbox to the manager on host 0. Each reports the time per call with
# and without the part it spent clearing the section (noclear_call_ns):
# clearing is the same work on either host, so the second ratio is what
# the mailbox costs. A no-op ioctl on host 0 gives the floor of a call.
set -e
. /bench/lib.inc
pool_up
if [ "$h" = 0 ]; then
	beluga bench alloc-free --seconds 3
	flag 1 local-done
	await 2 remote-done
else
	await 1 local-done
	beluga bench alloc-free --seconds 3 | grep -v noop-ioctl
	flag 2 remote-done
fi
