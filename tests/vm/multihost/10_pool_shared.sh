# Host 0 fills 64 KiB of the region (spanning both devices at 4 KiB
# granularity) and raises a flag; host 1 waits for the flag, checks the
# data and answers; host 0 waits for the answer.
set -e
dax=/dev/dax0.0
flag=$((1 << 20))
if [ "$CXLFABRIC_HOST" = 0 ]; then
	daxio fill $dax --offset 0 --len 65536 --seed 4242
	daxio write $dax --offset $flag --text ready-from-0
	daxio wait $dax --offset $((flag + 4096)) --text ack-from-1 --timeout 120
else
	daxio wait $dax --offset $flag --text ready-from-0 --timeout 120
	daxio verify $dax --offset 0 --len 65536 --seed 4242
	daxio write $dax --offset $((flag + 4096)) --text ack-from-1
fi
