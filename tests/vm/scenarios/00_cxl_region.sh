# The emulated switched topology enumerates; a 2-way interleaved RAM region
# across both type-3 devices behind the switch is created, exposed as a
# device-dax instance, destroyed (decoders freed) and created again. Bad
# requests are refused with a reason and change nothing.
set -e
. /lib/cxlfabric/lib.sh
cxlctl list
test "$(cxlctl list --json | grep -c '"kind": "memdev"')" -eq 2
test "$(cxlctl list --json | grep -c '"kind": "switch"')" -ge 1

# Refused: size not a multiple of 256M per way; more ways than memdevs.
refute cxlctl create-region --ways 2 --size 100M 2> /tmp/err
grep -q "multiple of" /tmp/err
refute cxlctl create-region --ways 4 --size 1G 2> /tmp/err
grep -q "need 4 memdevs" /tmp/err
if cxlctl list --json | grep -q '"kind": "region"'; then
	echo "a refused request left a region behind" >&2
	exit 1
fi

cxlctl create-region --ways 2 --size 512M
test -c /dev/dax0.0
test "$(cat /sys/bus/dax/devices/dax0.0/size)" -eq $((512 << 20))
region=$(cxlctl list --json | sed -n 's/.*"name": "\(region[0-9]*\)".*/\1/p' | head -n 1)
test -n "$region"

cxlctl destroy-region "$region"
refute test -e /sys/bus/cxl/devices/$region
# Every endpoint decoder's DPA was freed.
if cxlctl list --json | grep -q '"dpa_size": "0x[1-9a-f]'; then
	echo "an endpoint decoder kept its DPA after destroy-region" >&2
	exit 1
fi

cxlctl create-region --ways 2 --size 512M
test -c /dev/dax0.0
