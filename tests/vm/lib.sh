# Shared by the guest scenarios (installed as /lib/cxlfabric/lib.sh):
# what every beluga scenario repeats, so each keeps only what it tests.
# Every scenario starts from the state a fresh boot leaves (region may
# exist, modules not loaded) and returns to it.
dax=/sys/bus/dax/drivers
sys=/sys/class/misc/beluga0.0

# iproute2's ip and tc, not busybox's applets: busybox's shell runs its
# own applets before looking in PATH, but a function comes first.
ip() { /usr/sbin/ip "$@"; }
tc() { /usr/sbin/tc "$@"; }

# The product modules in load order (the harness writes the list from
# its one module table; dependencies come first).
product_modules() {
	while read -r kind name; do
		if [ "$kind" = product ]; then echo "$name"; fi
	done < /lib/cxlfabric/modules.list
}

# The 2-way CXL RAM region and its dax instance, unless they exist.
region() {
	test -c /dev/dax0.0 || cxlctl create-region --ways 2 --size 512M
}

# The RAM-speed pool: the second NVDIMM (nd region1, namespace1.0; the
# harness gives every host the same backing file) as a devdax instance,
# dax1.0, with its memmap in this host's RAM (mode ram: pmem mode would
# put every host's struct pages in the one shared file). One host writes
# the dax info block (ram_pool_create); the others probe it after that
# (ram_pool_probe). Both leave dax1.0 with device_dax.
nd=/sys/bus/nd
ram_pool_create() {
	test -e /sys/bus/dax/devices/dax1.0 && return 0
	echo namespace1.0 > $nd/drivers/nd_pmem/unbind
	seed=$(cat $nd/devices/region1/dax_seed)
	echo ram > $nd/devices/$seed/mode
	echo $((2 << 20)) > $nd/devices/$seed/align
	cat /proc/sys/kernel/random/uuid > $nd/devices/$seed/uuid
	echo namespace1.0 > $nd/devices/$seed/namespace
	echo $seed > $nd/drivers/dax_pmem/bind
	wait_until 100 test -e /sys/bus/dax/devices/dax1.0
}
ram_pool_probe() {
	test -e /sys/bus/dax/devices/dax1.0 && return 0
	echo namespace1.0 > $nd/drivers/nd_pmem/unbind
	# The probe finds the info block, hands the namespace to a dax
	# device and fails its own bind (ENXIO) by design.
	echo namespace1.0 > $nd/drivers/nd_pmem/bind 2>/dev/null || true
	wait_until 100 test -e /sys/bus/dax/devices/dax1.0
}

# Loads beluga_dax (arguments: module parameters) unless it is loaded.
beluga_load() {
	grep -q '^beluga_dax ' /proc/modules || insmod /lib/cxlfabric/beluga_dax.ko "$@"
}

# Moves a dax instance (default dax0.0) from device_dax to beluga_dax.
beluga_bind() {
	echo ${1:-dax0.0} > $dax/device_dax/unbind
	echo ${1:-dax0.0} > $dax/beluga_dax/bind
}

# Region, module (lease 1 s), bound, formatted and ready: a fresh pool.
beluga_fresh() {
	region
	beluga_load lease_ms=1000
	beluga_bind
	beluga format
	beluga wait
}

# Back to the boot state: dax0.0 with device_dax, beluga_dax unloaded.
beluga_done() {
	echo dax0.0 > $dax/beluga_dax/unbind
	echo dax0.0 > $dax/device_dax/bind
	rmmod beluga_dax
}

# Polls `cmd...` every 0.1 s until it succeeds, for at most `tenths`
# (times the kernel's slowness, CXLFABRIC_SLOW: 8 on the debug kernel);
# says what it waited for when it gives up.
wait_until() { # tenths cmd...
	limit=$(($1 * ${CXLFABRIC_SLOW:-1})); shift
	n=0
	until "$@"; do
		sleep 0.1
		n=$((n + 1))
		if [ $n -ge "$limit" ]; then
			echo "gave up after $((limit / 10)) s waiting for: $*" >&2
			return 1
		fi
	done
}

