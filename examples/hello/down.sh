#!/usr/bin/env bash
# Undoes examples/hello/up.sh: removes the hello Project's containers, stops that `ployzd serve` and the
# `ployzd dns` it runs, removes every container left on the Machine's Docker network (the ployz-system Ingress
# Proxy), the network itself and the example's state dir ($PLOYZ_HELLO_DIR, default /var/lib/ployz-hello).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${PLOYZ_DOCKER_SOCKET:?is unset: run eval \"\$(.ci/setup)\" first}"
state=${PLOYZ_HELLO_DIR:-/var/lib/ployz-hello}
export PLOYZ_DATA_DIR="$state/data" PLOYZ_RUN_DIR="$state/run" PLOYZ_CONFIG_DIR="$state/config"
[ -d "$state" ] || { echo "nothing to do: $state does not exist"; exit 0; }

if [ -S "$PLOYZ_RUN_DIR/ployz.sock" ]; then
  "$root/bin/ployz" rm hello -y || echo "ployz rm failed; stopping the daemon anyway" >&2
fi
if [ -f "$state/serve.pid" ]; then
  pid=$(cat "$state/serve.pid")
  # Its children (`ployzd dns`) end with it; any still running after it are stopped by pid.
  children=$(pgrep -P "$pid" 2>/dev/null || true)
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  for child in $children; do
    kill "$child" 2>/dev/null || continue
    for _ in $(seq 1 50); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$child" 2>/dev/null || true
  done
fi
docker=(docker -H "unix://$PLOYZ_DOCKER_SOCKET")
network=${PLOYZ_DOCKER_NETWORK:-ployz}
# What the daemon ran beside the Project: the Ingress Proxy (Project ployz-system), anything else on its network.
mapfile -t left < <("${docker[@]}" ps -aq --filter "network=$network" 2>/dev/null || true)
[ ${#left[@]} -eq 0 ] || "${docker[@]}" rm -f "${left[@]}" >/dev/null
"${docker[@]}" network rm "$network" >/dev/null 2>&1 || true
rm -rf "$state"
echo "hello is down: containers removed (with the Ingress Proxy), ployzd serve and dns stopped, $state removed"
