#!/bin/sh
# Usage: tools/observe_host_view.sh DIR COMMAND [ARG...]
# Runs COMMAND with the observe host view an installed Machine's ployz-observe unit has (BindReadOnlyPaths):
# /proc and /sys/fs/cgroup bind-mounted read-only at DIR/proc and DIR/cgroup, because Deno refuses narrow reads of
# /proc itself. The mounts live in a private mount namespace of COMMAND and its children: they vanish with them
# and the host never sees a mount under DIR. Used by `ployz lab` and examples/hello/up.sh; needs root.
set -eu
if [ "$#" -lt 2 ]; then
  echo "usage: $0 DIR COMMAND [ARG...]" >&2
  exit 2
fi
exec unshare --mount --propagation private -- sh -c '
set -eu
mkdir -p "$1/proc" "$1/cgroup"
mount --bind /proc "$1/proc"
mount -o remount,bind,ro "$1/proc"
mount --rbind /sys/fs/cgroup "$1/cgroup"
# Each cgroup v1 hierarchy is its own mount under the bind: make every one read-only.
findmnt -rn -o TARGET -R "$1/cgroup" | while read -r m; do mount -o remount,bind,ro "$m"; done
shift
exec "$@"
' sh "$@"
