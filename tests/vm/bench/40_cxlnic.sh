# CXL-NIC between the two hosts' ports, in each queue mode, against
# virtio-net between the same two VMs (the anchor): UDP request/response
# p50/p99 at 64 and 1400 bytes, UDP packets per second at 64 bytes, TCP
# throughput; then type1 at batch 1, 8 and 32, with the device model's
# idle pause at its default 500 us, with device interrupts off and an
# hrtimer polling every 250 us (ntb_netdev's fix), and with the stack's
# busy polling (50 us); and what each mode cost the device per frame (its
# counters). Host 1 serves, host 0 measures.
#
# The device model polls an idle ring at least every 20 us (a NIC in
# hardware polls all the time) except in the idle500 series. Every series
# runs once per round, the anchor first, for $rounds rounds: drift over
# the run hits every series alike, and the table shows medians and the
# spread.
set -e
. /bench/lib.inc
grep -q '^cxlnic_drv ' /proc/modules || insmod /lib/cxlfabric/cxlnic_drv.ko
nic=$(ls /sys/bus/pci/drivers/cxlnic_drv/0000:*/net)
ip addr add 10.11.0.$((h + 1))/24 dev "$nic"
ip link set "$nic" up
# Not ending in busypoll: the next round's anchor runs with its sysctls.
steps="type1 type2 pcie batch1 batch8 batch32 busypoll timer250us idle500"
rounds=5

# A mode (type1, type2, pcie) or a type1 batch (batchN), both ends alike.
set_step() {
	ip link set "$nic" down
	case $1 in
	type1 | batch* | idle* | timer* | busy*) ethtool --set-priv-flags "$nic" type2 off pcie off ;;
	type2) ethtool --set-priv-flags "$nic" type2 on pcie off ;;
	pcie) ethtool --set-priv-flags "$nic" type2 off pcie on ;;
	esac
	case $1 in
	batch*) ethtool -C "$nic" rx-frames ${1#batch} rx-usecs 0 ;;
	timer*) ethtool -C "$nic" rx-frames 8 rx-usecs 250 ;;
	*) ethtool -C "$nic" rx-frames 8 rx-usecs 0 ;;
	esac
	# The stack's busy polling: a socket read spins on the NAPI context.
	case $1 in
	busy*) busy=50 ;;
	*) busy=0 ;;
	esac
	echo $busy > /proc/sys/net/core/busy_read
	echo $busy > /proc/sys/net/core/busy_poll
	ip link set "$nic" up
}

field() { # json name
	echo "$1" | sed "s/.*\"$2\":\([0-9.e+-]*\).*/\1/"
}

measure() { # label address
	wait_until 100 nicbench tcp --to $2:7001 --bytes 1000 > /dev/null 2>&1
	rr64=$(nicbench --json udp-rr --to $2:7001 --size 64 --count 3000)
	rr1400=$(nicbench --json udp-rr --to $2:7001 --size 1400 --count 2000)
	st=$(nicbench --json udp-stream --to $2:7001 --size 64 --secs 3)
	tcp=$(nicbench --json tcp --to $2:7001 --bytes 60000000)
	awk -v l="$1" -v a="$(field "$rr64" p50_us)" -v b="$(field "$rr64" p99_us)" \
		-v c="$(field "$rr1400" p50_us)" -v d="$(field "$rr1400" p99_us)" \
		-v e="$(field "$st" received_pps)" -v f="$(field "$tcp" mbit_s)" 'BEGIN {
		printf "BENCH {\"label\":\"%s\",\"rr64_p50_ns\":%.0f,\"rr64_p99_ns\":%.0f,\"rr1400_p50_ns\":%.0f,\"rr1400_p99_ns\":%.0f,\"udp64_frames_per_s\":%.0f,\"tcp_bytes_per_s\":%.0f}\n",
			l, a * 1000, b * 1000, c * 1000, d * 1000, e, f * 1e6 / 8 }'
}

# The device's transactions per frame over a UDP request/response run.
counters="tx_frames rx_frames tx_desc_reads tx_empty_polls head_writes interrupts doorbells"
cost() { # label address
	sleep 0.1
	for c in $counters; do
		eval "${c}0=$(nic_stat $nic dev_$c)"
	done
	nicbench udp-rr --to $2:7001 --size 64 --count 2000 > /dev/null
	sleep 0.1
	for c in $counters; do
		eval "d_$c=\$((\$(nic_stat $nic dev_$c) - ${c}0))"
	done
	awk -v l="$1" -v t=$d_tx_frames -v r=$d_rx_frames -v dr=$d_tx_desc_reads \
		-v ep=$d_tx_empty_polls -v hw=$d_head_writes -v ir=$d_interrupts -v db=$d_doorbells 'BEGIN {
		f = t + r; if (f == 0) f = 1; if (t == 0) t = 1
		printf "BENCH {\"label\":\"%s\",\"desc_reads_per_frame\":%.2f,\"empty_polls_per_frame\":%.2f,\"head_writes_per_frame\":%.2f,\"interrupts_per_frame\":%.2f,\"doorbells_per_frame\":%.2f}\n",
			l, dr / t, ep / t, hw / f, ir / f, db / t }'
}

if [ "$h" = 1 ]; then
	nicbench serve --port 7001 &
	server=$!
	flag 40 serving
	for r in $(seq $rounds); do
		# Not `n`: lib.sh's wait_until counts in it.
		slot=40
		for s in $steps; do
			slot=$((slot + 1))
			await $slot "set-$s-$r"
			set_step $s
			flag $((slot + 10)) "ready-$s-$r"
		done
	done
	await 60 done
	kill $server
	wait $server 2>/dev/null || true
else
	await 40 serving
	# One model serves both hosts' ports: this sets its pace for both.
	nic_model poll 20 && sleep 1
	for r in $(seq $rounds); do
		measure virtio-net 10.0.0.2
		slot=40
		for s in $steps; do
			slot=$((slot + 1))
			flag $slot "set-$s-$r"
			set_step $s
			await $((slot + 10)) "ready-$s-$r"
			wait_until 100 carrier_is "$nic" 1
			case $s in idle*) nic_model poll 500 && sleep 1 ;; esac
			measure cxlnic-$s 10.11.0.2
			case $s in idle*) nic_model poll 20 ;; esac
			case $s in type* | pcie) cost cost-$s 10.11.0.2 ;; esac
		done
	done
	nic_model poll 500
	flag 60 done
fi
ip link set "$nic" down
rmmod cxlnic_drv
