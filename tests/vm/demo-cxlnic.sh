# The demo's cxlnic part (one host): the device model's two linked
# CXL-NIC ports, one in a network namespace as if on another host. For
# each queue mode: TCP throughput, UDP request/response latency, and what
# the protocol cost the device per frame (its own counters, ethtool -S).
set -e
. /lib/cxlfabric/lib.sh
say() { echo; echo "# $*"; }
grep -q '^cxlnic_drv ' /proc/modules || insmod /lib/cxlfabric/cxlnic_drv.ko
nic_split
a=$nic_a b=$nic_b
peer nicbench serve --port 7001 &
server=$!
say "$a here (10.11.0.1) and $b in namespace peer (10.11.0.2), linked by the device model; $(ethtool -i $a | grep bus-info)"
printf '%-6s %10s %22s   %s\n' mode "TCP Mbit/s" "UDP 64 B p50/p99 us" "device, per frame sent: descriptor reads, empty polls, head stores, doorbells; interrupts per frame received"
for mode in type1 type2 pcie; do
	ip link set "$a" down
	peer ip link set "$b" down
	flags="type2 off pcie off"
	[ $mode = type1 ] || flags="$(echo $flags | sed "s/$mode off/$mode on/")"
	ethtool --set-priv-flags "$a" $flags
	peer ethtool --set-priv-flags "$b" $flags
	ip link set "$a" up
	peer ip link set "$b" up
	wait_until 50 carrier_is "$a" 1
	wait_until 50 nicbench tcp --to 10.11.0.2:7001 --bytes 1000 > /dev/null 2>&1
	tcp=$(nicbench --json tcp --to 10.11.0.2:7001 --bytes 20000000 | sed 's/.*"mbit_s":\([0-9.]*\).*/\1/')
	sleep 0.1
	for c in tx_frames tx_desc_reads tx_empty_polls head_writes doorbells rx_frames interrupts; do
		eval "${c}0=$(nic_stat $a dev_$c)"
	done
	rr=$(nicbench --json udp-rr --to 10.11.0.2:7001 --size 64 --count 2000)
	sleep 0.1
	for c in tx_frames tx_desc_reads tx_empty_polls head_writes doorbells rx_frames interrupts; do
		eval "d_$c=\$((\$(nic_stat $a dev_$c) - ${c}0))"
	done
	p50=$(echo "$rr" | sed 's/.*"p50_us":\([0-9.]*\).*/\1/')
	p99=$(echo "$rr" | sed 's/.*"p99_us":\([0-9.]*\).*/\1/')
	per() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", y ? x / y : 0 }'; }
	printf '%-6s %10.0f %10.0f / %-9.0f   %s, %s, %s, %s; %s\n' $mode "$tcp" "$p50" "$p99" \
		"$(per $d_tx_desc_reads $d_tx_frames)" "$(per $d_tx_empty_polls $d_tx_frames)" \
		"$(per $d_head_writes $d_tx_frames)" "$(per $d_doorbells $d_tx_frames)" \
		"$(per $d_interrupts $d_rx_frames)"
done
say "pcie mode pays an MMIO doorbell per request; type1/type2 none (the device polls the ready tags: its empty polls are the coherent reads CXL.cache would serve from its cache until the line changes)."
say "TCG emulation: absolute numbers mean little; request/response times here are the emulated machine's floor (virtio-net's are alike, see cargo xtask bench), and the device model backs off up to 500 us between polls when idle."
kill $server
wait $server 2>/dev/null || true
ip netns del peer
rmmod cxlnic_drv
