# Calls interrupted by a signal while the other host serves them leave
# nothing behind: host 1 (not the manager) starts ALLOCs through its
# mailbox and interrupts them at moments from 0 to 300 ms (start-up, the
# request in flight, the clearing, the PUBLISH); whatever the manager
# had already allocated for an abandoned call is found by host 1's
# reconciliation (a barrier request, then the tables) and let go, so no
# unnamed object of host 1's remains once its processes are gone.
set -e
. /multihost/flags.inc

if [ "$h" = 1 ]; then
	i=0; interrupted=0; finished=0
	while [ $i -lt 30 ]; do
		beluga alloc --size 2M > /dev/null 2>&1 &
		p=$!
		usleep $((i * 10000))
		kill -INT $p 2>/dev/null || true
		rc=0; wait $p 2>/dev/null || rc=$?
		case $rc in
		0) finished=$((finished + 1)) ;;
		130) interrupted=$((interrupted + 1)) ;;
		esac
		i=$((i + 1))
	done
	echo "$interrupted ALLOCs interrupted, $finished finished"
	# The spread covered both sides of the call.
	test $interrupted -gt 0 && test $finished -gt 0
	unnamed_of_1() {
		beluga list --json | tr -d ' \n' | sed 's/},{/}\n{/g' |
			grep '"name":""' | grep -q '"owner_host":1'
	}
	none_of_1() { ! unnamed_of_1; }
	wait_until 200 none_of_1
fi
flag $((12 + h)) interrupted-$h
await $((13 - h)) interrupted-$((1 - h))
