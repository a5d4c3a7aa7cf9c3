# The demo's beluga part (one host): move the CXL region's dax instance to
# beluga_dax, format the pool, share an object, map it, and show the state:
# objects that live while used, cleared before they change owner, and
# page-backed mappings that O_DIRECT and io_uring can use.
set -ex
echo dax0.0 > /sys/bus/dax/drivers/device_dax/unbind
echo dax0.0 > /sys/bus/dax/drivers/beluga_dax/bind
beluga format --hosts 8 --objects 1024
beluga wait
beluga alloc --size 64M --name kv.cache --shared --mode 644
beluga alloc --size 6M --name scratch
cxlf-contract beluga-share --name model.weights --size $((8 << 20))
beluga list
beluga status
# Cleared before they changed owner: bytes, and nanoseconds per MiB.
echo "cleared $(cat /sys/class/misc/beluga0.0/cleared_bytes) bytes in $(cat /sys/class/misc/beluga0.0/clear_ns) ns"
beluga free scratch
cat /sys/class/misc/beluga0.0/free_sections
# GUP users on pool memory: process_vm_readv, /proc/pid/mem, O_DIRECT
# through a loop device, io_uring fixed buffers, vmsplice, mbind.
cxlf-contract beluga-gup --dev /dev/beluga0.0 2>&1 | tail -n 12
grep beluga /proc/iomem
