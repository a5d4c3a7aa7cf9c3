# The demo's mchannel part (one host): one CXL switch, two tenants of
# equal weight; tenant A runs two memory streams, tenant B one. Each
# stream's thread may run only T_R of every T_W = 100 us, with T_R set
# every 10 ms by the fair share (HCSFQ): A's streams get a quarter of the
# switch each, B's stream half. Then B's stream stops, and A's two share
# the whole switch. Last, the switch turns out to deliver only half its
# configured capacity (the congestion model stands in for its device-load
# signal): AIMD brings the capacity estimate down, and A's streams share
# what is left.
set -e
say() { echo; echo "# $*"; }
sw=$(mchannel component --name cxl-switch0 --kind switch --capacity 100000000)
a=$(mchannel create --name tenant-a --group --path "$sw")
b=$(mchannel create --name tenant-b --group --path "$sw")
# The emulated meter: each stream moves 100 MB/s while it runs, so the
# switch (100 MB/s) carries one stream running all the time.
a1=$(mchannel create --name a-stream1 --parent "$a" --meter 100)
a2=$(mchannel create --name a-stream2 --parent "$a" --meter 100)
b1=$(mchannel create --name b-stream --parent "$b" --meter 100)
say "switch cxl-switch0 (100 MB/s); tenant A: a-stream1, a-stream2; tenant B: b-stream"
for ch in $a1 $a2; do
	mchannel run --channel "$ch" -- cxlf-contract mchannel-stream --threads 1 --seconds 13 > /tmp/demo-stream-$ch.txt &
done
mchannel run --channel "$b1" -- cxlf-contract mchannel-stream --threads 1 --seconds 4 > /tmp/demo-stream-$b1.txt &
sleep 2
say "all three streaming (run: CPU time per second; computed shares 0.25, 0.25, 0.5):"
mchannel top --count 2 --interval-ms 800 | sed 's/\x1b\[[0-9;]*[HJ]//g' | tail -n 6
sleep 2
say "b-stream done: tenant A's streams now share the switch (computed 0.5 each):"
mchannel top --count 2 --interval-ms 800 | sed 's/\x1b\[[0-9;]*[HJ]//g' | tail -n 6
mchannel inject --component "$sw" --model-capacity 50000000
sleep 2
c=/sys/class/misc/mchannel/components/cxl-switch0
say "the switch delivers 50 MB/s, not 100: capacity estimate now $(($(cat $c/capacity) / 1000000)) MB/s (load $(($(cat $c/load_ppm) / 10000)) %); A's streams share it (AIMD keeps it a little under 50 MB/s, 0.25 each at most):"
mchannel top --count 2 --interval-ms 800 | sed 's/\x1b\[[0-9;]*[HJ]//g' | tail -n 6
wait
say "what each stream measured for itself (run fraction of its wall time):"
for n in a-stream1:$a1 a-stream2:$a2 b-stream:$b1; do
	echo "${n%%:*}: $(sed 's/^thread 0: //' /tmp/demo-stream-${n#*:}.txt)"
done
say "windows closed and time throttled, per stream (sysfs):"
for n in a-stream1 a-stream2 b-stream; do
	d=/sys/class/misc/mchannel/channels/$n
	echo "$n: $(cat $d/windows) windows of $(($(cat $d/t_w_ns) / 1000)) us, throttled $(($(cat $d/throttled_ns) / 1000000)) ms"
done
for ch in $a1 $a2 $b1 $a $b; do mchannel destroy "$ch"; done
