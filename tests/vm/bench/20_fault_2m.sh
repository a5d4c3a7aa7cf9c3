# 2 MiB page-fault throughput: map 64 MiB, touch every 4 KiB, unmap, again.
# Anchor: device_dax mapping the same device; then a beluga object of the
# same size (PMD mappings in both). The two alternate for $rounds rounds,
# rebinding the device each time, so that drift in the emulator affects
# both alike; each series is the median over the rounds, and every round's
# own ratio is printed. Host 0 measures, then leaves the pool formatted;
# host 1 joins it.
set -e
. /bench/lib.inc
rounds=5
region > /dev/null
beluga_load host_index=$h lease_ms=2000
metric() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
if [ "$h" = 0 ]; then
	formatted=
	: > /tmp/dax.txt; : > /tmp/bel.txt
	for r in $(seq $rounds); do
		beluga bench fault --devdax /dev/dax0.0 --mib 64 --seconds 2 --label device-dax > /tmp/round
		metric mapped_bytes_per_s < /tmp/round >> /tmp/dax.txt
		echo dax0.0 > $dax/device_dax/unbind
		echo dax0.0 > $dax/beluga_dax/bind
		if [ -z "$formatted" ]; then
			beluga format --hosts 4 --objects 256 > /dev/null
			formatted=1
		fi
		beluga wait
		beluga bench fault --mib 64 --seconds 2 --label beluga > /tmp/round
		metric mapped_bytes_per_s < /tmp/round >> /tmp/bel.txt
		echo "round $r: beluga/device-dax $(tail -n 1 /tmp/bel.txt) / $(tail -n 1 /tmp/dax.txt) = $(awk "BEGIN{printf \"%.3f\", $(tail -n 1 /tmp/bel.txt) / $(tail -n 1 /tmp/dax.txt)}")"
		if [ "$r" -lt $rounds ]; then
			echo dax0.0 > $dax/beluga_dax/unbind
			echo dax0.0 > $dax/device_dax/bind
		fi
	done
	echo "BENCH {\"label\":\"device-dax\",\"mapped_bytes_per_s\":$(median < /tmp/dax.txt)}"
	echo "BENCH {\"label\":\"beluga\",\"mapped_bytes_per_s\":$(median < /tmp/bel.txt)}"
fi
pool_up
