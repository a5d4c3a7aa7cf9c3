# mchannel_sched on one host: the ioctl contract (every bad argument gets
# its errno, the renice rule for uid 1000), weighted shares, threads
# created after a process is attached are covered, a throttled process
# can be killed, and unloading under load releases every thread.
set -e
. /lib/cxlfabric/lib.sh
# mchannel_sched uses beluga_dax's region API for cross-host slots only
# (pool=), and finds it when it does: it depends on no module, loads
# without beluga_dax, and pool= without beluga_dax fails saying why.
# (busybox's modinfo reads modules.dep first, which the guest lacks.)
ko=/lib/cxlfabric/mchannel_sched.ko
dep=/lib/modules/$(uname -r)/modules.dep
[ -e "$dep" ] || { mkdir -p "${dep%/*}" && : > "$dep"; }
test "$(modinfo -F license $ko)" = GPL
depends=$(modinfo -F depends $ko)
test -z "$depends"
! grep -q '^beluga_dax ' /proc/modules || exit 1
insmod $ko
test -c /dev/mchannel
rmmod mchannel_sched
! insmod $ko pool=beluga0.0 2>/dev/null || exit 1
dmesg | tail -n 5 | grep -q 'beluga_dax is not loaded'
! grep -q '^mchannel_sched ' /proc/modules || exit 1
# With beluga_dax, a pool that does not exist is refused by beluga.
insmod /lib/cxlfabric/beluga_dax.ko
# Sharing the fabric needs a pool and a sane host index and lease; each
# refusal says why.
refute insmod /lib/cxlfabric/mchannel_sched.ko pool=nosuchpool 2>/dev/null
dmesg | tail -n 5 | grep -q 'no region "mchannel.fabric.v1" in pool "nosuchpool"'
refute insmod /lib/cxlfabric/mchannel_sched.ko pool=nosuchpool host_index=16 2>/dev/null
dmesg | tail -n 5 | grep -q 'host_index=16 is not below 16'
refute insmod /lib/cxlfabric/mchannel_sched.ko pool=nosuchpool lease_ms=5 2>/dev/null
dmesg | tail -n 5 | grep -q 'lease_ms=5 is outside'
insmod /lib/cxlfabric/mchannel_sched.ko
test -c /dev/mchannel
threads=/sys/class/misc/mchannel/threads

cxlf-contract mchannel-errnos
test "$(cat $threads)" = 0

# Two streaming threads, one channel each, on a component that carries one
# of them at full speed: each runs its weight's share of the time, and runs
# freely again once detached. The tolerance is for TCG, whose timers fire
# up to a millisecond late (each overrun is paid back by later windows;
# the check prints how much of its granted budget each channel ran).
cxlf-contract mchannel-share --weights 1,1 --t-w-us 1000 --seconds 2 --tolerance 0.1
cxlf-contract mchannel-share --weights 2,1 --t-w-us 1000 --seconds 2 --tolerance 0.1
cxlf-contract mchannel-share --weights 2,1 --t-w-us 100 --seconds 2 --tolerance 0.1
# HCSFQ: two tenants of equal weight, one with two channels: the tenants
# split the component, the first tenant's channels split its half.
cxlf-contract mchannel-share --tree 'A/=1,B/=1,a1=1@A,a2=1@A,b1=1@B' --t-w-us 1000 --seconds 2 --tolerance 0.1
# The three meters count alike: the emulated one, a perf event per thread
# (on-CPU nanoseconds, a software event: TCG has no PMU for LLC misses)
# and the threads' own reports, each 1 GB/s while running: equal shares.
cxlf-contract mchannel-share --tree 'e=1,p=1:perf,r=1:reported' --meter 1000 --t-w-us 1000 --seconds 2 --tolerance 0.1
test "$(cat /sys/class/misc/mchannel/perf_misses)" = 0
# The congestion model: a component configured 4x faster than the device
# behind it comes down to the device, which the channels then share.
cxlf-contract mchannel-model --over 4 --seconds 3

