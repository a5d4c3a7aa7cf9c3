# The support layer's dax bus driver wrapper, on the test driver of
# cxlfabric_support_kunit.ko (the dax bus names drivers after their module): loading it takes nothing
# from device_dax; dax0.0 moves to it and its probe sees the instance's
# physical range and size; unbinding returns the instance to device_dax
# intact; unloading the module with the instance bound unbinds it cleanly.
set -e
. /lib/cxlfabric/lib.sh
dev=/sys/bus/dax/devices/dax0.0
drv=/sys/bus/dax/drivers/cxlfabric_support_kunit
driver_of() {
	if link=$(readlink "$dev/driver"); then basename "$link"; else echo none; fi
}

grep -q '^cxlfabric_support_kunit ' /proc/modules || insmod /lib/cxlfabric/cxlfabric_support_kunit.ko
test -d "$drv"
test -c /dev/dax0.0 || cxlctl create-region --ways 2 --size 512M
test "$(driver_of)" = device_dax
cxlf-contract dax-binding --unbound

echo dax0.0 > /sys/bus/dax/drivers/device_dax/unbind
echo dax0.0 > "$drv/bind"
test "$(driver_of)" = cxlfabric_support_kunit
# device_dax let go of its character device: the node stays (it belongs
# to the dax instance, whatever driver is bound), but opening it fails.
test -c /dev/dax0.0
refute sh -c 'exec 3< /dev/dax0.0' 2>/dev/null
cxlf-contract dax-binding --start "$(cat $dev/resource)" --size "$(cat $dev/size)"

echo dax0.0 > "$drv/unbind"
test "$(driver_of)" = none
cxlf-contract dax-binding --unbound
echo dax0.0 > /sys/bus/dax/drivers/device_dax/bind
test "$(driver_of)" = device_dax
daxio fill /dev/dax0.0 --offset 0 --len 65536 --seed 9
daxio verify /dev/dax0.0 --offset 0 --len 65536 --seed 9

# Unloading with an instance bound unbinds it first.
echo dax0.0 > /sys/bus/dax/drivers/device_dax/unbind
echo dax0.0 > "$drv/bind"
rmmod cxlfabric_support_kunit
test "$(driver_of)" = none
echo dax0.0 > /sys/bus/dax/drivers/device_dax/bind
test -c /dev/dax0.0
insmod /lib/cxlfabric/cxlfabric_support_kunit.ko
