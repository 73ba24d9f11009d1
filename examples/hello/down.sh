#!/usr/bin/env bash
# Undoes examples/hello/up.sh: removes the hello Project's containers, stops that `ployzd serve`, removes the
# Machine's Docker network and the example's state dir ($PLOYZ_HELLO_DIR, default /var/lib/ployz-hello).
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
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
fi
docker -H "unix://$PLOYZ_DOCKER_SOCKET" network rm "${PLOYZ_DOCKER_NETWORK:-ployz}" >/dev/null 2>&1 || true
rm -rf "$state"
echo "hello is down: containers removed, ployzd serve stopped, $state removed"
