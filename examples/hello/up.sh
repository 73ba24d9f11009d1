#!/usr/bin/env bash
# Runs the hello example on this host: starts `ployzd serve` in the background under its own layout
# ($PLOYZ_HELLO_DIR, default /var/lib/ployz-hello), founds a one-Machine Cluster, deploys compose.yaml and fetches
# the page. The Deploy also fills the Machine's Ingress Proxy (Caddy, Project ployz-system, host port
# $PLOYZ_INGRESS_HTTP_PORT, default 80), and the daemon runs `ployzd dns` as its child.
# Needs a host prepared by .ci/setup, as root:   eval "$(.ci/setup)" && examples/hello/up.sh
# Stop and remove everything with examples/hello/down.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${PLOYZ_DOCKER_SOCKET:?is unset: run eval \"\$(.ci/setup)\" first (it starts dockerd and prints this variable)}"
state=${PLOYZ_HELLO_DIR:-/var/lib/ployz-hello}
port=8080
export PLOYZ_DATA_DIR="$state/data" PLOYZ_RUN_DIR="$state/run" PLOYZ_CONFIG_DIR="$state/config"
export PLOYZ_DOCKER_ROOT=${PLOYZ_DOCKER_ROOT:-$(docker -H "unix://$PLOYZ_DOCKER_SOCKET" info -f '{{.DockerRootDir}}')}
deno="$root/.tools/node_modules/.bin/deno"
sock="$PLOYZ_RUN_DIR/ployz.sock"

answers() {
  curl -fsS --max-time 2 --unix-socket "$sock" -X POST -H 'content-type: application/json' \
    -d '{"protocol_major":1}' http://localhost/rpc/ployz.machine.describe_contract.v1 >/dev/null 2>&1
}

mkdir -p "$PLOYZ_DATA_DIR" "$PLOYZ_RUN_DIR" "$PLOYZ_CONFIG_DIR"
if answers; then
  echo "ployzd serve already answers on $sock"
else
  # bin/ployzd grants the default paths only (-P=serve); this layout needs the same set relocated, and, without
  # systemd, the right to run this deno: the daemon keeps `ployzd dns` (Internal DNS) running as its child.
  mapfile -t flags < <("$deno" run --quiet --no-prompt --cached-only --config "$root/deno.json" \
    --allow-env="PLOYZ_*" "$root/tools/relocated_flags.ts" serve "$(readlink -f "$deno")")
  # The Observe Store reads /proc and the cgroups through the read-only view an installed Machine's unit gives it.
  export PLOYZ_OBSERVE_PROC_ROOT="$PLOYZ_RUN_DIR/observe-host/proc" PLOYZ_OBSERVE_CGROUP_ROOT="$PLOYZ_RUN_DIR/observe-host/cgroup"
  nohup "$root/tools/observe_host_view.sh" "$PLOYZ_RUN_DIR/observe-host" \
    "$deno" run --quiet --no-prompt --cached-only --frozen --config "$root/deno.json" "${flags[@]}" \
    "$root/cmd/ployzd.ts" serve >"$state/serve.log" 2>&1 </dev/null &
  echo $! >"$state/serve.pid"
  for _ in $(seq 1 120); do
    answers && break
    if ! kill -0 "$(cat "$state/serve.pid")" 2>/dev/null; then
      echo "ployzd serve exited; its log ($state/serve.log):" >&2
      tail -n 20 "$state/serve.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  answers || { echo "ployzd serve did not answer on $sock within 60 s" >&2; exit 1; }
  echo "ployzd serve is running (pid $(cat "$state/serve.pid"), log $state/serve.log)"
fi

ployz() { "$root/bin/ployz" "$@"; }
ployz machine init --name "${PLOYZ_HELLO_MACHINE:-hello}" --subnet "${PLOYZ_HELLO_SUBNET:-10.210.1.0/24}"
ployz deploy -f "$here/compose.yaml" -y
curl -fsS --retry 10 --retry-connrefused --retry-delay 1 "http://127.0.0.1:$port/"
cat <<TEXT

hello is up: http://127.0.0.1:$port/ (from another host: http://<this host>:$port/)
  see it:     PLOYZ_RUN_DIR=$PLOYZ_RUN_DIR $root/bin/ployz ps
  remove it:  $here/down.sh
TEXT
