# beluga_dax mappings are page-backed (ZONE_DEVICE, devmap entries), so
# what needs get_user_pages works on pool memory: process_vm_readv,
# /proc/pid/mem, O_DIRECT through a loop device, io_uring fixed buffers,
# vmsplice, mbind with MPOL_MF_STRICT (once an oops), and a long-term pin
# held across FREE keeps the sections until it is released
# (cxlf-contract beluga-gup). Then the device's files live in the dax
# device's own inode: opening the device through a node on another
# filesystem and unmounting it leaves no busy inode behind.
set -e
. /lib/cxlfabric/lib.sh
beluga_fresh

cxlf-contract beluga-gup --dev /dev/beluga0.0

# A revoked mapping kept by a process pins no memory type: unbind under
# it, bind again, and new objects on the same sections map write-back
# (the contract checks pat_memtype_list), while the old mapping raises
# SIGBUS.
rm -f /tmp/held
cxlf-contract beluga-hold --dev /dev/beluga0.0 --ready /tmp/held &
holder=$!
wait_until 200 test -e /tmp/held
echo dax0.0 > $dax/beluga_dax/unbind
echo dax0.0 > $dax/beluga_dax/bind
beluga wait
cxlf-contract beluga-contract --dev /dev/beluga0.0
rm /tmp/held
status=0; wait $holder || status=$?
test $status = 135   # 128 + SIGBUS

# A container's /dev: the first open after a rebind goes through a node
# on a tmpfs that is then unmounted.
echo dax0.0 > $dax/beluga_dax/unbind
echo dax0.0 > $dax/beluga_dax/bind
mkdir -p /tmp/cdev
mount -t tmpfs tmpfs /tmp/cdev
set -- $(tr ':' ' ' < $sys/dev)
mknod /tmp/cdev/beluga0.0 c $1 $2
beluga --dev /tmp/cdev/beluga0.0 wait
beluga --dev /tmp/cdev/beluga0.0 status > /dev/null
umount /tmp/cdev
if dmesg | grep -q 'Busy inodes'; then
	echo "the kernel reported busy inodes" >&2
	exit 1
fi
beluga --dev /dev/beluga0.0 status > /dev/null
beluga alloc --size 2M --name after.umount > /dev/null
beluga free after.umount
beluga_done