# Whether `cmd...` prints exactly `want` (for wait_until).
prints() { # want cmd...
	want=$1; shift
	test "$("$@")" = "$want"
}

# Whether file $1 compares to $3 by test(1) operator $2, read anew on
# every call (for wait_until: `wait_until 50 reads $f -ge 2`).
reads() { # file op value
	test "$(cat "$1")" "$2" "$3"
}

# Whether sysfs attribute $1 of the pool reads $2.
pool_attr_is() {
	test "$(cat $sys/$1)" = "$2"
}

# Splits cxlnic_drv's two linked ports into two hosts, still down:
# $nic_a (10.11.0.1) here, $nic_b (10.11.0.2) in network namespace
# `peer` (run commands there with `peer cmd...`).
nic_split() {
	set -- $(for d in /sys/bus/pci/drivers/cxlnic_drv/0000:*; do ls $d/net; done)
	nic_a=$1 nic_b=$2
	mkdir -p /var/run/netns
	ip netns add peer
	ip link set "$nic_b" netns peer
	ip addr add 10.11.0.1/24 dev "$nic_a"
	peer ip addr add 10.11.0.2/24 dev "$nic_b"
	peer ip link set lo up
}

# Loads cxlnic_drv with `mode=$1`, splits its ports (nic_split) and
# brings both up, waiting for carrier.
nic_pair() { # mode
	insmod /lib/cxlfabric/cxlnic_drv.ko mode="$1"
	nic_split
	ip link set "$nic_a" up
	peer ip link set "$nic_b" up
	wait_until 50 carrier_is "$nic_a" 1
	wait_until 50 peer_carrier_is "$nic_b" 1
}

peer() { ip netns exec peer "$@"; }

carrier_is() { # ifname 0|1
	test "$(cat /sys/class/net/$1/carrier 2>/dev/null)" = "$2"
}

peer_carrier_is() { # ifname 0|1
	test "$(peer cat /sys/class/net/$1/carrier 2>/dev/null)" = "$2"
}

# Undoes nic_pair: the namespace goes (its port returns here), the
# module unloads.
nic_unpair() {
	ip netns del peer
	rmmod cxlnic_drv
}

# Asks the harness to tell the CXL-NIC device model: stop, start,
# inject <port> <fault>.
nic_model() {
	echo "@@ NIC $*" > /dev/ttyS1
}

# The sum over queues of ethtool -S counter `name` (q0_name, q1_name...)
# of interface $1 (in namespace `peer` with `peer` as $2).
nic_stat() { # ifname name [peer]
	${3:+peer} ethtool -S "$1" |
		awk -v n="$2" '$1 ~ "^q[0-9]+_" n ":$" { s += $2 } END { print s + 0 }'
}

# The key-value offload's device counter `name` (KVS_STATS_NAMES:
# requests, hits, misses...) of interface $1: `ethtool -S` (kvs_<name>),
# else `cxlnic kvs stats --json`.
kvs_stat() { # ifname name
	_v=$(ethtool -S "$1" | awk -v n="kvs_$2:" '$1 == n { print $2 }')
	[ -n "$_v" ] || _v=$(cxlnic kvs stats "$1" --json |
		sed -n "s/.*\"\(kvs_\)\{0,1\}$2\": *\([0-9]*\).*/\2/p")
	echo "${_v:-0}"
}

stat_above() { # ifname name value [peer]
	test "$(nic_stat "$1" "$2" $4)" -gt "$3"
}

# What a failed CXL-NIC scenario leaves for the reader (its output is
# shown only on failure): both ports' counters and the kernel's log.
nic_debug() {
	set +x
	echo "== state at exit"
	ethtool -S "$nic_a" 2>/dev/null | grep -v ': 0$'
	peer ethtool -S "$nic_b" 2>/dev/null | grep -v ': 0$'
	grep cxlnic /proc/interrupts
	dmesg | tail -n 30
	# The next scenario starts from nothing: this one's jobs, peer and
	# module go.
	kill $(jobs -p) 2> /dev/null
	ip netns del peer 2> /dev/null
	rmmod cxlnic_drv 2> /dev/null
}

