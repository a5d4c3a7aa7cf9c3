# Every product module loads and unloads cleanly, twice, without a kernel
# warning: in the harness's order (beluga_dax first: the pool before its
# users), and back in reverse.
set -e
. /lib/cxlfabric/lib.sh
mods=$(product_modules)
reverse=
for m in $mods; do reverse="$m $reverse"; done
test "$(echo $mods | cut -d' ' -f1)" = beluga_dax
for round in 1 2; do
	for m in $mods; do
		insmod /lib/cxlfabric/$m.ko
		grep -q "^$m " /proc/modules
	done
	for m in $reverse; do
		rmmod $m
		refute grep -q "^$m " /proc/modules
	done
done
if dmesg | grep -E 'Oops|BUG:|WARNING:|Call Trace'; then
	echo "the kernel log has an oops, BUG or WARNING (above)" >&2
	exit 1
fi
