#!/usr/bin/env bash
# Start a private dockerd for tests (no systemd here) and wait until it answers.
# Usage: .ci/dockerd.sh [STATE_DIR]   (default /var/lib/ployz-ci/docker)
# Prints the socket path. Idempotent: a running engine on that socket is reused.
set -euo pipefail
state=${1:-/var/lib/ployz-ci/docker}
sock="$state/docker.sock"
mkdir -p "$state"
if curl -fsS --max-time 2 --unix-socket "$sock" http://d/_ping >/dev/null 2>&1; then
  echo "$sock"; exit 0
fi
if [ -f "$state/docker.pid" ] && kill -0 "$(cat "$state/docker.pid")" 2>/dev/null; then
  kill "$(cat "$state/docker.pid")" || true; sleep 2
fi
rm -f "$sock" "$state/docker.pid"
# cgroup v1 hosts need the devices controller mounted; dockerd checks it at start.
nohup dockerd --data-root "$state/data" --exec-root "$state/exec" -H "unix://$sock" \
  --pidfile "$state/docker.pid" --storage-driver overlay2 \
  >"$state/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 120); do
  if curl -fsS --max-time 2 --unix-socket "$sock" http://d/_ping >/dev/null 2>&1; then
    echo "$sock"; exit 0
  fi
  sleep 0.5
done
echo "dockerd did not answer on $sock within 60 s; last log lines:" >&2
tail -n 20 "$state/dockerd.log" >&2
exit 1
