#!/usr/bin/env bash
# Build ployz-test/systemd:1: a minimal Debian bookworm root with systemd as PID 1, for the installer's tests.
# Usage: DOCKER_HOST=unix:///path/docker.sock .ci/images_systemd.sh
# Run it with --cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt apparmor=unconfined
# -v /sys/fs/cgroup:/sys/fs/cgroup:rw --tmpfs /run --tmpfs /run/lock -e container=docker (--privileged fails here).
# Idempotent: an image already present is kept. Needs debootstrap (apt-get install debootstrap).
set -euo pipefail
image=ployz-test/systemd:1
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "images ready: $image"
  exit 0
fi
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
mirror=$(sed -nE 's/^URIs: *(http[^ ]*\/debian)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,iproute2,curl,ca-certificates,procps \
  bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  exit 1
}
# Nothing in the test image needs a login prompt or the network wait.
rm -f "$work/root/etc/systemd/system/getty.target.wants/"* 2>/dev/null || true
tar -C "$work/root" -c . | docker import --change 'CMD ["/sbin/init"]' - "$image" >/dev/null
echo "images ready: $image"
