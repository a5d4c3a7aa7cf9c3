# Harness self-test: this scenario fails on purpose; the harness must count
# it as a failure.
echo "failing on purpose"
exit 1
