# The hosts reach each other over their virtio-net link.
set -e
peer=10.0.0.$((2 - CXLFABRIC_HOST))
ping -c 3 -W 5 "$peer"