# Fails the scenario when `cmd...` succeeds. A bare `! cmd` line cannot
# fail a scenario: `set -e` ignores a pipeline that begins with `!`
# (POSIX), so every negative check goes through this (or an `if`).
refute() { # cmd...
	if "$@"; then
		echo "should have failed: $*" >&2
		exit 1
	fi
}

# The testbed's NICs by their fixed MACs (xtask/src/hub.rs,
# Documentation/cxlfabric/testbed.rst): the interface with MAC $1.
nic_by_mac() { # mac
	# Its own `n`: wait_until counts in the caller's.
	local n
	for n in /sys/class/net/*; do
		if [ "$(cat "$n/address")" = "$1" ]; then
			echo "${n##*/}"
			return 0
		fi
	done
	echo "no interface has MAC $1" >&2
	return 1
}
# This host's NIC on the L2 hub (10.0.8.<host + 1>/24, set by the init).
hub_nic() { nic_by_mac "52:54:00:cf:01:0$((${CXLFABRIC_HOST:-0} + 1))"; }
# This host's second NIC on the hub, for network namespace `ext`.
ext_nic() { nic_by_mac "52:54:00:cf:02:0$((${CXLFABRIC_HOST:-0} + 1))"; }
# A vNIC of drack_netdev's pooled NICs once it appears: addressed
# ($2/24), up and carrying.
vnic_up() { # ifname address
	wait_until 100 test -e "/sys/class/net/$1"
	ip addr add "$2/24" dev "$1"
	ip link set "$1" up
	wait_until $((100 + 50 * ${slow:-1})) carrier_is "$1" 1
}

# The address of this host's namespace `ext`: 10.0.8.100 on host 1 (35,
# 49), 10.0.8.200 on host 0, so that a namespace still dying on one host
# never answers for the other's.
ext_ip() { echo "10.0.8.$((200 - 100 * ${CXLFABRIC_HOST:-0}))"; }
# Namespace `ext` with this host's third NIC at ext_ip/24, made once
# per boot and kept: a NIC comes back from a deleted namespace only when
# its last reference goes, which took over 30 s here.
ext_ns() {
	ip netns list 2>/dev/null | grep -q '^ext\( \|$\)' && return 0
	ext=$(ext_nic)
	mkdir -p /var/run/netns
	ip netns add ext
	ip link set "$ext" netns ext
	ip netns exec ext ip addr add "$(ext_ip)/24" dev "$ext"
	ip netns exec ext ip link set "$ext" up
}

# MPTCP over several NICs of this host (Documentation/cxlfabric/drack.rst,
# "Pooled NICs"): one `subflow` endpoint per interface, at its first IPv4
# address and bound to it, so the in-kernel path manager opens a subflow
# from each; limits that allow them; and the ARP and reverse-path
# settings NICs in one subnet need (each answers ARP only for its own
# address and announces only that; replies may come back on another
# NIC). Replaces any endpoints there were; mptcp_endpoints_clear undoes
# it.
mptcp_endpoints() { # ifname...
	ip mptcp endpoint flush
	ip mptcp limits set subflow $# add_addr_accepted $#
	for i in "$@"; do
		a=$(ip -4 -o addr show dev "$i" | awk '{ split($4, p, "/"); print p[1]; exit }')
		if [ -z "$a" ]; then
			echo "mptcp_endpoints: $i has no IPv4 address" >&2
			return 1
		fi
		ip mptcp endpoint add "$a" dev "$i" subflow
	done
	sysctl -w net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 \
		net.ipv4.conf.all.rp_filter=0 > /dev/null
}

# Back to a fresh boot's MPTCP and ARP settings (the kernel's defaults:
# 2 subflows, no ADD_ADDR accepted).
mptcp_endpoints_clear() {
	ip mptcp endpoint flush
	ip mptcp limits set subflow 2 add_addr_accepted 0
	sysctl -w net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.all.arp_announce=0 \
		net.ipv4.conf.all.rp_filter=0 > /dev/null
}
