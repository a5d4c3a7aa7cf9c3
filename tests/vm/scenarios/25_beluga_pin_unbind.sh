# Unbind under an io_uring long-term pin (issue #25): the unbind waits
# while the pin is held and the mapping raises SIGBUS; once the pinning
# process closes its ring and exits, the unbind completes and the pool's
# memory is released, whoever unbinds (a shell, a thread of the pinning
# process, a child forked without exec that inherited the ring).
set -e
. /lib/cxlfabric/lib.sh
beluga_fresh
for by in exec thread fork; do
	echo "== unbind by $by" | tee /dev/kmsg
	released=$(dmesg | grep -c "beluga0.0: released" || true)
	cxlf-contract beluga-pin-unbind --dev /dev/beluga0.0 --by $by
	test "$(dmesg | grep -c "beluga0.0: released")" -gt "$released"
	echo dax0.0 > $dax/beluga_dax/bind
	beluga wait
done
beluga_done
