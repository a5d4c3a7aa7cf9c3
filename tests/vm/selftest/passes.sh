# Harness self-test: a passing scenario next to the failing one.
true
