# cxlsim on this machine (no VM). First the checks against ESF and the
# MemChannel experiments at full size (`cxlsim bench --full`: our numbers
# beside the papers', with CSV and SVG under target/xtask/bench/cxlsim),
# shown as they run (the many-thread sweep is 51_cxlsim_scale). Then its
# speed: events per second on one core against the bare event queue
# handling the same events (the anchor: what the models cost on top of
# it), the time of a one-million-request run, and a sweep of copies over
# all cores; `cxlsim perf --bench` prints the BENCH lines. ESF publishes
# no speed to set beside these.
set -e
out=$(cargo metadata --format-version 1 --no-deps |
	sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/xtask/bench/cxlsim
cargo run -q --release -p cxlsim -- bench --full --only topology --only duplex \
	--only snoop --only memchannel --out "$out" >&2
cargo run -q --release -p cxlsim -- perf --bench
