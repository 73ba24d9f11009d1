#!/usr/bin/env bash
# Brings up a local three-Machine lab (each Machine its own network namespace, dockerd, ployzd and WireGuard
# interface), deploys compose.yaml through m1 and fetches the page from inside m1. Needs a host prepared by
# .ci/setup, as root:   eval "$(.ci/setup)" && examples/hello/lab.sh
# Look around with `bin/ployz lab status` and `bin/ployz lab exec m2 -- ployz ps --all-machines`;
# remove everything with `bin/ployz lab down`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${PLOYZ_DOCKER_SOCKET:?is unset: run eval \"\$(.ci/setup)\" first (it starts dockerd and prints this variable)}"
machines=${PLOYZ_LAB_MACHINES:-3}
ployz="$root/bin/ployz"

"$ployz" lab up --machines "$machines"
"$ployz" lab exec m1 -- ployz deploy -f "$here/compose.yaml" -y
for _ in $(seq 1 20); do
  if page=$("$ployz" lab exec m1 -- curl -fsS --max-time 2 http://127.0.0.1:8080/ 2>/dev/null); then
    echo "$page"
    echo
    echo "hello answers on Machine m1 of a $machines-Machine lab:"
    echo "  fetch it:   $ployz lab exec m1 -- curl http://127.0.0.1:8080/"
    echo "  see it:     $ployz lab exec m2 -- ployz ps --all-machines"
    echo "  remove it:  $ployz lab down"
    exit 0
  fi
  sleep 0.5
done
echo "hello did not answer on m1:8080; the lab is still up for a look (remove it with: $ployz lab down)" >&2
exit 1
