# The in-kernel region API: a module (beluga_client_test, standing in for
# mchannel_sched and drack_netdev) obtains a named shared region, writes
# it through beluga_dax's flushed accessors, and gives it back at unload
# (the named object stays in the pool until someone frees it).
# User space sees the object and the kernel's bytes through its own
# mapping; beluga_dax cannot be unloaded while the user is loaded; an
# unbind under a kernel user is survived (the region just goes away).
set -e
. /lib/cxlfabric/lib.sh
beluga_fresh

insmod /lib/cxlfabric/beluga_client_test.ko size_mib=3
dmesg | grep -q 'beluga_client_test: region kclient.test: 4194304 bytes at 0x'
beluga list --json | tr -d ' \n' | grep -q '"name":"kclient.test","size":4194304,[^}]*"uid":0,"mode":"600"'
cxlf-contract beluga-pattern --name kclient.test --len 65536
# The user holds beluga_dax.
refute rmmod beluga_dax 2>/dev/null
rmmod beluga_client_test
beluga list | grep -q kclient.test
beluga free kclient.test
wait_until 50 sh -c '! beluga list | grep -q kclient.test'

# No pool of that name: the load fails cleanly.
echo dax0.0 > $dax/beluga_dax/unbind
refute insmod /lib/cxlfabric/beluga_client_test.ko 2>/dev/null
dmesg | tail -n 5 | grep -q 'no pool named "beluga0.0"'

# Unbind under a kernel user, then unload it.
echo dax0.0 > $dax/beluga_dax/bind
beluga wait
insmod /lib/cxlfabric/beluga_client_test.ko
echo dax0.0 > $dax/beluga_dax/unbind
rmmod beluga_client_test
echo dax0.0 > $dax/device_dax/bind
rmmod beluga_dax
