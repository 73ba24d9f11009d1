#!/usr/bin/env bash
# Brings up a local three-Machine lab (each Machine its own network namespace, dockerd, ployzd and WireGuard
# interface), deploys compose.yaml through m1, scales it to one replica per Machine and fetches the page from
# inside each Machine. Needs a host prepared by
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
# One replica per Machine: the Deploy through m1 places the new slots on the other Machines (spread).
"$ployz" lab exec m1 -- ployz scale "hello/web=$machines" -y
answered=()
for m in $(seq 1 "$machines"); do
  for _ in $(seq 1 20); do
    if page=$("$ployz" lab exec "m$m" -- curl -fsS --max-time 2 http://127.0.0.1:8080/ 2>/dev/null); then
      answered+=("m$m")
      break
    fi
    sleep 0.5
  done
done
if [ "${#answered[@]}" -eq "$machines" ]; then
  echo "$page"
  echo
  echo "hello answers on every Machine of a $machines-Machine lab (${answered[*]}), one replica each:"
  echo "  fetch it:   $ployz lab exec m2 -- curl http://127.0.0.1:8080/"
  echo "  see it:     $ployz lab exec m2 -- ployz ps --all-machines"
  echo "  remove it:  $ployz lab down"
  exit 0
fi
echo "hello answered only on: ${answered[*]:-no Machine} (of $machines); the lab is still up for a look" \
  "(remove it with: $ployz lab down)" >&2
exit 1
