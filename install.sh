#!/bin/sh
# Installs Ployz on this Machine: resolve the release, fetch its SHA256SUMS and SHA256SUMS.sig, check that the
# signature is the release key's (below), fetch the artifact and check its checksum, and only then unpack it into
# a temporary directory and hand over to that release's own `ployzd install`, which does everything else.
# Everything runs from `main` on the last line, whose last word it checks, so a download cut short runs nothing.
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
# An https:// source is fetched over TLS 1.2 or later only, redirects included; http:// only when given so
# (tests). PLOYZ_RELEASE_PUBLIC_KEY (base64 of a raw Ed25519 public key) replaces the release key, for an http://
# or local test source only. Needs curl (for URLs), openssl (1.1.1 or later, or LibreSSL with Ed25519), base64,
# sha256sum (or shasum), awk and tar.
set -eu

# The release key (base64 of the raw Ed25519 public key): SHA256SUMS.sig must be its signature of SHA256SUMS.
RELEASE_PUBLIC_KEY=ME3bJRDBKt6WV7hhk3eRlHX3c/SUR6I83KvYvSbh2RA=

main() {
  # The script's last word must arrive: a download cut inside the last line runs nothing either.
  n=$#
  eval "last=\${$n}"
  if [ "$last" != "--end-of-install-sh" ]; then
    echo "install.sh: the script is incomplete (a download cut short?): fetch it again" >&2
    exit 1
  fi
  i=1
  while [ "$i" -lt "$n" ]; do
    set -- "$@" "$1"
    shift
    i=$((i + 1))
  done
  shift

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
      https://*)
        curl -fsSL --proto '=https' --proto-redir '=https' --tlsv1.2 --retry 3 --connect-timeout 20 \
          -o "$2" "$source/$1" 2>"$tmp/fetch.err"
        ;;
      http://*) curl -fsSL --retry 3 --connect-timeout 20 -o "$2" "$source/$1" 2>"$tmp/fetch.err" ;;
      *) cp "$source/$1" "$2" 2>"$tmp/fetch.err" ;;
    esac || die "cannot fetch \"$1\" from \"$(redacted "$source")\": $(redacted "$(tail -n 1 "$tmp/fetch.err")")"
  }

  # The key SHA256SUMS must be signed with; a test key replaces it only for an http:// or local source.
  key=$RELEASE_PUBLIC_KEY
  if [ -n "${PLOYZ_RELEASE_PUBLIC_KEY:-}" ]; then
    case "$source" in
      https://*) die "PLOYZ_RELEASE_PUBLIC_KEY is honoured only with an http:// or local test source" ;;
    esac
    key=$PLOYZ_RELEASE_PUBLIC_KEY
  fi
  case "$key" in *[!A-Za-z0-9+/=]*) die "invalid release public key \"$key\"" ;; esac
  [ ${#key} -eq 44 ] || die "invalid release public key \"$key\": expected 44 base64 characters"
  command -v openssl >/dev/null 2>&1 || die "openssl is needed to verify the release signature"

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
  fetch "$version/SHA256SUMS.sig" "$tmp/SHA256SUMS.sig"
  verify_signature "$tmp/SHA256SUMS" "$tmp/SHA256SUMS.sig" ||
    die "SHA256SUMS of release $version is not signed by the release key: refusing to install it"
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
}

# Prints $1 with any user:password@ of a URL in it replaced, so no error shows a source's credentials.
redacted() {
  printf '%s' "$1" | sed -e 's#\([A-Za-z][A-Za-z0-9+.-]*://\)[^/@[:space:]]*@#\1***@#g'
}

# Succeeds when $2 (base64) is the Ed25519 signature of the file $1 by $key.
verify_signature() {
  # An Ed25519 SubjectPublicKeyInfo is a fixed 12-byte prefix (base64 "MCowBQYDK2VwAyEA") and the raw key.
  printf '%s\n' "-----BEGIN PUBLIC KEY-----" "MCowBQYDK2VwAyEA$key" "-----END PUBLIC KEY-----" >"$tmp/release.pem"
  base64 -d <"$2" >"$2.bin" 2>/dev/null || return 1
  [ "$(wc -c <"$2.bin")" -eq 64 ] || return 1
  openssl pkeyutl -verify -pubin -inkey "$tmp/release.pem" -rawin -in "$1" -sigfile "$2.bin" >/dev/null 2>&1
}

main "$@" --end-of-install-sh
