#!/bin/sh
# Installs Ployz on this Machine: resolve the release, fetch it and its SHA256SUMS, verify, unpack into a
# temporary directory and hand over to that release's own `ployzd install`, which does everything else.
#
#   curl -fsSL https://ployz.sh/install.sh | sh -s -- [--version V | --channel C] [ployzd install options]
#   curl -fsSL https://ployz.sh/install.sh | sh -s -- --cli [--prefix DIR] [--version V | --channel C]
#
# --cli installs only the operator CLI (`ployz`), without root, on Linux or macOS: the release tree goes to
# DIR/lib/ployz/<version> and DIR/bin/ployz links to its launcher (DIR default: $HOME/.local). On macOS the
# artifact is the CLI-only tree ployz-cli-<version>-<triple>.tar.gz.
#
# PLOYZ_RELEASE_SOURCE: an http(s) base URL or a local directory laid out as <base>/v0/<channel> (one exact
# version) and <base>/<version>/{ployz-<version>-<triple>.tar.gz,SHA256SUMS}. Default https://ployz.sh.
# Options after the ones below (e.g. --skip-prerequisites, --install-prerequisites, --record-source) go to
# `ployzd install`. With both --version and --channel, the version is installed and the channel recorded.
set -eu

line=v0
source=${PLOYZ_RELEASE_SOURCE:-https://ployz.sh}
channel=stable
version=
from_channel=
channel_given=
cli=
prefix=${HOME:-}/.local

die() {
  echo "install.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || die "--version needs a value"; version=$2; shift 2 ;;
    --channel) [ $# -ge 2 ] || die "--channel needs a value"; channel=$2; channel_given=1; shift 2 ;;
    --cli) cli=1; shift ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a value"; prefix=$2; shift 2 ;;
    *) break ;;
  esac
done

if [ -z "$cli" ]; then
  [ "$(id -u)" = 0 ] || die "run as root: the installer writes /usr/lib/ployz, /usr/local/bin and systemd units (--cli installs only the CLI, without root)"
else
  [ $# -eq 0 ] || die "unknown option \"$1\" for --cli"
  case "$prefix" in /*) ;; *) die "--prefix must be an absolute path, not \"$prefix\"" ;; esac
fi
case "$channel" in '' | *[!a-z0-9-]*) die "invalid channel \"$channel\"" ;; esac

os=$(uname -s)
case "$os/$(uname -m)" in
  Linux/x86_64 | Linux/amd64) triple=x86_64-unknown-linux-gnu ;;
  Linux/aarch64 | Linux/arm64) triple=aarch64-unknown-linux-gnu ;;
  Darwin/arm64 | Darwin/aarch64) triple=aarch64-apple-darwin ;;
  Darwin/x86_64) triple=x86_64-apple-darwin ;;
  *) die "unsupported machine \"$os $(uname -m)\": releases exist for x86_64 and aarch64 Linux (and the CLI for macOS)" ;;
esac
case "$os" in Darwin) [ -n "$cli" ] || die "only the CLI installs on macOS: use --cli" ;; esac

sha256_check() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum -c --status -; else shasum -a 256 -c --status -; fi
}

case "$source" in
  http://* | https://*) source=${source%/} ;;
  /*) [ -d "$source" ] || die "release source \"$source\" is not a directory" ;;
  *) [ -d "$source" ] || die "release source \"$source\" is not a directory"; source=$(cd "$source" && pwd) ;;
esac

fetch() {
  case "$source" in
    http://* | https://*) curl -fsSL --retry 3 --connect-timeout 20 -o "$2" "$source/$1" ;;
    *) cp "$source/$1" "$2" ;;
  esac || die "cannot fetch \"$1\" from \"$source\""
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ployz-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ -z "$version" ]; then
  fetch "$line/$channel" "$tmp/channel"
  version=$(tr -d ' \r\n' <"$tmp/channel")
  from_channel="--channel $channel"
  echo "install.sh: channel $line/$channel is $version" >&2
elif [ -n "$channel_given" ]; then
  # Resolved elsewhere (ployz machine add --ssh resolves it on the operator's machine): recorded, not re-read.
  from_channel="--channel $channel"
fi
case "$version" in
  '' | *..* | *[!0-9A-Za-z.-]* | [!0-9]*) die "invalid version \"$version\": expected an exact version such as 0.1.0" ;;
esac

fetch "$version/SHA256SUMS" "$tmp/SHA256SUMS"
case "$triple" in
  *-apple-darwin) name=ployz-cli-$version-$triple ;;
  *) name=ployz-$version-$triple ;;
esac
artifact=$name.tar.gz
if ! awk -v f="$artifact" '$2 == f || $2 == "*" f { found = 1 } END { exit !found }' "$tmp/SHA256SUMS"; then
  if awk -v f="bin/ployzd-$triple" '$2 == f { found = 1 } END { exit !found }' "$tmp/SHA256SUMS"; then
    die "release $version has only a compiled ployzd for $triple; this installer needs the offline tree \"$artifact\""
  fi
  die "release $version has no \"$artifact\" in its SHA256SUMS"
fi
fetch "$version/$artifact" "$tmp/$artifact"
(cd "$tmp" && awk -v f="$artifact" '$2 == f || $2 == "*" f' SHA256SUMS | sha256_check) ||
  die "checksum mismatch for \"$artifact\": refusing to install it"

mkdir "$tmp/tree"
tar -xzf "$tmp/$artifact" -C "$tmp/tree" --no-same-owner || die "cannot unpack \"$artifact\""
tree=$tmp/tree/$name

if [ -n "$cli" ]; then
  [ -x "$tree/bin/ployz" ] || die "\"$artifact\" holds no bin/ployz"
  mkdir -p "$prefix/lib/ployz" "$prefix/bin" || die "cannot create \"$prefix/lib/ployz\" and \"$prefix/bin\""
  rm -rf "$prefix/lib/ployz/$version.new"
  mv "$tree" "$prefix/lib/ployz/$version.new"
  rm -rf "$prefix/lib/ployz/$version"
  mv "$prefix/lib/ployz/$version.new" "$prefix/lib/ployz/$version"
  ln -sfn "../lib/ployz/$version/bin/ployz" "$prefix/bin/ployz.new"
  mv -f "$prefix/bin/ployz.new" "$prefix/bin/ployz"
  echo "install.sh: installed ployz $version to $prefix/bin/ployz" >&2
  case ":${PATH:-}:" in *":$prefix/bin:"*) ;; *) echo "install.sh: add $prefix/bin to your PATH" >&2 ;; esac
  exit 0
fi
[ -x "$tree/bin/ployzd" ] || die "\"$artifact\" holds no bin/ployzd"

set +e
# shellcheck disable=SC2086 # $from_channel is empty or two words.
"$tree/bin/ployzd" install --from "$tmp/$artifact" --source "$source" --version "$version" $from_channel "$@"
code=$?
set -e
exit "$code"
