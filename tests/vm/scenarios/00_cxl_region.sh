# The emulated switched topology enumerates, and a 2-way interleaved RAM
# region across both type-3 devices behind the switch can be created and
# exposed as a device-dax instance.
set -e
cxlctl list
test "$(cxlctl list --json | grep -c '"kind": "memdev"')" -eq 2
cxlctl create-region --ways 2 --size 512M
region=$(cxlctl list --json | sed -n 's/.*"region": "\(region[0-9]*\)".*/\1/p' | head -n 1)
test -n "$region"
test -c /dev/dax0.0
size=$(cat /sys/bus/dax/devices/dax0.0/size)
test "$size" -eq $((512 << 20))
