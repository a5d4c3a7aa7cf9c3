# cxlsim's speed on this machine (no VM): events per second on one core
# against the bare event queue handling the same events (the anchor: what
# the models cost on top of it), the time of a one-million-request run,
# and a sweep of copies over all cores. `cxlsim perf --bench` prints the
# BENCH lines. ESF publishes no speed to set beside these.
set -e
cargo run -q --release -p cxlsim -- perf --bench
