# The support layer's miscdevice wrapper, from user space, on the test
# device of cxlfabric_support_kunit.ko: ioctl and mmap contracts, then
# unload safety: the module cannot go while a file is open, and can after.
set -e
. /lib/cxlfabric/lib.sh
grep -q '^cxlfabric_support_kunit ' /proc/modules || insmod /lib/cxlfabric/cxlfabric_support_kunit.ko
test -c /dev/cxlfabric_misc_test
test "$(stat -c %a /dev/cxlfabric_misc_test)" = 600
cxlf-contract misc

exec 3<> /dev/cxlfabric_misc_test
if rmmod cxlfabric_support_kunit 2> /tmp/rmmod.err; then
	echo "module unloaded while /dev/cxlfabric_misc_test was open"
	exit 1
fi
# A module with a reference held fails delete_module with EWOULDBLOCK.
cat /tmp/rmmod.err
grep -qi "temporarily unavailable\|in use\|busy" /tmp/rmmod.err
exec 3>&-
rmmod cxlfabric_support_kunit
refute test -e /dev/cxlfabric_misc_test
insmod /lib/cxlfabric/cxlfabric_support_kunit.ko
test -c /dev/cxlfabric_misc_test
