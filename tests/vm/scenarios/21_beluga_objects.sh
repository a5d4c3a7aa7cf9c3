# beluga_dax on one host: allocate, map (PMD mappings), write and read
# back, MAP_PRIVATE and out-of-object mappings refused, permissions per
# uid, write-back only, FREE unlinks while mappings keep working, new
# objects read zeros, a failed ALLOC copy-out leaves nothing
# (cxlf-contract beluga-contract); sysfs; the CLI; unbinding under a live
# mapping (the holder gets SIGBUS); module unload refused while a file is
# open.
set -e
. /lib/cxlfabric/lib.sh
beluga_fresh

cxlf-contract beluga-contract --dev /dev/beluga0.0
cxlf-contract beluga-race --dev /dev/beluga0.0 --seconds 3

test "$(cat $sys/state)" = ready
test "$(cat $sys/sections)" = 255
test "$(cat $sys/free_sections)" = 255
test "$(cat $sys/objects)" = 0
test "$(cat $sys/manager)" = 0
grep -q '^0 live$' $sys/lease_state

beluga alloc --size 5M --name kv.a --shared --mode 644 --json | grep -q '"size": 6291456'
beluga alloc --size 2M --name priv
test "$(cat $sys/objects)" = 2
test "$(cat $sys/free_sections)" = 251
grep -q '^0 4$' $sys/used_by_host
beluga list | grep -q 'kv.a (shared)'
beluga list --json | grep -q '"name": "priv"'
beluga share kv.a --json | grep -q '"shared": true'
beluga free priv
beluga free kv.a
# Freed with their last user (the reaper runs every 20 ms).
wait_until 50 pool_attr_is objects 0
test "$(cat $sys/fragmentation_permille)" = 0
test "$(cat $sys/cleared_bytes)" -gt 0
# The periodic work is counted, and keeps being counted.
w=$(cat $sys/work_ns)
test "$w" -gt 0
wait_until 50 reads $sys/work_ns -gt "$w"

# Unbind under a live mapping: the mapping raises SIGBUS afterwards.
rm -f /tmp/held
cxlf-contract beluga-hold --dev /dev/beluga0.0 --ready /tmp/held &
holder=$!
n=0; while ! test -e /tmp/held; do sleep 0.1; n=$((n + 1)); test $n -lt 200; done
# The open file keeps the module.
refute rmmod beluga_dax 2>/dev/null
echo dax0.0 > $dax/beluga_dax/unbind
refute grep -q beluga_dax /proc/iomem
rm /tmp/held
status=0; wait $holder || status=$?
test $status = 135   # 128 + SIGBUS
dmesg | grep -q "beluga_dax: beluga0.0: released"
echo dax0.0 > $dax/device_dax/bind
rmmod beluga_dax
