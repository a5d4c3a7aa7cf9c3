# The demo's cxlnic part (one host): the device model's two linked
# CXL-NIC ports, one in a network namespace as if on another host. For
# each queue mode: TCP throughput, UDP request/response latency, and what
# the protocol cost the device per frame (its own counters, ethtool -S).
# Then the key-value offload (#29): a few GETs and a PUT with the
# device's counters, and the same keys from a user-space server.
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

# The key-value offload (#29): $a serves GETs and PUTs on UDP 7878 from
# the device's memory; the peer asks.
say "Key-value offload: $a (type2) serves UDP port 7878 from the device's memory, a cache of 16 buckets x 4 ways, misses read from the host table; 64 keys put by the host (cxlnic kvs put); $b asks from the peer namespace. Device counters: ethtool -S kvs_*."
ip link set "$a" down
peer ip link set "$b" down
ethtool --set-priv-flags "$a" type2 on pcie off
peer ethtool --set-priv-flags "$b" type2 on pcie off
ip link set "$a" up
peer ip link set "$b" up
wait_until 50 carrier_is "$a" 1
cxlnic kvs enable "$a" --port 7878 --cache-buckets 16
nicbench kvs-keys --keys 64 --value-bytes 16 | while read -r k v; do cxlnic kvs put "$a" "$k" "$v"; done
wait_until 50 peer nicbench kvs-get --server 10.11.0.1:7878 k63 --timeout-ms 500 > /dev/null 2>&1
kvs_counts="hits misses log_hits installs not_found"
# One request from the peer (`nicbench kvs-get|kvs-put ...`), what it was
# for, and what the device counted for it.
ask() { # what nicbench-args...
	what=$1; shift
	for c in $kvs_counts; do eval "${c}0=$(kvs_stat $a $c)"; done
	out=$(peer nicbench "$@" --server 10.11.0.1:7878)
	moved=
	for c in $kvs_counts; do
		d=$(($(kvs_stat $a $c) - ${c}0))
		[ $d = 0 ] || moved="$moved $c +$d"
	done
	printf '%-34s %-44s device:%s\n' "$what" "$out" "${moved:- nothing}"
}
ask "first GET of k7 (not cached):" kvs-get k7
ask "the same again (now cached):" kvs-get k7
ask "a key the store has not:" kvs-get k99
ask "PUT over the network:" kvs-put k7 7:from-the-network
ask "GET after the PUT:" kvs-get k7
echo "the host's view of k7 (cxlnic kvs get, after the device's log is applied): $(cxlnic kvs get "$a" k7 2>&1)"
# The same keys from a user-space server behind the same port: what the
# offload saves a request.
nicbench kvs-serve --port 7879 --keys 64 --value-bytes 16 > /dev/null &
baseline=$!
wait_until 50 peer nicbench kvs-get --server 10.11.0.1:7879 k0 --timeout-ms 500 > /dev/null 2>&1
for t in "offload 7878" "user-space 7879"; do
	set -- $t
	h0=$(kvs_stat $a hits) r0=$(kvs_stat $a requests)
	out=$(peer nicbench --json kvs-load --server 10.11.0.1:$2 --keys 64 --dist zipf --requests 500 --value-bytes 16 --shared)
	hit=
	[ $1 = user-space ] || hit=", device cache hits $(awk -v h=$(($(kvs_stat $a hits) - h0)) -v r=$(($(kvs_stat $a requests) - r0)) 'BEGIN { printf "%.0f %%", r ? 100 * h / r : 0 }')"
	printf '%-10s 500 Zipf GETs: p50 %6.0f us, p99 %6.0f us%s\n' $1 \
		"$(echo "$out" | sed 's/.*"get_p50_us":\([0-9.]*\).*/\1/')" \
		"$(echo "$out" | sed 's/.*"get_p99_us":\([0-9.]*\).*/\1/')" "$hit"
done
kill $baseline
wait $baseline 2>/dev/null || true
say "TCG: the offload is the device model, running natively on the host, while the user-space server runs in the emulated guest: the offload's lead here is far larger than on hardware."
kill $server
wait $server 2>/dev/null || true
ip netns del peer
rmmod cxlnic_drv
