# The demo's beluga part (one host): move the CXL region's dax instance to
# beluga_dax, format the pool, share an object, map it, and show the state.
set -ex
echo dax0.0 > /sys/bus/dax/drivers/device_dax/unbind
echo dax0.0 > /sys/bus/dax/drivers/beluga_dax/bind
beluga format --hosts 8 --objects 1024
beluga wait
beluga alloc --size 64M --name kv.cache --shared --mode 644
beluga alloc --size 6M --name scratch
cxlf-selftest beluga-share --name model.weights --size $((8 << 20))
beluga list
beluga status
beluga free scratch
cat /sys/class/misc/beluga0.0/free_sections
grep beluga /proc/iomem