# A process attached before it creates its threads (mchannel run): the
# stream's thread joins through the fork probe, and the windows close.
c=$(mchannel component --name run-port --kind host-port --capacity 50000000)
ch=$(mchannel create --name run --path "$c" --meter 100 --t-w-us 1000)
mchannel run --channel "$ch" -- cxlf-contract mchannel-stream --threads 1 --seconds 60 &
pid=$!
wait_until 50 reads $threads -ge 2
sleep 0.5
stat=$(mchannel stat "$ch" --json)
echo "$stat" | grep -q '"threads": 2'
test "$(echo "$stat" | sed -n 's/.*"windows": \([0-9]*\).*/\1/p')" -gt 0
# sysfs shows the same channel and its component, one value per file,
# refreshed by the control loop; list and top read them.
sys=/sys/class/misc/mchannel
test "$(cat $sys/channels/run/id)" = "$ch"
test "$(cat $sys/components/run-port/capacity)" = 50000000
test "$(cat $sys/components/run-port/kind)" = 1
test "$(cat $sys/channels/run/meter)" = 1
test "$(cat $sys/components/run-port/model_capacity)" = 0
wait_until 20 reads $sys/channels/run/threads = 2
test "$(cat $sys/channels/run/windows)" -gt 0
test "$(cat $sys/channels/run/rate)" -gt 0
mchannel list --json | grep -q '"name": "run"'
mchannel list | grep -q '^[0-9]* *run-port *host-port'
top=$(mchannel top --count 2 --interval-ms 200)
echo "$top" | grep -Eq "^$ch +run +1 +2 .* [0-9]+\.[0-9]+ +[0-9]+\.[0-9]+$"
# A throttled process dies at once when killed, and leaves the table.
kill -9 $pid
start=$(date +%s)
wait $pid || true
test $(($(date +%s) - start)) -le 2
wait_until 20 reads $threads = 0
# A destroyed channel's directory goes with it. Meters and the model from
# the CLI.
mchannel create --name gone --path "$c" --perf task-clock --bytes-per-event 2 >/dev/null
test -d $sys/channels/gone
test "$(cat $sys/channels/gone/meter)" = 2
mchannel set "$(cat $sys/channels/gone/id)" --reported
test "$(cat $sys/channels/gone/meter)" = 3
refute mchannel set "$(cat $sys/channels/gone/id)" --perf cycles 2>/dev/null
mchannel inject --component "$c" --model-capacity 40000000
wait_until 20 reads $sys/components/run-port/model_capacity = 40000000
mchannel inject --component "$c" --ppm 0
# A perf channel whose event changes keeps counting: its threads get
# counters for the new event (on-CPU time, then CPU clock).
pc=$(mchannel create --name perf-switch --path "$c" --perf task-clock --bytes-per-event 1)
mchannel run --channel "$pc" -- cxlf-contract mchannel-stream --threads 1 --seconds 4 >/dev/null &
prun=$!
wait_until 50 reads $sys/channels/perf-switch/rate -gt 1000000
mchannel set "$pc" --perf 1:0 --bytes-per-event 1
sleep 1
test "$(cat $sys/channels/perf-switch/rate)" -gt 1000000
wait $prun
mchannel destroy "$pc"
mchannel destroy "$(cat $sys/channels/gone/id)"
test ! -e $sys/channels/gone
# A channel's path from the CXL topology: the host bridge, switch and
# endpoint on the way to a memory device, each a component named after its
# port, registered by the first channel that needs it.
mem=$(ls /sys/bus/cxl/devices | grep '^mem' | head -n 1)
refute mchannel create --name to-cxl --cxl "$mem" 2>/dev/null
cx=$(mchannel create --name to-cxl --cxl "$mem" --capacity 100000000 --meter 10)
ep=$(ls $sys/components | grep '^endpoint' | head -n 1)
test "$(cat $sys/components/$ep/kind)" = 3
test "$(cat $sys/components/port*/kind | sort | tr '\n' ' ')" = "1 2 "
cx2=$(mchannel create --name to-cxl-2 --cxl "$mem" --meter 10)
mchannel destroy "$cx2"
mchannel destroy "$cx"
# mchannel run with a channel of its own (numactl-like): a component for
# a tenth of a stream holds the command's thread to about a tenth, the
# channel goes when the command ends, and its exit status comes back. An
# unattached thread beside it runs unaffected.
side=$(mchannel component --name side-port --kind host-port --capacity 10000000)
mchannel run --name side --path "$side" --meter 100 --t-w-us 1000 -- \
	cxlf-contract mchannel-stream --threads 1 --seconds 3 --at-most 0.2 &
runner=$!
wait_until 50 test -d $sys/channels/side
cxlf-contract mchannel-stream --threads 1 --seconds 2 --at-least 0.85
wait $runner
test ! -e $sys/channels/side
# A thread attached from outside while it runs is held from then on, even
# alone on its CPU, where no switch would make the scheduler probe see it.
st=$(mchannel create --name settle --path "$side" --meter 100 --t-w-us 1000)
taskset 2 cxlf-contract mchannel-stream --threads 1 --seconds 4 >/dev/null &
sp=$!
sleep 0.5
mchannel attach --channel "$st" --pid $sp --process
sleep 0.5
ticks() { awk '{ print $14 + $15 }' /proc/$sp/stat; }
t0=$(ticks)
sleep 1
t1=$(ticks)
echo "attached from outside: $((t1 - t0)) of 100 ticks in 1 s (its share: 10)"
test $((t1 - t0)) -le 35
wait $sp
mchannel destroy "$st"
rc=0
mchannel run --name side --path "$side" -- sh -c 'exit 3' || rc=$?
test $rc = 3
test ! -e $sys/channels/side
# A group from the CLI, a channel under it, and the order they go in.
g=$(mchannel create --name tenant-x --group --path "$c")
x=$(mchannel create --name in-x --parent "$g" --meter 10)
test "$(cat $sys/channels/in-x/parent)" = "$g"
refute mchannel destroy "$g" 2>/dev/null
mchannel destroy "$x"
mchannel destroy "$g"

# Unloading under load: every attached thread is let go and runs on.
mchannel run --channel "$ch" -- cxlf-contract mchannel-stream --threads 2 --seconds 3 &
pid=$!
wait_until 50 reads $threads -ge 3
sleep 0.5
rmmod mchannel_sched
refute grep -q '^mchannel_sched ' /proc/modules
wait $pid
dmesg | grep -q "mchannel_sched: unloading"
rmmod beluga_dax
