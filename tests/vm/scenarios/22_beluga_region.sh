# The in-kernel region API: a module (beluga_client_test, standing in for
# mchannel_sched and drack_netdev) obtains a named shared region, writes
# it through beluga_dax's flushed accessors, checks the access sections
# (in atomic context, bounds, write-back and invalidate ranges, page
# references), and gives it back at unload (the named object stays in the
# pool until someone frees it). User space sees the object and the
# kernel's bytes through its own mapping; beluga_dax cannot be unloaded
# while the user is loaded; an unbind under a kernel user runs its revoke
# callback, completes, and later access sections fail; a page reference
# the user keeps holds the pool's memory until it is dropped; an object a
# user made under the kernel user's name is refused.
set -e
. /lib/cxlfabric/lib.sh
beluga_fresh

insmod /lib/cxlfabric/beluga_client_test.ko size_mib=3
dmesg | grep -q 'beluga_client_test: region kclient.test: 4194304 bytes at 0x'
for c in atomic bounds ranges pages; do
	dmesg | grep -q "beluga_client_test: check $c: ok"
done
beluga list --json | tr -d ' \n' | grep -q '"name":"kclient.test","size":4194304,[^}]*"uid":0,"mode":"600"'
cxlf-contract beluga-pattern --name kclient.test --len 65536
# The user holds beluga_dax.
refute rmmod beluga_dax 2>/dev/null
rmmod beluga_client_test
dmesg | tail -n 5 | grep -q 'beluga_client_test: access while held: ok'
beluga list | grep -q kclient.test
beluga free kclient.test
wait_until 50 sh -c '! beluga list | grep -q kclient.test'

# A user who can open the pool squats the kernel user's name first: the
# kernel user refuses the object (it is not the kernel's), whichever of
# owner or mode differs.
# (busybox's setpriv cannot change uids: su to a user of uid 1000.)
mkdir -p /etc
grep -q '^squatter:' /etc/passwd 2>/dev/null ||
	echo 'squatter:x:1000:1000::/tmp:/bin/sh' >> /etc/passwd
chmod 666 /dev/beluga0.0
su squatter -c 'beluga alloc --size 2M --name kclient.test --shared --mode 600'
chmod 660 /dev/beluga0.0
beluga list --json | tr -d ' \n' | grep -q '"name":"kclient.test",[^}]*"uid":1000'
refute insmod /lib/cxlfabric/beluga_client_test.ko 2>/dev/null
dmesg | tail -n 5 | grep -q 'region "kclient.test" refused: the object is owned by uid 1000 mode 600'
beluga free kclient.test
wait_until 50 sh -c '! beluga list | grep -q kclient.test'
beluga alloc --size 2M --name kclient.test --shared --mode 666
refute insmod /lib/cxlfabric/beluga_client_test.ko 2>/dev/null
dmesg | tail -n 5 | grep -q 'region "kclient.test" refused: the object is owned by uid 0 mode 666'
beluga free kclient.test
wait_until 50 sh -c '! beluga list | grep -q kclient.test'

# No pool of that name: the load fails cleanly.
echo dax0.0 > $dax/beluga_dax/unbind
refute insmod /lib/cxlfabric/beluga_client_test.ko 2>/dev/null
dmesg | tail -n 5 | grep -q 'no pool named "beluga0.0"'

# Unbind under a kernel user: its callback runs, the unbind completes,
# its access sections fail; then unload it.
echo dax0.0 > $dax/beluga_dax/bind
beluga wait
insmod /lib/cxlfabric/beluga_client_test.ko
echo dax0.0 > $dax/beluga_dax/unbind
dmesg | tail -n 20 | grep -q 'beluga_client_test: revoke callback ran'
rmmod beluga_client_test
dmesg | tail -n 5 | grep -q 'beluga_client_test: access after revoke refused'

# The same with a page reference held: the unbind completes, the memory
# stays claimed until the user drops the page.
echo dax0.0 > $dax/beluga_dax/bind
beluga wait
released=$(dmesg | grep -c "beluga0.0: released" || true)
insmod /lib/cxlfabric/beluga_client_test.ko hold_page=1
echo dax0.0 > $dax/beluga_dax/unbind
dmesg | tail -n 20 | grep -q 'beluga_client_test: revoke callback ran'
dmesg | tail -n 20 | grep -q 'beluga0.0: unbound with 1 pages still referenced'
test "$(dmesg | grep -c "beluga0.0: released")" -eq "$released"
rmmod beluga_client_test
dmesg | tail -n 5 | grep -q 'beluga_client_test: dropping the held page'
wait_until 50 sh -c "test \$(dmesg | grep -c 'beluga0.0: released') -gt $released"
echo dax0.0 > $dax/device_dax/bind
rmmod beluga_dax
