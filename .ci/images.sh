#!/usr/bin/env bash
# Build the small test images from Debian packages, without a registry.
# Usage: DOCKER_HOST=unix:///path/docker.sock .ci/images.sh
# Images: ployz-test/busybox:1 (busybox-static with applet links; `httpd -f -p 80 -h /www` serves HTTP).
# Idempotent: an image already present is kept.
set -euo pipefail
have() { docker image inspect "$1" >/dev/null 2>&1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! have ployz-test/busybox:1; then
  (cd "$work" && apt-get download busybox-static >/dev/null)
  dpkg-deb -x "$work"/busybox-static_*.deb "$work/pkg"
  root="$work/busybox"
  mkdir -p "$root/bin" "$root/www" "$root/tmp" "$root/etc"
  cp "$work/pkg/bin/busybox" "$root/bin/busybox"
  for applet in sh ash cat date echo env false grep head hostname httpd id kill ls mkdir nc nslookup ping \
    printf ps rm seq sleep tail tee test true uname wc wget; do
    ln -s busybox "$root/bin/$applet"
  done
  echo '<h1>ployz test</h1>' >"$root/www/index.html"
  echo 'root:x:0:0:root:/:/bin/sh' >"$root/etc/passwd"
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' - ployz-test/busybox:1 >/dev/null
fi
echo "images ready: ployz-test/busybox:1"
