#!/usr/bin/env bash
# Build ployz-system/caddy:2, the Ingress Proxy image, from Debian's caddy without a registry: /usr/bin/caddy plus
# its ldd closure, HOME and XDG_* under /tmp, and a boot config that serves the admin API on a unix socket in
# /run/caddy-admin (bind-mounted from the Machine's <runDir>/caddy) for the Host "ployz".
# Usage: DOCKER_HOST=unix:///path/docker.sock .ci/images_caddy.sh   (IMAGE=... overrides the reference)
# Idempotent: an image already present is kept. Needs the caddy package (apt-get install caddy).
set -euo pipefail
image=${IMAGE:-ployz-system/caddy:2}
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "images ready: $image"
  exit 0
fi
command -v caddy >/dev/null || apt-get install -y -q caddy >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/usr/bin" "$root/etc/caddy" "$root/tmp" "$root/run/caddy-admin" "$root/etc/ssl/certs"
cp /usr/bin/caddy "$root/usr/bin/caddy"
# The dynamic loader and every library caddy links, at their own paths.
for lib in $(ldd /usr/bin/caddy | grep -oE '/[^ ]+'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
chmod 1777 "$root/tmp"
echo 'root:x:0:0:root:/tmp:/bin/false' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
cat >"$root/etc/caddy/boot.json" <<'JSON'
{"admin": {"listen": "unix//run/caddy-admin/admin.sock", "origins": ["ployz"]}}
JSON
tar -C "$root" -c . | docker import \
  --change 'ENV HOME=/tmp XDG_CONFIG_HOME=/tmp/config XDG_DATA_HOME=/tmp/data' \
  --change 'ENTRYPOINT ["/usr/bin/caddy"]' \
  --change 'CMD ["run", "--config", "/etc/caddy/boot.json"]' \
  - "$image" >/dev/null
echo "images ready: $image"
