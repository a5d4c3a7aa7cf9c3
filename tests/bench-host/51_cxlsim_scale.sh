# MemChannel's control core on cxlsim with many threads on one bottleneck
# (issue #25: utilization >= 96 % and Jain's index >= 0.99 up to 1024
# threads): channels of one thread (1, 7, 160, 1024 threads) and of four
# (160, 1024) overloading one link, 40 + 60 control periods each. Series:
# with MemChannel (the anchor is one thread), with the queue signal as it
# marked until the fix ("instantaneous": the queue a message finds, at 8
# or more), and without control; metrics
# utilization_pct (the link's payload bandwidth carried, in percent),
# jain_fair_pct (Jain's index of each channel's bandwidth over its max-min
# fair share, in percent: the goal's figure) and jain_raw_pct (Jain's
# index of the raw bandwidths, in percent). The
# whole table, with more sizes and the core's Model signal, goes to
# standard error and to target/xtask/bench/cxlsim-scale.
set -e
out=$(cargo metadata --format-version 1 --no-deps |
	sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/xtask/bench/cxlsim-scale
cargo run -q --release -p cxlsim -- bench --full --only memchannel-scale --bench --out "$out"
