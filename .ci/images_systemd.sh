#!/usr/bin/env bash
# Build ployz-test/systemd:2: a minimal Debian bookworm root with systemd as PID 1, for the installer's tests, with
# an SSH server (root by key only; host keys made at each container's first boot) so `ployz machine add --ssh`
# provisions it for real, and the mesh tools (wireguard-go, wg, iptables) a Machine in a Cluster runs.
# Usage: DOCKER_HOST=unix:///path/docker.sock .ci/images_systemd.sh
# Run it with --cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt apparmor=unconfined
# -v /sys/fs/cgroup:/sys/fs/cgroup:rw --tmpfs /run --tmpfs /run/lock -e container=docker (--privileged fails here).
# Idempotent: an image already present is kept. Needs debootstrap, and ssh on this host for the tests.
set -euo pipefail
image=ployz-test/systemd:2
# The tests reach the container with this host's ssh client.
command -v ssh >/dev/null || apt-get install -y -q --no-install-recommends openssh-client >/dev/null
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "images ready: $image"
  exit 0
fi
# Several shells may run .ci/setup at once: one builds, the others wait for it and find the image.
exec 9>/tmp/ployz-images-systemd.lock
flock 9
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "images ready: $image"
  exit 0
fi
# The previous tag had no SSH server; nothing uses it any more.
docker image rm ployz-test/systemd:1 >/dev/null 2>&1 || true
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
mirror=$(sed -nE 's/^URIs: *(http[^ ]*\/debian)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase \
  --include=systemd,systemd-sysv,dbus,iproute2,curl,ca-certificates,procps,openssh-server,wireguard-go,wireguard-tools,iptables \
  bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  exit 1
}
root=$work/root
# Nothing in the test image needs a login prompt or the network wait.
rm -f "$root/etc/systemd/system/getty.target.wants/"* 2>/dev/null || true
# Every container gets its own host keys: made before sshd's config check, at its first start.
rm -f "$root"/etc/ssh/ssh_host_*
mkdir -p "$root/etc/systemd/system/ssh.service.d"
printf '%s\n' '[Service]' 'ExecStartPre=' 'ExecStartPre=/usr/bin/ssh-keygen -A' 'ExecStartPre=/usr/sbin/sshd -t' \
  >"$root/etc/systemd/system/ssh.service.d/host-keys.conf"
# Keys only; a container cannot set the audit login uid, which pam_loginuid would otherwise require.
printf '%s\n' 'PermitRootLogin prohibit-password' 'PasswordAuthentication no' 'KbdInteractiveAuthentication no' \
  >"$root/etc/ssh/sshd_config.d/ployz-test.conf"
sed -i -E 's/^session\s+required\s+pam_loginuid\.so/session optional pam_loginuid.so/' "$root/etc/pam.d/sshd"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /lib/systemd/system/ssh.service "$root/etc/systemd/system/multi-user.target.wants/ssh.service"
tar -C "$root" -c . | docker import --change 'CMD ["/sbin/init"]' - "$image" >/dev/null
echo "images ready: $image"
